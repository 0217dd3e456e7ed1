#include "core/storage/postgres_storage.h"

#include <algorithm>
#include <random>
#include <tuple>
#include <utility>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/common/logging.h"
#include "core/common/status_macros.h"
#include "core/storage/stored_records.h"

namespace metaopt::storage {
namespace postgres_storage_internal {
namespace {

// Version 1: the initial schema (as SQLite's version 1).
constexpr char kSchemaV1[] = R"sql(
CREATE TABLE studies (
  study_id BYTEA NOT NULL,
  create_time_micros BIGINT NOT NULL,
  study BYTEA NOT NULL,
  CONSTRAINT studies_key PRIMARY KEY (study_id)
);
CREATE TABLE trials (
  study_id BYTEA NOT NULL,
  trial_id BIGINT NOT NULL,
  state INTEGER NOT NULL,
  client_id BYTEA NOT NULL,
  trial BYTEA NOT NULL,
  CONSTRAINT trials_key PRIMARY KEY (study_id, trial_id),
  CONSTRAINT trials_study FOREIGN KEY (study_id) REFERENCES studies (study_id)
);
CREATE INDEX trials_by_state ON trials (study_id, state);
CREATE TABLE policy_state (
  study_id BYTEA NOT NULL,
  state BYTEA NOT NULL,
  CONSTRAINT policy_state_key PRIMARY KEY (study_id),
  CONSTRAINT policy_state_study FOREIGN KEY (study_id)
    REFERENCES studies (study_id)
);
)sql";

// Version 2: studies are keyed by (owner, study_id); existing studies move to
// the empty owner. PostgreSQL changes keys in place.
constexpr char kSchemaV2[] = R"sql(
ALTER TABLE trials DROP CONSTRAINT trials_study;
ALTER TABLE policy_state DROP CONSTRAINT policy_state_study;
ALTER TABLE studies ADD COLUMN owner BYTEA NOT NULL DEFAULT ''::bytea;
ALTER TABLE studies DROP CONSTRAINT studies_key,
  ADD CONSTRAINT studies_key PRIMARY KEY (owner, study_id);
ALTER TABLE trials ADD COLUMN owner BYTEA NOT NULL DEFAULT ''::bytea;
ALTER TABLE trials DROP CONSTRAINT trials_key,
  ADD CONSTRAINT trials_key PRIMARY KEY (owner, study_id, trial_id),
  ADD CONSTRAINT trials_study FOREIGN KEY (owner, study_id)
    REFERENCES studies (owner, study_id);
ALTER TABLE policy_state ADD COLUMN owner BYTEA NOT NULL DEFAULT ''::bytea;
ALTER TABLE policy_state DROP CONSTRAINT policy_state_key,
  ADD CONSTRAINT policy_state_key PRIMARY KEY (owner, study_id),
  ADD CONSTRAINT policy_state_study FOREIGN KEY (owner, study_id)
    REFERENCES studies (owner, study_id);
DROP INDEX trials_by_state;
CREATE INDEX trials_by_state ON trials (owner, study_id, state);
)sql";

// Version 3: the per-study version and the version each trial and policy
// state was written at (as SQLite's), and the token of the last write
// (PostgreSQL only: see PostgresStorage).
constexpr char kSchemaV3[] = R"sql(
ALTER TABLE studies ADD COLUMN version BIGINT NOT NULL DEFAULT 0;
ALTER TABLE studies ADD COLUMN write_token BYTEA NOT NULL DEFAULT ''::bytea;
ALTER TABLE trials ADD COLUMN written_version BIGINT NOT NULL DEFAULT 0;
ALTER TABLE policy_state ADD COLUMN written_version BIGINT NOT NULL DEFAULT 0;
CREATE INDEX trials_by_written_version ON trials (owner, study_id,
                                                  written_version);
)sql";

// Version 4: intermediate values apart from their trials, one row per
// (trial, step) (as SQLite's); the values embedded in stored trials move to
// rows (MoveEmbeddedValues).
constexpr char kSchemaV4[] = R"sql(
CREATE TABLE intermediate_values (
  owner BYTEA NOT NULL,
  study_id BYTEA NOT NULL,
  trial_id BIGINT NOT NULL,
  step BIGINT NOT NULL,
  value BYTEA NOT NULL,
  CONSTRAINT intermediate_values_key
    PRIMARY KEY (owner, study_id, trial_id, step),
  CONSTRAINT intermediate_values_study FOREIGN KEY (owner, study_id)
    REFERENCES studies (owner, study_id)
);
)sql";

// Moves the intermediate values embedded in stored trial records to rows and
// rewrites those records without them; a record that does not parse is left
// as it is (reads report it).
absl::Status MoveEmbeddedValues(PgConnection& conn) {
  METAOPT_ASSIGN_OR_RETURN(
      PgResult rows,
      conn.Query("SELECT owner, study_id, trial_id, trial FROM trials"));
  for (int i = 0; i < rows.rows(); ++i) {
    v1::Trial trial;
    if (!trial.ParseFromString(rows.Bytes(i, 3)) ||
        trial.intermediate_values().empty()) {
      continue;
    }
    const std::string owner = rows.Bytes(i, 0);
    const std::string study_id = rows.Bytes(i, 1);
    const int64_t trial_id = rows.Int(i, 2);
    for (const v1::IntermediateValue& value : trial.intermediate_values()) {
      METAOPT_RETURN_IF_ERROR(
          conn.Query("INSERT INTO intermediate_values (owner, study_id, "
                     "trial_id, step, value) VALUES ($1, $2, $3, $4, $5) ON "
                     "CONFLICT (owner, study_id, trial_id, step) DO UPDATE "
                     "SET value = excluded.value",
                     {PgParam::Bytes(owner), PgParam::Bytes(study_id),
                      PgParam::Int(trial_id), PgParam::Int(value.step()),
                      PgParam::Bytes(value.SerializeAsString())})
              .status());
    }
    trial.clear_intermediate_values();
    METAOPT_RETURN_IF_ERROR(
        conn.Query("UPDATE trials SET trial = $4 WHERE owner = $1 AND "
                   "study_id = $2 AND trial_id = $3",
                   {PgParam::Bytes(owner), PgParam::Bytes(study_id),
                    PgParam::Int(trial_id),
                    PgParam::Bytes(trial.SerializeAsString())})
            .status());
  }
  return absl::OkStatus();
}

constexpr Migration kMigrations[] = {
    {1, kSchemaV1},
    {2, kSchemaV2},
    {3, kSchemaV3},
    {4, kSchemaV4, MoveEmbeddedValues},
};

}  // namespace

absl::Span<const Migration> Migrations() { return kMigrations; }

}  // namespace postgres_storage_internal

namespace {

using postgres_storage_internal::Migrations;

// Advisory lock keys (pg_advisory_xact_lock(class, id)) of this schema.
constexpr int kMigrationLockClass = 0x6d6f0001;  // id 0: the schema
constexpr int kOwnerLockClass = 0x6d6f0002;      // id: hash of the owner

constexpr absl::Duration kFirstBackoff = absl::Milliseconds(50);
constexpr absl::Duration kMaxBackoff = absl::Seconds(1);

std::vector<PgParam> KeyParams(const StudyKey& key) {
  return {PgParam::Bytes(key.owner), PgParam::Bytes(key.study_id)};
}

// A random token naming one write call (and all of its attempts).
std::string NewWriteToken() {
  thread_local absl::BitGen gen;
  std::string token(16, '\0');
  for (char& c : token) c = static_cast<char>(absl::Uniform<uint8_t>(gen));
  return token;
}

// Locks the study's row for this transaction and returns its version and
// write token; NOT_FOUND if absent.
absl::StatusOr<std::pair<int64_t, std::string>> LockStudy(PgConnection& conn,
                                                          const StudyKey& key) {
  METAOPT_ASSIGN_OR_RETURN(
      PgResult row,
      conn.Query("SELECT version, write_token FROM studies WHERE owner = $1 "
                 "AND study_id = $2 FOR UPDATE",
                 KeyParams(key)));
  if (row.rows() == 0) return StudyNotFound(key);
  return std::make_pair(row.Int(0, 0), row.Bytes(0, 1));
}

// The study's version (without locking); NOT_FOUND if absent.
absl::StatusOr<int64_t> ReadStudyVersion(PgConnection& conn,
                                         const StudyKey& key) {
  METAOPT_ASSIGN_OR_RETURN(
      PgResult row,
      conn.Query("SELECT version FROM studies WHERE owner = $1 AND "
                 "study_id = $2",
                 KeyParams(key)));
  if (row.rows() == 0) return StudyNotFound(key);
  return row.Int(0, 0);
}

// Appends the trials of (trial_id, trial) rows to `trials`.
absl::Status AppendTrials(const StudyKey& key, const PgResult& rows,
                          std::vector<v1::Trial>* trials) {
  trials->reserve(trials->size() + rows.rows());
  for (int i = 0; i < rows.rows(); ++i) {
    METAOPT_ASSIGN_OR_RETURN(v1::Trial trial,
                             ParseTrial(key, rows.Int(i, 0), rows.Bytes(i, 1)));
    trials->push_back(std::move(trial));
  }
  return absl::OkStatus();
}

// Merges the (trial_id, step, value) rows into `trials`.
absl::Status MergeValues(const StudyKey& key, const PgResult& rows,
                         std::vector<v1::Trial>& trials) {
  ValueMerger merger(key, trials);
  for (int i = 0; i < rows.rows(); ++i) {
    METAOPT_RETURN_IF_ERROR(
        merger.Add(rows.Int(i, 0), rows.Int(i, 1), rows.Bytes(i, 2)));
  }
  return absl::OkStatus();
}

absl::Status CheckStudyExists(PgConnection& conn, const StudyKey& key) {
  METAOPT_ASSIGN_OR_RETURN(
      PgResult row,
      conn.Query("SELECT 1 FROM studies WHERE owner = $1 AND study_id = $2",
                 KeyParams(key)));
  if (row.rows() == 0) return StudyNotFound(key);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Storage>> OpenPostgresStorage(
    const std::string& uri, const PostgresOptions& options) {
  METAOPT_ASSIGN_OR_RETURN(std::unique_ptr<PostgresStorage> storage,
                           PostgresStorage::Open(uri, options));
  return std::unique_ptr<Storage>(std::move(storage));
}

PostgresStorage::PostgresStorage(std::string uri, PostgresOptions options)
    : uri_(std::move(uri)),
      options_(std::move(options)),
      free_slots_(options_.pool_size),
      commits_([this](absl::Span<GroupCommit::Write* const> batch) {
        RunWriteBatch(batch);
      }) {}

absl::StatusOr<std::unique_ptr<PostgresStorage>> PostgresStorage::Open(
    const std::string& uri, const PostgresOptions& options) {
  METAOPT_RETURN_IF_ERROR(CheckPostgresUri(uri));
  const std::string where = RedactPostgresUri(uri);
  if (options.pool_size < 1 || options.pool_size > 1000) {
    return absl::InvalidArgumentError(
        absl::StrCat("PostgreSQL ", where, ": pool_size ", options.pool_size,
                     " must be in [1, 1000]"));
  }
  if (options.connect_timeout_seconds < 1 ||
      options.retry_budget < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("PostgreSQL ", where, ": connect_timeout_seconds ",
                     options.connect_timeout_seconds,
                     " must be >= 1 and retry_budget >= 0"));
  }
  std::unique_ptr<PostgresStorage> storage(new PostgresStorage(uri, options));
  const absl::Status migrated = storage->Migrate();
  if (!migrated.ok()) {
    return absl::Status(migrated.code(),
                        absl::StrCat("opening PostgreSQL database ", where,
                                     ": ", migrated.message()));
  }
  return storage;
}

PgConnection PostgresStorage::Take() {
  MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](int* slots) { return *slots > 0; }, &free_slots_));
  --free_slots_;
  if (idle_.empty()) return PgConnection();
  PgConnection connection = std::move(idle_.back());
  idle_.pop_back();
  return connection;
}

void PostgresStorage::Give(PgConnection connection) {
  MutexLock lock(&mu_);
  if (connection.healthy()) idle_.push_back(std::move(connection));
  ++free_slots_;
}

absl::Status PostgresStorage::EnsureConnected(PgConnection& conn) {
  if (conn.healthy()) return absl::OkStatus();
  METAOPT_ASSIGN_OR_RETURN(
      conn, PgConnection::Connect(uri_, options_.connect_timeout_seconds));
  return absl::OkStatus();
}

absl::Status PostgresStorage::InTransaction(Access access,
                                            const std::string& what,
                                            Body body) {
  const absl::Time deadline = absl::Now() + options_.retry_budget;
  absl::Duration backoff = kFirstBackoff;
  Attempt attempt;
  thread_local absl::BitGen jitter;
  for (int attempts = 1;; ++attempts) {
    PgConnection conn = Take();
    absl::Status status = EnsureConnected(conn);
    bool commit_sent = false;
    const bool transaction = access != Access::kStatement;
    if (status.ok() && transaction) {
      status = conn.Exec(access == Access::kWrite
                             ? "BEGIN"
                             : "BEGIN ISOLATION LEVEL REPEATABLE READ READ "
                               "ONLY");
    }
    if (status.ok()) status = body(conn, attempt);
    if (status.ok() && !transaction) {
      // Done: the statement committed on its own.
    } else if (status.ok()) {
      const absl::Time start = absl::Now();
      commit_sent = true;
      status = conn.Exec("COMMIT");
      if (status.ok() && access == Access::kWrite && options_.on_commit) {
        options_.on_commit(absl::Now() - start);
      }
    } else if (conn.healthy() && transaction) {
      // The transaction is over either way; a failed ROLLBACK breaks the
      // connection, which is then dropped.
      conn.Exec("ROLLBACK").IgnoreError();
    }
    Give(std::move(conn));
    if (status.ok() || !absl::IsUnavailable(status)) return status;
    if (commit_sent) attempt.commit_unknown = true;
    const absl::Time now = absl::Now();
    if (now + backoff > deadline) {
      // The error reaches clients: it names the backend, not the database's
      // address or user (libpq's message does); the log has the cause.
      const std::string over =
          absl::FormatDuration(options_.retry_budget - (deadline - now));
      LogWarning(absl::StrCat(what, ": giving up after ", attempts,
                              " attempt(s) over ", over,
                              "; last error: ", status.message()));
      return absl::UnavailableError(absl::StrCat(
          what, ": the PostgreSQL database is unavailable (", attempts,
          " attempt(s) over ", over,
          "); the server's log has the cause; retry later"));
    }
    if (attempts == 1) {
      LogWarning(absl::StrCat(what, ": ", status.message(),
                              "; retrying with backoff"));
    }
    absl::SleepFor(backoff *
                   absl::Uniform(jitter, 0.5, 1.0));  // "equal jitter"
    backoff = std::min(backoff * 2, kMaxBackoff);
  }
}

absl::Status PostgresStorage::Migrate() {
  const int target = static_cast<int>(Migrations().size());
  bool done = false;
  while (!done) {
    METAOPT_RETURN_IF_ERROR(InTransaction(
        Access::kWrite, "migrating the schema",
        [&](PgConnection& conn, const Attempt&) -> absl::Status {
          // Concurrent openers wait here, then see the version bumped.
          METAOPT_RETURN_IF_ERROR(
              conn.Query("SELECT pg_advisory_xact_lock($1, 0)",
                         {PgParam::Int(kMigrationLockClass)})
                  .status());
          METAOPT_RETURN_IF_ERROR(
              conn.Exec("CREATE TABLE IF NOT EXISTS schema_version (version "
                        "INTEGER NOT NULL)"));
          METAOPT_ASSIGN_OR_RETURN(
              PgResult row, conn.Query("SELECT COALESCE(MAX(version), 0) FROM "
                                       "schema_version"));
          const int version = static_cast<int>(row.Int(0, 0));
          if (version > target) {
            return absl::FailedPreconditionError(
                absl::StrCat("database schema version ", version,
                             " is newer than the newest this build knows (",
                             target, "); it was written by a newer metaopt"));
          }
          done = version == target;
          if (done) return absl::OkStatus();
          const auto& step = Migrations()[version];
          absl::Status applied = conn.Exec(step.sql);
          if (applied.ok() && step.then != nullptr) applied = step.then(conn);
          if (!applied.ok()) {
            return absl::Status(
                applied.code(),
                absl::StrCat("migrating schema to version ", step.version, ": ",
                             applied.message()));
          }
          METAOPT_RETURN_IF_ERROR(conn.Exec("DELETE FROM schema_version"));
          return conn
              .Query("INSERT INTO schema_version (version) VALUES ($1)",
                     {PgParam::Int(step.version)})
              .status();
        }));
  }
  return absl::OkStatus();
}

absl::Status PostgresStorage::CreateStudy(const v1::Study& study,
                                          int64_t max_studies_of_owner) {
  if (study.study_id().empty())
    return absl::InvalidArgumentError("study_id must not be empty");
  const StudyKey key{study.owner(), study.study_id()};
  METAOPT_ASSIGN_OR_RETURN(const std::string blob, SerializeStudy(study));
  const std::string token = NewWriteToken();
  return InTransaction(
      Access::kWrite, absl::StrCat("creating ", Describe(key)),
      [&](PgConnection& conn, const Attempt& attempt) -> absl::Status {
        if (max_studies_of_owner > 0) {
          // Serializes the count and insert of concurrent creates of one
          // owner, in every process.
          METAOPT_RETURN_IF_ERROR(
              conn.Query("SELECT pg_advisory_xact_lock($1, "
                         "hashtext(encode($2::bytea, 'hex')))",
                         {PgParam::Int(kOwnerLockClass),
                          PgParam::Bytes(key.owner)})
                  .status());
        }
        METAOPT_ASSIGN_OR_RETURN(
            PgResult existing,
            conn.Query("SELECT write_token FROM studies WHERE owner = $1 AND "
                       "study_id = $2",
                       KeyParams(key)));
        if (existing.rows() > 0) {
          // Our own create, retried after its COMMIT's answer was lost.
          if (attempt.commit_unknown && existing.Bytes(0, 0) == token)
            return absl::OkStatus();
          return absl::AlreadyExistsError(
              absl::StrCat(Describe(key), " already exists"));
        }
        if (max_studies_of_owner > 0) {
          METAOPT_ASSIGN_OR_RETURN(
              PgResult count,
              conn.Query("SELECT count(*) FROM studies WHERE owner = $1",
                         {PgParam::Bytes(key.owner)}));
          if (count.Int(0, 0) >= max_studies_of_owner) {
            return OwnerQuotaExhausted(key, count.Int(0, 0),
                                       max_studies_of_owner);
          }
        }
        METAOPT_ASSIGN_OR_RETURN(
            PgResult inserted,
            conn.Query("INSERT INTO studies (owner, study_id, "
                       "create_time_micros, study, write_token) VALUES ($1, "
                       "$2, $3, $4, $5) ON CONFLICT DO NOTHING",
                       {PgParam::Bytes(key.owner), PgParam::Bytes(key.study_id),
                        PgParam::Int(ToMicros(study.create_time())),
                        PgParam::Bytes(blob), PgParam::Bytes(token)}));
        if (inserted.affected() == 0) {  // a concurrent create won
          return absl::AlreadyExistsError(
              absl::StrCat(Describe(key), " already exists"));
        }
        return absl::OkStatus();
      });
}

absl::StatusOr<v1::Study> PostgresStorage::GetStudy(const StudyKey& key) {
  v1::Study study;
  METAOPT_RETURN_IF_ERROR(InTransaction(
      Access::kStatement, absl::StrCat("reading ", Describe(key)),
      [&](PgConnection& conn, const Attempt&) -> absl::Status {
        METAOPT_ASSIGN_OR_RETURN(
            PgResult row,
            conn.Query("SELECT study FROM studies WHERE owner = $1 AND "
                       "study_id = $2",
                       KeyParams(key)));
        if (row.rows() == 0) return StudyNotFound(key);
        METAOPT_ASSIGN_OR_RETURN(study, ParseStudy(key, row.Bytes(0, 0)));
        return absl::OkStatus();
      }));
  return study;
}

absl::StatusOr<std::vector<v1::Study>> PostgresStorage::ListStudies(
    std::string_view owner, std::string_view after_study_id, int limit) {
  if (limit <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("limit: ", limit, " must be positive"));
  }
  std::vector<v1::Study> studies;
  METAOPT_RETURN_IF_ERROR(InTransaction(
      Access::kStatement, "listing studies",
      [&](PgConnection& conn, const Attempt&) -> absl::Status {
        studies.clear();
        METAOPT_ASSIGN_OR_RETURN(
            PgResult rows,
            conn.Query("SELECT study_id, study FROM studies WHERE owner = $1 "
                       "AND study_id > $2 ORDER BY study_id LIMIT $3",
                       {PgParam::Bytes(owner), PgParam::Bytes(after_study_id),
                        PgParam::Int(limit)}));
        for (int i = 0; i < rows.rows(); ++i) {
          const StudyKey key{std::string(owner), rows.Bytes(i, 0)};
          absl::StatusOr<v1::Study> study = ParseStudy(key, rows.Bytes(i, 1));
          if (!study.ok()) {
            // Listed by its key alone; GetStudy reports the damage.
            study = v1::Study();
            study->set_owner(key.owner);
            study->set_study_id(key.study_id);
          }
          studies.push_back(*std::move(study));
        }
        return absl::OkStatus();
      }));
  return studies;
}

absl::StatusOr<int64_t> PostgresStorage::CountStudies(std::string_view owner) {
  int64_t count = 0;
  METAOPT_RETURN_IF_ERROR(InTransaction(
      Access::kStatement, "counting studies",
      [&](PgConnection& conn, const Attempt&) -> absl::Status {
        METAOPT_ASSIGN_OR_RETURN(
            PgResult row,
            conn.Query("SELECT count(*) FROM studies WHERE owner = $1",
                       {PgParam::Bytes(owner)}));
        count = row.Int(0, 0);
        return absl::OkStatus();
      }));
  return count;
}

absl::Status PostgresStorage::DeleteStudy(const StudyKey& key) {
  return InTransaction(
      Access::kWrite, absl::StrCat("deleting ", Describe(key)),
      [&](PgConnection& conn, const Attempt& attempt) -> absl::Status {
        const absl::Status locked = LockStudy(conn, key).status();
        // Gone after an attempt whose COMMIT's answer was lost: that attempt
        // deleted it.
        if (absl::IsNotFound(locked) && attempt.commit_unknown)
          return absl::OkStatus();
        METAOPT_RETURN_IF_ERROR(locked);
        // Children first, so the foreign keys hold at every statement.
        for (const char* sql :
             {"DELETE FROM intermediate_values WHERE owner = $1 AND "
              "study_id = $2",
              "DELETE FROM trials WHERE owner = $1 AND study_id = $2",
              "DELETE FROM policy_state WHERE owner = $1 AND study_id = $2",
              "DELETE FROM studies WHERE owner = $1 AND study_id = $2"}) {
          METAOPT_RETURN_IF_ERROR(conn.Query(sql, KeyParams(key)).status());
        }
        return absl::OkStatus();
      });
}

absl::Status PostgresStorage::WriteStudy(const StudyKey& key,
                                         const StudyWrite& write) {
  METAOPT_ASSIGN_OR_RETURN(const TrialRows rows, SerializeTrials(key, write));
  METAOPT_ASSIGN_OR_RETURN(const std::string study_blob,
                           SerializeStudyRewrite(key, write));
  const std::string token = NewWriteToken();
  return commits_.Commit(
      key, [&]() -> absl::Status {
        // On the batch leader's thread, inside RunWriteBatch's transaction.
        PgConnection& conn = *batch_connection_;
        const Attempt& attempt = *batch_attempt_;
        METAOPT_ASSIGN_OR_RETURN(auto locked, LockStudy(conn, key));
        const auto& [version, last_token] = locked;
        // Our own write, retried after its COMMIT's answer was lost.
        if (attempt.commit_unknown && last_token == token)
          return absl::OkStatus();
        if (write.expected_version.has_value() &&
            *write.expected_version != version) {
          return VersionConflict(key, *write.expected_version, version);
        }
        for (const TrialRows::Record& record : rows.records) {
          METAOPT_RETURN_IF_ERROR(
              conn.Query(
                      "INSERT INTO trials (owner, study_id, trial_id, state, "
                      "client_id, trial, written_version) VALUES ($1, $2, $3, "
                      "$4, $5, $6, $7) ON CONFLICT (owner, study_id, "
                      "trial_id) DO UPDATE SET state = excluded.state, "
                      "client_id = excluded.client_id, trial = "
                      "excluded.trial, written_version = "
                      "excluded.written_version",
                      {PgParam::Bytes(key.owner), PgParam::Bytes(key.study_id),
                       PgParam::Int(record.id), PgParam::Int(record.state),
                       PgParam::Bytes(record.client_id),
                       PgParam::Bytes(record.blob), PgParam::Int(version + 1)})
                  .status());
        }
        for (const int64_t id : rows.touched) {
          // A value of a trial not written here: the trial must exist, and
          // counts as changed.
          METAOPT_ASSIGN_OR_RETURN(
              PgResult touched,
              conn.Query("UPDATE trials SET written_version = $4 WHERE "
                         "owner = $1 AND study_id = $2 AND trial_id = $3",
                         {PgParam::Bytes(key.owner),
                          PgParam::Bytes(key.study_id), PgParam::Int(id),
                          PgParam::Int(version + 1)}));
          if (touched.affected() != 1) return ValueOfAbsentTrial(key, id);
        }
        for (const TrialRows::Value& value : rows.values) {
          METAOPT_RETURN_IF_ERROR(
              conn.Query(
                      "INSERT INTO intermediate_values (owner, study_id, "
                      "trial_id, step, value) VALUES ($1, $2, $3, $4, $5) ON "
                      "CONFLICT (owner, study_id, trial_id, step) DO UPDATE "
                      "SET value = excluded.value",
                      {PgParam::Bytes(key.owner), PgParam::Bytes(key.study_id),
                       PgParam::Int(value.trial_id), PgParam::Int(value.step),
                       PgParam::Bytes(value.blob)})
                  .status());
        }
        if (write.policy_state.has_value()) {
          METAOPT_RETURN_IF_ERROR(
              conn.Query(
                      "INSERT INTO policy_state (owner, study_id, state, "
                      "written_version) VALUES ($1, $2, $3, $4) ON CONFLICT "
                      "(owner, study_id) DO UPDATE SET state = "
                      "excluded.state, written_version = "
                      "excluded.written_version",
                      {PgParam::Bytes(key.owner), PgParam::Bytes(key.study_id),
                       PgParam::Bytes(*write.policy_state),
                       PgParam::Int(version + 1)})
                  .status());
        }
        if (write.study != nullptr) {
          METAOPT_RETURN_IF_ERROR(
              conn.Query(
                      "UPDATE studies SET study = $3 WHERE owner = $1 AND "
                      "study_id = $2",
                      {PgParam::Bytes(key.owner), PgParam::Bytes(key.study_id),
                       PgParam::Bytes(study_blob)})
                  .status());
        }
        return conn
            .Query(
                "UPDATE studies SET version = version + 1, write_token = "
                "$3 WHERE owner = $1 AND study_id = $2",
                {PgParam::Bytes(key.owner), PgParam::Bytes(key.study_id),
                 PgParam::Bytes(token)})
            .status();
      });
}

void PostgresStorage::RunWriteBatch(
    absl::Span<GroupCommit::Write* const> batch) {
  // Rows are locked in key order: two replicas batching the same studies then
  // lock them in the same order and never deadlock.
  std::vector<GroupCommit::Write*> ordered(batch.begin(), batch.end());
  std::sort(ordered.begin(), ordered.end(),
            [](const GroupCommit::Write* a, const GroupCommit::Write* b) {
              return std::tie(a->key->owner, a->key->study_id) <
                     std::tie(b->key->owner, b->key->study_id);
            });
  // One write needs no savepoint: its error ends the transaction anyway.
  const bool savepoints = ordered.size() > 1;
  std::vector<absl::Status> statuses(ordered.size());
  const std::string what =
      savepoints
          ? absl::StrCat("writing ", Describe(*ordered.front()->key), " and ",
                         ordered.size() - 1, " other study write(s)")
          : absl::StrCat("writing ", Describe(*ordered.front()->key));
  const absl::Status status = InTransaction(
      Access::kWrite, what,
      [&](PgConnection& conn, const Attempt& attempt) -> absl::Status {
        batch_connection_ = &conn;
        batch_attempt_ = &attempt;
        for (size_t i = 0; i < ordered.size(); ++i) {
          if (savepoints) METAOPT_RETURN_IF_ERROR(conn.Exec("SAVEPOINT w"));
          absl::Status applied = ordered[i]->apply();
          // A lost connection or a serialization failure: the whole batch
          // is retried on a fresh transaction.
          if (!savepoints || absl::IsUnavailable(applied)) {
            METAOPT_RETURN_IF_ERROR(applied);
          } else {
            METAOPT_RETURN_IF_ERROR(conn.Exec(applied.ok()
                                                  ? "RELEASE SAVEPOINT w"
                                                  : "ROLLBACK TO SAVEPOINT w"));
          }
          statuses[i] = std::move(applied);
        }
        return absl::OkStatus();
      });
  batch_connection_ = nullptr;
  batch_attempt_ = nullptr;
  for (size_t i = 0; i < ordered.size(); ++i) {
    ordered[i]->status = status.ok() ? statuses[i] : status;
  }
}

absl::StatusOr<int64_t> PostgresStorage::GetStudyVersion(const StudyKey& key) {
  int64_t version = 0;
  METAOPT_RETURN_IF_ERROR(InTransaction(
      Access::kStatement,
      absl::StrCat("reading the version of ", Describe(key)),
      [&](PgConnection& conn, const Attempt&) -> absl::Status {
        METAOPT_ASSIGN_OR_RETURN(version, ReadStudyVersion(conn, key));
        return absl::OkStatus();
      }));
  return version;
}

absl::StatusOr<std::vector<v1::Trial>> PostgresStorage::LoadTrials(
    const StudyKey& key) {
  std::vector<v1::Trial> trials;
  METAOPT_RETURN_IF_ERROR(InTransaction(
      Access::kRead, absl::StrCat("reading the trials of ", Describe(key)),
      [&](PgConnection& conn, const Attempt&) -> absl::Status {
        trials.clear();
        METAOPT_RETURN_IF_ERROR(CheckStudyExists(conn, key));
        METAOPT_ASSIGN_OR_RETURN(
            PgResult rows,
            conn.Query("SELECT trial_id, trial FROM trials WHERE owner = $1 "
                       "AND study_id = $2 ORDER BY trial_id",
                       KeyParams(key)));
        METAOPT_RETURN_IF_ERROR(AppendTrials(key, rows, &trials));
        METAOPT_ASSIGN_OR_RETURN(
            PgResult values,
            conn.Query("SELECT trial_id, step, value FROM intermediate_values "
                       "WHERE owner = $1 AND study_id = $2 ORDER BY trial_id, "
                       "step",
                       KeyParams(key)));
        return MergeValues(key, values, trials);
      }));
  return trials;
}

absl::StatusOr<Storage::Changes> PostgresStorage::LoadChangesSince(
    const StudyKey& key, int64_t version) {
  Changes changes;
  METAOPT_RETURN_IF_ERROR(InTransaction(
      Access::kRead, absl::StrCat("reading the changes of ", Describe(key)),
      [&](PgConnection& conn, const Attempt&) -> absl::Status {
        changes = Changes();
        METAOPT_ASSIGN_OR_RETURN(changes.version, ReadStudyVersion(conn, key));
        const std::vector<PgParam> params = {PgParam::Bytes(key.owner),
                                             PgParam::Bytes(key.study_id),
                                             PgParam::Int(version)};
        METAOPT_ASSIGN_OR_RETURN(
            PgResult rows,
            conn.Query("SELECT trial_id, trial FROM trials WHERE owner = $1 "
                       "AND study_id = $2 AND written_version > $3 ORDER BY "
                       "trial_id",
                       params));
        METAOPT_RETURN_IF_ERROR(AppendTrials(key, rows, &changes.trials));
        METAOPT_ASSIGN_OR_RETURN(
            PgResult values,
            conn.Query("SELECT trial_id, step, value FROM intermediate_values "
                       "WHERE owner = $1 AND study_id = $2 AND trial_id IN "
                       "(SELECT trial_id FROM trials WHERE owner = $1 AND "
                       "study_id = $2 AND written_version > $3) ORDER BY "
                       "trial_id, step",
                       params));
        METAOPT_RETURN_IF_ERROR(MergeValues(key, values, changes.trials));
        METAOPT_ASSIGN_OR_RETURN(
            PgResult policy,
            conn.Query("SELECT state FROM policy_state WHERE owner = $1 AND "
                       "study_id = $2 AND written_version > $3",
                       params));
        if (policy.rows() > 0) changes.policy_state = policy.Bytes(0, 0);
        return absl::OkStatus();
      }));
  return changes;
}

absl::StatusOr<std::optional<std::string>> PostgresStorage::GetPolicyState(
    const StudyKey& key) {
  std::optional<std::string> state;
  METAOPT_RETURN_IF_ERROR(InTransaction(
      Access::kRead,
      absl::StrCat("reading the policy state of ", Describe(key)),
      [&](PgConnection& conn, const Attempt&) -> absl::Status {
        state.reset();
        METAOPT_RETURN_IF_ERROR(CheckStudyExists(conn, key));
        METAOPT_ASSIGN_OR_RETURN(
            PgResult row,
            conn.Query("SELECT state FROM policy_state WHERE owner = $1 AND "
                       "study_id = $2",
                       KeyParams(key)));
        if (row.rows() > 0) state = row.Bytes(0, 0);
        return absl::OkStatus();
      }));
  return state;
}

absl::Status PostgresStorage::CheckReachable() {
  // Its own connection: calls retrying in every pooled one during an outage
  // must not hold up the answer.
  MutexLock lock(&probe_mu_);
  METAOPT_RETURN_IF_ERROR(EnsureConnected(probe_));
  return probe_.Exec("SELECT 1");
}

}  // namespace metaopt::storage
