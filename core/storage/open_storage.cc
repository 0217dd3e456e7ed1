// OpenStorage: which backend a --db value names.
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/storage/postgres_util.h"
#include "core/storage/storage.h"

namespace metaopt::storage {
namespace {

constexpr char kSqlitePrefix[] = "sqlite:";

bool IsPostgres(const std::string& db) {
  return absl::StartsWith(db, "postgresql://") ||
         absl::StartsWith(db, "postgres://");
}

}  // namespace

std::string DescribeDatabase(const std::string& db) {
  return IsPostgres(db) ? RedactPostgresUri(db) : db;
}

absl::StatusOr<std::unique_ptr<Storage>> OpenStorage(
    const std::string& db, const SqliteOptions& sqlite_options,
    const PostgresOptions& postgres_options) {
  constexpr char kRule[] =
      "; use a SQLite file path, sqlite:PATH, or a PostgreSQL URI "
      "postgresql://user:password@host:port/dbname";
  if (db.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--db: the database is empty", kRule));
  }
  absl::StatusOr<std::unique_ptr<Storage>> storage;
  if (IsPostgres(db)) {
    storage = OpenPostgresStorage(db, postgres_options);
  } else if (absl::StartsWith(db, kSqlitePrefix)) {
    const std::string path = db.substr(sizeof(kSqlitePrefix) - 1);
    if (path.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--db \"", db, "\": no path after sqlite:", kRule));
    }
    storage = OpenSqliteStorage(path, sqlite_options);
  } else if (const size_t scheme = db.find("://");
             scheme != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("--db \"", DescribeDatabase(db), "\": unknown scheme \"",
                     db.substr(0, scheme), "\"", kRule));
  } else {
    storage = OpenSqliteStorage(db, sqlite_options);
  }
  if (!storage.ok()) {
    return absl::Status(storage.status().code(),
                        absl::StrCat("opening database ", DescribeDatabase(db),
                                     ": ", storage.status().message()));
  }
  return storage;
}

}  // namespace metaopt::storage
