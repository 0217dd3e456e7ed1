// Thin RAII wrappers over the SQLite C API and the mapping of SQLite result
// codes to absl::Status.
#ifndef METAOPT_CORE_STORAGE_SQLITE_UTIL_H_
#define METAOPT_CORE_STORAGE_SQLITE_UTIL_H_

#include <sqlite3.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace metaopt::storage {

// Maps a SQLite result code (primary or extended) to a status whose message is
// `context` plus SQLite's description of the error (never SQL text or bound
// values): BUSY/LOCKED -> UNAVAILABLE, CORRUPT/NOTADB -> DATA_LOSS, FULL ->
// RESOURCE_EXHAUSTED, OK/ROW/DONE -> OK, anything else -> INTERNAL. `db` may be
// null; when given, its last error message is appended.
absl::Status SqliteStatus(int rc, sqlite3* db, std::string_view context);

class Statement;

// Owns one sqlite3 connection; closes it on destruction. Movable, not copyable.
// Thread-compatible: the owner serializes all use of a connection and its
// statements. Keeps a cache of prepared statements (PrepareCached), so that
// the statements of a hot path are parsed once per connection, not per call.
class Database {
 public:
  // Opens `path` with `flags` (sqlite3_open_v2 flags). Extended result codes
  // are enabled.
  static absl::StatusOr<Database> Open(const std::string& path,
                                       int flags = SQLITE_OPEN_READWRITE |
                                                   SQLITE_OPEN_CREATE);

  Database() = default;
  Database(Database&& other) noexcept;
  Database& operator=(Database&& other) noexcept;
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;
  ~Database();

  sqlite3* get() const { return db_; }

  // Called with the duration of each successful COMMIT of a kImmediate (write)
  // transaction on this connection: the WAL append and sync that make it
  // durable. Runs on the committing thread; must be quick. Empty: none.
  void set_commit_observer(std::function<void(absl::Duration)> observer) {
    commit_observer_ = std::move(observer);
  }

  // Runs `sql` (one or more statements without parameters), discarding any
  // rows. Only for SQL written by us: schema, pragmas, transaction control.
  absl::Status Exec(const char* sql);

  // Runs a single-row, single-column query (e.g. "PRAGMA journal_mode") and
  // returns its text; std::nullopt if it returns no row.
  absl::StatusOr<std::optional<std::string>> QueryText(const char* sql);

  // Prepares the statement `sql` (exactly one statement) from this
  // connection's cache: the first call parses it, later calls reuse it. The
  // Statement goes back to the cache when destroyed, reset and with its
  // bindings cleared; while it is out, a call with the same `sql` prepares a
  // fresh, uncached one. A cached Statement must be destroyed before its
  // Database (or a Database it was moved into).
  absl::StatusOr<Statement> PrepareCached(std::string_view sql);
  // Runs `sql` (one statement without parameters or rows, such as "SAVEPOINT
  // write") through the cache; an error names `context`.
  absl::Status ExecCached(std::string_view sql,
                          std::string_view context = "executing SQL");

 private:
  explicit Database(sqlite3* db) : db_(db) {}
  // Finalizes the cached statements and closes the connection.
  void Close();

  sqlite3* db_ = nullptr;
  std::function<void(absl::Duration)> commit_observer_;
  // PrepareCached's statements by SQL text; null while the statement is out.
  // A node container: a Statement out of the cache points at its slot.
  std::unordered_map<std::string, sqlite3_stmt*> cache_;

  friend class Transaction;
};

// Owns one prepared statement; finalizes it on destruction. Movable, not
// copyable. Thread-compatible, and never shared between threads (it belongs to
// one connection). Bind indices are 1-based, column indices 0-based, as in the
// C API.
class Statement {
 public:
  // Prepares the first statement of `sql` on `db`.
  static absl::StatusOr<Statement> Prepare(Database& db, std::string_view sql);

  Statement() = default;
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement();

  // Bound values are copied by SQLite (SQLITE_TRANSIENT).
  absl::Status BindInt64(int index, int64_t value);
  absl::Status BindText(int index, std::string_view value);
  absl::Status BindBlob(int index, std::string_view value);

  // Advances the statement: true if a row is available, false when done.
  absl::StatusOr<bool> Step();
  // Steps a statement that must not return rows (INSERT, UPDATE, DELETE) to
  // completion.
  absl::Status Run();
  // Resets for re-execution with new bindings (bindings are kept until
  // rebound).
  absl::Status Reset();

  int64_t ColumnInt64(int column) const;
  std::string ColumnText(int column) const;
  std::string ColumnBlob(int column) const;
  bool ColumnIsNull(int column) const;

 private:
  friend class Database;  // PrepareCached, ExecCached
  Statement(sqlite3_stmt* stmt, sqlite3* db) : stmt_(stmt), db_(db) {}
  // Finalizes `stmt_`, or returns it to its cache slot.
  void Release();

  sqlite3_stmt* stmt_ = nullptr;
  sqlite3* db_ = nullptr;  // Not owned; the connection `stmt_` was prepared on.
  // For a statement out of Database::PrepareCached: its slot in the cache.
  sqlite3_stmt** cache_slot_ = nullptr;
};

// A transaction on a Database: begun by Begin(), rolled back on destruction
// unless Commit() succeeded. Movable, not copyable. Thread-compatible (as its
// Database).
class Transaction {
 public:
  enum class Mode {
    kDeferred,  // BEGIN: takes the read lock at the first read (consistent read
                // snapshot).
    kImmediate,  // BEGIN IMMEDIATE: takes the write lock now, so a writer never
                 // deadlocks.
  };

  static absl::StatusOr<Transaction> Begin(Database& db, Mode mode);

  Transaction(Transaction&& other) noexcept;
  Transaction& operator=(Transaction&&) = delete;
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  ~Transaction();

  // COMMIT. On failure the transaction is rolled back (by the destructor).
  absl::Status Commit();

 private:
  Transaction(Database* db, Mode mode) : db_(db), mode_(mode) {}

  Database* db_;  // Not owned; null once committed or moved from.
  Mode mode_;
};

}  // namespace metaopt::storage

#endif  // METAOPT_CORE_STORAGE_SQLITE_UTIL_H_
