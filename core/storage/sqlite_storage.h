// Storage on one SQLite database file (WAL mode, synchronous=FULL, versioned
// schema).
#ifndef METAOPT_CORE_STORAGE_SQLITE_STORAGE_H_
#define METAOPT_CORE_STORAGE_SQLITE_STORAGE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/common/mutex.h"
#include "core/storage/group_commit.h"
#include "core/storage/sqlite_util.h"
#include "core/storage/storage.h"
#include "core/storage/stored_records.h"
#include "metaopt/v1/study.pb.h"

namespace metaopt::storage {

// Storage backed by a SQLite file. Rows hold key columns plus serialized
// protos (schema version 4):
//   studies(owner, study_id, create_time_micros, study, version)  the stored
//       part of v1::Study (see StoredStudy) and its write count
//   trials(owner, study_id, trial_id, state, client_id, trial,
//          written_version)  the trial without its intermediate values, and
//          the study version of its last write
//   intermediate_values(owner, study_id, trial_id, step, value)  one
//          v1::IntermediateValue a row
//   policy_state(owner, study_id, state, written_version)
// Thread-safe: one connection, guarded by `mu_`; every call holds `mu_` for its
// whole duration (but GetStudyVersion, on a read-only connection of its own),
// and statements come from the connection's cache, one user at a time. Each
// mutation is one BEGIN IMMEDIATE ... COMMIT transaction, durable on return
// (WAL + synchronous=FULL). Concurrent WriteStudy calls are group-committed
// (GroupCommit): the writes queued while one transaction commits share the
// next one, each in a savepoint of its own, so one fsync serves many writes;
// each call still returns only after the commit that holds its write. Other
// processes or instances may use the same file; they wait up to
// `busy_timeout_ms` for its write lock, then get UNAVAILABLE. A stored blob
// that fails to parse is DATA_LOSS naming the study (and trial).
class SqliteStorage : public Storage {
 public:
  static absl::StatusOr<std::unique_ptr<SqliteStorage>> Open(
      const std::string& path, const SqliteOptions& options);

  SqliteStorage(const SqliteStorage&) = delete;
  SqliteStorage& operator=(const SqliteStorage&) = delete;

  using Storage::CreateStudy;
  absl::Status CreateStudy(const v1::Study& study,
                           int64_t max_studies_of_owner) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<v1::Study> GetStudy(const StudyKey& key) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::vector<v1::Study>> ListStudies(
      std::string_view owner, std::string_view after_study_id,
      int limit) override ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<int64_t> CountStudies(std::string_view owner) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status DeleteStudy(const StudyKey& key) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status WriteStudy(const StudyKey& key, const StudyWrite& write) override
      ABSL_LOCKS_EXCLUDED(mu_);
  // Queued on the group commit without waiting for it; the writes of one
  // study may share a batch (in their order).
  absl::StatusOr<std::shared_ptr<PendingWrite>> StartWriteStudy(
      const StudyKey& key, const StudyWrite& write,
      const std::shared_ptr<PendingWrite>& after) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<int64_t> GetStudyVersion(const StudyKey& key) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::vector<v1::Trial>> LoadTrials(
      const StudyKey& key) override ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<Changes> LoadChangesSince(const StudyKey& key,
                                           int64_t version) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::optional<std::string>> GetPolicyState(
      const StudyKey& key) override ABSL_LOCKS_EXCLUDED(mu_);

 private:
  friend class SqliteStorageTestAccess;

  SqliteStorage(Database db, std::optional<Database> version_db)
      : db_(std::move(db)),
        version_db_(std::move(version_db)),
        commits_(
            [this](absl::Span<GroupCommit::Write* const> batch) {
              RunWriteBatch(batch);
            },
            GroupCommit::Options{.writes_of_a_study_share_a_batch = true}) {}

  // A WriteStudy's values, serialized and owned, for a queued write.
  struct PreparedWrite {
    TrialRows trials;
    std::optional<std::string> policy_state;
    std::optional<int64_t> expected_version;
    // The serialized write.study, if it was set.
    std::optional<std::string> study_blob;
  };
  static absl::StatusOr<PreparedWrite> Prepare(const StudyKey& key,
                                               const StudyWrite& write);

  // GroupCommit's batch runner: one BEGIN IMMEDIATE ... COMMIT around the
  // batch, a savepoint around each write.
  void RunWriteBatch(absl::Span<GroupCommit::Write* const> batch)
      ABSL_LOCKS_EXCLUDED(mu_);
  // A WriteStudy's changes, inside the batch's transaction.
  absl::Status ApplyWrite(const StudyKey& key, const PreparedWrite& write)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // OK if the study exists, NOT_FOUND otherwise. Call inside a transaction.
  absl::Status CheckStudyExists(const StudyKey& key)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The study's version, or NOT_FOUND.
  absl::StatusOr<int64_t> ReadVersion(const StudyKey& key)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Studies of `owner`.
  absl::StatusOr<int64_t> CountLocked(std::string_view owner)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Mutex mu_;
  Database db_ ABSL_GUARDED_BY(mu_);
  // A read-only connection for GetStudyVersion, which every engine call
  // makes: in WAL mode it reads the last committed version without waiting
  // for `mu_`, which a batch holds across its sync. Empty for ":memory:".
  Mutex version_mu_;
  std::optional<Database> version_db_ ABSL_GUARDED_BY(version_mu_);
  GroupCommit commits_;
};

namespace sqlite_storage_internal {

// One step of the schema: `sql` brings a database at version `version - 1` to
// `version`.
struct Migration {
  int version;
  const char* sql;
  // Run after `sql`, in its transaction, when a step needs more than SQL
  // (null: nothing).
  absl::Status (*then)(Database& db) = nullptr;
};

// The migrations of this build, by increasing version starting at 1 (version 1
// is the initial schema). To change the schema append an entry; never edit a
// released one.
absl::Span<const Migration> Migrations();

// Reads the schema version of `db` (0 for a database without a schema_version
// table).
absl::StatusOr<int> ReadSchemaVersion(Database& db);

// Brings `db` to the last version of `migrations`, applying each pending
// migration and the version bump in one transaction. FAILED_PRECONDITION if
// `db` is at a higher version than the last migration (written by a newer
// metaopt); then nothing is changed.
absl::Status Migrate(Database& db, absl::Span<const Migration> migrations);

}  // namespace sqlite_storage_internal

}  // namespace metaopt::storage

#endif  // METAOPT_CORE_STORAGE_SQLITE_STORAGE_H_
