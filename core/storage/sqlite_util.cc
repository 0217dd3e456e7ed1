#include "core/storage/sqlite_util.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/common/status_macros.h"

namespace metaopt::storage {

absl::Status SqliteStatus(int rc, sqlite3* db, std::string_view context) {
  const int primary = rc & 0xff;
  if (primary == SQLITE_OK || primary == SQLITE_ROW || primary == SQLITE_DONE) {
    return absl::OkStatus();
  }
  std::string message =
      absl::StrCat(std::string(context), ": ", sqlite3_errstr(rc));
  // sqlite3_errmsg describes the error (e.g. "UNIQUE constraint failed:
  // studies.study_id"); it names schema objects, not bound values. It only
  // describes `rc` if it is the latest error.
  if (db != nullptr && sqlite3_extended_errcode(db) == rc) {
    const char* detail = sqlite3_errmsg(db);
    if (detail != nullptr && std::string_view(detail) != sqlite3_errstr(rc)) {
      absl::StrAppend(&message, " (", detail, ")");
    }
  }
  switch (primary) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return absl::UnavailableError(message);
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return absl::DataLossError(message);
    case SQLITE_FULL:
      return absl::ResourceExhaustedError(message);
    default:
      return absl::InternalError(message);
  }
}

// ----- Database -----

absl::StatusOr<Database> Database::Open(const std::string& path, int flags) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, flags, /*zVfs=*/nullptr);
  // sqlite3_open_v2 may allocate a handle even on failure; own it so it is
  // closed either way.
  Database db(raw);
  if (rc != SQLITE_OK) {
    return SqliteStatus(rc, raw,
                        absl::StrCat("opening SQLite database ", path));
  }
  sqlite3_extended_result_codes(raw, 1);
  return db;
}

Database::Database(Database&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)),
      commit_observer_(std::move(other.commit_observer_)),
      cache_(std::move(other.cache_)) {}

Database& Database::operator=(Database&& other) noexcept {
  if (this != &other) {
    Close();
    db_ = std::exchange(other.db_, nullptr);
    commit_observer_ = std::move(other.commit_observer_);
    cache_ = std::move(other.cache_);
  }
  return *this;
}

Database::~Database() { Close(); }

void Database::Close() {
  for (auto& [sql, stmt] : cache_) {
    if (stmt != nullptr) sqlite3_finalize(stmt);
  }
  cache_.clear();
  // close_v2 defers the close until outstanding statements are finalized, so
  // destruction order between a Database and its uncached Statements does not
  // matter.
  if (db_ != nullptr) sqlite3_close_v2(db_);
  db_ = nullptr;
}

absl::Status Database::Exec(const char* sql) {
  const int rc = sqlite3_exec(db_, sql, /*callback=*/nullptr, /*arg=*/nullptr,
                              /*errmsg=*/nullptr);
  return SqliteStatus(rc, db_, "executing SQL");
}

absl::StatusOr<std::optional<std::string>> Database::QueryText(
    const char* sql) {
  absl::StatusOr<Statement> stmt = Statement::Prepare(*this, sql);
  if (!stmt.ok()) return stmt.status();
  absl::StatusOr<bool> has_row = stmt->Step();
  if (!has_row.ok()) return has_row.status();
  if (!*has_row) return std::optional<std::string>();
  return std::optional<std::string>(stmt->ColumnText(0));
}

absl::StatusOr<Statement> Database::PrepareCached(std::string_view sql) {
  auto [it, inserted] = cache_.try_emplace(std::string(sql), nullptr);
  sqlite3_stmt*& slot = it->second;
  if (slot == nullptr && !inserted) {
    // Out already (a statement used twice at once): an uncached copy.
    return Statement::Prepare(*this, sql);
  }
  if (slot == nullptr) {
    const int rc = sqlite3_prepare_v3(
        db_, sql.data(), static_cast<int>(sql.size()),
        SQLITE_PREPARE_PERSISTENT, &slot, /*pzTail=*/nullptr);
    if (rc != SQLITE_OK) {
      sqlite3_finalize(slot);
      cache_.erase(it);
      return SqliteStatus(rc, db_, "preparing SQL statement");
    }
    if (slot == nullptr) {
      cache_.erase(it);
      return absl::InternalError("preparing SQL statement: empty statement");
    }
  }
  Statement stmt(std::exchange(slot, nullptr), db_);
  stmt.cache_slot_ = &slot;
  return stmt;
}

absl::Status Database::ExecCached(std::string_view sql,
                                  std::string_view context) {
  absl::StatusOr<Statement> stmt = PrepareCached(sql);
  if (!stmt.ok()) return stmt.status();
  return SqliteStatus(sqlite3_step(stmt->stmt_), db_, context);
}

// ----- Statement -----

absl::StatusOr<Statement> Statement::Prepare(Database& db,
                                             std::string_view sql) {
  sqlite3_stmt* raw = nullptr;
  const int rc = sqlite3_prepare_v2(db.get(), sql.data(),
                                    static_cast<int>(sql.size()), &raw,
                                    /*pzTail=*/nullptr);
  Statement stmt(raw, db.get());
  if (rc != SQLITE_OK)
    return SqliteStatus(rc, db.get(), "preparing SQL statement");
  if (raw == nullptr)
    return absl::InternalError("preparing SQL statement: empty statement");
  return stmt;
}

Statement::Statement(Statement&& other) noexcept
    : stmt_(std::exchange(other.stmt_, nullptr)),
      db_(std::exchange(other.db_, nullptr)),
      cache_slot_(std::exchange(other.cache_slot_, nullptr)) {}

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    Release();
    stmt_ = std::exchange(other.stmt_, nullptr);
    db_ = std::exchange(other.db_, nullptr);
    cache_slot_ = std::exchange(other.cache_slot_, nullptr);
  }
  return *this;
}

Statement::~Statement() { Release(); }

void Statement::Release() {
  if (stmt_ == nullptr) return;
  if (cache_slot_ == nullptr) {
    sqlite3_finalize(stmt_);
  } else {
    // Ends any read it holds open, as finalizing would.
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
    *cache_slot_ = stmt_;
  }
  stmt_ = nullptr;
  cache_slot_ = nullptr;
}

absl::Status Statement::BindInt64(int index, int64_t value) {
  return SqliteStatus(sqlite3_bind_int64(stmt_, index, value), db_,
                      "binding SQL parameter");
}

absl::Status Statement::BindText(int index, std::string_view value) {
  return SqliteStatus(
      sqlite3_bind_text64(stmt_, index, value.data(), value.size(),
                          SQLITE_TRANSIENT, SQLITE_UTF8),
      db_, "binding SQL parameter");
}

absl::Status Statement::BindBlob(int index, std::string_view value) {
  // A zero-length blob must still bind as a blob, not NULL: give SQLite a
  // non-null pointer.
  static constexpr char kEmpty = '\0';
  const char* data = value.empty() ? &kEmpty : value.data();
  return SqliteStatus(
      sqlite3_bind_blob64(stmt_, index, data, value.size(), SQLITE_TRANSIENT),
      db_, "binding SQL parameter");
}

absl::StatusOr<bool> Statement::Step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return SqliteStatus(rc, db_, "executing SQL statement");
}

absl::Status Statement::Run() {
  absl::StatusOr<bool> has_row = Step();
  if (!has_row.ok()) return has_row.status();
  if (*has_row)
    return absl::InternalError("SQL statement unexpectedly returned rows");
  return absl::OkStatus();
}

absl::Status Statement::Reset() {
  return SqliteStatus(sqlite3_reset(stmt_), db_, "resetting SQL statement");
}

int64_t Statement::ColumnInt64(int column) const {
  return sqlite3_column_int64(stmt_, column);
}

std::string Statement::ColumnText(int column) const {
  const unsigned char* text = sqlite3_column_text(stmt_, column);
  const int size = sqlite3_column_bytes(
      stmt_, column);  // After the conversion, as documented.
  if (text == nullptr) return std::string();
  return std::string(reinterpret_cast<const char*>(text),
                     static_cast<size_t>(size));
}

std::string Statement::ColumnBlob(int column) const {
  const void* blob = sqlite3_column_blob(stmt_, column);
  const int size = sqlite3_column_bytes(stmt_, column);
  if (blob == nullptr) return std::string();
  return std::string(static_cast<const char*>(blob), static_cast<size_t>(size));
}

bool Statement::ColumnIsNull(int column) const {
  return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}

// ----- Transaction -----

absl::StatusOr<Transaction> Transaction::Begin(Database& db, Mode mode) {
  METAOPT_RETURN_IF_ERROR(
      db.ExecCached(mode == Mode::kImmediate ? "BEGIN IMMEDIATE" : "BEGIN",
                    "beginning transaction"));
  return Transaction(&db, mode);
}

Transaction::Transaction(Transaction&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)), mode_(other.mode_) {}

Transaction::~Transaction() {
  // SQLite may already have rolled back on its own (e.g. after SQLITE_FULL);
  // then autocommit is back on and there is nothing to undo.
  if (db_ != nullptr && sqlite3_get_autocommit(db_->get()) == 0) {
    db_->ExecCached("ROLLBACK").IgnoreError();
  }
}

absl::Status Transaction::Commit() {
  if (db_ == nullptr)
    return absl::FailedPreconditionError("transaction is not active");
  const absl::Time start = absl::Now();
  METAOPT_RETURN_IF_ERROR(db_->ExecCached("COMMIT", "committing transaction"));
  if (mode_ == Mode::kImmediate && db_->commit_observer_) {
    db_->commit_observer_(absl::Now() - start);
  }
  db_ = nullptr;
  return absl::OkStatus();
}

}  // namespace metaopt::storage
