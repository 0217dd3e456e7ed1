// metaopt-server: the ask/tell optimization service.
#include <pthread.h>

#include <csignal>
#include <cstdio>
#include <string>
#include <thread>

#include "CLI/CLI.hpp"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/common/logging.h"
#include "server/server.h"

namespace {

bool IsLoopback(const std::string& listen) {
  return absl::StartsWith(listen, "127.") ||
         absl::StartsWith(listen, "localhost:") ||
         absl::StartsWith(listen, "[::1]:");
}

std::string HostOf(const std::string& listen) {
  const size_t colon = listen.rfind(':');
  return colon == std::string::npos ? listen : listen.substr(0, colon);
}

}  // namespace

int main(int argc, char** argv) {
  metaopt::server::ServerOptions options;
  std::string log_level = "info";
  std::string log_format = "text";
  CLI::App app{
      "metaopt-server: ask/tell optimization of ML pipelines and "
      "hyperparameters (gRPC)"};
  app.add_option("--listen", options.listen,
                 "host:port to listen on (port 0: any free port)")
      ->capture_default_str();
  app.add_option("--db", options.db_path, "SQLite database file")
      ->capture_default_str();
  app.add_option("--models", options.models_dir, "model registry directory")
      ->capture_default_str();
  double poll_seconds = 30;
  app.add_option("--models-poll-interval", poll_seconds,
                 "seconds between polls of the model registry (0: no polling)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 86400.0));
  app.add_option("--max-message-bytes", options.max_message_bytes,
                 "largest message accepted")
      ->capture_default_str()
      ->check(CLI::Range(1 << 16, 1 << 30));
  app.add_option("--max-threads", options.max_threads, "threads serving RPCs")
      ->capture_default_str()
      ->check(CLI::Range(2, 4096));
  app.add_option("--log-level", log_level, "debug, info, warning or error")
      ->capture_default_str()
      ->check(CLI::IsMember({"debug", "info", "warning", "error"}));
  app.add_option("--log-format", log_format, "text or json")
      ->capture_default_str()
      ->check(CLI::IsMember({"text", "json"}));
  CLI11_PARSE(app, argc, argv);
  options.models_poll_interval = absl::Seconds(poll_seconds);

  metaopt::SetMinLogSeverity(
      log_level == "debug"     ? metaopt::LogSeverity::kDebug
      : log_level == "warning" ? metaopt::LogSeverity::kWarning
      : log_level == "error"   ? metaopt::LogSeverity::kError
                               : metaopt::LogSeverity::kInfo);
  metaopt::SetLogFormat(log_format == "json" ? metaopt::LogFormat::kJson
                                             : metaopt::LogFormat::kText);

  // Block the termination signals in every thread; a watcher thread waits for
  // them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto server = metaopt::server::Server::BuildAndStart(options);
  if (!server.ok()) {
    metaopt::LogError(absl::StrCat("metaopt-server failed to start: ",
                                   server.status().ToString()));
    return 1;
  }
  const std::string address =
      absl::StrCat(HostOf(options.listen), ":", (*server)->port());
  metaopt::LogInfo(absl::StrCat("metaopt-server listening on ", address,
                                " (database ", options.db_path, ", models ",
                                options.models_dir, ": ",
                                (*server)->models().List().size(), " loaded)"));
  if (!IsLoopback(options.listen)) {
    metaopt::LogWarning(absl::StrCat("listening beyond loopback (",
                                     options.listen,
                                     ") without TLS or authentication"));
  }

  std::thread watcher([&server, &signals] {
    int signal = 0;
    sigwait(&signals, &signal);
    metaopt::LogInfo(
        absl::StrCat("received signal ", signal, "; shutting down"));
    (*server)->Shutdown(absl::Seconds(10));
  });
  (*server)->Wait();
  // Wake the watcher if the server stopped for another reason.
  pthread_kill(watcher.native_handle(), SIGTERM);
  watcher.join();
  server->reset();  // closes the database
  metaopt::LogInfo("metaopt-server stopped");
  return 0;
}
