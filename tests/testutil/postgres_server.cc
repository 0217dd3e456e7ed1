#include "tests/testutil/postgres_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/common/status_macros.h"
#include "core/storage/postgres_util.h"

namespace metaopt::testing {
namespace {

namespace fs = std::filesystem;

// The unprivileged account the server runs as when the test runs as root.
const passwd* RunAsAccount() {
  if (geteuid() != 0) return nullptr;
  if (const passwd* account = getpwnam("postgres")) return account;
  return getpwnam("nobody");
}

// Runs `argv` as the run-as account, output appended to `log`; returns the
// child's pid (the child exits with 127 if exec fails). Between fork and exec
// the child makes only async-signal-safe calls: other threads of the test may
// hold locks (stdio's, malloc's) that would never be released in it.
pid_t Spawn(const std::vector<std::string>& argv, const std::string& log) {
  const passwd* account = RunAsAccount();
  const uid_t uid = account != nullptr ? account->pw_uid : 0;
  const gid_t gid = account != nullptr ? account->pw_gid : 0;
  std::vector<char*> args;
  for (const std::string& arg : argv)
    args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  const pid_t pid = fork();
  if (pid != 0) return pid;
  if (account != nullptr) {
    if (setgroups(0, nullptr) != 0 || setgid(gid) != 0 || setuid(uid) != 0)
      _exit(126);
  }
  // After setuid, which clears it: dies with the test.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  const int fd = open(log.c_str(), O_WRONLY | O_APPEND | O_CREAT, 0644);
  if (fd < 0 || dup2(fd, STDOUT_FILENO) < 0 || dup2(fd, STDERR_FILENO) < 0)
    _exit(126);
  execv(args[0], args.data());
  _exit(127);
}

}  // namespace

int FreeLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t length = sizeof(addr);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

std::string PostgresServer::FindBinDir() {
  if (const char* bin = getenv("METAOPT_POSTGRES_BIN"); bin != nullptr)
    return bin;
  std::error_code ec;
  std::string best;
  int best_version = -1;
  for (const auto& entry : fs::directory_iterator("/usr/lib/postgresql", ec)) {
    const std::string bin = entry.path().string() + "/bin";
    const int version = std::atoi(entry.path().filename().c_str());
    if (version > best_version && fs::exists(bin + "/initdb", ec) &&
        fs::exists(bin + "/postgres", ec)) {
      best = bin;
      best_version = version;
    }
  }
  return best;
}

std::string PostgresServer::SkipReason() {
  if (FindBinDir().empty()) {
    return "no PostgreSQL server binaries (initdb, postgres) under "
           "/usr/lib/postgresql/*/bin: install Debian's postgresql package "
           "(scripts/install-deps.sh does) or set METAOPT_POSTGRES_BIN";
  }
  if (geteuid() == 0 && RunAsAccount() == nullptr) {
    return "running as root without a 'postgres' or 'nobody' account to run "
           "PostgreSQL as";
  }
  return "";
}

absl::StatusOr<std::unique_ptr<PostgresServer>> PostgresServer::Start() {
  if (const std::string reason = SkipReason(); !reason.empty())
    return absl::FailedPreconditionError(reason);
  std::string pattern =
      fs::temp_directory_path().string() + "/metaopt_pg_XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr)
    return absl::InternalError("mkdtemp failed for " + pattern);
  std::unique_ptr<PostgresServer> server(
      new PostgresServer(FindBinDir(), pattern));
  if (const passwd* account = RunAsAccount()) {
    if (chown(server->dir_.c_str(), account->pw_uid, account->pw_gid) != 0)
      return absl::InternalError("cannot chown " + server->dir_);
  }
  const std::string log = server->dir_ + "/initdb.log";
  const pid_t initdb =
      Spawn({server->bin_dir_ + "/initdb", "-D", server->dir_ + "/data", "-U",
             "metaopt", "-A", "trust", "-E", "UTF8", "--no-sync"},
            log);
  int status = 0;
  waitpid(initdb, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return absl::InternalError(
        absl::StrCat("initdb failed (status ", status, "): ", ReadFile(log)));
  }
  absl::Status launched;
  for (int attempt = 0; attempt < 3; ++attempt) {
    server->port_ = FreeLoopbackPort();
    launched = server->Launch();
    if (launched.ok()) return server;
  }
  return launched;
}

PostgresServer::~PostgresServer() {
  if (pid_ > 0) Crash();
  std::error_code ignored;
  if (!dir_.empty() && getenv("METAOPT_KEEP_POSTGRES") == nullptr)
    fs::remove_all(dir_, ignored);
}

std::string PostgresServer::Uri(const std::string& database) const {
  return absl::StrCat("postgresql://metaopt@127.0.0.1:", port_, "/", database);
}

absl::Status PostgresServer::Launch() {
  const std::string log = dir_ + "/postgres.log";
  // fsync off: a test's server never outlives a machine crash, only process
  // kills, after which the page cache still holds every write.
  pid_ = Spawn({bin_dir_ + "/postgres", "-D", dir_ + "/data", "-p",
                std::to_string(port_), "-c", "listen_addresses=127.0.0.1", "-c",
                "unix_socket_directories=", "-c", "fsync=off", "-c",
                "max_connections=200", "-c", "shared_buffers=32MB"},
               log);
  const std::string uri = Uri("postgres") + "?connect_timeout=2";
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (absl::Now() < deadline) {
    if (PQping(uri.c_str()) == PQPING_OK) return absl::OkStatus();
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return absl::UnavailableError(
          absl::StrCat("postgres exited at start: ", ReadFile(log)));
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  Crash();
  return absl::DeadlineExceededError(absl::StrCat(
      "postgres did not accept connections within 30 s: ", ReadFile(log)));
}

void PostgresServer::Signal(int signal) {
  if (pid_ <= 0) return;
  kill(pid_, signal);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
}

void PostgresServer::Stop() { Signal(SIGINT); }
void PostgresServer::Crash() { Signal(SIGQUIT); }

absl::Status PostgresServer::Restart() {
  if (pid_ > 0) return absl::FailedPreconditionError("already running");
  return Launch();
}

absl::StatusOr<std::string> PostgresServer::CreateDatabase() {
  const std::string name = absl::StrCat("metaopt_test_", ++databases_);
  METAOPT_ASSIGN_OR_RETURN(storage::PgConnection admin,
                           storage::PgConnection::Connect(Uri("postgres"), 5));
  METAOPT_RETURN_IF_ERROR(admin.Exec("CREATE DATABASE " + name));
  return Uri(name);
}

absl::Status PostgresServer::TerminateConnections() {
  METAOPT_ASSIGN_OR_RETURN(storage::PgConnection admin,
                           storage::PgConnection::Connect(Uri("postgres"), 5));
  return admin
      .Query(
          "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
          "pid <> pg_backend_pid() AND backend_type = 'client backend'")
      .status();
}

}  // namespace metaopt::testing
