// Runs metaopt-server as a child process (for crash tests).
#ifndef METAOPT_TESTS_INTEGRATION_SERVER_PROCESS_H_
#define METAOPT_TESTS_INTEGRATION_SERVER_PROCESS_H_

#include <signal.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace metaopt::testing {

// A metaopt-server child listening on 127.0.0.1 with a free port. Not
// thread-safe.
class ServerProcess {
 public:
  ServerProcess(std::string binary, std::vector<std::string> args,
                std::string log_path)
      : binary_(std::move(binary)),
        args_(std::move(args)),
        log_path_(std::move(log_path)) {}
  ~ServerProcess() { Kill(SIGKILL); }

  // Starts the child and waits (up to 30 s) for its "listening on" log line.
  // Returns the port, or 0.
  int Start() {
    std::ofstream(log_path_, std::ios::trunc).close();
    pid_ = fork();
    if (pid_ == 0) {
      // Dies with the test, even when the test itself crashes.
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      FILE* log = freopen(log_path_.c_str(), "a", stderr);
      (void)log;
      std::vector<char*> argv;
      argv.push_back(binary_.data());
      for (std::string& arg : args_) argv.push_back(arg.data());
      argv.push_back(nullptr);
      execv(binary_.c_str(), argv.data());
      _exit(127);
    }
    const std::regex listening("listening on [0-9.]+:([0-9]+)");
    for (int i = 0; i < 300; ++i) {
      std::ifstream in(log_path_);
      std::stringstream text;
      text << in.rdbuf();
      std::smatch match;
      const std::string s = text.str();
      if (std::regex_search(s, match, listening)) return std::stoi(match[1]);
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        ADD_FAILURE() << "server exited early: " << s;
        pid_ = -1;
        return 0;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ADD_FAILURE() << "server did not report its port";
    return 0;
  }

  // Sends `signal` and reaps the child; returns its wait status.
  int Kill(int signal) {
    if (pid_ <= 0) return 0;
    kill(pid_, signal);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return status;
  }

  std::string Log() const {
    std::ifstream in(log_path_);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

 private:
  std::string binary_;
  std::vector<std::string> args_;
  std::string log_path_;
  pid_t pid_ = -1;
};

}  // namespace metaopt::testing

#endif  // METAOPT_TESTS_INTEGRATION_SERVER_PROCESS_H_
