// Two StudyEngines on one database, as two server replicas are (here two
// SQLite connections to one file; replicas_test runs real processes on
// PostgreSQL): each sees the other's changes on its next call, and their
// writes never overwrite each other's.
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/space/search_space.h"
#include "core/storage/storage.h"
#include "core/study/study_engine.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"
#include "tests/testutil/temp_dir.h"
#include "tests/testutil/test_specs.h"

namespace metaopt::study {
namespace {

using ::metaopt::testing::CatalogueSpec;
using ::metaopt::testing::IsOk;
using ::metaopt::testing::PipelineSpec;
using ::metaopt::testing::ScopedTempDir;
using ::metaopt::testing::StatusIs;
using ::testing::SizeIs;

class SharedStorageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 2; ++i) {
      METAOPT_ASSERT_OK_AND_ASSIGN(
          storages_[i], storage::OpenSqliteStorage(dir_.File("metaopt.db")));
      engines_[i] = std::make_unique<StudyEngine>(storages_[i].get(), nullptr);
    }
  }

  StudyEngine& engine(int i) { return *engines_[i]; }

  void Create(int i, const std::string& id, const v1::StudySpec& spec) {
    v1::CreateStudyRequest request;
    request.set_study_id(id);
    *request.mutable_spec() = spec;
    ASSERT_THAT(engine(i).CreateStudy(request), IsOk());
  }

  absl::StatusOr<v1::SuggestResponse> Suggest(int i, const std::string& id,
                                              int count,
                                              const std::string& client_id) {
    v1::SuggestRequest request;
    request.set_study_id(id);
    request.set_count(count);
    request.set_client_id(client_id);
    return engine(i).Suggest(request);
  }

  ScopedTempDir dir_;
  std::unique_ptr<storage::Storage> storages_[2];
  std::unique_ptr<StudyEngine> engines_[2];
};

TEST_F(SharedStorageTest, EachEngineSeesTheOthersChanges) {
  Create(0, "s", PipelineSpec(v1::ALGORITHM_KIND_RANDOM, 7));
  // Both load the study now.
  METAOPT_ASSERT_OK_AND_ASSIGN(auto first, Suggest(0, "s", 2, "w"));
  METAOPT_ASSERT_OK_AND_ASSIGN(auto retried, Suggest(1, "s", 2, "w"));
  ASSERT_THAT(retried.trials(), SizeIs(2));
  EXPECT_EQ(retried.trials(0).id(), first.trials(0).id());
  EXPECT_EQ(retried.trials(1).id(), first.trials(1).id());
  v1::ObserveRequest tell;
  tell.set_study_id("s");
  tell.set_trial_id(1);
  tell.set_value(0.5);
  ASSERT_THAT(engine(1).Observe(tell), IsOk());
  v1::GetTrialRequest get;
  get.set_study_id("s");
  get.set_trial_id(1);
  METAOPT_ASSERT_OK_AND_ASSIGN(auto trial, engine(0).GetTrial(get));
  EXPECT_EQ(trial.trial().state(), v1::TRIAL_STATE_COMPLETED);
  // The observation is not taken twice, whichever engine is asked.
  EXPECT_THAT(engine(0).Observe(tell),
              StatusIs(absl::StatusCode::kFailedPrecondition, ::testing::_));
  // New trials continue the ids, from either engine.
  METAOPT_ASSERT_OK_AND_ASSIGN(auto next, Suggest(0, "s", 2, "other"));
  EXPECT_EQ(next.trials(0).id(), 3);
  METAOPT_ASSERT_OK_AND_ASSIGN(next, Suggest(1, "s", 1, "third"));
  EXPECT_EQ(next.trials(0).id(), 5);
}

// Reports made through one engine are appended rows; the other reads them on
// its next call (its copy was loaded before they were made), whole and in
// step order, and records further steps after them.
TEST_F(SharedStorageTest, EachEngineSeesTheOthersIntermediateValues) {
  Create(0, "s", PipelineSpec(v1::ALGORITHM_KIND_RANDOM, 7));
  ASSERT_THAT(Suggest(0, "s", 1, "w"), IsOk());
  v1::GetTrialRequest get;
  get.set_study_id("s");
  get.set_trial_id(1);
  ASSERT_THAT(engine(1).GetTrial(get), IsOk());  // engine 1 loads it now
  v1::ReportIntermediateRequest report;
  report.set_study_id("s");
  report.set_trial_id(1);
  for (const int64_t step : {0, 2}) {
    report.set_step(step);
    report.set_value(0.1 * step);
    ASSERT_THAT(engine(0).ReportIntermediate(report), IsOk());
  }
  report.set_step(1);
  report.set_value(0.1);
  METAOPT_ASSERT_OK_AND_ASSIGN(auto answered,
                               engine(1).ReportIntermediate(report));
  ASSERT_EQ(answered.trial().intermediate_values_size(), 3);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(answered.trial().intermediate_values(i).step(), i);
  }
  METAOPT_ASSERT_OK_AND_ASSIGN(auto seen, engine(0).GetTrial(get));
  EXPECT_EQ(seen.trial().intermediate_values_size(), 3);
  // A retry through the other engine is recognized as one.
  report.set_step(2);
  report.set_value(0.2);
  EXPECT_THAT(engine(0).ReportIntermediate(report), IsOk());
  report.set_value(0.3);
  EXPECT_THAT(engine(1).ReportIntermediate(report),
              StatusIs(absl::StatusCode::kFailedPrecondition, ::testing::_));
}

TEST_F(SharedStorageTest, ConcurrentSuggestsNeverShareACatalogueEntry) {
  constexpr int kEntries = 60;
  Create(0, "c", CatalogueSpec(kEntries));
  std::vector<std::vector<v1::Trial>> got(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int call = 0;; ++call) {
        auto suggested = Suggest((t + call) % 2, "c", 2, "");
        ASSERT_THAT(suggested, IsOk());
        if (suggested->trials().empty()) return;
        for (const v1::Trial& trial : suggested->trials())
          got[t].push_back(trial);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  std::set<std::string> entries;
  std::set<int64_t> ids;
  for (const auto& trials : got) {
    for (const v1::Trial& trial : trials) {
      EXPECT_TRUE(entries.insert(space::ConfigurationKey(trial.configuration()))
                      .second);
      EXPECT_TRUE(ids.insert(trial.id()).second);
    }
  }
  EXPECT_EQ(entries.size(), static_cast<size_t>(kEntries));
  EXPECT_EQ(ids.size(), static_cast<size_t>(kEntries));
}

TEST_F(SharedStorageTest, AStudyDeletedAndCreatedAgainElsewhereIsReloaded) {
  Create(0, "s", PipelineSpec(v1::ALGORITHM_KIND_RANDOM, 7));
  ASSERT_THAT(Suggest(1, "s", 3, "w"), IsOk());  // engine 1 holds it
  v1::DeleteStudyRequest drop;
  drop.set_study_id("s");
  ASSERT_THAT(engine(0).DeleteStudy(drop), IsOk());
  v1::GetStudyRequest get;
  get.set_study_id("s");
  EXPECT_THAT(engine(1).GetStudy(get),
              StatusIs(absl::StatusCode::kNotFound, ::testing::_));
  // Created again with another seed: engine 1 serves the new study.
  Create(0, "s", PipelineSpec(v1::ALGORITHM_KIND_RANDOM, 8));
  ASSERT_THAT(Suggest(0, "s", 1, "x"), IsOk());
  METAOPT_ASSERT_OK_AND_ASSIGN(auto study, engine(1).GetStudy(get));
  EXPECT_EQ(study.study().spec().seed(), 8u);
  EXPECT_EQ(study.study().trial_count(), 1);
  METAOPT_ASSERT_OK_AND_ASSIGN(auto next, Suggest(1, "s", 1, "y"));
  EXPECT_EQ(next.trials(0).id(), 2);
}

}  // namespace
}  // namespace metaopt::study
