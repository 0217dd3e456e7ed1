// The storage conformance suite's fixture: every Storage implementation
// (in-memory, SQLite, PostgreSQL) must pass the same typed tests, which the
// storage_*_test.cc files of storage_test define. Its types are outside an
// anonymous namespace so that the files share them, and one PostgreSQL server
// per test process.
#ifndef METAOPT_TESTS_TESTUTIL_STORAGE_CONFORMANCE_H_
#define METAOPT_TESTS_TESTUTIL_STORAGE_CONFORMANCE_H_

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "core/common/status_macros.h"
#include "core/storage/storage.h"
#include "tests/testutil/storage_fixtures.h"
#include "gtest/gtest.h"
#include "metaopt/v1/study.pb.h"
#include "tests/testutil/postgres_server.h"
#include "tests/testutil/status_matchers.h"

namespace metaopt::storage {

// A factory opens a fresh, empty database (Open) and a second Storage object
// on the same database (OpenAgain: another process, as replicas are; null
// where a database cannot be shared). SkipReason is "" where it can run.
struct InMemoryFactory {
  static std::string SkipReason() { return ""; }
  absl::StatusOr<std::unique_ptr<Storage>> Open(const ScopedTempDir& /*dir*/) {
    return OpenInMemoryStorage();
  }
  absl::StatusOr<std::unique_ptr<Storage>> OpenAgain() { return nullptr; }
};

struct SqliteFactory {
  static std::string SkipReason() { return ""; }
  absl::StatusOr<std::unique_ptr<Storage>> Open(const ScopedTempDir& dir) {
    path = dir.File("metaopt.db");
    return OpenSqliteStorage(path);
  }
  absl::StatusOr<std::unique_ptr<Storage>> OpenAgain() {
    return OpenSqliteStorage(path);
  }
  std::string path;
};

// A real PostgreSQL server, started once per test process; each test gets a
// database of its own.
struct PostgresFactory {
  static std::string SkipReason() {
    return ::metaopt::testing::PostgresServer::SkipReason();
  }
  absl::StatusOr<std::unique_ptr<Storage>> Open(const ScopedTempDir& /*dir*/) {
    static absl::StatusOr<
        std::unique_ptr<::metaopt::testing::PostgresServer>>* server =
        new absl::StatusOr<std::unique_ptr<::metaopt::testing::PostgresServer>>(
            ::metaopt::testing::PostgresServer::Start());
    static const bool stopped_at_exit = [] {
      std::atexit([] { server->value().reset(); });
      return true;
    }();
    (void)stopped_at_exit;
    METAOPT_RETURN_IF_ERROR(server->status());
    METAOPT_ASSIGN_OR_RETURN(uri, (**server)->CreateDatabase());
    return OpenPostgresStorage(uri);
  }
  absl::StatusOr<std::unique_ptr<Storage>> OpenAgain() {
    return OpenPostgresStorage(uri);
  }
  std::string uri;
};

template <typename Factory>
class StorageConformanceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string reason = Factory::SkipReason(); !reason.empty())
      GTEST_SKIP() << reason;
    METAOPT_ASSERT_OK_AND_ASSIGN(storage_, factory_.Open(dir_));
  }

  // Creates studies with the given ids (fails the test on error).
  void CreateStudies(const std::vector<std::string>& ids) {
    for (const std::string& id : ids)
      ASSERT_THAT(storage_->CreateStudy(MakeStudy(id)),
                  ::metaopt::testing::IsOk());
  }

  ScopedTempDir dir_;
  Factory factory_;
  std::unique_ptr<Storage> storage_;
};

struct FactoryNames {
  template <typename T>
  static std::string GetName(int /*index*/) {
    if (std::is_same_v<T, InMemoryFactory>) return "InMemory";
    if (std::is_same_v<T, SqliteFactory>) return "Sqlite";
    if (std::is_same_v<T, PostgresFactory>) return "Postgres";
    return "Unknown";
  }
};

using Factories =
    ::testing::Types<InMemoryFactory, SqliteFactory, PostgresFactory>;

inline std::vector<std::string> Ids(const std::vector<v1::Study>& studies) {
  std::vector<std::string> ids;
  for (const v1::Study& study : studies) ids.push_back(study.study_id());
  return ids;
}

inline std::vector<int64_t> Ids(const std::vector<v1::Trial>& trials) {
  std::vector<int64_t> ids;
  for (const v1::Trial& trial : trials) ids.push_back(trial.id());
  return ids;
}

// MakeStudy(id) under `owner`, told apart by its bound model.
inline v1::Study OwnedStudy(const std::string& id, const std::string& owner) {
  v1::Study study = MakeStudy(id);
  study.set_owner(owner);
  study.set_bound_model(
      absl::StrCat("model-of-", owner.empty() ? "shared" : owner));
  return study;
}

}  // namespace metaopt::storage

#endif  // METAOPT_TESTS_TESTUTIL_STORAGE_CONFORMANCE_H_
