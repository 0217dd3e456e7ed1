// Configurable limits (EngineOptions) and the deadline fallback of Suggest.
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "core/storage/storage.h"
#include "core/study/fake_clock.h"
#include "core/study/study_engine.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"
#include "tests/testutil/test_specs.h"

namespace metaopt::study {
namespace {

using ::metaopt::testing::CatalogueSpec;
using ::metaopt::testing::IsOk;
using ::metaopt::testing::PipelineAccuracy;
using ::metaopt::testing::PipelineSpec;
using ::metaopt::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST(CheckEngineOptionsTest, AcceptsTheDefaults) {
  EXPECT_THAT(CheckEngineOptions({}), IsOk());
}

TEST(CheckEngineOptionsTest, NamesTheOptionItsValueAndRange) {
  EngineOptions options;
  options.max_stages = 0;
  EXPECT_THAT(CheckEngineOptions(options),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("max_stages: 0 is outside [1, 64]")));
  options = {};
  options.max_candidates = 100001;
  EXPECT_THAT(
      CheckEngineOptions(options),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("max_candidates: 100001 is outside [1, 100000]")));
  options = {};
  options.max_suggest_count = 1001;
  EXPECT_THAT(
      CheckEngineOptions(options),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("max_suggest_count: 1001 is outside [1, 1000]")));
  options = {};
  options.max_page_size = 10;
  EXPECT_THAT(CheckEngineOptions(options),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("default_page_size: 100 is outside [1, 10]")));
  options = {};
  options.trial_lease = absl::ZeroDuration();
  EXPECT_THAT(CheckEngineOptions(options),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("trial_lease: 0 must be positive")));
  options = {};
  options.deadline_margin = absl::Milliseconds(-1);
  EXPECT_THAT(
      CheckEngineOptions(options),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("deadline_margin: -1ms must not be negative")));
  options = {};
  options.max_locked_policy_cost = absl::Milliseconds(-2);
  EXPECT_THAT(
      CheckEngineOptions(options),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("max_locked_policy_cost: -2ms must not be negative")));
  options = {};
  options.max_loaded_studies = -1;
  EXPECT_THAT(
      CheckEngineOptions(options),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("max_loaded_studies: -1 must not be negative")));
}

class EngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto storage = storage::OpenInMemoryStorage();
    ASSERT_THAT(storage, IsOk());
    storage_ = *std::move(storage);
    Restart({});
  }

  // A fresh engine over the same storage with `options` and the fake clock.
  void Restart(EngineOptions options) {
    options.clock = FakeClock::Source(&clock_);
    ASSERT_THAT(CheckEngineOptions(options), IsOk());
    engine_ = std::make_unique<StudyEngine>(storage_.get(), nullptr, options);
  }

  absl::Status Create(const std::string& id, const v1::StudySpec& spec) {
    v1::CreateStudyRequest request;
    request.set_study_id(id);
    *request.mutable_spec() = spec;
    return engine_->CreateStudy(request).status();
  }

  absl::StatusOr<v1::SuggestResponse> Suggest(
      const std::string& id, int count,
      absl::Time deadline = absl::InfiniteFuture()) {
    v1::SuggestRequest request;
    request.set_study_id(id);
    request.set_count(count);
    CallContext context;
    context.deadline = deadline;
    return engine_->Suggest(request, context);
  }

  void ObserveAll(const std::string& id, const v1::SuggestResponse& r) {
    for (const v1::Trial& trial : r.trials()) {
      v1::ObserveRequest observe;
      observe.set_study_id(id);
      observe.set_trial_id(trial.id());
      observe.set_value(0.1 * static_cast<double>(trial.id()));
      ASSERT_THAT(engine_->Observe(observe), IsOk());
    }
  }

  FakeClock clock_;
  std::unique_ptr<storage::Storage> storage_;
  std::unique_ptr<StudyEngine> engine_;
};

// Idle studies beyond max_loaded_studies leave memory and load again from
// storage when next used, with the same trials and the same next suggestions
// as a study that stayed loaded (GP: its policy state is stored).
TEST_F(EngineTest, IdleStudiesBeyondTheLimitUnloadAndLoadAgain) {
  EngineOptions bounded;
  bounded.max_loaded_studies = 8;
  Restart(bounded);
  auto unbounded_storage = storage::OpenInMemoryStorage();
  ASSERT_THAT(unbounded_storage, IsOk());
  EngineOptions unbounded;
  unbounded.max_loaded_studies = 0;
  unbounded.clock = FakeClock::Source(&clock_);
  StudyEngine reference(unbounded_storage->get(), nullptr, unbounded);

  constexpr int kStudies = 20;
  for (int round = 0; round < 4; ++round) {
    for (int i = 0; i < kStudies; ++i) {
      const std::string id = absl::StrCat("s", i);
      const v1::AlgorithmKind kind =
          i % 4 == 0 ? v1::ALGORITHM_KIND_GP : v1::ALGORITHM_KIND_RANDOM;
      for (StudyEngine* engine : {engine_.get(), &reference}) {
        if (round == 0) {
          v1::CreateStudyRequest create;
          create.set_study_id(id);
          *create.mutable_spec() = PipelineSpec(kind);
          ASSERT_THAT(engine->CreateStudy(create), IsOk());
        }
      }
      v1::SuggestRequest suggest;
      suggest.set_study_id(id);
      suggest.set_count(2);
      auto got = engine_->Suggest(suggest);
      auto want = reference.Suggest(suggest);
      ASSERT_THAT(got, IsOk());
      ASSERT_THAT(want, IsOk());
      ASSERT_EQ(got->trials_size(), want->trials_size());
      for (int t = 0; t < got->trials_size(); ++t) {
        EXPECT_EQ(got->trials(t).configuration().DebugString(),
                  want->trials(t).configuration().DebugString())
            << id << " round " << round;
        for (StudyEngine* engine : {engine_.get(), &reference}) {
          v1::ObserveRequest observe;
          observe.set_study_id(id);
          observe.set_trial_id(got->trials(t).id());
          observe.set_value(PipelineAccuracy(got->trials(t).configuration()));
          ASSERT_THAT(engine->Observe(observe), IsOk());
        }
      }
      EXPECT_LE(engine_->Stats().studies, 8);
    }
  }
  const StudyEngine::LoadedStats stats = engine_->Stats();
  EXPECT_GT(stats.unloaded_studies, 0);
  EXPECT_EQ(reference.Stats().studies, kStudies);
  for (int i = 0; i < kStudies; ++i) {
    v1::GetStudyRequest get;
    get.set_study_id(absl::StrCat("s", i));
    auto study = engine_->GetStudy(get);
    ASSERT_THAT(study, IsOk());
    EXPECT_EQ(study->study().trial_count(), 8);
    const v1::Trial want = reference.GetStudy(get)->study().best_trial();
    EXPECT_EQ(study->study().best_trial().id(), want.id());
    EXPECT_EQ(study->study().best_trial().value(), want.value());
  }
}

TEST_F(EngineTest, SpecSizeLimitsNameFieldValueAndLimit) {
  EngineOptions options;
  options.max_stages = 1;
  Restart(options);
  EXPECT_THAT(Create("s", PipelineSpec()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("spec.search_space.stages: 2 stages exceed "
                                 "this server's limit of 1")));
  options = {};
  options.max_algorithms_per_stage = 1;
  Restart(options);
  EXPECT_THAT(
      Create("s", PipelineSpec()),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("spec.search_space.stages[0].algorithms: 2 "
                         "algorithms exceed this server's limit of 1")));
  options = {};
  options.max_parameters_per_algorithm = 1;
  Restart(options);
  EXPECT_THAT(Create("s", PipelineSpec()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("spec.search_space.stages[1].algorithms[0]."
                                 "parameters: 2 parameters exceed this "
                                 "server's limit of 1")));
  options = {};
  options.max_candidates = 3;
  Restart(options);
  EXPECT_THAT(Create("s", CatalogueSpec(4)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("spec.candidates: 4 candidates exceed this "
                                 "server's limit of 3")));
  // Nothing was stored; at the limit the spec is accepted.
  v1::GetStudyRequest get;
  get.set_study_id("s");
  EXPECT_THAT(engine_->GetStudy(get),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("\"s\"")));
  EXPECT_THAT(Create("s", CatalogueSpec(3)), IsOk());
}

// One stage, one algorithm with `floats` float parameters: encodes to
// floats + 1 dimensions (the stage's algorithm column).
v1::StudySpec WideSpec(int floats, v1::AlgorithmKind kind) {
  v1::StudySpec spec;
  v1::Algorithm* algorithm =
      spec.mutable_search_space()->add_stages()->add_algorithms();
  spec.mutable_search_space()->mutable_stages(0)->set_name("model");
  algorithm->set_name("net");
  for (int p = 0; p < floats; ++p) {
    v1::Parameter* parameter = algorithm->add_parameters();
    parameter->set_name(absl::StrCat("w", p));
    parameter->mutable_float_domain()->set_high(1.0);
  }
  spec.mutable_objective()->set_name("loss");
  spec.mutable_objective()->set_goal(v1::GOAL_MINIMIZE);
  spec.mutable_algorithm()->set_kind(kind);
  return spec;
}

TEST_F(EngineTest, WideSpacesHaveParameterAndDimensionLimits) {
  EngineOptions options;
  options.max_model_dimension = 10;
  Restart(options);
  EXPECT_THAT(
      Create("gp", WideSpec(10, v1::ALGORITHM_KIND_GP)),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("spec.search_space: encodes to 11 dimensions")));
  EXPECT_THAT(Create("deeppipe", WideSpec(10, v1::ALGORITHM_KIND_DEEPPIPE)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("ALGORITHM_KIND_DEEPPIPE fits its surrogate "
                                 "over at most 10")));
  // At the limit, and for RANDOM at any width.
  EXPECT_THAT(Create("gp", WideSpec(9, v1::ALGORITHM_KIND_GP)), IsOk());
  EXPECT_THAT(Create("random", WideSpec(200, v1::ALGORITHM_KIND_RANDOM)),
              IsOk());
  options = {};
  options.max_parameters = 150;
  Restart(options);
  EXPECT_THAT(Create("wide", WideSpec(151, v1::ALGORITHM_KIND_RANDOM)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("spec.search_space: 151 parameters in all "
                                 "stages and algorithms exceed this server's "
                                 "limit of 150")));
  EXPECT_THAT(Create("wide", WideSpec(150, v1::ALGORITHM_KIND_RANDOM)), IsOk());
  options.max_model_dimension = 0;
  EXPECT_THAT(CheckEngineOptions(options),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("max_model_dimension: 0 is outside")));
}

TEST_F(EngineTest, CountAndPageSizeLimitsAreConfigurable) {
  EngineOptions options;
  options.max_suggest_count = 5;
  options.max_page_size = 20;
  options.default_page_size = 10;
  Restart(options);
  ASSERT_THAT(Create("s", PipelineSpec()), IsOk());
  EXPECT_THAT(Suggest("s", 6),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("count: 6 is outside [0, 5]")));
  EXPECT_THAT(Suggest("s", 5), IsOk());
  v1::ListTrialsRequest list;
  list.set_study_id("s");
  list.set_page_size(21);
  EXPECT_THAT(engine_->ListTrials(list),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("page_size: 21 is outside [0, 20]")));
}

TEST_F(EngineTest, SuggestNearItsDeadlineFallsBackToRandom) {
  ASSERT_THAT(Create("gp", PipelineSpec(v1::ALGORITHM_KIND_GP)), IsOk());
  auto first = Suggest("gp", 1, clock_.Peek() + absl::Milliseconds(1));
  ASSERT_THAT(first, IsOk());
  ASSERT_EQ(first->trials_size(), 1);
  const auto& metadata = first->trials(0).metadata();
  EXPECT_EQ(metadata.at("source"), "deadline-fallback");
  EXPECT_EQ(metadata.at("policy"), "random");
  EXPECT_THAT(metadata.at("reason"),
              HasSubstr("1ms left before the deadline, less than the 0 gp "
                        "recently took plus a 50ms margin"));
  EXPECT_EQ(first->trials(0).state(), v1::TRIAL_STATE_ACTIVE);

  // A deadline already past still gets an answer (the transport decides
  // whether it arrives in time).
  auto late = Suggest("gp", 1, clock_.Peek() - absl::Seconds(1));
  ASSERT_THAT(late, IsOk());
  EXPECT_EQ(late->trials(0).metadata().at("source"), "deadline-fallback");

  auto relaxed = Suggest("gp", 1, clock_.Peek() + absl::Seconds(10));
  ASSERT_THAT(relaxed, IsOk());
  EXPECT_EQ(relaxed->trials(0).metadata().count("source"), 0u);
  EXPECT_NE(relaxed->trials(0).metadata().at("policy"), "random");
}

TEST_F(EngineTest, DeadlineFallbackTakesUntriedCatalogueEntries) {
  ASSERT_THAT(Create("cat", CatalogueSpec(3)), IsOk());
  auto held = Suggest("cat", 2);
  ASSERT_THAT(held, IsOk());
  auto fallback = Suggest("cat", 3, clock_.Peek());
  ASSERT_THAT(fallback, IsOk());
  ASSERT_EQ(fallback->trials_size(), 1);  // only one entry is untried
  EXPECT_EQ(fallback->trials(0).metadata().at("source"), "deadline-fallback");
  for (const v1::Trial& trial : held->trials()) {
    EXPECT_NE(space::ConfigurationKey(trial.configuration()),
              space::ConfigurationKey(fallback->trials(0).configuration()));
  }
  auto none = Suggest("cat", 1, clock_.Peek());
  ASSERT_THAT(none, IsOk());
  EXPECT_THAT(none->trials(), IsEmpty());
}

TEST_F(EngineTest, RecentPolicyLatencyCountsTowardsTheDeadline) {
  ASSERT_THAT(Create("gp", PipelineSpec(v1::ALGORITHM_KIND_GP)), IsOk());
  // Every clock read moves time on by 1 s, so the policy run (between two
  // reads) appears to take 1 s.
  clock_.SetStep(absl::Seconds(1));
  auto measured = Suggest("gp", 1);
  ASSERT_THAT(measured, IsOk());
  clock_.SetStep(absl::ZeroDuration());

  // 0.5 s is well beyond the 50 ms margin, but not beyond 1 s + 50 ms.
  auto hurried = Suggest("gp", 1, clock_.Peek() + absl::Milliseconds(500));
  ASSERT_THAT(hurried, IsOk());
  EXPECT_EQ(hurried->trials(0).metadata().at("source"), "deadline-fallback");
  EXPECT_THAT(hurried->trials(0).metadata().at("reason"),
              HasSubstr("500ms left before the deadline, less than the 1s gp "
                        "recently took"));
  auto relaxed = Suggest("gp", 1, clock_.Peek() + absl::Seconds(5));
  ASSERT_THAT(relaxed, IsOk());
  EXPECT_EQ(relaxed->trials(0).metadata().count("source"), 0u);
}

}  // namespace
}  // namespace metaopt::study
