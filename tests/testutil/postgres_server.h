// A throwaway PostgreSQL server for tests, started from Debian's postgresql
// binaries: initdb into a temporary directory, postgres on a free port of
// 127.0.0.1 (TCP only, trust authentication for user "metaopt"), stopped and
// removed on destruction. As root it runs as the user "postgres" (or "nobody"
// when there is none): PostgreSQL refuses to run as root.
#ifndef METAOPT_TESTS_TESTUTIL_POSTGRES_SERVER_H_
#define METAOPT_TESTS_TESTUTIL_POSTGRES_SERVER_H_

#include <sys/types.h>

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace metaopt::testing {

// A TCP port of 127.0.0.1 that was free a moment ago (0 on error).
int FreeLoopbackPort();

// Not thread-safe (one owner). The server process dies with the thread that
// started it (Start, Restart), so that no server outlives a crashed test.
class PostgresServer {
 public:
  // The bin directory of the newest PostgreSQL under /usr/lib/postgresql
  // ($METAOPT_POSTGRES_BIN overrides), or "" when there is none.
  static std::string FindBinDir();
  // Why PostgreSQL tests cannot run here, or "" when they can: for
  // GTEST_SKIP().
  static std::string SkipReason();

  // initdb and start. FAILED_PRECONDITION without binaries.
  static absl::StatusOr<std::unique_ptr<PostgresServer>> Start();

  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;
  ~PostgresServer();

  int port() const { return port_; }
  // The URI of database `database` as user metaopt.
  std::string Uri(const std::string& database) const;
  // Creates a database with a fresh name and returns its URI.
  absl::StatusOr<std::string> CreateDatabase();

  // Fast shutdown (SIGINT: clients are disconnected) and wait.
  void Stop();
  // Immediate shutdown (SIGQUIT: no checkpoint, as after a crash; recovery
  // replays the WAL at the next start) and wait.
  void Crash();
  // Starts again on the same port and data directory; waits until it accepts
  // connections.
  absl::Status Restart();
  bool running() const { return pid_ > 0; }
  // Ends every client connection (pg_terminate_backend), as a network blip
  // would.
  absl::Status TerminateConnections();

 private:
  PostgresServer(std::string bin_dir, std::string dir)
      : bin_dir_(std::move(bin_dir)), dir_(std::move(dir)) {}

  absl::Status Launch();
  void Signal(int signal);

  std::string bin_dir_;
  std::string dir_;  // holds data/ and log
  int port_ = 0;
  pid_t pid_ = -1;
  int databases_ = 0;
};

}  // namespace metaopt::testing

#endif  // METAOPT_TESTS_TESTUTIL_POSTGRES_SERVER_H_
