// PostgreSQL-specific behaviour: durability across reopen, migrations, URI
// checks, and what a lost connection or a restarted server does to calls. The
// Storage contracts themselves are covered by storage_test.cc. Each test runs
// its own PostgreSQL server (tests/testutil/postgres_server.h).
#include "core/storage/postgres_storage.h"

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "core/storage/postgres_util.h"
#include "core/storage/storage.h"
#include "tests/testutil/storage_fixtures.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "metaopt/v1/study.pb.h"
#include "tests/testutil/postgres_server.h"
#include "tests/testutil/status_matchers.h"

namespace metaopt::storage {
namespace {

using ::metaopt::testing::IsOk;
using ::metaopt::testing::PostgresServer;
using ::metaopt::testing::StatusIs;
using ::testing::_;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::Optional;

class PostgresStorageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string reason = PostgresServer::SkipReason();
        !reason.empty()) {
      GTEST_SKIP() << reason;
    }
    METAOPT_ASSERT_OK_AND_ASSIGN(server_, PostgresServer::Start());
    METAOPT_ASSERT_OK_AND_ASSIGN(uri_, server_->CreateDatabase());
  }

  // A raw connection to the test database.
  PgConnection Raw() {
    absl::StatusOr<PgConnection> conn = PgConnection::Connect(uri_, 5);
    EXPECT_THAT(conn, IsOk());
    return conn.ok() ? *std::move(conn) : PgConnection();
  }

  int RawSchemaVersion() {
    absl::StatusOr<PgResult> row =
        Raw().Query("SELECT MAX(version) FROM schema_version");
    EXPECT_THAT(row, IsOk());
    return row.ok() ? static_cast<int>(row->Int(0, 0)) : -1;
  }

  std::unique_ptr<PostgresServer> server_;
  std::string uri_;
};

TEST_F(PostgresStorageTest, ReopeningKeepsEverything) {
  {
    METAOPT_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Storage> storage,
                                 OpenPostgresStorage(uri_));
    ASSERT_THAT(storage->CreateStudy(MakeStudy("s")), IsOk());
    ASSERT_THAT(storage->WriteStudy(Key("s"), {{MakeTrial(1)}, "state"}),
                IsOk());
  }
  // Also across a crash of the server (recovery replays the WAL).
  server_->Crash();
  ASSERT_THAT(server_->Restart(), IsOk());
  METAOPT_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Storage> storage,
                               OpenPostgresStorage(uri_));
  METAOPT_ASSERT_OK_AND_ASSIGN(v1::Study study, storage->GetStudy(Key("s")));
  EXPECT_THAT(study, EqualsProto(MakeStudy("s")));
  EXPECT_THAT(storage->LoadTrials(Key("s")).value_or(std::vector<v1::Trial>()),
              ElementsAre(EqualsProto(MakeTrial(1))));
  EXPECT_THAT(storage->GetPolicyState(Key("s")).value_or(std::nullopt),
              Optional(std::string("state")));
  EXPECT_EQ(storage->GetStudyVersion(Key("s")).value_or(-1), 1);
}

TEST_F(PostgresStorageTest, NewDatabaseIsAtTheSchemaVersionSqliteHas) {
  ASSERT_THAT(OpenPostgresStorage(uri_), IsOk());
  EXPECT_EQ(RawSchemaVersion(), CurrentSchemaVersion());
  EXPECT_EQ(static_cast<int>(postgres_storage_internal::Migrations().size()),
            CurrentSchemaVersion());
  ASSERT_THAT(OpenPostgresStorage(uri_), IsOk());
  EXPECT_EQ(RawSchemaVersion(), CurrentSchemaVersion());
}

TEST_F(PostgresStorageTest, ConcurrentOpenersMigrateOnce) {
  std::vector<std::thread> threads;
  std::vector<absl::Status> opened(6);
  for (size_t i = 0; i < opened.size(); ++i) {
    threads.emplace_back(
        [&, i] { opened[i] = OpenPostgresStorage(uri_).status(); });
  }
  for (std::thread& thread : threads) thread.join();
  for (const absl::Status& status : opened) EXPECT_THAT(status, IsOk());
  absl::StatusOr<PgResult> rows =
      Raw().Query("SELECT count(*) FROM schema_version");
  ASSERT_THAT(rows, IsOk());
  EXPECT_EQ(rows->Int(0, 0), 1);
  EXPECT_EQ(RawSchemaVersion(), CurrentSchemaVersion());
}

TEST_F(PostgresStorageTest, MigratesAHandBuiltVersion1Database) {
  // The version-1 layout written out independently of the migration code.
  const v1::Study study = MakeStudy("old");
  v1::Trial trial = MakeTrial(7, v1::TRIAL_STATE_COMPLETED);
  // Intermediate values embedded in the trial's record, as before they were
  // stored apart.
  for (int64_t step : {0, 3}) {
    v1::IntermediateValue* value = trial.add_intermediate_values();
    value->set_step(step);
    value->set_value(0.5 + step);
  }
  {
    PgConnection raw = Raw();
    ASSERT_THAT(raw.Exec(R"sql(
        CREATE TABLE schema_version (version INTEGER NOT NULL);
        INSERT INTO schema_version (version) VALUES (1);
        CREATE TABLE studies (study_id BYTEA NOT NULL,
          create_time_micros BIGINT NOT NULL, study BYTEA NOT NULL,
          CONSTRAINT studies_key PRIMARY KEY (study_id));
        CREATE TABLE trials (study_id BYTEA NOT NULL, trial_id BIGINT NOT NULL,
          state INTEGER NOT NULL, client_id BYTEA NOT NULL, trial BYTEA NOT NULL,
          CONSTRAINT trials_key PRIMARY KEY (study_id, trial_id),
          CONSTRAINT trials_study FOREIGN KEY (study_id)
            REFERENCES studies (study_id));
        CREATE INDEX trials_by_state ON trials (study_id, state);
        CREATE TABLE policy_state (study_id BYTEA NOT NULL, state BYTEA NOT NULL,
          CONSTRAINT policy_state_key PRIMARY KEY (study_id),
          CONSTRAINT policy_state_study FOREIGN KEY (study_id)
            REFERENCES studies (study_id));
    )sql"),
                IsOk());
    ASSERT_THAT(raw.Query("INSERT INTO studies VALUES ('old', 0, $1)",
                          {PgParam::Bytes(study.SerializeAsString())})
                    .status(),
                IsOk());
    ASSERT_THAT(raw.Query("INSERT INTO trials VALUES ('old', 7, 2, 'w', $1)",
                          {PgParam::Bytes(trial.SerializeAsString())})
                    .status(),
                IsOk());
    ASSERT_THAT(raw.Exec("INSERT INTO policy_state VALUES ('old', '\\x0102')"),
                IsOk());
  }
  METAOPT_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Storage> storage,
                               OpenPostgresStorage(uri_));
  EXPECT_EQ(RawSchemaVersion(), CurrentSchemaVersion());
  METAOPT_ASSERT_OK_AND_ASSIGN(v1::Study got, storage->GetStudy(Key("old")));
  EXPECT_THAT(got, EqualsProto(study));
  EXPECT_THAT(
      storage->LoadTrials(Key("old")).value_or(std::vector<v1::Trial>()),
      ElementsAre(EqualsProto(trial)));
  // The values moved to rows of their own, out of the trial's record.
  {
    PgConnection raw = Raw();
    absl::StatusOr<PgResult> rows =
        raw.Query("SELECT count(*) FROM intermediate_values WHERE trial_id = 7");
    ASSERT_THAT(rows, IsOk());
    EXPECT_EQ(rows->Int(0, 0), 2);
    v1::Trial without_values = trial;
    without_values.clear_intermediate_values();
    rows = raw.Query("SELECT trial FROM trials WHERE trial_id = 7");
    ASSERT_THAT(rows, IsOk());
    EXPECT_EQ(rows->Bytes(0, 0), without_values.SerializeAsString());
  }
  EXPECT_THAT(storage->GetPolicyState(Key("old")).value_or(std::nullopt),
              Optional(std::string("\x01\x02")));
  EXPECT_EQ(storage->GetStudyVersion(Key("old")).value_or(-1), 0);
  // Writable under the current schema, also by other owners.
  v1::Study owned = MakeStudy("old");
  owned.set_owner("alice");
  ASSERT_THAT(storage->CreateStudy(owned), IsOk());
  ASSERT_THAT(storage->PutTrials(Key("old", "alice"), {MakeTrial(1)}), IsOk());
  // The foreign keys point at the re-keyed studies table.
  EXPECT_THAT(Raw().Exec("INSERT INTO trials (owner, study_id, trial_id, "
                         "state, client_id, trial) VALUES ('bob', 'old', 1, "
                         "1, 'w', '')"),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("foreign key")));
  ASSERT_THAT(storage->DeleteStudy(Key("old")), IsOk());
  EXPECT_THAT(storage->LoadTrials(Key("old", "alice")), IsOk());
}

TEST_F(PostgresStorageTest, RefusesADatabaseFromANewerVersion) {
  ASSERT_THAT(OpenPostgresStorage(uri_), IsOk());
  ASSERT_THAT(Raw().Exec("UPDATE schema_version SET version = 99"), IsOk());
  EXPECT_THAT(OpenPostgresStorage(uri_),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("99"), HasSubstr("newer metaopt"))));
}

TEST_F(PostgresStorageTest, UnparsableRecordsAreDataLossNamingThem) {
  METAOPT_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Storage> storage,
                               OpenPostgresStorage(uri_));
  ASSERT_THAT(storage->CreateStudy(MakeStudy("s")), IsOk());
  ASSERT_THAT(storage->PutTrials(Key("s"), {MakeTrial(3)}), IsOk());
  ASSERT_THAT(Raw().Exec("UPDATE trials SET trial = '\\xffff'"), IsOk());
  EXPECT_THAT(storage->LoadTrials(Key("s")),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr("\"s\""), HasSubstr("trial 3"))));
  ASSERT_THAT(Raw().Exec("UPDATE studies SET study = '\\xffff'"), IsOk());
  EXPECT_THAT(storage->GetStudy(Key("s")),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("\"s\"")));
  // Listed by its key, and it can still be deleted.
  METAOPT_ASSERT_OK_AND_ASSIGN(std::vector<v1::Study> listed,
                               storage->ListStudies("", "", 10));
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].study_id(), "s");
  EXPECT_THAT(storage->DeleteStudy(Key("s")), IsOk());
}

TEST_F(PostgresStorageTest, KeysMayHoldAnyByte) {
  METAOPT_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Storage> storage,
                               OpenPostgresStorage(uri_));
  // Any valid UTF-8 (what proto strings hold), NUL included.
  const std::string odd("a\0b\xc3\xa9", 5);
  v1::Study study = MakeStudy("x");
  study.set_owner(odd);
  ASSERT_THAT(storage->CreateStudy(study), IsOk());
  v1::Trial trial = MakeTrial(1);
  trial.set_client_id(odd);
  ASSERT_THAT(storage->PutTrials(Key("x", odd), {trial}), IsOk());
  EXPECT_THAT(
      storage->LoadTrials(Key("x", odd)).value_or(std::vector<v1::Trial>()),
      ElementsAre(EqualsProto(trial)));
  EXPECT_EQ(storage->CountStudies(odd).value_or(-1), 1);
}

// ----- URIs -----

TEST(PostgresUriTest, BadUrisAreInvalidArgumentNamingValueAndRule) {
  EXPECT_THAT(
      OpenPostgresStorage("mysql://u@h/db"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("mysql://u@h/db"), HasSubstr("postgresql://"))));
  EXPECT_THAT(OpenPostgresStorage("postgresql://u:secret@h:notaport/db"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("notaport"), Not(HasSubstr("secret")))));
  EXPECT_THAT(
      OpenPostgresStorage("postgresql://h/db?nosuchoption=1"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("nosuchoption")));
  PostgresOptions options;
  options.pool_size = 0;
  EXPECT_THAT(
      OpenPostgresStorage("postgresql://h/db", options),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("pool_size 0")));
}

TEST(PostgresUriTest, PasswordsAreRedacted) {
  EXPECT_EQ(RedactPostgresUri("postgresql://u:secret@h:5432/db"),
            "postgresql://u:***@h:5432/db");
  EXPECT_EQ(RedactPostgresUri("postgresql://u@h/db?password=secret&x=1"),
            "postgresql://u@h/db?password=***&x=1");
  EXPECT_EQ(RedactPostgresUri("postgresql://h/db"), "postgresql://h/db");
  EXPECT_EQ(RedactPostgresUri("postgres://u:p@ss@h/db"),
            "postgres://u:***@h/db");
}

TEST(PostgresUriTest, UnreachableServerIsUnavailableAfterTheRetryBudget) {
  PostgresOptions options;
  options.retry_budget = absl::Milliseconds(300);
  const absl::Time start = absl::Now();
  // Port 1 on loopback: nothing listens there.
  EXPECT_THAT(
      OpenPostgresStorage("postgresql://u:secret@127.0.0.1:1/db", options),
      StatusIs(absl::StatusCode::kUnavailable,
               AllOf(HasSubstr("127.0.0.1:1"), HasSubstr("attempt"),
                     Not(HasSubstr("secret")))));
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
}

// ----- --db values -----

TEST(OpenStorageTest, DbValuesNameTheirBackend) {
  ScopedTempDir dir;
  const std::string plain = dir.File("plain.db");
  ASSERT_THAT(OpenStorage(plain, {}, {}), IsOk());
  EXPECT_TRUE(std::filesystem::exists(plain));
  const std::string prefixed = dir.File("prefixed.db");
  ASSERT_THAT(OpenStorage("sqlite:" + prefixed, {}, {}), IsOk());
  EXPECT_TRUE(std::filesystem::exists(prefixed));
  EXPECT_THAT(OpenStorage("", {}, {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("--db"), HasSubstr("postgresql://"))));
  EXPECT_THAT(OpenStorage("sqlite:", {}, {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("no path after sqlite:")));
  EXPECT_THAT(OpenStorage("mysql://u:secret@h/db", {}, {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("unknown scheme \"mysql\""),
                             HasSubstr("postgresql://"))));
  EXPECT_THAT(
      OpenStorage("postgresql://u:secret@h:99999/db", {}, {}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("opening database postgresql://u:***@"),
                     HasSubstr("port \"99999\""), Not(HasSubstr("secret")))));
  EXPECT_EQ(DescribeDatabase("postgres://u:secret@h/db"),
            "postgres://u:***@h/db");
  EXPECT_EQ(DescribeDatabase("/var/lib/metaopt/metaopt.db"),
            "/var/lib/metaopt/metaopt.db");
}

// ----- Lost connections and restarts -----

TEST_F(PostgresStorageTest, DroppedConnectionsAreRetriedUnseen) {
  METAOPT_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Storage> storage,
                               OpenPostgresStorage(uri_));
  ASSERT_THAT(storage->CreateStudy(MakeStudy("s")), IsOk());
  for (int i = 1; i <= 5; ++i) {
    ASSERT_THAT(server_->TerminateConnections(), IsOk());
    ASSERT_THAT(storage->PutTrials(Key("s"), {MakeTrial(i)}), IsOk());
    ASSERT_THAT(server_->TerminateConnections(), IsOk());
    EXPECT_EQ(storage->GetStudyVersion(Key("s")).value_or(-1), i);
  }
  EXPECT_EQ(
      storage->LoadTrials(Key("s")).value_or(std::vector<v1::Trial>()).size(),
      5u);
}

TEST_F(PostgresStorageTest, CallsDuringARestartWaitForTheServer) {
  METAOPT_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Storage> storage,
                               OpenPostgresStorage(uri_));
  ASSERT_THAT(storage->CreateStudy(MakeStudy("s")), IsOk());
  server_->Crash();
  // Issued while the server is down: retried until it is back. (The server
  // is restarted from this thread: it dies with the thread that started it.)
  absl::Status written;
  std::thread writer([&] {
    written = storage->WriteStudy(Key("s"), {{MakeTrial(1)}, std::nullopt, 0});
  });
  absl::SleepFor(absl::Seconds(1));
  EXPECT_THAT(server_->Restart(), IsOk());
  writer.join();
  ASSERT_THAT(written, IsOk());
  EXPECT_EQ(storage->GetStudyVersion(Key("s")).value_or(-1), 1);
}

TEST_F(PostgresStorageTest, DownLongerThanTheBudgetIsUnavailableNotInternal) {
  PostgresOptions options;
  options.retry_budget = absl::Milliseconds(500);
  METAOPT_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Storage> storage,
                               OpenPostgresStorage(uri_, options));
  ASSERT_THAT(storage->CreateStudy(MakeStudy("s")), IsOk());
  server_->Stop();
  const absl::Status down = storage->PutTrials(Key("s"), {MakeTrial(1)});
  EXPECT_THAT(down, StatusIs(absl::StatusCode::kUnavailable,
                             AllOf(HasSubstr("writing study \"s\""),
                                   HasSubstr("PostgreSQL database is "
                                             "unavailable"))));
  // Clients see the backend, not where it is or who connects: no part of
  // the URI (user, host, port, database).
  const std::string authority = uri_.substr(uri_.find("://") + 3);
  for (const absl::string_view part :
       absl::StrSplit(authority, absl::ByAnyChar("@:/?"), absl::SkipEmpty())) {
    EXPECT_THAT(std::string(down.message()), Not(HasSubstr(std::string(part))))
        << uri_;
  }
  EXPECT_THAT(storage->LoadTrials(Key("s")),
              StatusIs(absl::StatusCode::kUnavailable, _));
  // Once the server is back, the same storage object works again.
  ASSERT_THAT(server_->Restart(), IsOk());
  ASSERT_THAT(storage->PutTrials(Key("s"), {MakeTrial(1)}), IsOk());
  EXPECT_EQ(storage->GetStudyVersion(Key("s")).value_or(-1), 1);
}

}  // namespace
}  // namespace metaopt::storage
