// A test fixture: a StudyEngine with a fake clock and the lease `kLease`,
// over in-memory storage, that a test can move to a SQLite database and
// restart (a new engine over the reopened database, as a server restarting).
#ifndef METAOPT_TESTS_TESTUTIL_RESTARTABLE_ENGINE_H_
#define METAOPT_TESTS_TESTUTIL_RESTARTABLE_ENGINE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "core/storage/storage.h"
#include "tests/testutil/fake_clock.h"
#include "core/study/study_engine.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"
#include "tests/testutil/temp_dir.h"

namespace metaopt::study {

template <int64_t kLeaseMinutes>
class RestartableEngineTest : public ::testing::Test {
 protected:
  static constexpr absl::Duration kLease = absl::Minutes(kLeaseMinutes);

  void SetUp() override {
    auto storage = storage::OpenInMemoryStorage();
    ASSERT_THAT(storage, ::metaopt::testing::IsOk());
    storage_ = *std::move(storage);
    engine_ = MakeEngine(storage_.get());
  }

  std::unique_ptr<StudyEngine> MakeEngine(storage::Storage* storage) {
    EngineOptions options;
    options.trial_lease = kLease;
    options.clock = FakeClock::Source(&clock_);
    return std::make_unique<StudyEngine>(storage, nullptr, options);
  }

  // Switches to a fresh SQLite database, so that Restart() can reopen it.
  void UseSqlite() {
    engine_.reset();
    storage_.reset();
    db_path_ = dir_.File("metaopt.db");
    Restart();
  }

  // A new engine over the reopened database (the server restarting).
  void Restart() {
    engine_.reset();
    storage_.reset();
    auto storage = storage::OpenSqliteStorage(db_path_);
    ASSERT_THAT(storage, ::metaopt::testing::IsOk());
    storage_ = *std::move(storage);
    engine_ = MakeEngine(storage_.get());
  }

  // Suggests `count` trials of study "s" to client "worker"; their ids
  // (none, with a test failure, if the call fails).
  std::vector<int64_t> Suggest(int count) {
    v1::SuggestRequest request;
    request.set_study_id("s");
    request.set_count(count);
    request.set_client_id("worker");
    auto response = engine_->Suggest(request);
    EXPECT_THAT(response, ::metaopt::testing::IsOk());
    std::vector<int64_t> ids;
    if (response.ok()) {
      for (const v1::Trial& t : response->trials()) ids.push_back(t.id());
    }
    return ids;
  }

  ::metaopt::testing::ScopedTempDir dir_;
  std::string db_path_;
  FakeClock clock_;
  std::unique_ptr<storage::Storage> storage_;
  std::unique_ptr<StudyEngine> engine_;
};

}  // namespace metaopt::study

#endif  // METAOPT_TESTS_TESTUTIL_RESTARTABLE_ENGINE_H_
