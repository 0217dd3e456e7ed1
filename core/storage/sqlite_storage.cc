#include "core/storage/sqlite_storage.h"

#include <cstdint>
#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/common/status_macros.h"
#include "core/common/strings.h"
#include "core/storage/stored_records.h"

namespace metaopt::storage {
namespace sqlite_storage_internal {
namespace {

// Version 1: the initial schema. Foreign keys make a trial or policy state
// without its study impossible; DeleteStudy still deletes the children
// explicitly (no reliance on cascades).
constexpr char kSchemaV1[] = R"sql(
CREATE TABLE studies (
  study_id TEXT PRIMARY KEY NOT NULL,
  create_time_micros INTEGER NOT NULL,
  study BLOB NOT NULL
);
CREATE TABLE trials (
  study_id TEXT NOT NULL REFERENCES studies (study_id),
  trial_id INTEGER NOT NULL,
  state INTEGER NOT NULL,
  client_id TEXT NOT NULL,
  trial BLOB NOT NULL,
  PRIMARY KEY (study_id, trial_id)
);
CREATE INDEX trials_by_state ON trials (study_id, state);
CREATE TABLE policy_state (
  study_id TEXT PRIMARY KEY NOT NULL REFERENCES studies (study_id),
  state BLOB NOT NULL
);
)sql";

// Version 2: studies are keyed by (owner, study_id). Existing studies move to
// the empty owner (a server without authentication). SQLite cannot change a
// primary key in place, so the tables are rebuilt; renaming the new studies
// table rewrites the children's foreign keys to the final name.
constexpr char kSchemaV2[] = R"sql(
CREATE TABLE studies_v2 (
  owner TEXT NOT NULL,
  study_id TEXT NOT NULL,
  create_time_micros INTEGER NOT NULL,
  study BLOB NOT NULL,
  PRIMARY KEY (owner, study_id)
);
INSERT INTO studies_v2 (owner, study_id, create_time_micros, study)
  SELECT '', study_id, create_time_micros, study FROM studies;
CREATE TABLE trials_v2 (
  owner TEXT NOT NULL,
  study_id TEXT NOT NULL,
  trial_id INTEGER NOT NULL,
  state INTEGER NOT NULL,
  client_id TEXT NOT NULL,
  trial BLOB NOT NULL,
  PRIMARY KEY (owner, study_id, trial_id),
  FOREIGN KEY (owner, study_id) REFERENCES studies_v2 (owner, study_id)
);
INSERT INTO trials_v2 (owner, study_id, trial_id, state, client_id, trial)
  SELECT '', study_id, trial_id, state, client_id, trial FROM trials;
CREATE TABLE policy_state_v2 (
  owner TEXT NOT NULL,
  study_id TEXT NOT NULL,
  state BLOB NOT NULL,
  PRIMARY KEY (owner, study_id),
  FOREIGN KEY (owner, study_id) REFERENCES studies_v2 (owner, study_id)
);
INSERT INTO policy_state_v2 (owner, study_id, state)
  SELECT '', study_id, state FROM policy_state;
DROP TABLE policy_state;
DROP TABLE trials;
DROP TABLE studies;
ALTER TABLE studies_v2 RENAME TO studies;
ALTER TABLE trials_v2 RENAME TO trials;
ALTER TABLE policy_state_v2 RENAME TO policy_state;
CREATE INDEX trials_by_state ON trials (owner, study_id, state);
)sql";

// Version 3: a per-study version, bumped by every write, so that processes
// sharing the database can tell when their cached copy of a study is stale and
// can make their writes conditional on it (compare-and-set); and the version
// each trial and policy state was written at, so that a stale copy reads only
// what changed.
constexpr char kSchemaV3[] = R"sql(
ALTER TABLE studies ADD COLUMN version INTEGER NOT NULL DEFAULT 0;
ALTER TABLE trials ADD COLUMN written_version INTEGER NOT NULL DEFAULT 0;
ALTER TABLE policy_state ADD COLUMN written_version INTEGER NOT NULL DEFAULT 0;
CREATE INDEX trials_by_written_version ON trials (owner, study_id,
                                                  written_version);
)sql";

// Version 4: a trial's intermediate values stored apart from its record, one
// row per (trial, step), so that a report appends a row instead of rewriting
// its trial's whole history. The values embedded in the stored trials move
// to rows (MoveEmbeddedValues).
constexpr char kSchemaV4[] = R"sql(
CREATE TABLE intermediate_values (
  owner TEXT NOT NULL,
  study_id TEXT NOT NULL,
  trial_id INTEGER NOT NULL,
  step INTEGER NOT NULL,
  value BLOB NOT NULL,
  PRIMARY KEY (owner, study_id, trial_id, step),
  FOREIGN KEY (owner, study_id) REFERENCES studies (owner, study_id)
) WITHOUT ROWID;
)sql";

// Moves the intermediate values embedded in stored trial records to rows of
// intermediate_values, and rewrites those records without them. Parses every
// trial once; a record that does not parse is left as it is (reads report it).
absl::Status MoveEmbeddedValues(Database& db) {
  struct Moved {
    std::string owner, study_id;
    int64_t trial_id;
    v1::Trial trial;
  };
  std::vector<Moved> moved;
  {
    METAOPT_ASSIGN_OR_RETURN(
        Statement query,
        Statement::Prepare(
            db, "SELECT owner, study_id, trial_id, trial FROM trials"));
    while (true) {
      METAOPT_ASSIGN_OR_RETURN(bool has_row, query.Step());
      if (!has_row) break;
      v1::Trial trial;
      if (!trial.ParseFromString(query.ColumnBlob(3)) ||
          trial.intermediate_values().empty()) {
        continue;
      }
      moved.push_back({query.ColumnText(0), query.ColumnText(1),
                       query.ColumnInt64(2), std::move(trial)});
    }
  }
  METAOPT_ASSIGN_OR_RETURN(
      Statement insert,
      Statement::Prepare(db,
                         "INSERT OR REPLACE INTO intermediate_values (owner, "
                         "study_id, trial_id, step, value) VALUES (?, ?, ?, "
                         "?, ?)"));
  METAOPT_ASSIGN_OR_RETURN(
      Statement update,
      Statement::Prepare(db,
                         "UPDATE trials SET trial = ? WHERE owner = ? AND "
                         "study_id = ? AND trial_id = ?"));
  for (Moved& row : moved) {
    for (const v1::IntermediateValue& value :
         row.trial.intermediate_values()) {
      METAOPT_RETURN_IF_ERROR(insert.Reset());
      METAOPT_RETURN_IF_ERROR(insert.BindText(1, row.owner));
      METAOPT_RETURN_IF_ERROR(insert.BindText(2, row.study_id));
      METAOPT_RETURN_IF_ERROR(insert.BindInt64(3, row.trial_id));
      METAOPT_RETURN_IF_ERROR(insert.BindInt64(4, value.step()));
      METAOPT_RETURN_IF_ERROR(insert.BindBlob(5, value.SerializeAsString()));
      METAOPT_RETURN_IF_ERROR(insert.Run());
    }
    row.trial.clear_intermediate_values();
    METAOPT_RETURN_IF_ERROR(update.Reset());
    METAOPT_RETURN_IF_ERROR(update.BindBlob(1, row.trial.SerializeAsString()));
    METAOPT_RETURN_IF_ERROR(update.BindText(2, row.owner));
    METAOPT_RETURN_IF_ERROR(update.BindText(3, row.study_id));
    METAOPT_RETURN_IF_ERROR(update.BindInt64(4, row.trial_id));
    METAOPT_RETURN_IF_ERROR(update.Run());
  }
  return absl::OkStatus();
}

constexpr Migration kMigrations[] = {
    {1, kSchemaV1},
    {2, kSchemaV2},
    {3, kSchemaV3},
    {4, kSchemaV4, MoveEmbeddedValues},
};

absl::Status WriteSchemaVersion(Database& db, int version) {
  METAOPT_RETURN_IF_ERROR(db.Exec("DELETE FROM schema_version"));
  METAOPT_ASSIGN_OR_RETURN(
      Statement insert,
      Statement::Prepare(db,
                         "INSERT INTO schema_version (version) VALUES (?)"));
  METAOPT_RETURN_IF_ERROR(insert.BindInt64(1, version));
  return insert.Run();
}

}  // namespace

absl::Span<const Migration> Migrations() { return kMigrations; }

absl::StatusOr<int> ReadSchemaVersion(Database& db) {
  METAOPT_ASSIGN_OR_RETURN(
      Statement has_table,
      Statement::Prepare(db,
                         "SELECT 1 FROM sqlite_master WHERE type = 'table' AND "
                         "name = 'schema_version'"));
  METAOPT_ASSIGN_OR_RETURN(bool exists, has_table.Step());
  if (!exists) return 0;
  METAOPT_ASSIGN_OR_RETURN(
      Statement query,
      Statement::Prepare(db, "SELECT MAX(version) FROM schema_version"));
  METAOPT_ASSIGN_OR_RETURN(bool has_row, query.Step());
  if (!has_row || query.ColumnIsNull(0)) return 0;
  return static_cast<int>(query.ColumnInt64(0));
}

absl::Status Migrate(Database& db, absl::Span<const Migration> migrations) {
  for (size_t i = 0; i < migrations.size(); ++i) {
    if (migrations[i].version != static_cast<int>(i) + 1) {
      return absl::InternalError(absl::StrCat("migration #", i, " has version ",
                                              migrations[i].version, ", want ",
                                              i + 1));
    }
  }
  const int target = static_cast<int>(migrations.size());
  // One transaction per step; the version is re-read inside each, so concurrent
  // openers of the same file never apply a migration twice.
  while (true) {
    METAOPT_ASSIGN_OR_RETURN(
        Transaction tx, Transaction::Begin(db, Transaction::Mode::kImmediate));
    METAOPT_ASSIGN_OR_RETURN(int version, ReadSchemaVersion(db));
    if (version > target) {
      return absl::FailedPreconditionError(
          absl::StrCat("database schema version ", version,
                       " is newer than the newest this build knows (", target,
                       "); it was written by a newer metaopt"));
    }
    if (version == target) return tx.Commit();
    const Migration& step = migrations[version];
    METAOPT_RETURN_IF_ERROR(
        db.Exec("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER "
                "NOT NULL)"));
    absl::Status applied = db.Exec(step.sql);
    if (applied.ok() && step.then != nullptr) applied = step.then(db);
    if (!applied.ok()) {
      return absl::Status(applied.code(),
                          absl::StrCat("migrating schema to version ",
                                       step.version, ": ", applied.message()));
    }
    METAOPT_RETURN_IF_ERROR(WriteSchemaVersion(db, step.version));
    METAOPT_RETURN_IF_ERROR(tx.Commit());
  }
}

}  // namespace sqlite_storage_internal

namespace {

using sqlite_storage_internal::Migrate;
using sqlite_storage_internal::Migrations;

// At most this many of quick_check's findings are quoted in an error.
constexpr int kMaxIntegrityFindings = 3;

// FAILED_PRECONDITION when this connection cannot write `db` (a read-only
// file, or one SQLite opened read-only for lack of permission), so that the
// server fails at start rather than on every write.
absl::Status CheckWritable(Database& db) {
  if (sqlite3_db_readonly(db.get(), "main") != 1) return absl::OkStatus();
  return absl::FailedPreconditionError(
      "the database is read-only for this process (check the permissions "
      "and owner of the file and of its directory); the server writes to it");
}

// DATA_LOSS quoting SQLite's findings when PRAGMA quick_check finds the file
// damaged (pages that are not a valid b-tree, bad record formats, ...).
absl::Status QuickCheck(Database& db) {
  // The check itself fails on some damage (an unreadable schema, say).
  auto failed = [](const absl::Status& status) {
    return absl::Status(status.code(),
                        absl::StrCat("the database is damaged (PRAGMA "
                                     "quick_check failed: ",
                                     status.message(),
                                     "); restore it from a "
                                     "backup"));
  };
  absl::StatusOr<Statement> check =
      Statement::Prepare(db, "PRAGMA quick_check");
  if (!check.ok()) return failed(check.status());
  std::vector<std::string> findings;
  int total = 0;
  while (true) {
    absl::StatusOr<bool> has_row = check->Step();
    if (!has_row.ok()) return failed(has_row.status());
    if (!*has_row) break;
    std::string finding = check->ColumnText(0);
    if (finding == "ok") continue;
    if (++total <= kMaxIntegrityFindings)
      findings.push_back(std::move(finding));
  }
  if (total == 0) return absl::OkStatus();
  return absl::DataLossError(
      absl::StrCat("the database is damaged (PRAGMA quick_check found ", total,
                   " problem(s): ", absl::StrJoin(findings, "; "),
                   total > kMaxIntegrityFindings ? "; ..." : "",
                   "); restore it from a backup"));
}

// Binds the key to parameters `first` (owner) and `first + 1` (study_id).
absl::Status BindKey(Statement& statement, int first, const StudyKey& key) {
  METAOPT_RETURN_IF_ERROR(statement.BindText(first, key.owner));
  return statement.BindText(first + 1, key.study_id);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Storage>> OpenSqliteStorage(
    const std::string& path, const SqliteOptions& options) {
  METAOPT_ASSIGN_OR_RETURN(std::unique_ptr<SqliteStorage> storage,
                           SqliteStorage::Open(path, options));
  return std::unique_ptr<Storage>(std::move(storage));
}

int CurrentSchemaVersion() { return static_cast<int>(Migrations().size()); }

absl::StatusOr<std::unique_ptr<SqliteStorage>> SqliteStorage::Open(
    const std::string& path, const SqliteOptions& options) {
  const std::string context = absl::StrCat("opening SQLite database ", path);
  if (path.empty())
    return absl::InvalidArgumentError("SQLite database path is empty");
  if (options.busy_timeout_ms < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        context, ": busy_timeout_ms ", options.busy_timeout_ms, " < 0"));
  }
  const std::filesystem::path parent =
      std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty() && !std::filesystem::is_directory(parent, ec)) {
    return absl::NotFoundError(absl::StrCat(
        context, ": directory ", parent.string(), " does not exist"));
  }

  METAOPT_ASSIGN_OR_RETURN(Database db, Database::Open(path));
  // Set first: switching to WAL and migrating take the write lock.
  METAOPT_RETURN_IF_ERROR(Annotate(
      SqliteStatus(sqlite3_busy_timeout(db.get(), options.busy_timeout_ms),
                   db.get(), "setting busy timeout"),
      context));
  METAOPT_RETURN_IF_ERROR(Annotate(CheckWritable(db), context));
  METAOPT_RETURN_IF_ERROR(Annotate(QuickCheck(db), context));
  absl::StatusOr<std::optional<std::string>> mode =
      db.QueryText("PRAGMA journal_mode = WAL");
  METAOPT_RETURN_IF_ERROR(Annotate(mode.status(), context));
  if (!mode->has_value() || **mode != "wal") {
    return absl::FailedPreconditionError(
        absl::StrCat(context, ": cannot use WAL journal mode (got ",
                     mode->value_or("nothing"), ")"));
  }
  METAOPT_RETURN_IF_ERROR(
      Annotate(db.Exec("PRAGMA synchronous = FULL"), context));
  METAOPT_RETURN_IF_ERROR(
      Annotate(db.Exec("PRAGMA foreign_keys = ON"), context));
  METAOPT_RETURN_IF_ERROR(Annotate(Migrate(db, Migrations()), context));
  db.set_commit_observer(options.on_commit);
  // The version reads' own connection (none for a private in-memory database,
  // which a second connection would not see).
  std::optional<Database> version_db;
  if (path != ":memory:") {
    METAOPT_ASSIGN_OR_RETURN(version_db,
                             Database::Open(path, SQLITE_OPEN_READONLY));
    METAOPT_RETURN_IF_ERROR(Annotate(
        SqliteStatus(
            sqlite3_busy_timeout(version_db->get(), options.busy_timeout_ms),
            version_db->get(), "setting busy timeout"),
        context));
  }
  return std::unique_ptr<SqliteStorage>(
      new SqliteStorage(std::move(db), std::move(version_db)));
}

absl::Status SqliteStorage::CheckStudyExists(const StudyKey& key) {
  return ReadVersion(key).status();
}

absl::Status SqliteStorage::CreateStudy(const v1::Study& study,
                                        int64_t max_studies_of_owner) {
  if (study.study_id().empty())
    return absl::InvalidArgumentError("study_id must not be empty");
  const StudyKey key{study.owner(), study.study_id()};
  METAOPT_ASSIGN_OR_RETURN(const std::string blob, SerializeStudy(study));
  MutexLock lock(&mu_);
  METAOPT_ASSIGN_OR_RETURN(
      Transaction tx, Transaction::Begin(db_, Transaction::Mode::kImmediate));
  const absl::Status exists = CheckStudyExists(key);
  if (exists.ok()) {
    return absl::AlreadyExistsError(
        absl::StrCat(Describe(key), " already exists"));
  }
  if (!absl::IsNotFound(exists)) return exists;
  if (max_studies_of_owner > 0) {
    METAOPT_ASSIGN_OR_RETURN(const int64_t owned, CountLocked(key.owner));
    if (owned >= max_studies_of_owner)
      return OwnerQuotaExhausted(key, owned, max_studies_of_owner);
  }
  METAOPT_ASSIGN_OR_RETURN(
      Statement insert,
      db_.PrepareCached("INSERT INTO studies (owner, study_id, "
                        "create_time_micros, study) VALUES (?, ?, ?, ?)"));
  METAOPT_RETURN_IF_ERROR(BindKey(insert, 1, key));
  METAOPT_RETURN_IF_ERROR(insert.BindInt64(3, ToMicros(study.create_time())));
  METAOPT_RETURN_IF_ERROR(insert.BindBlob(4, blob));
  METAOPT_RETURN_IF_ERROR(insert.Run());
  return tx.Commit();
}

absl::StatusOr<v1::Study> SqliteStorage::GetStudy(const StudyKey& key) {
  MutexLock lock(&mu_);
  METAOPT_ASSIGN_OR_RETURN(
      Statement query,
      db_.PrepareCached(
          "SELECT study FROM studies WHERE owner = ? AND study_id = ?"));
  METAOPT_RETURN_IF_ERROR(BindKey(query, 1, key));
  METAOPT_ASSIGN_OR_RETURN(bool found, query.Step());
  if (!found) return StudyNotFound(key);
  return ParseStudy(key, query.ColumnBlob(0));
}

absl::StatusOr<std::vector<v1::Study>> SqliteStorage::ListStudies(
    std::string_view owner, std::string_view after_study_id, int limit) {
  if (limit <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("limit: ", limit, " must be positive"));
  }
  MutexLock lock(&mu_);
  METAOPT_ASSIGN_OR_RETURN(
      Statement query,
      db_.PrepareCached("SELECT study_id, study FROM studies WHERE owner = ? "
                        "AND study_id > ? ORDER BY study_id LIMIT ?"));
  METAOPT_RETURN_IF_ERROR(query.BindText(1, owner));
  METAOPT_RETURN_IF_ERROR(query.BindText(2, after_study_id));
  METAOPT_RETURN_IF_ERROR(query.BindInt64(3, limit));
  std::vector<v1::Study> studies;
  while (true) {
    METAOPT_ASSIGN_OR_RETURN(bool has_row, query.Step());
    if (!has_row) break;
    const StudyKey key{std::string(owner), query.ColumnText(0)};
    absl::StatusOr<v1::Study> study = ParseStudy(key, query.ColumnBlob(1));
    if (!study.ok()) {
      // Listed by its key alone; GetStudy reports the damage.
      study = v1::Study();
      study->set_owner(key.owner);
      study->set_study_id(key.study_id);
    }
    studies.push_back(*std::move(study));
  }
  return studies;
}

absl::StatusOr<int64_t> SqliteStorage::CountStudies(std::string_view owner) {
  MutexLock lock(&mu_);
  return CountLocked(owner);
}

absl::StatusOr<int64_t> SqliteStorage::CountLocked(std::string_view owner) {
  METAOPT_ASSIGN_OR_RETURN(
      Statement query,
      db_.PrepareCached("SELECT count(*) FROM studies WHERE owner = ?"));
  METAOPT_RETURN_IF_ERROR(query.BindText(1, owner));
  METAOPT_ASSIGN_OR_RETURN(bool has_row, query.Step());
  return has_row ? query.ColumnInt64(0) : 0;
}

absl::Status SqliteStorage::DeleteStudy(const StudyKey& key) {
  MutexLock lock(&mu_);
  METAOPT_ASSIGN_OR_RETURN(
      Transaction tx, Transaction::Begin(db_, Transaction::Mode::kImmediate));
  METAOPT_RETURN_IF_ERROR(CheckStudyExists(key));
  // Children first, so the foreign keys hold at every statement.
  for (const char* sql :
       {"DELETE FROM intermediate_values WHERE owner = ? AND study_id = ?",
        "DELETE FROM trials WHERE owner = ? AND study_id = ?",
        "DELETE FROM policy_state WHERE owner = ? AND study_id = ?",
        "DELETE FROM studies WHERE owner = ? AND study_id = ?"}) {
    METAOPT_ASSIGN_OR_RETURN(Statement del, db_.PrepareCached(sql));
    METAOPT_RETURN_IF_ERROR(BindKey(del, 1, key));
    METAOPT_RETURN_IF_ERROR(del.Run());
  }
  return tx.Commit();
}

namespace {

// A write queued on a SqliteStorage's group commit.
class QueuedWrite : public PendingWrite {
 public:
  QueuedWrite(GroupCommit& commits, std::shared_ptr<GroupCommit::Ticket> ticket)
      : commits_(commits), ticket_(std::move(ticket)) {}
  absl::Status Wait() override { return commits_.Wait(*ticket_); }
  std::optional<absl::Status> Poll() const override {
    return commits_.Poll(*ticket_);
  }
  const GroupCommit* commits() const { return &commits_; }
  const std::shared_ptr<GroupCommit::Ticket>& ticket() const { return ticket_; }

 private:
  GroupCommit& commits_;
  const std::shared_ptr<GroupCommit::Ticket> ticket_;
};

}  // namespace

absl::StatusOr<SqliteStorage::PreparedWrite> SqliteStorage::Prepare(
    const StudyKey& key, const StudyWrite& write) {
  PreparedWrite prepared;
  METAOPT_ASSIGN_OR_RETURN(prepared.trials, SerializeTrials(key, write));
  if (write.policy_state.has_value()) {
    prepared.policy_state = std::string(*write.policy_state);
  }
  prepared.expected_version = write.expected_version;
  if (write.study != nullptr) {
    METAOPT_ASSIGN_OR_RETURN(prepared.study_blob,
                             SerializeStudyRewrite(key, write));
  }
  return prepared;
}

absl::Status SqliteStorage::WriteStudy(const StudyKey& key,
                                       const StudyWrite& write) {
  METAOPT_ASSIGN_OR_RETURN(const PreparedWrite prepared, Prepare(key, write));
  return commits_.Commit(key, [&]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    // Runs on the batch leader's thread, which holds mu_ (RunWriteBatch).
    mu_.AssertHeld();
    return ApplyWrite(key, prepared);
  });
}

absl::StatusOr<std::shared_ptr<PendingWrite>> SqliteStorage::StartWriteStudy(
    const StudyKey& key, const StudyWrite& write,
    const std::shared_ptr<PendingWrite>& after) {
  std::shared_ptr<GroupCommit::Ticket> after_ticket;
  if (after != nullptr) {
    const auto* queued = dynamic_cast<const QueuedWrite*>(after.get());
    if (queued != nullptr && queued->commits() == &commits_) {
      after_ticket = queued->ticket();
    } else {
      // Not one of this storage's writes: stored first, as by default.
      return Storage::StartWriteStudy(key, write, after);
    }
  }
  METAOPT_ASSIGN_OR_RETURN(PreparedWrite prepared, Prepare(key, write));
  std::shared_ptr<GroupCommit::Ticket> ticket = commits_.Enqueue(
      key,
      [this, key, prepared = std::move(prepared)]()
          ABSL_NO_THREAD_SAFETY_ANALYSIS {
            mu_.AssertHeld();  // RunWriteBatch holds it
            return ApplyWrite(key, prepared);
          },
      std::move(after_ticket));
  return std::make_shared<QueuedWrite>(commits_, std::move(ticket));
}

void SqliteStorage::RunWriteBatch(absl::Span<GroupCommit::Write* const> batch) {
  MutexLock lock(&mu_);
  // The transaction failed as a whole: no write of the batch is stored.
  const auto fail_all = [&](const absl::Status& status) {
    for (GroupCommit::Write* write : batch) write->status = status;
  };
  absl::StatusOr<Transaction> tx =
      Transaction::Begin(db_, Transaction::Mode::kImmediate);
  if (!tx.ok()) return fail_all(tx.status());
  if (batch.size() == 1) {
    // Alone in its transaction: its error rolls the transaction back, so it
    // needs no savepoint.
    GroupCommit::Write* write = batch.front();
    write->status = write->apply();
    if (!write->status.ok()) return;
  } else {
    for (GroupCommit::Write* write : batch) {
      absl::Status status = db_.ExecCached("SAVEPOINT write");
      if (!status.ok()) return fail_all(status);
      status = write->apply();
      if (!status.ok() && sqlite3_get_autocommit(db_.get()) != 0) {
        // SQLite rolled the whole transaction back (SQLITE_FULL, an I/O
        // error): the writes before this one are undone too.
        return fail_all(status);
      }
      absl::Status end = absl::OkStatus();
      if (!status.ok()) end = db_.ExecCached("ROLLBACK TO write");
      if (end.ok()) end = db_.ExecCached("RELEASE write");
      if (!end.ok()) return fail_all(end);
      write->status = std::move(status);
    }
  }
  const absl::Status committed = tx->Commit();
  if (committed.ok()) return;
  for (GroupCommit::Write* write : batch) {
    if (write->status.ok()) write->status = committed;
  }
}

absl::Status SqliteStorage::ApplyWrite(const StudyKey& key,
                                       const PreparedWrite& write) {
  const TrialRows& trials = write.trials;
  METAOPT_ASSIGN_OR_RETURN(const int64_t version, ReadVersion(key));
  if (write.expected_version.has_value() &&
      *write.expected_version != version) {
    return VersionConflict(key, *write.expected_version, version);
  }
  {
    METAOPT_ASSIGN_OR_RETURN(
        Statement bump,
        db_.PrepareCached("UPDATE studies SET version = version + 1 WHERE "
                          "owner = ? AND study_id = ?"));
    METAOPT_RETURN_IF_ERROR(BindKey(bump, 1, key));
    METAOPT_RETURN_IF_ERROR(bump.Run());
  }
  if (write.study_blob.has_value()) {
    METAOPT_ASSIGN_OR_RETURN(
        Statement update,
        db_.PrepareCached(
            "UPDATE studies SET study = ? WHERE owner = ? AND study_id = ?"));
    METAOPT_RETURN_IF_ERROR(update.BindBlob(1, *write.study_blob));
    METAOPT_RETURN_IF_ERROR(BindKey(update, 2, key));
    METAOPT_RETURN_IF_ERROR(update.Run());
  }
  if (!trials.records.empty()) {
    METAOPT_ASSIGN_OR_RETURN(
        Statement upsert,
        db_.PrepareCached("INSERT OR REPLACE INTO trials (owner, study_id, "
                          "trial_id, state, client_id, trial, "
                          "written_version) VALUES (?, ?, ?, ?, ?, ?, ?)"));
    for (const TrialRows::Record& record : trials.records) {
      METAOPT_RETURN_IF_ERROR(upsert.Reset());
      METAOPT_RETURN_IF_ERROR(BindKey(upsert, 1, key));
      METAOPT_RETURN_IF_ERROR(upsert.BindInt64(3, record.id));
      METAOPT_RETURN_IF_ERROR(upsert.BindInt64(4, record.state));
      METAOPT_RETURN_IF_ERROR(upsert.BindText(5, record.client_id));
      METAOPT_RETURN_IF_ERROR(upsert.BindBlob(6, record.blob));
      METAOPT_RETURN_IF_ERROR(upsert.BindInt64(7, version + 1));
      METAOPT_RETURN_IF_ERROR(upsert.Run());
    }
  }
  if (!trials.touched.empty()) {
    // A value of a trial not written here: the trial must exist, and counts
    // as changed.
    METAOPT_ASSIGN_OR_RETURN(
        Statement touch,
        db_.PrepareCached("UPDATE trials SET written_version = ? WHERE "
                          "owner = ? AND study_id = ? AND trial_id = ?"));
    for (const int64_t id : trials.touched) {
      METAOPT_RETURN_IF_ERROR(touch.Reset());
      METAOPT_RETURN_IF_ERROR(touch.BindInt64(1, version + 1));
      METAOPT_RETURN_IF_ERROR(BindKey(touch, 2, key));
      METAOPT_RETURN_IF_ERROR(touch.BindInt64(4, id));
      METAOPT_RETURN_IF_ERROR(touch.Run());
      if (sqlite3_changes(db_.get()) != 1) return ValueOfAbsentTrial(key, id);
    }
  }
  if (!trials.values.empty()) {
    METAOPT_ASSIGN_OR_RETURN(
        Statement upsert,
        db_.PrepareCached("INSERT OR REPLACE INTO intermediate_values (owner, "
                          "study_id, trial_id, step, value) VALUES (?, ?, ?, "
                          "?, ?)"));
    for (const TrialRows::Value& value : trials.values) {
      METAOPT_RETURN_IF_ERROR(upsert.Reset());
      METAOPT_RETURN_IF_ERROR(BindKey(upsert, 1, key));
      METAOPT_RETURN_IF_ERROR(upsert.BindInt64(3, value.trial_id));
      METAOPT_RETURN_IF_ERROR(upsert.BindInt64(4, value.step));
      METAOPT_RETURN_IF_ERROR(upsert.BindBlob(5, value.blob));
      METAOPT_RETURN_IF_ERROR(upsert.Run());
    }
  }
  if (write.policy_state.has_value()) {
    METAOPT_ASSIGN_OR_RETURN(
        Statement upsert,
        db_.PrepareCached("INSERT OR REPLACE INTO policy_state (owner, "
                          "study_id, state, written_version) VALUES (?, ?, ?, "
                          "?)"));
    METAOPT_RETURN_IF_ERROR(BindKey(upsert, 1, key));
    METAOPT_RETURN_IF_ERROR(upsert.BindBlob(3, *write.policy_state));
    METAOPT_RETURN_IF_ERROR(upsert.BindInt64(4, version + 1));
    METAOPT_RETURN_IF_ERROR(upsert.Run());
  }
  return absl::OkStatus();
}

namespace {

// The version of the study `key` in `db`, or NOT_FOUND.
absl::StatusOr<int64_t> ReadVersionOn(Database& db, const StudyKey& key) {
  METAOPT_ASSIGN_OR_RETURN(
      Statement query,
      db.PrepareCached(
          "SELECT version FROM studies WHERE owner = ? AND study_id = ?"));
  METAOPT_RETURN_IF_ERROR(BindKey(query, 1, key));
  METAOPT_ASSIGN_OR_RETURN(bool found, query.Step());
  if (!found) return StudyNotFound(key);
  return query.ColumnInt64(0);
}

// Merges the (trial_id, step, value) rows of `query` into `trials`.
absl::Status MergeValues(const StudyKey& key, Statement& query,
                         std::vector<v1::Trial>& trials) {
  ValueMerger merger(key, trials);
  while (true) {
    METAOPT_ASSIGN_OR_RETURN(bool has_row, query.Step());
    if (!has_row) return absl::OkStatus();
    METAOPT_RETURN_IF_ERROR(merger.Add(query.ColumnInt64(0),
                                       query.ColumnInt64(1),
                                       query.ColumnBlob(2)));
  }
}

}  // namespace

absl::StatusOr<int64_t> SqliteStorage::ReadVersion(const StudyKey& key) {
  return ReadVersionOn(db_, key);
}

absl::StatusOr<int64_t> SqliteStorage::GetStudyVersion(const StudyKey& key) {
  if (version_db_.has_value()) {
    // WAL: this read sees every committed transaction and does not wait for
    // the one being committed.
    MutexLock lock(&version_mu_);
    return ReadVersionOn(*version_db_, key);
  }
  MutexLock lock(&mu_);
  return ReadVersion(key);
}

absl::StatusOr<std::vector<v1::Trial>> SqliteStorage::LoadTrials(
    const StudyKey& key) {
  MutexLock lock(&mu_);
  // A read transaction: the existence check and the rows come from one
  // snapshot.
  METAOPT_ASSIGN_OR_RETURN(
      Transaction tx, Transaction::Begin(db_, Transaction::Mode::kDeferred));
  METAOPT_RETURN_IF_ERROR(CheckStudyExists(key));
  std::vector<v1::Trial> trials;
  {
    METAOPT_ASSIGN_OR_RETURN(
        Statement query,
        db_.PrepareCached("SELECT trial_id, trial FROM trials WHERE owner = ? "
                          "AND study_id = ? ORDER BY trial_id"));
    METAOPT_RETURN_IF_ERROR(BindKey(query, 1, key));
    while (true) {
      METAOPT_ASSIGN_OR_RETURN(bool has_row, query.Step());
      if (!has_row) break;
      METAOPT_ASSIGN_OR_RETURN(
          v1::Trial trial,
          ParseTrial(key, query.ColumnInt64(0), query.ColumnBlob(1)));
      trials.push_back(std::move(trial));
    }
    METAOPT_ASSIGN_OR_RETURN(
        Statement values,
        db_.PrepareCached("SELECT trial_id, step, value FROM "
                          "intermediate_values WHERE owner = ? AND study_id = "
                          "? ORDER BY trial_id, step"));
    METAOPT_RETURN_IF_ERROR(BindKey(values, 1, key));
    METAOPT_RETURN_IF_ERROR(MergeValues(key, values, trials));
  }  // The statements are finalized before the transaction ends.
  METAOPT_RETURN_IF_ERROR(tx.Commit());
  return trials;
}

absl::StatusOr<Storage::Changes> SqliteStorage::LoadChangesSince(
    const StudyKey& key, int64_t version) {
  MutexLock lock(&mu_);
  // One read transaction: the version and the rows come from one snapshot.
  METAOPT_ASSIGN_OR_RETURN(
      Transaction tx, Transaction::Begin(db_, Transaction::Mode::kDeferred));
  Changes changes;
  METAOPT_ASSIGN_OR_RETURN(changes.version, ReadVersion(key));
  {
    METAOPT_ASSIGN_OR_RETURN(
        Statement query,
        db_.PrepareCached("SELECT trial_id, trial FROM trials WHERE owner = ? "
                          "AND study_id = ? AND written_version > ? ORDER BY "
                          "trial_id"));
    METAOPT_RETURN_IF_ERROR(BindKey(query, 1, key));
    METAOPT_RETURN_IF_ERROR(query.BindInt64(3, version));
    while (true) {
      METAOPT_ASSIGN_OR_RETURN(bool has_row, query.Step());
      if (!has_row) break;
      METAOPT_ASSIGN_OR_RETURN(
          v1::Trial trial,
          ParseTrial(key, query.ColumnInt64(0), query.ColumnBlob(1)));
      changes.trials.push_back(std::move(trial));
    }
    METAOPT_ASSIGN_OR_RETURN(
        Statement values,
        db_.PrepareCached(
            "SELECT trial_id, step, value FROM intermediate_values WHERE "
            "owner = ?1 AND study_id = ?2 AND trial_id IN (SELECT trial_id "
            "FROM trials WHERE owner = ?1 AND study_id = ?2 AND "
            "written_version > ?3) ORDER BY trial_id, step"));
    METAOPT_RETURN_IF_ERROR(BindKey(values, 1, key));
    METAOPT_RETURN_IF_ERROR(values.BindInt64(3, version));
    METAOPT_RETURN_IF_ERROR(MergeValues(key, values, changes.trials));
    METAOPT_ASSIGN_OR_RETURN(
        Statement policy,
        db_.PrepareCached("SELECT state FROM policy_state WHERE owner = ? AND "
                          "study_id = ? AND written_version > ?"));
    METAOPT_RETURN_IF_ERROR(BindKey(policy, 1, key));
    METAOPT_RETURN_IF_ERROR(policy.BindInt64(3, version));
    METAOPT_ASSIGN_OR_RETURN(bool found, policy.Step());
    if (found) changes.policy_state = policy.ColumnBlob(0);
  }  // The statements are finalized before the transaction ends.
  METAOPT_RETURN_IF_ERROR(tx.Commit());
  return changes;
}

absl::StatusOr<std::optional<std::string>> SqliteStorage::GetPolicyState(
    const StudyKey& key) {
  MutexLock lock(&mu_);
  METAOPT_ASSIGN_OR_RETURN(
      Transaction tx, Transaction::Begin(db_, Transaction::Mode::kDeferred));
  METAOPT_RETURN_IF_ERROR(CheckStudyExists(key));
  std::optional<std::string> state;
  {
    METAOPT_ASSIGN_OR_RETURN(
        Statement query,
        db_.PrepareCached("SELECT state FROM policy_state WHERE owner = ? AND "
                          "study_id = ?"));
    METAOPT_RETURN_IF_ERROR(BindKey(query, 1, key));
    METAOPT_ASSIGN_OR_RETURN(bool found, query.Step());
    if (found) state = query.ColumnBlob(0);
  }  // The statement is finalized before the transaction ends.
  METAOPT_RETURN_IF_ERROR(tx.Commit());
  return state;
}

}  // namespace metaopt::storage
