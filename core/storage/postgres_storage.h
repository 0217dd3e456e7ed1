// Storage on a PostgreSQL database shared by any number of server processes.
#ifndef METAOPT_CORE_STORAGE_POSTGRES_STORAGE_H_
#define METAOPT_CORE_STORAGE_POSTGRES_STORAGE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/common/mutex.h"
#include "core/storage/group_commit.h"
#include "core/storage/postgres_util.h"
#include "core/storage/storage.h"
#include "metaopt/v1/study.pb.h"

namespace metaopt::storage {

// Storage on PostgreSQL. The tables mirror SQLite's (schema version 4), with
// bytea for every string key so that ordering is byte-wise and any byte is
// allowed:
//   studies(owner, study_id, create_time_micros, study, version, write_token)
//   trials(owner, study_id, trial_id, state, client_id, trial,
//          written_version)
//   intermediate_values(owner, study_id, trial_id, step, value)
//   policy_state(owner, study_id, state, written_version)
// `write_token` names the last write of the study, so that a write retried
// after its COMMIT's answer was lost recognizes itself instead of failing its
// version check.
//
// Thread-safe: a pool of `pool_size` connections, each used by one call at a
// time (`mu_` guards the pool only, never held across I/O; CheckReachable
// uses a connection of its own under `probe_mu_`). Each call is one
// transaction (READ COMMITTED for writes, with the study's row locked FOR
// UPDATE; REPEATABLE READ for multi-statement reads; a single-statement read
// on its own) that is committed before it returns OK. A broken connection, a
// server restarting or refusing, a serialization failure: the whole transaction
// is retried on a fresh connection with exponential backoff for up to
// `retry_budget`, then UNAVAILABLE. A stored blob that fails to parse is
// DATA_LOSS. Concurrent WriteStudy calls are group-committed (GroupCommit):
// the writes queued while one transaction commits share the next one, each
// in a savepoint of its own, with the studies' rows locked in key order (so
// replicas batching the same studies cannot deadlock); each call returns only
// after the COMMIT that holds its write.
class PostgresStorage : public Storage {
 public:
  static absl::StatusOr<std::unique_ptr<PostgresStorage>> Open(
      const std::string& uri, const PostgresOptions& options);

  PostgresStorage(const PostgresStorage&) = delete;
  PostgresStorage& operator=(const PostgresStorage&) = delete;

  using Storage::CreateStudy;
  absl::Status CreateStudy(const v1::Study& study,
                           int64_t max_studies_of_owner) override;
  absl::StatusOr<v1::Study> GetStudy(const StudyKey& key) override;
  absl::StatusOr<std::vector<v1::Study>> ListStudies(
      std::string_view owner, std::string_view after_study_id,
      int limit) override;
  absl::StatusOr<int64_t> CountStudies(std::string_view owner) override;
  absl::Status DeleteStudy(const StudyKey& key) override;
  absl::Status WriteStudy(const StudyKey& key,
                          const StudyWrite& write) override;
  absl::StatusOr<int64_t> GetStudyVersion(const StudyKey& key) override;
  absl::StatusOr<std::vector<v1::Trial>> LoadTrials(
      const StudyKey& key) override;
  absl::StatusOr<Changes> LoadChangesSince(const StudyKey& key,
                                           int64_t version) override;
  absl::StatusOr<std::optional<std::string>> GetPolicyState(
      const StudyKey& key) override;
  // SELECT 1 on a connection of its own, outside the pool (connecting if
  // needed).
  absl::Status CheckReachable() override ABSL_LOCKS_EXCLUDED(probe_mu_);

 private:
  enum class Access {
    kRead,       // several reads from one snapshot (REPEATABLE READ)
    kWrite,      // a read-write transaction
    kStatement,  // one statement on its own (no BEGIN/COMMIT round trips)
  };
  // What a transaction body learns about its attempt.
  struct Attempt {
    // A previous attempt sent COMMIT and lost the answer: its changes may be
    // stored already.
    bool commit_unknown = false;
  };
  using Body = absl::FunctionRef<absl::Status(PgConnection&, const Attempt&)>;

  PostgresStorage(std::string uri, PostgresOptions options);

  // Runs `body` in one transaction, retried as the class comment says; `what`
  // names the call in errors. `body` must produce its results afresh on each
  // attempt.
  absl::Status InTransaction(Access access, const std::string& what, Body body);
  // Brings the schema to the current version.
  absl::Status Migrate();

  // A pooled connection (possibly not yet connected); blocks while all are
  // in use.
  PgConnection Take() ABSL_LOCKS_EXCLUDED(mu_);
  void Give(PgConnection connection) ABSL_LOCKS_EXCLUDED(mu_);
  // Connects `conn` unless it is healthy; UNAVAILABLE if that fails.
  absl::Status EnsureConnected(PgConnection& conn);
  // GroupCommit's batch runner: one transaction (retried as a whole) around
  // the batch.
  void RunWriteBatch(absl::Span<GroupCommit::Write* const> batch);

  // The connection and attempt of the batch being committed, for the writes'
  // `apply`, which run on the batch leader's thread while it runs
  // RunWriteBatch (GroupCommit runs one batch at a time); null otherwise.
  PgConnection* batch_connection_ = nullptr;
  const Attempt* batch_attempt_ = nullptr;

  const std::string uri_;
  const PostgresOptions options_;
  Mutex mu_;
  std::vector<PgConnection> idle_ ABSL_GUARDED_BY(mu_);
  int free_slots_ ABSL_GUARDED_BY(mu_);
  Mutex probe_mu_;
  PgConnection probe_ ABSL_GUARDED_BY(probe_mu_);
  GroupCommit commits_;
};

namespace postgres_storage_internal {

// The migrations of this build, by increasing version from 1; the same
// versions as SQLite's (sqlite_storage_internal::Migrations).
struct Migration {
  int version;
  const char* sql;
  // Run after `sql`, in its transaction, when a step needs more than SQL
  // (null: nothing).
  absl::Status (*then)(PgConnection& conn) = nullptr;
};
absl::Span<const Migration> Migrations();

}  // namespace postgres_storage_internal

}  // namespace metaopt::storage

#endif  // METAOPT_CORE_STORAGE_POSTGRES_STORAGE_H_
