#include "core/storage/sqlite_util.h"

#include <optional>
#include <string>
#include <vector>

#include "tests/testutil/storage_fixtures.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"

namespace metaopt::storage {
namespace {

using ::metaopt::testing::IsOk;
using ::metaopt::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::Optional;

TEST(SqliteStatusTest, MapsResultCodesToStatusCodes) {
  EXPECT_THAT(SqliteStatus(SQLITE_OK, nullptr, "ctx"), IsOk());
  EXPECT_THAT(SqliteStatus(SQLITE_DONE, nullptr, "ctx"), IsOk());
  EXPECT_THAT(SqliteStatus(SQLITE_BUSY, nullptr, "ctx"),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("ctx")));
  EXPECT_THAT(SqliteStatus(SQLITE_BUSY_SNAPSHOT, nullptr, "ctx"),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("ctx")));
  EXPECT_THAT(SqliteStatus(SQLITE_LOCKED, nullptr, "ctx"),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("ctx")));
  EXPECT_THAT(SqliteStatus(SQLITE_CORRUPT, nullptr, "ctx"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("ctx")));
  EXPECT_THAT(SqliteStatus(SQLITE_NOTADB, nullptr, "ctx"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("ctx")));
  EXPECT_THAT(SqliteStatus(SQLITE_FULL, nullptr, "ctx"),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("ctx")));
  EXPECT_THAT(SqliteStatus(SQLITE_CONSTRAINT_UNIQUE, nullptr, "ctx"),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("ctx")));
  EXPECT_THAT(SqliteStatus(SQLITE_IOERR_FSYNC, nullptr, "ctx"),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("ctx")));
}

class SqliteUtilTest : public ::testing::Test {
 protected:
  void SetUp() override {
    METAOPT_ASSERT_OK_AND_ASSIGN(db_, Database::Open(dir_.File("util.db")));
    ASSERT_THAT(db_.Exec("CREATE TABLE t (k TEXT PRIMARY KEY, v BLOB)"),
                IsOk());
  }

  absl::Status Insert(std::string_view key, std::string_view value) {
    absl::StatusOr<Statement> insert =
        Statement::Prepare(db_, "INSERT INTO t VALUES (?, ?)");
    if (!insert.ok()) return insert.status();
    if (absl::Status s = insert->BindText(1, key); !s.ok()) return s;
    if (absl::Status s = insert->BindBlob(2, value); !s.ok()) return s;
    return insert->Run();
  }

  ScopedTempDir dir_;
  Database db_;
};

TEST_F(SqliteUtilTest, BoundValuesRoundTripIncludingEmptyBlobs) {
  ASSERT_THAT(Insert("empty", ""), IsOk());
  ASSERT_THAT(Insert("binary", std::string("\0a\xff", 3)), IsOk());
  METAOPT_ASSERT_OK_AND_ASSIGN(
      Statement query,
      Statement::Prepare(db_, "SELECT k, v FROM t ORDER BY k"));
  METAOPT_ASSERT_OK_AND_ASSIGN(bool has_row, query.Step());
  ASSERT_TRUE(has_row);
  EXPECT_EQ(query.ColumnText(0), "binary");
  EXPECT_EQ(query.ColumnBlob(1), std::string("\0a\xff", 3));
  METAOPT_ASSERT_OK_AND_ASSIGN(has_row, query.Step());
  ASSERT_TRUE(has_row);
  EXPECT_EQ(query.ColumnText(0), "empty");
  EXPECT_FALSE(query.ColumnIsNull(1));  // An empty blob, not NULL.
  EXPECT_EQ(query.ColumnBlob(1), "");
  METAOPT_ASSERT_OK_AND_ASSIGN(has_row, query.Step());
  EXPECT_FALSE(has_row);
}

TEST_F(SqliteUtilTest, ErrorMessagesDoNotContainBoundValues) {
  ASSERT_THAT(Insert("secret-key", "v"), IsOk());
  EXPECT_THAT(Insert("secret-key", "secret-value"),
              StatusIs(absl::StatusCode::kInternal,
                       AllOf(HasSubstr("UNIQUE constraint failed"),
                             Not(HasSubstr("secret")))));
}

TEST_F(SqliteUtilTest, PrepareErrorDoesNotEchoTheStatementText) {
  EXPECT_THAT(
      Statement::Prepare(db_,
                         "SELECT * FROM no_such_table WHERE k = 'user-data'"),
      StatusIs(absl::StatusCode::kInternal,
               AllOf(HasSubstr("preparing"), Not(HasSubstr("user-data")))));
}

TEST_F(SqliteUtilTest, TransactionRollsBackUnlessCommitted) {
  {
    METAOPT_ASSERT_OK_AND_ASSIGN(
        Transaction tx, Transaction::Begin(db_, Transaction::Mode::kImmediate));
    ASSERT_THAT(Insert("dropped", "v"), IsOk());
  }
  {
    METAOPT_ASSERT_OK_AND_ASSIGN(
        Transaction tx, Transaction::Begin(db_, Transaction::Mode::kImmediate));
    ASSERT_THAT(Insert("kept", "v"), IsOk());
    ASSERT_THAT(tx.Commit(), IsOk());
  }
  METAOPT_ASSERT_OK_AND_ASSIGN(std::optional<std::string> keys,
                               db_.QueryText("SELECT group_concat(k) FROM t"));
  EXPECT_THAT(keys, Optional(std::string("kept")));
}

TEST_F(SqliteUtilTest, CommitObserverSeesEachSuccessfulWriteCommit) {
  std::vector<absl::Duration> commits;
  db_.set_commit_observer(
      [&commits](absl::Duration latency) { commits.push_back(latency); });
  Database moved = std::move(db_);  // the observer moves with the connection
  {
    METAOPT_ASSERT_OK_AND_ASSIGN(
        Transaction tx,
        Transaction::Begin(moved, Transaction::Mode::kImmediate));
    ASSERT_THAT(tx.Commit(), IsOk());
  }
  {
    METAOPT_ASSERT_OK_AND_ASSIGN(
        Transaction tx,
        Transaction::Begin(moved, Transaction::Mode::kDeferred));
    ASSERT_THAT(tx.Commit(), IsOk());  // a read: not observed
  }
  {
    METAOPT_ASSERT_OK_AND_ASSIGN(
        Transaction tx,
        Transaction::Begin(moved, Transaction::Mode::kImmediate));
  }  // rolled back: not observed
  ASSERT_EQ(commits.size(), 1u);
  EXPECT_GE(commits[0], absl::ZeroDuration());
  EXPECT_LT(commits[0], absl::Seconds(60));
}

TEST_F(SqliteUtilTest, SecondWriterTimesOutAsUnavailable) {
  METAOPT_ASSERT_OK_AND_ASSIGN(Database other,
                               Database::Open(dir_.File("util.db")));
  sqlite3_busy_timeout(other.get(), 10);
  METAOPT_ASSERT_OK_AND_ASSIGN(
      Transaction tx, Transaction::Begin(db_, Transaction::Mode::kImmediate));
  EXPECT_THAT(Transaction::Begin(other, Transaction::Mode::kImmediate),
              StatusIs(absl::StatusCode::kUnavailable,
                       HasSubstr("beginning transaction")));
}

// The statements prepared on the connection (cached ones included) and how
// many of them are still running (stepped, not reset).
struct StatementCount {
  int prepared = 0;
  int running = 0;
};
StatementCount CountStatements(const Database& db) {
  StatementCount count;
  for (sqlite3_stmt* stmt = sqlite3_next_stmt(db.get(), nullptr);
       stmt != nullptr; stmt = sqlite3_next_stmt(db.get(), stmt)) {
    ++count.prepared;
    if (sqlite3_stmt_busy(stmt)) ++count.running;
  }
  return count;
}

TEST_F(SqliteUtilTest, CachedStatementIsPreparedOnceAndReturnsReset) {
  constexpr char kInsert[] = "INSERT INTO t VALUES (?, ?)";
  for (const char* key : {"a", "b", "c"}) {
    METAOPT_ASSERT_OK_AND_ASSIGN(Statement insert, db_.PrepareCached(kInsert));
    ASSERT_THAT(insert.BindText(1, key), IsOk());
    ASSERT_THAT(insert.BindBlob(2, "v"), IsOk());
    ASSERT_THAT(insert.Run(), IsOk());
  }
  EXPECT_EQ(CountStatements(db_).prepared, 1);
  {
    // Back in the cache, its bindings were cleared: k binds NULL.
    METAOPT_ASSERT_OK_AND_ASSIGN(Statement insert, db_.PrepareCached(kInsert));
    ASSERT_THAT(insert.Run(), IsOk());
  }
  METAOPT_ASSERT_OK_AND_ASSIGN(
      std::optional<std::string> keys,
      db_.QueryText("SELECT group_concat(coalesce(k, 'null')) FROM "
                    "(SELECT k FROM t ORDER BY rowid)"));
  EXPECT_THAT(keys, Optional(std::string("a,b,c,null")));
}

TEST_F(SqliteUtilTest, CachedStatementInUseIsNotSharedAndEndsItsRead) {
  ASSERT_THAT(Insert("a", "1"), IsOk());
  ASSERT_THAT(Insert("b", "2"), IsOk());
  constexpr char kQuery[] = "SELECT k FROM t ORDER BY k";
  {
    METAOPT_ASSERT_OK_AND_ASSIGN(Statement outer, db_.PrepareCached(kQuery));
    METAOPT_ASSERT_OK_AND_ASSIGN(bool has_row, outer.Step());
    ASSERT_TRUE(has_row);
    EXPECT_EQ(outer.ColumnText(0), "a");
    // The same SQL while the cached one is out: an uncached copy, stepping
    // on its own.
    METAOPT_ASSERT_OK_AND_ASSIGN(Statement inner, db_.PrepareCached(kQuery));
    METAOPT_ASSERT_OK_AND_ASSIGN(has_row, inner.Step());
    ASSERT_TRUE(has_row);
    EXPECT_EQ(inner.ColumnText(0), "a");
    METAOPT_ASSERT_OK_AND_ASSIGN(has_row, outer.Step());
    ASSERT_TRUE(has_row);
    EXPECT_EQ(outer.ColumnText(0), "b");
    EXPECT_EQ(CountStatements(db_).prepared, 2);
  }
  // The copy was finalized; the cached one was reset, its read ended.
  const StatementCount count = CountStatements(db_);
  EXPECT_EQ(count.prepared, 1);
  EXPECT_EQ(count.running, 0);
  METAOPT_ASSERT_OK_AND_ASSIGN(Statement again, db_.PrepareCached(kQuery));
  METAOPT_ASSERT_OK_AND_ASSIGN(bool has_row, again.Step());
  ASSERT_TRUE(has_row);
  EXPECT_EQ(again.ColumnText(0), "a");
}

TEST_F(SqliteUtilTest, CachedStatementErrorsAreReportedAndNotCached) {
  EXPECT_THAT(db_.PrepareCached("SELECT * FROM no_such_table"),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("preparing")));
  EXPECT_EQ(CountStatements(db_).prepared, 0);
  ASSERT_THAT(db_.Exec("CREATE TABLE no_such_table (x)"), IsOk());
  EXPECT_THAT(db_.PrepareCached("SELECT * FROM no_such_table"), IsOk());
  // A failing step leaves the cached statement usable.
  ASSERT_THAT(Insert("k", "v"), IsOk());
  constexpr char kInsert[] = "INSERT INTO t VALUES ('k', 'again')";
  EXPECT_THAT(db_.ExecCached(kInsert, "inserting"),
              StatusIs(absl::StatusCode::kInternal,
                       AllOf(HasSubstr("inserting"),
                             HasSubstr("UNIQUE constraint failed"))));
  ASSERT_THAT(db_.Exec("DELETE FROM t"), IsOk());
  EXPECT_THAT(db_.ExecCached(kInsert), IsOk());
}

TEST_F(SqliteUtilTest, QueryTextWithoutRowsIsNullopt) {
  METAOPT_ASSERT_OK_AND_ASSIGN(
      std::optional<std::string> none,
      db_.QueryText("SELECT k FROM t WHERE k = 'absent'"));
  EXPECT_EQ(none, std::nullopt);
}

}  // namespace
}  // namespace metaopt::storage
