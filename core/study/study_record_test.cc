// What a study says of itself beyond its trials: its update time (the latest
// time recorded for it) and its FineTune runs, stored with the surrogate each
// run produced and read back by every engine on the same storage.
#include <memory>
#include <string>
#include <vector>

#include "core/common/proto_time.h"
#include "core/storage/storage.h"
#include "tests/testutil/fake_clock.h"
#include "core/study/study_engine.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"
#include "tests/testutil/test_specs.h"

namespace metaopt::study {
namespace {

using ::metaopt::testing::IsOk;
using ::metaopt::testing::PipelineAccuracy;
using ::metaopt::testing::PipelineSpec;

class StudyRecordTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto storage = storage::OpenInMemoryStorage();
    ASSERT_THAT(storage, IsOk());
    storage_ = *std::move(storage);
    engine_ = NewEngine();
  }

  std::unique_ptr<StudyEngine> NewEngine() {
    EngineOptions options;
    options.clock = FakeClock::Source(&clock_);
    return std::make_unique<StudyEngine>(storage_.get(), nullptr, options);
  }

  void Create(const std::string& id) {
    v1::CreateStudyRequest request;
    request.set_study_id(id);
    *request.mutable_spec() = PipelineSpec(v1::ALGORITHM_KIND_GP);
    ASSERT_THAT(engine_->CreateStudy(request), IsOk());
  }

  v1::Trial Suggest(const std::string& id) {
    v1::SuggestRequest request;
    request.set_study_id(id);
    request.set_client_id("worker");
    auto suggested = engine_->Suggest(request);
    EXPECT_THAT(suggested, IsOk());
    return suggested.ok() && suggested->trials_size() == 1
               ? suggested->trials(0)
               : v1::Trial();
  }

  void Observe(const std::string& id, const v1::Trial& trial) {
    v1::ObserveRequest request;
    request.set_study_id(id);
    request.set_trial_id(trial.id());
    request.set_value(PipelineAccuracy(trial.configuration()));
    ASSERT_THAT(engine_->Observe(request), IsOk());
  }

  void Run(const std::string& id, int n) {
    for (int i = 0; i < n; ++i) Observe(id, Suggest(id));
  }

  v1::Study Get(StudyEngine& engine, const std::string& id) {
    v1::GetStudyRequest request;
    request.set_study_id(id);
    auto got = engine.GetStudy(request);
    EXPECT_THAT(got, IsOk());
    return got.ok() ? got->study() : v1::Study();
  }

  absl::StatusOr<v1::FineTuneResponse> FineTune(StudyEngine& engine,
                                                const std::string& id,
                                                int steps) {
    v1::FineTuneRequest request;
    request.set_study_id(id);
    request.set_steps(steps);
    request.set_scope(v1::FINE_TUNE_SCOPE_KERNEL);
    return engine.FineTune(request);
  }

  static absl::Time AsTime(const google::protobuf::Timestamp& t) {
    return absl::FromUnixMicros(
        google::protobuf::util::TimeUtil::TimestampToMicroseconds(t));
  }
  static absl::Time UpdateTime(const v1::Study& study) {
    return AsTime(study.update_time());
  }

  FakeClock clock_;
  std::unique_ptr<storage::Storage> storage_;
  std::unique_ptr<StudyEngine> engine_;
};

TEST_F(StudyRecordTest, UpdateTimeIsTheLatestRecordedTime) {
  const absl::Time start = clock_.Peek();
  Create("s");
  EXPECT_EQ(UpdateTime(Get(*engine_, "s")), start);

  clock_.Advance(absl::Seconds(10));
  const v1::Trial trial = Suggest("s");
  EXPECT_EQ(UpdateTime(Get(*engine_, "s")), start + absl::Seconds(10));

  // A heartbeat extends the lease but records no time of its own.
  clock_.Advance(absl::Seconds(5));
  v1::HeartbeatRequest heartbeat;
  heartbeat.set_study_id("s");
  heartbeat.add_trial_ids(trial.id());
  ASSERT_THAT(engine_->Heartbeat(heartbeat), IsOk());
  EXPECT_EQ(UpdateTime(Get(*engine_, "s")), start + absl::Seconds(10));

  clock_.Advance(absl::Seconds(7));
  Observe("s", trial);
  const v1::Study study = Get(*engine_, "s");
  EXPECT_EQ(UpdateTime(study), start + absl::Seconds(22));

  // ListStudies says the same, and another engine reading the storage too.
  auto listed = engine_->ListStudies(v1::ListStudiesRequest());
  ASSERT_THAT(listed, IsOk());
  ASSERT_EQ(listed->studies_size(), 1);
  EXPECT_EQ(UpdateTime(listed->studies(0)), start + absl::Seconds(22));
  std::unique_ptr<StudyEngine> other = NewEngine();
  EXPECT_EQ(UpdateTime(Get(*other, "s")), start + absl::Seconds(22));
  // It is derived, never stored.
  auto stored = storage_->GetStudy({"", "s"});
  ASSERT_THAT(stored, IsOk());
  EXPECT_FALSE(stored->has_update_time());
}

TEST_F(StudyRecordTest, FineTuneRunsAreStoredWithTheStudy) {
  Create("s");
  Run("s", 8);
  clock_.Advance(absl::Seconds(30));
  const absl::Time tuned_at = clock_.Peek();
  auto first = FineTune(*engine_, "s", 15);
  ASSERT_THAT(first, IsOk());
  auto second = FineTune(*engine_, "s", 0);
  ASSERT_THAT(second, IsOk());

  const v1::Study study = Get(*engine_, "s");
  ASSERT_EQ(study.fine_tune_runs_size(), 2);
  const v1::FineTuneRun& run = study.fine_tune_runs(0);
  EXPECT_EQ(run.number(), 1);
  EXPECT_EQ(AsTime(run.time()), tuned_at);
  EXPECT_EQ(run.scope(), "FINE_TUNE_SCOPE_KERNEL");
  EXPECT_EQ(run.steps_requested(), 15);
  EXPECT_EQ(run.steps_run(), first->steps_run());
  EXPECT_EQ(run.loss_before(), first->loss_before());
  EXPECT_EQ(run.loss_after(), first->loss_after());
  EXPECT_EQ(run.completed_trials(), 8);
  EXPECT_TRUE(run.has_elapsed());
  EXPECT_EQ(study.fine_tune_runs(1).number(), 2);
  EXPECT_EQ(study.fine_tune_runs(1).steps_requested(), 0);
  EXPECT_EQ(study.fine_tune_runs(1).loss_after(), second->loss_after());
  EXPECT_EQ(UpdateTime(study), tuned_at);

  // A server started afresh on the same storage reads them back.
  std::unique_ptr<StudyEngine> restarted = NewEngine();
  const v1::Study reloaded = Get(*restarted, "s");
  ASSERT_EQ(reloaded.fine_tune_runs_size(), 2);
  EXPECT_EQ(reloaded.fine_tune_runs(0).SerializeAsString(),
            run.SerializeAsString());
}

TEST_F(StudyRecordTest, AnotherServerSeesNewRunsAndKeepsServingTheStudy) {
  Create("s");
  Run("s", 6);
  std::unique_ptr<StudyEngine> other = NewEngine();
  EXPECT_EQ(Get(*other, "s").fine_tune_runs_size(), 0);  // loaded now
  ASSERT_THAT(FineTune(*engine_, "s", 5), IsOk());
  // The other engine's copy is refreshed, not taken for a study deleted and
  // created again.
  EXPECT_EQ(Get(*other, "s").fine_tune_runs_size(), 1);
  v1::SuggestRequest suggest;
  suggest.set_study_id("s");
  EXPECT_THAT(other->Suggest(suggest), IsOk());
  ASSERT_THAT(FineTune(*other, "s", 5), IsOk());
  const v1::Study study = Get(*engine_, "s");
  ASSERT_EQ(study.fine_tune_runs_size(), 2);
  EXPECT_EQ(study.fine_tune_runs(1).number(), 2);
}

TEST_F(StudyRecordTest, OnlyTheMostRecentRunsAreKept) {
  Create("s");
  Run("s", 6);
  for (int i = 0; i < 23; ++i) ASSERT_THAT(FineTune(*engine_, "s", 1), IsOk());
  const v1::Study study = Get(*engine_, "s");
  ASSERT_EQ(study.fine_tune_runs_size(), 20);
  EXPECT_EQ(study.fine_tune_runs(0).number(), 4);
  EXPECT_EQ(study.fine_tune_runs(19).number(), 23);
}

}  // namespace
}  // namespace metaopt::study
