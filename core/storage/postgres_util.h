// Thin RAII wrappers over libpq and the mapping of PostgreSQL errors to
// absl::Status.
#ifndef METAOPT_CORE_STORAGE_POSTGRES_UTIL_H_
#define METAOPT_CORE_STORAGE_POSTGRES_UTIL_H_

#include <libpq-fe.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace metaopt::storage {

// `uri` with the password (if any) replaced by "***", for messages and logs.
std::string RedactPostgresUri(std::string_view uri);

// OK if libpq accepts `uri` as a connection URI (postgresql:// or
// postgres://); otherwise INVALID_ARGUMENT naming the redacted URI and libpq's
// reason.
absl::Status CheckPostgresUri(const std::string& uri);

// Maps a failed result (or a broken connection) to a status whose message is
// `context` plus the server's message and SQLSTATE: a lost or refused
// connection, a server shutting down or starting, too many connections
// (SQLSTATE classes 08, 57P, 53300) -> UNAVAILABLE; serialization failures and
// deadlocks (40001, 40P01) -> UNAVAILABLE too (the whole transaction may be
// retried); unique violations (23505) -> ALREADY_EXISTS; disk full (53100) ->
// RESOURCE_EXHAUSTED; data corruption (XX001, XX002) -> DATA_LOSS; anything
// else -> INTERNAL. `result` may be null (the connection failed to send).
absl::Status PostgresStatus(const PGresult* result, PGconn* conn,
                            std::string_view context);

// One query parameter: text, or bytes sent in binary (bytea); nullopt is NULL.
struct PgParam {
  std::optional<std::string> value;
  bool binary = false;

  static PgParam Text(std::string_view text) {
    return {std::string(text), false};
  }
  static PgParam Bytes(std::string_view bytes) {
    return {std::string(bytes), true};
  }
  static PgParam Int(int64_t value) { return {std::to_string(value), false}; }
};

// A query's result rows, in binary format. Movable, not copyable.
class PgResult {
 public:
  explicit PgResult(PGresult* result) : result_(result, &PQclear) {}

  int rows() const { return PQntuples(result_.get()); }
  // Rows an INSERT/UPDATE/DELETE changed.
  int64_t affected() const;
  bool IsNull(int row, int column) const {
    return PQgetisnull(result_.get(), row, column) == 1;
  }
  // A bytea or text column: its bytes.
  std::string Bytes(int row, int column) const;
  // An int8 (bigint) or int4 column.
  int64_t Int(int row, int column) const;
  const PGresult* raw() const { return result_.get(); }

 private:
  std::unique_ptr<PGresult, void (*)(PGresult*)> result_;
};

// Owns one libpq connection; closes it on destruction. Movable, not copyable.
// Thread-compatible: its owner serializes all use.
class PgConnection {
 public:
  // Connects to `uri`; `connect_timeout_seconds` applies unless the URI sets
  // its own. UNAVAILABLE if the server cannot be reached or refuses.
  static absl::StatusOr<PgConnection> Connect(const std::string& uri,
                                              int connect_timeout_seconds);

  PgConnection() = default;

  // True while the connection is usable (not broken).
  bool healthy() const {
    return conn_ != nullptr && PQstatus(conn_.get()) == CONNECTION_OK;
  }

  // Runs `sql` with parameters $1.. = `params`; rows come back in binary.
  absl::StatusOr<PgResult> Query(std::string_view sql,
                                 absl::Span<const PgParam> params = {});
  // Runs SQL without parameters (several statements are allowed), discarding
  // rows. Only for SQL written by us: schema, transaction control.
  absl::Status Exec(const std::string& sql);

 private:
  explicit PgConnection(PGconn* conn) : conn_(conn, &PQfinish) {}

  std::unique_ptr<PGconn, void (*)(PGconn*)> conn_{nullptr, &PQfinish};
};

}  // namespace metaopt::storage

#endif  // METAOPT_CORE_STORAGE_POSTGRES_UTIL_H_
