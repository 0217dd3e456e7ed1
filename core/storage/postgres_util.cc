#include "core/storage/postgres_util.h"

#include <endian.h>

#include <algorithm>
#include <cstring>
#include <iterator>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/common/strings.h"

namespace metaopt::storage {
namespace {

absl::StatusCode CodeOfSqlState(absl::string_view state) {
  if (absl::StartsWith(state, "08") || absl::StartsWith(state, "57P") ||
      state == "53300" || state == "40001" || state == "40P01") {
    return absl::StatusCode::kUnavailable;
  }
  if (state == "23505") return absl::StatusCode::kAlreadyExists;
  if (state == "53100") return absl::StatusCode::kResourceExhausted;
  if (state == "XX001" || state == "XX002") return absl::StatusCode::kDataLoss;
  return absl::StatusCode::kInternal;
}

std::string TrimmedMessage(const char* message) {
  std::string text = message == nullptr ? "" : message;
  while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
    text.pop_back();
  return text;
}

}  // namespace

std::string RedactPostgresUri(std::string_view uri) {
  // scheme://[user[:password]@]host...: the password sits between the first
  // ':' after the scheme and the last '@' before the path.
  const size_t scheme_end = uri.find("://");
  if (scheme_end == std::string_view::npos) return std::string(uri);
  const size_t authority = scheme_end + 3;
  const size_t path = uri.find_first_of("/?", authority);
  const std::string_view head = uri.substr(
      authority, path == std::string_view::npos ? uri.npos : path - authority);
  const size_t at = head.rfind('@');
  std::string redacted(uri);
  if (at != std::string_view::npos) {
    const size_t colon = head.substr(0, at).find(':');
    if (colon != std::string_view::npos) {
      redacted.replace(authority + colon + 1, at - colon - 1, "***");
    }
  }
  // A password given as a query parameter.
  const size_t query = redacted.find('?');
  if (query != std::string::npos) {
    size_t p = redacted.find("password=", query);
    if (p != std::string::npos) {
      p += std::strlen("password=");
      const size_t end = redacted.find('&', p);
      redacted.replace(p, end == std::string::npos ? redacted.npos : end - p,
                       "***");
    }
  }
  return redacted;
}

absl::Status CheckPostgresUri(const std::string& uri) {
  if (!absl::StartsWith(uri, "postgresql://") &&
      !absl::StartsWith(uri, "postgres://")) {
    return absl::InvalidArgumentError(
        absl::StrCat("PostgreSQL URI ", RedactPostgresUri(uri),
                     ": must start with postgresql:// or postgres://"));
  }
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(uri.c_str(), &error);
  if (options == nullptr) {
    std::string reason = error == nullptr
                             ? "libpq cannot parse it (out of memory?)"
                             : TrimmedMessage(error);
    PQfreemem(error);
    return absl::InvalidArgumentError(absl::StrCat(
        "PostgreSQL URI ", RedactPostgresUri(uri), ": ", reason,
        " (the form is "
        "postgresql://user:password@host:port/dbname?param=value)"));
  }
  // libpq checks keywords here but values only when connecting, where a bad
  // one would look like an unreachable server.
  absl::Status checked;
  for (const PQconninfoOption* option = options;
       option->keyword != nullptr && checked.ok(); ++option) {
    if (option->val == nullptr) continue;
    const std::string_view keyword = option->keyword;
    const std::string value = option->val;
    auto invalid = [&](std::string_view rule) {
      return absl::InvalidArgumentError(
          absl::StrCat("PostgreSQL URI ", RedactPostgresUri(uri), ": ",
                       ToAbsl(keyword), " \"", value, "\" ", ToAbsl(rule)));
    };
    if (keyword == "port") {
      for (absl::string_view port : absl::StrSplit(value, ',')) {
        int number = 0;
        if (!port.empty() &&
            (!absl::SimpleAtoi(port, &number) || number < 1 || number > 65535))
          checked = invalid("must be port numbers in [1, 65535]");
      }
    } else if (keyword == "connect_timeout") {
      int seconds = 0;
      if (!absl::SimpleAtoi(value, &seconds) || seconds < 0)
        checked = invalid("must be a non-negative number of seconds");
    } else if (keyword == "sslmode") {
      static constexpr absl::string_view kModes[] = {
          "disable", "allow", "prefer", "require", "verify-ca", "verify-full"};
      if (std::find(std::begin(kModes), std::end(kModes), value) ==
          std::end(kModes)) {
        checked = invalid(
            "must be disable, allow, prefer, require, verify-ca or "
            "verify-full");
      }
    }
  }
  PQconninfoFree(options);
  return checked;
}

absl::Status PostgresStatus(const PGresult* result, PGconn* conn,
                            std::string_view context) {
  const char* state = result == nullptr
                          ? nullptr
                          : PQresultErrorField(result, PG_DIAG_SQLSTATE);
  std::string message = TrimmedMessage(
      result != nullptr ? PQresultErrorMessage(result) : PQerrorMessage(conn));
  if (message.empty() && conn != nullptr)
    message = TrimmedMessage(PQerrorMessage(conn));
  absl::StatusCode code;
  if (conn == nullptr || PQstatus(conn) != CONNECTION_OK) {
    code = absl::StatusCode::kUnavailable;  // the connection broke
  } else if (state != nullptr) {
    code = CodeOfSqlState(state);
  } else {
    code = absl::StatusCode::kInternal;
  }
  return absl::Status(
      code,
      absl::StrCat(
          ToAbsl(context), ": ", message,
          state != nullptr ? absl::StrCat(" (SQLSTATE ", state, ")") : ""));
}

int64_t PgResult::affected() const {
  const char* n = PQcmdTuples(result_.get());
  return n == nullptr || *n == '\0' ? 0 : std::strtoll(n, nullptr, 10);
}

std::string PgResult::Bytes(int row, int column) const {
  return std::string(PQgetvalue(result_.get(), row, column),
                     PQgetlength(result_.get(), row, column));
}

int64_t PgResult::Int(int row, int column) const {
  const char* data = PQgetvalue(result_.get(), row, column);
  const int length = PQgetlength(result_.get(), row, column);
  if (length == 8) {
    uint64_t big;
    std::memcpy(&big, data, 8);
    return static_cast<int64_t>(be64toh(big));
  }
  if (length == 4) {
    uint32_t big;
    std::memcpy(&big, data, 4);
    return static_cast<int32_t>(be32toh(big));
  }
  return 0;
}

absl::StatusOr<PgConnection> PgConnection::Connect(
    const std::string& uri, int connect_timeout_seconds) {
  // Keywords before `dbname` are defaults that the expanded URI overrides.
  const std::string timeout = std::to_string(connect_timeout_seconds);
  // A peer that vanishes without closing the connection (a partition, a
  // dead host) breaks it within about 30 s instead of hanging a call:
  // keepalives every 10 s after 10 s idle, and unacknowledged data for 30 s.
  const char* keywords[] = {"connect_timeout",  "application_name",
                            "keepalives_idle",  "keepalives_interval",
                            "keepalives_count", "tcp_user_timeout",
                            "dbname",           nullptr};
  const char* values[] = {timeout.c_str(), "metaopt-server", "10",   "10", "3",
                          "30000",         uri.c_str(),      nullptr};
  PgConnection connection(PQconnectdbParams(keywords, values, /*expand=*/1));
  if (!connection.healthy()) {
    return absl::UnavailableError(absl::StrCat(
        "cannot connect to PostgreSQL at ", RedactPostgresUri(uri), ": ",
        TrimmedMessage(PQerrorMessage(connection.conn_.get()))));
  }
  // Notices (such as "relation already exists, skipping") are not errors;
  // libpq would print them on stderr.
  PQsetNoticeProcessor(
      connection.conn_.get(), +[](void*, const char*) {}, nullptr);
  return connection;
}

absl::StatusOr<PgResult> PgConnection::Query(std::string_view sql,
                                             absl::Span<const PgParam> params) {
  std::vector<const char*> values(params.size());
  std::vector<int> lengths(params.size());
  std::vector<int> formats(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    const PgParam& param = params[i];
    values[i] = param.value.has_value() ? param.value->data() : nullptr;
    lengths[i] =
        param.value.has_value() ? static_cast<int>(param.value->size()) : 0;
    formats[i] = param.binary ? 1 : 0;
  }
  const std::string text(sql);
  PgResult result(PQexecParams(conn_.get(), text.c_str(),
                               static_cast<int>(params.size()), nullptr,
                               values.data(), lengths.data(), formats.data(),
                               /*resultFormat=*/1));
  const PGresult* raw = result.raw();
  const ExecStatusType status =
      raw == nullptr ? PGRES_FATAL_ERROR : PQresultStatus(raw);
  if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) {
    return PostgresStatus(raw, conn_.get(), "PostgreSQL query failed");
  }
  return result;
}

absl::Status PgConnection::Exec(const std::string& sql) {
  PgResult result(PQexec(conn_.get(), sql.c_str()));
  const PGresult* raw = result.raw();
  const ExecStatusType status =
      raw == nullptr ? PGRES_FATAL_ERROR : PQresultStatus(raw);
  if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) {
    return PostgresStatus(raw, conn_.get(), "PostgreSQL statement failed");
  }
  return absl::OkStatus();
}

}  // namespace metaopt::storage
