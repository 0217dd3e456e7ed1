// Durable state of studies and trials.
#ifndef METAOPT_CORE_STORAGE_STORAGE_H_
#define METAOPT_CORE_STORAGE_STORAGE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "metaopt/v1/study.pb.h"

namespace metaopt::storage {

// A study's identity: studies are namespaced by owner (the authenticated
// caller; "" when the server runs without authentication, and for every study
// of a database written before owners existed), so two owners may each have a
// study with the same id.
struct StudyKey {
  std::string owner;
  std::string study_id;

  friend bool operator==(const StudyKey& a, const StudyKey& b) {
    return a.owner == b.owner && a.study_id == b.study_id;
  }
  template <typename H>
  friend H AbslHashValue(H h, const StudyKey& key) {
    return H::combine(std::move(h), key.owner, key.study_id);
  }
};

// `study "id"`, plus ` of owner "o"` for a non-empty owner: for messages.
std::string Describe(const StudyKey& key);

// One intermediate value of trial `trial_id` (StudyWrite::intermediate_values).
struct TrialValue {
  int64_t trial_id = 0;
  v1::IntermediateValue value;
};

// Changes to one study that Storage::WriteStudy stores in one transaction. It
// views the caller's values, which must outlive the call.
//
// A trial's intermediate values are stored apart from its record, one row per
// (trial, step), so that recording one costs the same however many the trial
// holds; reads (LoadTrials, LoadChangesSince) return every trial with its
// values merged in, by increasing step.
struct StudyWrite {
  // Inserted or replaced by study and trial id; of two with the same id the
  // later wins. A trial's intermediate_values are stored as its value rows
  // (each replacing the stored value of its step); the values of other steps
  // stay, so a trial written without intermediate values keeps its stored
  // ones.
  absl::Span<const v1::Trial> trials;
  // Replaces the stored policy state when set; the stored one is kept
  // otherwise.
  std::optional<std::string_view> policy_state;
  // Compare-and-set: when set, the write is stored only if the study's version
  // (see Storage::GetStudyVersion) is this value, and is ABORTED with nothing
  // stored otherwise. This is how several processes sharing one database
  // serialize their changes of one study.
  std::optional<int64_t> expected_version;
  // Replaces the stored study record with StoredStudy(*study) when set (its
  // owner and study_id must be the key's; create_time and spec should be
  // kept: the engine takes another record for the study deleted and created
  // again). The engine stores its FineTune runs so.
  const v1::Study* study = nullptr;
  // Stored after `trials`, each replacing the stored value of its (trial,
  // step). Its trial must be stored or among `trials` (NOT_FOUND otherwise,
  // nothing stored); LoadChangesSince counts it as a change of that trial.
  absl::Span<const TrialValue> intermediate_values;
};

// A write started by Storage::StartWriteStudy and not yet known to be
// stored. Thread-safe.
class PendingWrite {
 public:
  virtual ~PendingWrite() = default;
  // Returns once the write is durable (OK) or has failed (its error: nothing
  // of it was stored). May be called more than once, from any thread.
  virtual absl::Status Wait() = 0;
  // The write's status once it is done; std::nullopt while it is pending.
  virtual std::optional<absl::Status> Poll() const = 0;
};

// What is stored of a study: its owner, id, spec, create time, bound model,
// metadata and FineTune runs (the fields of v1::Study other than the derived
// trial_count / best_trial / state / update_time, which the engine computes
// from trials). Implementations are
// thread-safe; every mutating call is one transaction that is durable when it
// returns OK (an acknowledged write survives kill -9). Values are copied in and
// out, never shared.
class Storage {
 public:
  virtual ~Storage() = default;

  // Creates the study under (study.owner(), study.study_id()) at version 0.
  // ALREADY_EXISTS if that key is taken; INVALID_ARGUMENT if the id is empty;
  // RESOURCE_EXHAUSTED (and nothing stored) if `max_studies_of_owner` > 0 and
  // the owner already holds that many studies. The count and the insert are
  // one step, also for concurrent creates through other Storage objects on the
  // same database.
  virtual absl::Status CreateStudy(const v1::Study& study,
                                   int64_t max_studies_of_owner) = 0;
  // CreateStudy without a limit.
  absl::Status CreateStudy(const v1::Study& study) {
    return CreateStudy(study, 0);
  }
  // NOT_FOUND if absent.
  virtual absl::StatusOr<v1::Study> GetStudy(const StudyKey& key) = 0;
  // Up to `limit` studies of `owner` with study_id > `after_study_id`, ordered
  // by study_id (byte-wise), so passing the last id returned pages through all
  // of the owner's studies. Other owners' studies are never returned. A study
  // whose stored record does not parse comes with only owner and study_id
  // set, so that one damaged study does not hide the others (GetStudy reports
  // the damage). INVALID_ARGUMENT if limit <= 0.
  virtual absl::StatusOr<std::vector<v1::Study>> ListStudies(
      std::string_view owner, std::string_view after_study_id, int limit) = 0;
  // How many studies `owner` has.
  virtual absl::StatusOr<int64_t> CountStudies(std::string_view owner) = 0;
  // Removes the study, its trials and its surrogate state, whether or not its
  // records parse. NOT_FOUND if absent.
  virtual absl::Status DeleteStudy(const StudyKey& key) = 0;

  // Stores every change of `write` in one transaction: all of them or none,
  // and adds one to the study's version. Trials not named are kept. NOT_FOUND
  // if the study is absent; ABORTED if write.expected_version is set and is
  // not the study's version.
  virtual absl::Status WriteStudy(const StudyKey& key,
                                  const StudyWrite& write) = 0;
  // WriteStudy in two steps, so that a caller can release its own locks
  // before waiting for the sync: queues `write` (its values are copied) and
  // returns at once. An error means that nothing was stored; null, that the
  // write is already durable; otherwise the write is durable once the
  // PendingWrite's Wait() returns OK. `after` (null, or a pending write of the
  // same study that this one builds on, from this Storage) is stored first,
  // and if it fails this one fails ABORTED, storing nothing. Writes of one
  // study are stored in the order they were started. The default implementation
  // waits for `after`, then calls WriteStudy (and returns null or its error).
  virtual absl::StatusOr<std::shared_ptr<PendingWrite>> StartWriteStudy(
      const StudyKey& key, const StudyWrite& write,
      const std::shared_ptr<PendingWrite>& after);
  // The study's version: 0 when created, one more after each WriteStudy (by
  // any process on the same database). A cached copy of the study's trials and
  // policy state is current as long as this is unchanged. NOT_FOUND if absent.
  virtual absl::StatusOr<int64_t> GetStudyVersion(const StudyKey& key) = 0;

  // WriteStudy of `trials` alone.
  absl::Status PutTrials(const StudyKey& key,
                         absl::Span<const v1::Trial> trials) {
    return WriteStudy(key, {trials, std::nullopt});
  }
  // All trials of the study by increasing id. NOT_FOUND if the study is absent.
  virtual absl::StatusOr<std::vector<v1::Trial>> LoadTrials(
      const StudyKey& key) = 0;

  // What changed since the study was at `version`: in one consistent read,
  // its version now, the trials stored by the writes after `version` (by
  // increasing id), and its policy state if one of those writes replaced it.
  // Applied to a copy at `version`, they give the study at the returned
  // version. NOT_FOUND if the study is absent.
  struct Changes {
    int64_t version = 0;
    std::vector<v1::Trial> trials;
    std::optional<std::string> policy_state;
  };
  virtual absl::StatusOr<Changes> LoadChangesSince(const StudyKey& key,
                                                   int64_t version) = 0;

  // Opaque per-study surrogate/policy state (a serialized proto), replaced as a
  // whole: WriteStudy of `blob` alone. NOT_FOUND if the study is absent.
  absl::Status PutPolicyState(const StudyKey& key, std::string_view blob) {
    return WriteStudy(key, {{}, blob});
  }
  // std::nullopt if none was stored. NOT_FOUND if the study is absent.
  virtual absl::StatusOr<std::optional<std::string>> GetPolicyState(
      const StudyKey& key) = 0;

  // OK if the database answers now: one quick attempt, no retries, for
  // readiness checks. Storage in this process (memory, a SQLite file) always
  // answers.
  virtual absl::Status CheckReachable() { return absl::OkStatus(); }
};

struct SqliteOptions {
  // Milliseconds a writer waits for a lock held by another connection.
  int busy_timeout_ms = 5000;
  // Called after each successful write transaction with how long its COMMIT
  // took (the WAL append and sync that make it durable), on the writing
  // thread; must be thread-safe and quick. The server feeds its commit
  // latency histogram from it, so storage stays free of metrics. Empty: none.
  std::function<void(absl::Duration)> on_commit;
};

// Opens (creating if needed) the SQLite database at `path` in WAL mode with
// synchronous=FULL, and brings its schema to the current version (a
// schema_version table drives migrations). A database written by a newer
// metaopt (higher schema version) is FAILED_PRECONDITION.
absl::StatusOr<std::unique_ptr<Storage>> OpenSqliteStorage(
    const std::string& path, const SqliteOptions& options = {});

struct PostgresOptions {
  // Connections kept open to the server; calls beyond them wait for one.
  int pool_size = 4;
  // Seconds one connection attempt may take (libpq's connect_timeout; a value
  // in the URI takes precedence).
  int connect_timeout_seconds = 5;
  // How long one call keeps retrying, with exponential backoff, while the
  // server cannot be reached (a restart, a failover, a dropped connection)
  // before it returns UNAVAILABLE.
  absl::Duration retry_budget = absl::Seconds(15);
  // As SqliteOptions::on_commit: the duration of each successful write
  // COMMIT.
  std::function<void(absl::Duration)> on_commit;
};

// Connects to the PostgreSQL database named by `uri` (a libpq connection URI,
// postgresql://user:password@host:port/dbname?param=value), and brings its
// schema to the current version (the same versions as SQLite's). Several
// processes may open the same database at once. INVALID_ARGUMENT for a URI
// libpq rejects; UNAVAILABLE when the server cannot be reached within
// options.retry_budget; FAILED_PRECONDITION for a schema newer than this
// build's. Messages show the URI with its password replaced by "***".
absl::StatusOr<std::unique_ptr<Storage>> OpenPostgresStorage(
    const std::string& uri, const PostgresOptions& options = {});

// Opens the database that the server's --db value `db` names:
//   postgresql://... or postgres://...  PostgreSQL (a libpq connection URI)
//   sqlite:PATH or PATH                  the SQLite file PATH
// INVALID_ARGUMENT naming the value and the rule for an empty value or another
// URI scheme (mysql://...); otherwise as OpenSqliteStorage /
// OpenPostgresStorage, with messages that name the database as
// DescribeDatabase does.
absl::StatusOr<std::unique_ptr<Storage>> OpenStorage(
    const std::string& db, const SqliteOptions& sqlite_options,
    const PostgresOptions& postgres_options);

// `db` (a --db value) for messages and logs: a PostgreSQL URI with its
// password replaced by "***", anything else as is.
std::string DescribeDatabase(const std::string& db);

// The schema version this build writes.
int CurrentSchemaVersion();

// A thread-safe Storage held in memory (lost when destroyed), for tests and
// benchmarks. It has the same contracts as the SQLite storage, without
// durability.
absl::StatusOr<std::unique_ptr<Storage>> OpenInMemoryStorage();

// The part of `study` that Storage keeps: a copy with the derived fields
// (trial_count, best_trial, state, update_time) cleared. GetStudy and
// ListStudies return exactly this for a created study.
v1::Study StoredStudy(const v1::Study& study);

}  // namespace metaopt::storage

#endif  // METAOPT_CORE_STORAGE_STORAGE_H_
