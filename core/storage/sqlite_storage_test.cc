// SQLite-specific behaviour: durability across reopen, pragmas, migrations,
// corruption. The Storage contracts themselves are covered by storage_test.cc.
#include "core/storage/sqlite_storage.h"

#include <pwd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "core/storage/sqlite_util.h"
#include "core/storage/storage.h"
#include "tests/testutil/storage_fixtures.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "metaopt/v1/study.pb.h"
#include "tests/testutil/status_matchers.h"

namespace metaopt::storage {

// Runs single-value queries on the storage's own connection (pragmas are per
// connection).
class SqliteStorageTestAccess {
 public:
  static absl::StatusOr<std::optional<std::string>> QueryText(
      SqliteStorage& storage, const char* sql) {
    MutexLock lock(&storage.mu_);
    return storage.db_.QueryText(sql);
  }
  // Installs `hook` as the connection's commit hook (sqlite3_commit_hook: a
  // non-zero return turns the COMMIT into a ROLLBACK); null removes it.
  static void SetCommitHook(SqliteStorage& storage, int (*hook)(void*),
                            void* arg) {
    MutexLock lock(&storage.mu_);
    sqlite3_commit_hook(storage.db_.get(), hook, arg);
  }
  static const GroupCommit& Commits(SqliteStorage& storage) {
    return storage.commits_;
  }
};

namespace {

using ::metaopt::testing::IsOk;
using ::metaopt::testing::StatusIs;
using sqlite_storage_internal::Migrate;
using sqlite_storage_internal::Migration;
using sqlite_storage_internal::ReadSchemaVersion;
using ::testing::_;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::Optional;
using ::testing::SizeIs;

class SqliteStorageTest : public ::testing::Test {
 protected:
  std::string DbPath() const { return dir_.File("metaopt.db"); }

  // A second, raw connection to the database file.
  Database Raw() {
    absl::StatusOr<Database> db = Database::Open(DbPath());
    EXPECT_THAT(db, IsOk());
    return db.ok() ? *std::move(db) : Database();
  }

  int RawSchemaVersion() {
    Database db = Raw();
    absl::StatusOr<int> version = ReadSchemaVersion(db);
    EXPECT_THAT(version, IsOk());
    return version.value_or(-1);
  }

  ScopedTempDir dir_;
};

TEST_F(SqliteStorageTest, ReopeningTheFileKeepsEverything) {
  {
    METAOPT_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Storage> storage,
                                 OpenSqliteStorage(DbPath()));
    ASSERT_THAT(storage->CreateStudy(MakeStudy("a")), IsOk());
    ASSERT_THAT(storage->CreateStudy(MakeStudy("b")), IsOk());
    ASSERT_THAT(
        storage->PutTrials(
            Key("a"), {MakeTrial(1), MakeTrial(2, v1::TRIAL_STATE_COMPLETED)}),
        IsOk());
    ASSERT_THAT(storage->PutPolicyState(Key("a"), "surrogate"), IsOk());
    ASSERT_THAT(storage->DeleteStudy(Key("b")), IsOk());
  }
  METAOPT_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Storage> storage,
                               OpenSqliteStorage(DbPath()));
  METAOPT_ASSERT_OK_AND_ASSIGN(std::vector<v1::Study> all,
                               storage->ListStudies("", "", 10));
  ASSERT_THAT(all, SizeIs(1));
  EXPECT_THAT(all[0], EqualsProto(MakeStudy("a")));
  METAOPT_ASSERT_OK_AND_ASSIGN(std::vector<v1::Trial> trials,
                               storage->LoadTrials(Key("a")));
  EXPECT_THAT(
      trials,
      ElementsAre(EqualsProto(MakeTrial(1)),
                  EqualsProto(MakeTrial(2, v1::TRIAL_STATE_COMPLETED))));
  METAOPT_ASSERT_OK_AND_ASSIGN(std::optional<std::string> state,
                               storage->GetPolicyState(Key("a")));
  EXPECT_THAT(state, Optional(std::string("surrogate")));
}

// Group commit: writes queued while one transaction commits share the next
// one, and when that transaction's COMMIT fails, every write in it fails and
// none is stored.
TEST_F(SqliteStorageTest, AFailedGroupCommitFailsEveryWriteInIt) {
  constexpr int kQueued = 7;
  METAOPT_ASSERT_OK_AND_ASSIGN(std::unique_ptr<SqliteStorage> storage,
                               SqliteStorage::Open(DbPath(), {}));
  for (int i = 0; i <= kQueued; ++i)
    ASSERT_THAT(storage->CreateStudy(MakeStudy(absl::StrCat("s", i))), IsOk());
  // The first COMMIT waits until the other writers are queued behind it, and
  // succeeds; every later one fails.
  struct HookState {
    SqliteStorage* storage;
    std::atomic<int> commits{0};
  } state{storage.get()};
  SqliteStorageTestAccess::SetCommitHook(
      *storage,
      [](void* arg) {
        auto* state = static_cast<HookState*>(arg);
        if (state->commits++ > 0) return 1;
        const GroupCommit& commits =
            SqliteStorageTestAccess::Commits(*state->storage);
        while (commits.queued() < kQueued)
          absl::SleepFor(absl::Milliseconds(1));
        return 0;
      },
      &state);
  std::vector<absl::Status> statuses(kQueued + 1);
  std::thread first(
      [&] { statuses[0] = storage->PutTrials(Key("s0"), {MakeTrial(1)}); });
  std::vector<std::thread> writers;
  // The others queue while the first write's COMMIT is under way.
  while (state.commits.load() == 0) absl::SleepFor(absl::Milliseconds(1));
  for (int i = 1; i <= kQueued; ++i) {
    writers.emplace_back([&, i] {
      statuses[i] =
          storage->PutTrials(Key(absl::StrCat("s", i)), {MakeTrial(1)});
    });
  }
  first.join();
  for (std::thread& writer : writers) writer.join();
  SqliteStorageTestAccess::SetCommitHook(*storage, nullptr, nullptr);

  EXPECT_THAT(statuses[0], IsOk());
  for (int i = 1; i <= kQueued; ++i) {
    EXPECT_THAT(statuses[i], StatusIs(absl::StatusCode::kInternal, _)) << i;
  }
  EXPECT_EQ(SqliteStorageTestAccess::Commits(*storage).stats().largest_batch,
            kQueued);
  EXPECT_THAT(
      storage->LoadTrials(Key("s0")).value_or(std::vector<v1::Trial>(1000)),
      SizeIs(1));
  for (int i = 1; i <= kQueued; ++i) {
    const std::string id = absl::StrCat("s", i);
    EXPECT_THAT(
        storage->LoadTrials(Key(id)).value_or(std::vector<v1::Trial>(1000)),
        SizeIs(0))
        << id;
    EXPECT_EQ(storage->GetStudyVersion(Key(id)).value_or(-1), 0) << id;
  }
  // The storage goes on after a failed batch.
  EXPECT_THAT(storage->PutTrials(Key("s1"), {MakeTrial(1)}), IsOk());
  EXPECT_EQ(storage->GetStudyVersion(Key("s1")).value_or(-1), 1);
}

TEST_F(SqliteStorageTest, VersionReadsDoNotWaitForACommitUnderWay) {
  METAOPT_ASSERT_OK_AND_ASSIGN(std::unique_ptr<SqliteStorage> storage,
                               SqliteStorage::Open(DbPath(), {}));
  ASSERT_THAT(storage->CreateStudy(MakeStudy("s")), IsOk());
  // The COMMIT of the write below holds the storage's connection until the
  // version has been read meanwhile (or 5 s have passed: a version read that
  // waited for the commit then sees its version and fails the test).
  struct HookState {
    std::atomic<bool> committing{false};
    std::atomic<bool> version_read{false};
  } state;
  SqliteStorageTestAccess::SetCommitHook(
      *storage,
      [](void* arg) {
        auto* state = static_cast<HookState*>(arg);
        state->committing = true;
        const absl::Time give_up = absl::Now() + absl::Seconds(5);
        while (!state->version_read.load() && absl::Now() < give_up)
          absl::SleepFor(absl::Milliseconds(1));
        return 0;
      },
      &state);
  absl::Status written;
  std::thread writer(
      [&] { written = storage->PutTrials(Key("s"), {MakeTrial(1)}); });
  while (!state.committing.load()) absl::SleepFor(absl::Milliseconds(1));
  // The last committed version: the write is not committed yet.
  EXPECT_EQ(storage->GetStudyVersion(Key("s")).value_or(-1), 0);
  state.version_read = true;
  writer.join();
  SqliteStorageTestAccess::SetCommitHook(*storage, nullptr, nullptr);
  ASSERT_THAT(written, IsOk());
  // Committed on return: the version read sees it.
  EXPECT_EQ(storage->GetStudyVersion(Key("s")).value_or(-1), 1);
  EXPECT_THAT(storage->GetStudyVersion(Key("absent")),
              StatusIs(absl::StatusCode::kNotFound, _));
}

TEST_F(SqliteStorageTest, WritesAreVisibleToAnotherConnectionOnReturn) {
  METAOPT_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Storage> storage,
                               OpenSqliteStorage(DbPath()));
  ASSERT_THAT(storage->CreateStudy(MakeStudy("s")), IsOk());
  ASSERT_THAT(
      storage->PutTrials(Key("s"), {MakeTrial(1, v1::TRIAL_STATE_COMPLETED)}),
      IsOk());
  Database raw = Raw();
  METAOPT_ASSERT_OK_AND_ASSIGN(
      std::optional<std::string> row,
      raw.QueryText("SELECT study_id || ':' || trial_id || ':' || state || ':' "
                    "|| client_id "
                    "FROM trials"));
  EXPECT_THAT(row, Optional(absl::StrCat("s:1:", v1::TRIAL_STATE_COMPLETED,
                                         ":worker-1")));
  METAOPT_ASSERT_OK_AND_ASSIGN(
      row, raw.QueryText("SELECT create_time_micros FROM studies"));
  EXPECT_THAT(row, Optional(std::string("1700000000123456")));
}

TEST_F(SqliteStorageTest, ConnectionUsesWalFullSyncForeignKeysAndBusyTimeout) {
  SqliteOptions options;
  options.busy_timeout_ms = 1234;
  METAOPT_ASSERT_OK_AND_ASSIGN(std::unique_ptr<SqliteStorage> storage,
                               SqliteStorage::Open(DbPath(), options));
  auto pragma = [&](const char* sql) {
    absl::StatusOr<std::optional<std::string>> value =
        SqliteStorageTestAccess::QueryText(*storage, sql);
    EXPECT_THAT(value, IsOk()) << sql;
    return value.ok() ? value->value_or("<no row>") : "<error>";
  };
  EXPECT_EQ(pragma("PRAGMA journal_mode"), "wal");
  EXPECT_EQ(pragma("PRAGMA synchronous"), "2");  // FULL.
  EXPECT_EQ(pragma("PRAGMA foreign_keys"), "1");
  EXPECT_EQ(pragma("PRAGMA busy_timeout"), "1234");
  // WAL is a property of the file: a fresh connection sees it too.
  Database raw = Raw();
  METAOPT_ASSERT_OK_AND_ASSIGN(std::optional<std::string> mode,
                               raw.QueryText("PRAGMA journal_mode"));
  EXPECT_THAT(mode, Optional(std::string("wal")));
}

TEST_F(SqliteStorageTest, NegativeBusyTimeoutIsInvalidArgument) {
  SqliteOptions options;
  options.busy_timeout_ms = -1;
  EXPECT_THAT(OpenSqliteStorage(DbPath(), options),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("busy_timeout_ms")));
}

TEST_F(SqliteStorageTest, MissingDirectoryIsNotFoundNamingThePath) {
  const std::string path = dir_.File("no/such/dir/metaopt.db");
  EXPECT_THAT(OpenSqliteStorage(path),
              StatusIs(absl::StatusCode::kNotFound,
                       AllOf(HasSubstr(path), HasSubstr("does not exist"))));
}

TEST_F(SqliteStorageTest, FileThatIsNotADatabaseIsDataLoss) {
  {
    std::ofstream out(DbPath(), std::ios::binary);
    out << std::string(4096, 'x');
  }
  EXPECT_THAT(OpenSqliteStorage(DbPath()),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr(DbPath())));
}

// Random bytes over a database's pages (not its header): the damage is found
// when the file is opened, not by the RPCs that happen to read those pages.
TEST_F(SqliteStorageTest, DamagedPagesAreDataLossAtOpen) {
  {
    METAOPT_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Storage> storage,
                                 OpenSqliteStorage(DbPath()));
    for (int i = 0; i < 200; ++i) {
      ASSERT_THAT(storage->CreateStudy(MakeStudy(absl::StrCat("s", i))),
                  IsOk());
    }
  }  // the last connection's close checkpoints the WAL into the file
  const auto size = std::filesystem::file_size(DbPath());
  ASSERT_GT(size, 8 * 4096u);
  {
    std::fstream file(DbPath(), std::ios::binary | std::ios::in |
                                    std::ios::out);
    file.seekp(4 * 4096);
    std::mt19937 random(22);
    for (int i = 0; i < 4096; ++i) file.put(static_cast<char>(random()));
  }
  EXPECT_THAT(OpenSqliteStorage(DbPath()),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr(DbPath()), HasSubstr("quick_check"),
                             HasSubstr("damaged"))));
}

// chmod 444 on the file: the open fails naming the cause, instead of every
// later write failing with INTERNAL. Runs the open as an unprivileged user
// (root writes read-only files), in a child process.
TEST_F(SqliteStorageTest, ReadOnlyDatabaseFailsAtOpen) {
  ASSERT_THAT(OpenSqliteStorage(DbPath()), IsOk());  // create it
  const passwd* nobody = getpwnam("nobody");
  if (nobody == nullptr) GTEST_SKIP() << "no user 'nobody'";
  const uid_t uid = geteuid() == 0 ? nobody->pw_uid : geteuid();
  const gid_t gid = geteuid() == 0 ? nobody->pw_gid : getegid();
  const std::filesystem::path dir = std::filesystem::path(DbPath()).parent_path();
  ASSERT_EQ(chown(dir.c_str(), uid, gid), 0);
  ASSERT_EQ(chown(DbPath().c_str(), uid, gid), 0);
  ASSERT_EQ(chmod(DbPath().c_str(), 0444), 0);
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(pipe_fds[0]);
    if (geteuid() == 0 && (setgid(gid) != 0 || setuid(uid) != 0)) _exit(2);
    const absl::Status opened = OpenSqliteStorage(DbPath()).status();
    const std::string text = opened.ToString();
    if (write(pipe_fds[1], text.data(), text.size()) < 0) _exit(3);
    _exit(0);
  }
  close(pipe_fds[1]);
  std::string text;
  char buffer[512];
  for (ssize_t n; (n = read(pipe_fds[0], buffer, sizeof(buffer))) > 0;) {
    text.append(buffer, n);
  }
  close(pipe_fds[0]);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_THAT(text, AllOf(HasSubstr("FAILED_PRECONDITION"),
                          HasSubstr(DbPath()), HasSubstr("read-only")));
}

// ----- Schema versions and migrations -----

TEST_F(SqliteStorageTest, NewDatabaseIsAtTheCurrentSchemaVersion) {
  EXPECT_GE(CurrentSchemaVersion(), 1);
  ASSERT_THAT(OpenSqliteStorage(DbPath()), IsOk());
  EXPECT_EQ(RawSchemaVersion(), CurrentSchemaVersion());
  // Opening again applies nothing and changes nothing.
  ASSERT_THAT(OpenSqliteStorage(DbPath()), IsOk());
  EXPECT_EQ(RawSchemaVersion(), CurrentSchemaVersion());
}

TEST_F(SqliteStorageTest, MigratesAHandBuiltVersion1Database) {
  // The version-1 layout, written out independently of the migration code, with
  // one study, one trial and a policy state in it.
  v1::Study study = MakeStudy("old");
  v1::Trial trial = MakeTrial(7, v1::TRIAL_STATE_COMPLETED);
  // Intermediate values embedded in the trial's record, as before they were
  // stored apart.
  for (int64_t step : {0, 3}) {
    v1::IntermediateValue* value = trial.add_intermediate_values();
    value->set_step(step);
    value->set_value(0.5 + step);
  }
  {
    Database raw = Raw();
    ASSERT_THAT(raw.Exec(R"sql(
        CREATE TABLE schema_version (version INTEGER NOT NULL);
        INSERT INTO schema_version (version) VALUES (1);
        CREATE TABLE studies (study_id TEXT PRIMARY KEY NOT NULL,
                              create_time_micros INTEGER NOT NULL, study BLOB NOT NULL);
        CREATE TABLE trials (study_id TEXT NOT NULL REFERENCES studies (study_id),
                             trial_id INTEGER NOT NULL, state INTEGER NOT NULL,
                             client_id TEXT NOT NULL, trial BLOB NOT NULL,
                             PRIMARY KEY (study_id, trial_id));
        CREATE INDEX trials_by_state ON trials (study_id, state);
        CREATE TABLE policy_state (study_id TEXT PRIMARY KEY NOT NULL
                                   REFERENCES studies (study_id), state BLOB NOT NULL);
    )sql"),
                IsOk());
    METAOPT_ASSERT_OK_AND_ASSIGN(
        Statement insert,
        Statement::Prepare(raw, "INSERT INTO studies VALUES ('old', 0, ?)"));
    ASSERT_THAT(insert.BindBlob(1, study.SerializeAsString()), IsOk());
    ASSERT_THAT(insert.Run(), IsOk());
    METAOPT_ASSERT_OK_AND_ASSIGN(
        insert, Statement::Prepare(
                    raw, "INSERT INTO trials VALUES ('old', 7, 2, 'w', ?)"));
    ASSERT_THAT(insert.BindBlob(1, trial.SerializeAsString()), IsOk());
    ASSERT_THAT(insert.Run(), IsOk());
    ASSERT_THAT(raw.Exec("INSERT INTO policy_state VALUES ('old', x'0102')"),
                IsOk());
  }

  METAOPT_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Storage> storage,
                               OpenSqliteStorage(DbPath()));
  EXPECT_EQ(RawSchemaVersion(), CurrentSchemaVersion());
  METAOPT_ASSERT_OK_AND_ASSIGN(v1::Study got, storage->GetStudy(Key("old")));
  EXPECT_THAT(got, EqualsProto(study));
  METAOPT_ASSERT_OK_AND_ASSIGN(std::vector<v1::Trial> trials,
                               storage->LoadTrials(Key("old")));
  EXPECT_THAT(trials, ElementsAre(EqualsProto(trial)));
  // The values moved to rows of their own, out of the trial's record.
  {
    Database raw = Raw();
    EXPECT_EQ(raw.QueryText("SELECT count(*) FROM intermediate_values WHERE "
                            "study_id = 'old' AND trial_id = 7")
                  .value_or(std::nullopt),
              std::optional<std::string>("2"));
    v1::Trial without_values = trial;
    without_values.clear_intermediate_values();
    EXPECT_EQ(raw.QueryText("SELECT hex(trial) FROM trials WHERE trial_id = 7")
                  .value_or(std::nullopt),
              std::optional<std::string>(absl::AsciiStrToUpper(
                  absl::BytesToHexString(without_values.SerializeAsString()))));
  }
  METAOPT_ASSERT_OK_AND_ASSIGN(std::optional<std::string> state,
                               storage->GetPolicyState(Key("old")));
  EXPECT_THAT(state, Optional(std::string("\x01\x02")));
  // Its studies belong to the empty owner (a server without authentication).
  EXPECT_THAT(storage->GetStudy(Key("old", "alice")),
              StatusIs(absl::StatusCode::kNotFound, _));
  METAOPT_ASSERT_OK_AND_ASSIGN(std::vector<v1::Study> listed,
                               storage->ListStudies("", "", 10));
  EXPECT_THAT(listed, ElementsAre(EqualsProto(study)));
  EXPECT_EQ(storage->CountStudies("").value_or(-1), 1);
  // And it is writable under the current schema, also by other owners.
  ASSERT_THAT(storage->PutTrials(Key("old"), {MakeTrial(8)}), IsOk());
  ASSERT_THAT(storage->CreateStudy(MakeStudy("new")), IsOk());
  v1::Study owned = MakeStudy("old");
  owned.set_owner("alice");
  ASSERT_THAT(storage->CreateStudy(owned), IsOk());
  ASSERT_THAT(storage->PutTrials(Key("old", "alice"), {MakeTrial(1)}), IsOk());
  METAOPT_ASSERT_OK_AND_ASSIGN(trials, storage->LoadTrials(Key("old")));
  EXPECT_THAT(trials, SizeIs(2));
  // The foreign keys still point at the rebuilt studies table.
  EXPECT_THAT(Raw().Exec("PRAGMA foreign_keys = ON; INSERT INTO trials (owner, "
                         "study_id, trial_id, state, client_id, trial) VALUES "
                         "('bob', 'old', 1, 1, 'w', x'')"),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("FOREIGN KEY")));
  ASSERT_THAT(storage->DeleteStudy(Key("old")), IsOk());
  EXPECT_THAT(storage->LoadTrials(Key("old", "alice")), IsOk());
}

TEST_F(SqliteStorageTest, MigrateAppliesOnlyPendingStepsInOrder) {
  const Migration v1_only[] = {{1, "CREATE TABLE a (x INTEGER)"}};
  const Migration v1_v2[] = {
      {1, "CREATE TABLE a (x INTEGER)"},
      {2, "ALTER TABLE a ADD COLUMN y TEXT; CREATE TABLE b (z BLOB)"}};
  Database db = Raw();
  ASSERT_THAT(Migrate(db, v1_only), IsOk());
  EXPECT_EQ(ReadSchemaVersion(db).value_or(-1), 1);
  ASSERT_THAT(db.Exec("INSERT INTO a (x) VALUES (5)"), IsOk());

  // Re-running version 1's step would fail (table a exists), so success means
  // it was skipped.
  ASSERT_THAT(Migrate(db, v1_v2), IsOk());
  EXPECT_EQ(ReadSchemaVersion(db).value_or(-1), 2);
  METAOPT_ASSERT_OK_AND_ASSIGN(
      std::optional<std::string> row,
      db.QueryText("SELECT x || ':' || ifnull(y, 'null') FROM a"));
  EXPECT_THAT(row, Optional(std::string("5:null")));
  ASSERT_THAT(db.Exec("INSERT INTO b (z) VALUES (x'00')"), IsOk());
}

TEST_F(SqliteStorageTest, FailedMigrationStepIsRolledBack) {
  const Migration broken[] = {
      {1, "CREATE TABLE a (x INTEGER)"},
      {2, "CREATE TABLE b (x INTEGER); INSERT INTO nowhere VALUES (1)"}};
  Database db = Raw();
  EXPECT_THAT(Migrate(db, broken),
              StatusIs(absl::StatusCode::kInternal,
                       HasSubstr("migrating schema to version 2")));
  EXPECT_EQ(ReadSchemaVersion(db).value_or(-1), 1);
  // Step 2's first statement did not survive.
  METAOPT_ASSERT_OK_AND_ASSIGN(
      std::optional<std::string> count,
      db.QueryText("SELECT count(*) FROM sqlite_master WHERE type = 'table' "
                   "AND name = 'b'"));
  EXPECT_THAT(count, Optional(std::string("0")));
}

TEST_F(SqliteStorageTest, MigrationsOutOfSequenceAreInternal) {
  const Migration gap[] = {{1, "CREATE TABLE a (x INTEGER)"},
                           {3, "CREATE TABLE b (x INTEGER)"}};
  Database db = Raw();
  EXPECT_THAT(Migrate(db, gap),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("version 3")));
  EXPECT_EQ(ReadSchemaVersion(db).value_or(-1), 0);
}

TEST_F(SqliteStorageTest, RefusesADatabaseFromANewerVersion) {
  ASSERT_THAT(OpenSqliteStorage(DbPath()), IsOk());
  const int newer = CurrentSchemaVersion() + 1;
  {
    Database raw = Raw();
    ASSERT_THAT(
        raw.Exec(absl::StrCat("UPDATE schema_version SET version = ", newer)
                     .c_str()),
        IsOk());
  }
  EXPECT_THAT(OpenSqliteStorage(DbPath()),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr(absl::StrCat("version ", newer)),
                             HasSubstr("newer"))));
  EXPECT_EQ(RawSchemaVersion(), newer);  // Untouched.
}

// ----- Corruption -----

TEST_F(SqliteStorageTest, UnparsableStudyBlobIsDataLossNamingTheStudy) {
  METAOPT_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Storage> storage,
                               OpenSqliteStorage(DbPath()));
  ASSERT_THAT(storage->CreateStudy(MakeStudy("broken")), IsOk());
  ASSERT_THAT(Raw().Exec("UPDATE studies SET study = x'ffffffff'"), IsOk());
  EXPECT_THAT(storage->GetStudy(Key("broken")),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("\"broken\"")));
}

// One damaged study neither hides the others from a listing nor escapes
// deletion.
TEST_F(SqliteStorageTest, UnparsableStudyIsListedByItsKeyAndCanBeDeleted) {
  METAOPT_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Storage> storage,
                               OpenSqliteStorage(DbPath()));
  for (const char* id : {"a", "broken", "c"}) {
    ASSERT_THAT(storage->CreateStudy(MakeStudy(id)), IsOk());
  }
  ASSERT_THAT(storage->PutTrials(Key("broken"), {MakeTrial(1)}), IsOk());
  ASSERT_THAT(Raw().Exec("UPDATE studies SET study = x'ffffffff' "
                         "WHERE study_id = 'broken'"),
              IsOk());
  METAOPT_ASSERT_OK_AND_ASSIGN(std::vector<v1::Study> listed,
                               storage->ListStudies("", "", 10));
  ASSERT_THAT(listed, SizeIs(3));
  EXPECT_TRUE(listed[0].has_spec());
  EXPECT_EQ(listed[1].study_id(), "broken");
  EXPECT_FALSE(listed[1].has_spec());
  EXPECT_EQ(listed[2].study_id(), "c");
  EXPECT_THAT(storage->DeleteStudy(Key("broken")), IsOk());
  EXPECT_THAT(storage->GetStudy(Key("broken")),
              StatusIs(absl::StatusCode::kNotFound, _));
  EXPECT_THAT(storage->ListStudies("", "", 10), IsOk());
}

TEST_F(SqliteStorageTest, StudyBlobUnderAnotherKeyIsDataLoss) {
  METAOPT_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Storage> storage,
                               OpenSqliteStorage(DbPath()));
  ASSERT_THAT(storage->CreateStudy(MakeStudy("a")), IsOk());
  ASSERT_THAT(storage->CreateStudy(MakeStudy("b")), IsOk());
  ASSERT_THAT(Raw().Exec("UPDATE studies SET study = (SELECT study FROM "
                         "studies WHERE study_id = 'b') "
                         "WHERE study_id = 'a'"),
              IsOk());
  EXPECT_THAT(storage->GetStudy(Key("a")),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("\"a\"")));
}

TEST_F(SqliteStorageTest, StudyBlobOfAnotherOwnerIsDataLoss) {
  METAOPT_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Storage> storage,
                               OpenSqliteStorage(DbPath()));
  ASSERT_THAT(storage->CreateStudy(MakeStudy("s")), IsOk());
  ASSERT_THAT(Raw().Exec("UPDATE studies SET owner = 'mallory'"), IsOk());
  EXPECT_THAT(storage->GetStudy(Key("s", "mallory")),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr("\"s\""), HasSubstr("\"mallory\""))));
}

TEST_F(SqliteStorageTest, UnparsableTrialBlobIsDataLossNamingStudyAndTrial) {
  METAOPT_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Storage> storage,
                               OpenSqliteStorage(DbPath()));
  ASSERT_THAT(storage->CreateStudy(MakeStudy("s")), IsOk());
  ASSERT_THAT(storage->PutTrials(Key("s"), {MakeTrial(1), MakeTrial(42)}),
              IsOk());
  ASSERT_THAT(
      Raw().Exec("UPDATE trials SET trial = x'ffffffff' WHERE trial_id = 42"),
      IsOk());
  EXPECT_THAT(storage->LoadTrials(Key("s")),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr("\"s\""), HasSubstr("42"))));
}

TEST_F(SqliteStorageTest, FailedWriteStudyStoresNone) {
  METAOPT_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Storage> storage,
                               OpenSqliteStorage(DbPath()));
  ASSERT_THAT(storage->CreateStudy(MakeStudy("s")), IsOk());
  ASSERT_THAT(storage->PutTrials(Key("s"), {MakeTrial(1)}), IsOk());
  // The policy state is written after the trials: its failure must take them
  // back.
  ASSERT_THAT(Raw().Exec("CREATE TRIGGER refuse BEFORE INSERT ON policy_state "
                         "BEGIN SELECT RAISE(ABORT, 'refused'); END"),
              IsOk());
  const std::vector<v1::Trial> trials = {
      MakeTrial(1, v1::TRIAL_STATE_STALE), MakeTrial(2)};
  EXPECT_THAT(storage->WriteStudy(Key("s"), {trials, "state"}), Not(IsOk()));
  METAOPT_ASSERT_OK_AND_ASSIGN(std::vector<v1::Trial> got,
                               storage->LoadTrials(Key("s")));
  EXPECT_THAT(got, ElementsAre(EqualsProto(MakeTrial(1))));
  METAOPT_ASSERT_OK_AND_ASSIGN(std::optional<std::string> state,
                               storage->GetPolicyState(Key("s")));
  EXPECT_EQ(state, std::nullopt);
}

// ----- Concurrency across connections -----

TEST_F(SqliteStorageTest, WritersOnSeparateConnectionsLoseNothing) {
  // Eight storages on one file, as eight processes would be: they contend for
  // the file's write lock, which BEGIN IMMEDIATE plus the busy timeout turn
  // into waiting, not errors.
  constexpr int kThreads = 8;
  constexpr int kTrialsPerThread = 10;
  ASSERT_THAT(OpenSqliteStorage(DbPath()),
              IsOk());  // Create and migrate once up front.
  std::vector<std::thread> threads;
  std::vector<absl::Status> errors(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([this, t, &errors] {
      absl::StatusOr<std::unique_ptr<Storage>> storage =
          OpenSqliteStorage(DbPath());
      if (!storage.ok()) {
        errors[t] = storage.status();
        return;
      }
      const std::string id = absl::StrCat("study-", t);
      absl::Status s = (*storage)->CreateStudy(MakeStudy(id));
      for (int i = 1; s.ok() && i <= kTrialsPerThread; ++i) {
        s = (*storage)->PutTrials(Key(id),
                                  {MakeTrial(i, v1::TRIAL_STATE_COMPLETED)});
        if (s.ok()) s = (*storage)->LoadTrials(Key(id)).status();
      }
      errors[t] = s;
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const absl::Status& s : errors) EXPECT_THAT(s, IsOk());

  METAOPT_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Storage> storage,
                               OpenSqliteStorage(DbPath()));
  for (int t = 0; t < kThreads; ++t) {
    METAOPT_ASSERT_OK_AND_ASSIGN(
        std::vector<v1::Trial> trials,
        storage->LoadTrials(Key(absl::StrCat("study-", t))));
    EXPECT_THAT(trials, SizeIs(kTrialsPerThread));
  }
}

}  // namespace
}  // namespace metaopt::storage
