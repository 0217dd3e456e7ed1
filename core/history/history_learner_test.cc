// The history learner: when it trains, what it publishes, owner scoping and
// crash safety (a StudyEngine over in-memory storage and a temporary
// registry).
#include "core/history/history_learner.h"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "tests/testutil/history_studies.h"
#include "core/registry/model_manager.h"
#include "core/storage/storage.h"
#include "core/study/study_engine.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"
#include "tests/testutil/temp_dir.h"
#include "tests/testutil/test_specs.h"

namespace metaopt::history {
namespace {

using ::metaopt::testing::PipelineSpec;
using ::metaopt::testing::ScopedTempDir;
using ::metaopt::testing::StatusIs;
using ::testing::HasSubstr;

TEST(ShouldLearnTest, CountsStudiesSinceTheLastModel) {
  EXPECT_FALSE(ShouldLearn(2, 0, 3));
  EXPECT_TRUE(ShouldLearn(3, 0, 3));
  EXPECT_FALSE(ShouldLearn(5, 3, 3));
  EXPECT_TRUE(ShouldLearn(6, 3, 3));
  // Studies deleted since the last model: nothing new.
  EXPECT_FALSE(ShouldLearn(2, 6, 1));
}

class HistoryLearnerTest : public ::testing::Test {
 protected:
  void Start(bool wire_engine) {
    METAOPT_ASSERT_OK_AND_ASSIGN(storage_, storage::OpenInMemoryStorage());
    METAOPT_ASSERT_OK_AND_ASSIGN(
        models_, registry::ModelManager::Create({registry_.path()}));
    LearnerOptions options;
    options.registry_dir = registry_.path();
    options.min_studies = 3;
    options.history.min_completed_trials = 6;
    options.portfolio_size = 4;
    options.deeppipe.epochs = 2;
    options.scan_interval = absl::ZeroDuration();
    options.low_priority = false;
    METAOPT_ASSERT_OK_AND_ASSIGN(
        learner_,
        HistoryLearner::Create(storage_.get(), models_.get(), options));
    study::EngineOptions engine_options;
    if (wire_engine) {
      engine_options.on_observed = [this](const storage::StudyKey& key,
                                          int64_t completed) {
        learner_->OnObserved(key, completed);
      };
    }
    engine_ = std::make_unique<study::StudyEngine>(
        storage_.get(), models_.get(), engine_options);
  }

  void RunStudies(const std::string& owner, int first, int count) {
    for (int i = first; i < first + count; ++i) {
      METAOPT_ASSERT_OK(
          RunStudy(*engine_, owner, absl::StrCat("s", i),
                   PipelineSpec(v1::ALGORITHM_KIND_RANDOM, 100 + i), 8, {4}));
    }
  }

  std::string ModelName(const std::string& owner, const std::string& kind) {
    const v1::StudySpec spec = PipelineSpec();
    return absl::StrCat(
        HistoryDatasetName(owner, spec.search_space(), spec.objective()), "-",
        kind);
  }

  absl::StatusOr<v1::CreateStudyResponse> CreateDeepPipe(
      const std::string& owner, const std::string& id,
      const std::string& model = "") {
    v1::CreateStudyRequest request;
    request.set_study_id(id);
    *request.mutable_spec() = PipelineSpec(v1::ALGORITHM_KIND_DEEPPIPE);
    request.mutable_spec()->mutable_algorithm()->set_model(model);
    return engine_->CreateStudy(request, OwnerContext(owner));
  }

  ScopedTempDir registry_;
  std::unique_ptr<storage::Storage> storage_;
  std::unique_ptr<registry::ModelManager> models_;
  std::unique_ptr<HistoryLearner> learner_;
  std::unique_ptr<study::StudyEngine> engine_;
};

TEST_F(HistoryLearnerTest, LearnsAfterEnoughStudiesAndNewStudiesBindToIt) {
  Start(/*wire_engine=*/false);
  RunStudies("", 0, 2);
  METAOPT_ASSERT_OK(learner_->ScanAndLearn(""));
  EXPECT_EQ(models_->Get(ModelName("", "deeppipe")), nullptr);

  RunStudies("", 2, 1);  // the third completed study
  METAOPT_ASSERT_OK(learner_->ScanAndLearn(""));
  auto network = models_->Get(ModelName("", "deeppipe"));
  auto portfolio = models_->Get(ModelName("", "portfolio"));
  ASSERT_NE(network, nullptr);
  ASSERT_NE(portfolio, nullptr);
  EXPECT_EQ(network->version, 1);
  EXPECT_EQ(network->artifact.kind(), v1::MODEL_KIND_DEEPPIPE);
  EXPECT_EQ(portfolio->artifact.kind(), v1::MODEL_KIND_PORTFOLIO);
  EXPECT_EQ(network->artifact.int_options().at(kHistoryStudiesOption), 3);
  EXPECT_TRUE(network->artifact.provenance().from_history());
  // Trained on the 2 train tasks; the third is the validation task.
  EXPECT_EQ(network->artifact.provenance().task_ids_size(), 2);
  EXPECT_EQ(learner_->Stats().trainings_succeeded, 1);
  EXPECT_EQ(learner_->Stats().models_published, 2);

  // Nothing new: no new version.
  METAOPT_ASSERT_OK(learner_->ScanAndLearn(""));
  EXPECT_EQ(models_->Get(ModelName("", "deeppipe"))->version, 1);

  // A new DeepPipe study over the space binds to the learned model.
  METAOPT_ASSERT_OK_AND_ASSIGN(v1::CreateStudyResponse created,
                               CreateDeepPipe("", "new"));
  EXPECT_EQ(created.study().bound_model(),
            absl::StrCat(ModelName("", "deeppipe"), "@1"));

  // Three more: version 2.
  RunStudies("", 3, 3);
  METAOPT_ASSERT_OK(learner_->ScanAndLearn(""));
  EXPECT_EQ(models_->Get(ModelName("", "deeppipe"))->version, 2);
  EXPECT_EQ(models_->Get(ModelName("", "deeppipe"))
                ->artifact.int_options()
                .at(kHistoryStudiesOption),
            6);
}

TEST_F(HistoryLearnerTest, ModelsServeOnlyTheOwnerTheyWereLearnedFrom) {
  Start(/*wire_engine=*/false);
  RunStudies("alice", 0, 3);
  METAOPT_ASSERT_OK(learner_->ScanAndLearn("alice"));
  const std::string alices = ModelName("alice", "deeppipe");
  auto model = models_->Get(alices);
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(model->artifact.provenance().owner(), "alice");

  METAOPT_ASSERT_OK_AND_ASSIGN(v1::CreateStudyResponse own,
                               CreateDeepPipe("alice", "mine"));
  EXPECT_EQ(own.study().bound_model(), absl::StrCat(alices, "@1"));
  // Bob's study over the same space does not bind to it, cannot name it and
  // does not see it.
  METAOPT_ASSERT_OK_AND_ASSIGN(v1::CreateStudyResponse bobs,
                               CreateDeepPipe("bob", "his"));
  EXPECT_EQ(bobs.study().bound_model(), "");
  EXPECT_THAT(CreateDeepPipe("bob", "named", alices),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("another owner's studies")));
  METAOPT_ASSERT_OK_AND_ASSIGN(
      v1::ListModelsResponse listed,
      engine_->ListModels(v1::ListModelsRequest(), OwnerContext("bob")));
  EXPECT_EQ(listed.models_size(), 0);
  METAOPT_ASSERT_OK_AND_ASSIGN(
      listed,
      engine_->ListModels(v1::ListModelsRequest(), OwnerContext("alice")));
  EXPECT_EQ(listed.models_size(), 2);
}

TEST_F(HistoryLearnerTest, AHalfWrittenVersionIsIgnored) {
  Start(/*wire_engine=*/false);
  RunStudies("", 0, 3);
  METAOPT_ASSERT_OK(learner_->ScanAndLearn(""));
  const std::string name = ModelName("", "deeppipe");
  ASSERT_NE(models_->Get(name), nullptr);
  // What a crash can leave: a staging directory with a half-written artifact,
  // and a version directory without MANIFEST (a copy interrupted by hand).
  const std::filesystem::path model_dir =
      std::filesystem::path(registry_.path()) / name;
  std::filesystem::create_directories(model_dir / ".tmp-crashed");
  std::ofstream(model_dir / ".tmp-crashed" / "model.pb") << "half";
  std::filesystem::create_directories(model_dir / "2");
  std::ofstream(model_dir / "2" / "model.pb") << "half";
  METAOPT_ASSERT_OK(models_->PollOnce());
  EXPECT_EQ(models_->Get(name)->version, 1);

  // The next model takes the next free number; the half version stays unused.
  RunStudies("", 3, 3);
  METAOPT_ASSERT_OK(learner_->ScanAndLearn(""));
  EXPECT_EQ(models_->Get(name)->version, 3);
}

TEST_F(HistoryLearnerTest, ObservationsTriggerLearningInTheBackground) {
  Start(/*wire_engine=*/true);
  RunStudies("", 0, 3);
  // The learner thread picks the owner up; wait for it (no timing asserted).
  const absl::Time give_up = absl::Now() + absl::Minutes(5);
  while (learner_->Stats().trainings_succeeded < 1 && absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(50));
  }
  ASSERT_EQ(learner_->Stats().trainings_succeeded, 1)
      << learner_->Stats().last_error;
  EXPECT_NE(models_->Get(ModelName("", "deeppipe")), nullptr);
  EXPECT_GE(learner_->Stats().scans, 1);
}

// A learner that crashed mid-training left its staging directory and an
// interrupted publish; the next start removes them, and nothing that may
// belong to a live writer.
TEST_F(HistoryLearnerTest, StartRemovesWhatACrashedTrainingLeft) {
  namespace fs = std::filesystem;
  ScopedTempDir work;
  // A pid that no longer runs: a child that has exited and been reaped.
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(0);
  ASSERT_EQ(waitpid(child, nullptr, 0), child);
  const fs::path dead =
      fs::path(work.path()) / absl::StrCat("metaopt-learn-", child, "-a1b2c3");
  const fs::path live = fs::path(work.path()) /
                        absl::StrCat("metaopt-learn-", getpid(), "-d4e5f6");
  const fs::path unowned = fs::path(work.path()) / "metaopt-learn-g7h8i9";
  for (const fs::path& dir : {dead, live, unowned}) {
    fs::create_directories(dir / "history-x");
    std::ofstream(dir / "history-x" / "evaluations.csv") << "task,y\n";
  }
  const fs::path model_dir = fs::path(registry_.path()) / "history-x-deeppipe";
  const fs::path old_publish = model_dir / ".tmp-old123";
  const fs::path fresh_publish = model_dir / ".tmp-new456";
  for (const fs::path& dir : {old_publish, fresh_publish, model_dir / "1"}) {
    fs::create_directories(dir);
    std::ofstream(dir / "model.pb") << "half";
  }
  fs::last_write_time(old_publish,
                      fs::file_time_type::clock::now() - std::chrono::hours(2));

  METAOPT_ASSERT_OK_AND_ASSIGN(storage_, storage::OpenInMemoryStorage());
  METAOPT_ASSERT_OK_AND_ASSIGN(
      models_, registry::ModelManager::Create({registry_.path()}));
  LearnerOptions options;
  options.registry_dir = registry_.path();
  options.work_dir = work.path();
  options.low_priority = false;
  METAOPT_ASSERT_OK_AND_ASSIGN(
      learner_, HistoryLearner::Create(storage_.get(), models_.get(), options));
  EXPECT_FALSE(fs::exists(dead));
  EXPECT_FALSE(fs::exists(old_publish));
  EXPECT_TRUE(fs::exists(live));           // its owner runs
  EXPECT_TRUE(fs::exists(unowned));        // no owner to check
  EXPECT_TRUE(fs::exists(fresh_publish));  // may be a publish in progress
  EXPECT_TRUE(fs::exists(model_dir / "1"));
  // Nothing stale is left: a second pass removes nothing.
  EXPECT_THAT(RemoveStaleLearnerFiles(work.path(), registry_.path(),
                                      absl::Now(), options.stale_publish_age),
              ::testing::IsEmpty());
  learner_.reset();
}

TEST_F(HistoryLearnerTest, RejectsBadOptions) {
  METAOPT_ASSERT_OK_AND_ASSIGN(storage_, storage::OpenInMemoryStorage());
  METAOPT_ASSERT_OK_AND_ASSIGN(
      models_, registry::ModelManager::Create({registry_.path()}));
  LearnerOptions options;
  options.registry_dir = registry_.path();
  options.min_studies = 0;
  EXPECT_THAT(HistoryLearner::Create(storage_.get(), models_.get(), options),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--learn-min-studies: 0")));
  options.min_studies = 1;
  options.history.min_completed_trials = 2;
  EXPECT_THAT(HistoryLearner::Create(storage_.get(), models_.get(), options),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--learn-min-trials: 2")));
  options.history.min_completed_trials = 3;
  options.registry_dir.clear();
  EXPECT_THAT(
      HistoryLearner::Create(storage_.get(), models_.get(), options),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--models")));
}

}  // namespace
}  // namespace metaopt::history
