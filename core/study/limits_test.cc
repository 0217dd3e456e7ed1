// Configurable limits (EngineOptions) and the deadline fallback of Suggest.
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "core/storage/storage.h"
#include "tests/testutil/fake_clock.h"
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

// A spec's dataset features are counted before anything else reads them, and
// an oversized dataset sample is refused by its sizes: nothing is stored.
TEST_F(EngineTest, DatasetFeaturesAndSampleHaveSizeLimits) {
  EngineOptions options;
  options.max_dataset_features = 100;
  Restart(options);
  v1::StudySpec spec = PipelineSpec();
  for (int i = 0; i < 101; ++i) {
    (*spec.mutable_dataset_features())[absl::StrCat("f", i)] = i;
  }
  EXPECT_THAT(
      Create("features", spec),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("spec.dataset_features: 101 dataset features "
                         "(--max-dataset-features) exceed this server's "
                         "limit of 100")));
  spec.mutable_dataset_features()->erase("f0");
  EXPECT_THAT(Create("features", spec), IsOk());

  v1::StudySpec sampled = PipelineSpec();
  v1::DatasetSample* sample = sampled.mutable_dataset_sample();
  sample->add_column_kinds(v1::COLUMN_KIND_NUMERIC);
  sample->set_num_targets(1);
  for (int i = 0; i < 100000; ++i) sample->add_values(i);
  EXPECT_THAT(Create("sampled", sampled),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("spec.dataset_sample.values: 100000 values")));
  v1::GetStudyRequest get;
  get.set_study_id("sampled");
  EXPECT_THAT(engine_->GetStudy(get), StatusIs(absl::StatusCode::kNotFound, HasSubstr("sampled")));
}

class IntermediateLimitsTest : public EngineTest {
 protected:
  // Study "s" with one ACTIVE trial (id 1).
  void CreateWithTrials(int count) {
    ASSERT_THAT(Create("s", PipelineSpec()), IsOk());
    ASSERT_THAT(Suggest("s", count), IsOk());
  }

  absl::StatusOr<v1::ReportIntermediateResponse> Report(int64_t trial,
                                                        int64_t step,
                                                        int metrics) {
    v1::ReportIntermediateRequest request;
    request.set_study_id("s");
    request.set_trial_id(trial);
    request.set_step(step);
    request.set_value(0.5);
    for (int m = 0; m < metrics; ++m) {
      (*request.mutable_metrics())[absl::StrCat(std::string(120, 'n'), m)] = m;
    }
    return engine_->ReportIntermediate(request);
  }

  int StoredSteps(int64_t trial) {
    auto trials = storage_->LoadTrials({"", "s"});
    EXPECT_THAT(trials, IsOk());
    return (*trials)[trial - 1].intermediate_values_size();
  }
};

// The per-trial byte limit refuses the report that would cross it, before it
// is stored; the trial keeps what was acknowledged and can be observed.
TEST_F(IntermediateLimitsTest, TrialByteLimitRefusesBeforeStoring) {
  EngineOptions options;
  options.max_trial_intermediate_bytes = 64 << 10;  // ~8 reports of 64 metrics
  Restart(options);
  CreateWithTrials(1);
  int acknowledged = 0;
  absl::Status refused;
  for (int step = 0; step < 100 && refused.ok(); ++step) {
    auto reported = Report(1, step, 64);
    if (reported.ok()) {
      ++acknowledged;
    } else {
      refused = reported.status();
    }
  }
  EXPECT_GT(acknowledged, 4);
  EXPECT_LT(acknowledged, 10);
  EXPECT_THAT(refused,
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("over the limit of 65536 "
                                 "(--max-trial-intermediate-bytes)")));
  EXPECT_EQ(StoredSteps(1), acknowledged);
  // A small report still fits; the count limit is separate.
  EXPECT_THAT(Report(1, 1000, 0), IsOk());
  v1::ObserveRequest observe;
  observe.set_study_id("s");
  observe.set_trial_id(1);
  observe.set_value(0.5);
  ASSERT_THAT(engine_->Observe(observe), IsOk());
  EXPECT_EQ(StoredSteps(1), acknowledged + 1);
}

TEST_F(IntermediateLimitsTest, CountAndStudyByteLimits) {
  EngineOptions options;
  options.max_intermediate_values = 3;
  options.max_trial_intermediate_bytes = 16 << 10;
  options.max_study_intermediate_bytes = 30 << 10;
  Restart(options);
  CreateWithTrials(4);
  for (int step = 0; step < 3; ++step) ASSERT_THAT(Report(1, step, 0), IsOk());
  EXPECT_THAT(Report(1, 3, 0),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("already holds 3 intermediate values, the "
                                 "limit (--max-intermediate-values)")));
  EXPECT_EQ(StoredSteps(1), 3);
  // About 5.5 KB per report and two reports per trial (16 KB): the study's
  // 30 KB are full at the second report of trial 4.
  absl::Status refused;
  for (int64_t trial = 2; trial <= 4 && refused.ok(); ++trial) {
    for (int step = 0; step < 3 && refused.ok(); ++step) {
      auto reported = Report(trial, step, 40);
      if (!reported.ok() && absl::IsResourceExhausted(reported.status()) &&
          absl::StrContains(reported.status().message(),
                            "--max-trial-intermediate-bytes")) {
        break;  // this trial is full; the next one
      }
      if (!reported.ok()) refused = reported.status();
    }
  }
  EXPECT_THAT(refused,
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("(--max-study-intermediate-bytes)")));
  // After a restart (the totals are rebuilt from storage) it is still full.
  Restart(options);
  EXPECT_THAT(Report(4, 10, 40),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("(--max-study-intermediate-bytes)")));
}

// Reads stay possible whatever the trials hold: ListTrials pages by bytes,
// a study's best trial comes without its curve, and a trial stored larger
// than a response (before the limits) comes without its intermediate values,
// with a marker.
TEST_F(IntermediateLimitsTest, ReadsStayWithinTheResponseLimit) {
  EngineOptions options;
  options.max_page_bytes = 96 << 10;
  options.max_trial_intermediate_bytes = 48 << 10;
  Restart(options);
  CreateWithTrials(6);
  for (int64_t trial = 1; trial <= 6; ++trial) {
    for (int step = 0; step < 5; ++step) {
      ASSERT_THAT(Report(trial, step, 40), IsOk()) << trial << " " << step;
    }
  }
  int listed = 0;
  std::string token;
  do {
    v1::ListTrialsRequest list;
    list.set_study_id("s");
    list.set_page_token(token);
    auto page = engine_->ListTrials(list);
    ASSERT_THAT(page, IsOk());
    EXPECT_LE(static_cast<int64_t>(page->ByteSizeLong()),
              options.max_page_bytes);
    EXPECT_GE(page->trials_size(), 1);
    listed += page->trials_size();
    token = page->next_page_token();
  } while (!token.empty());
  EXPECT_EQ(listed, 6);

  v1::ObserveRequest observe;
  observe.set_study_id("s");
  observe.set_trial_id(1);
  observe.set_value(0.5);
  ASSERT_THAT(engine_->Observe(observe), IsOk());
  v1::GetStudyRequest get;
  get.set_study_id("s");
  auto study = engine_->GetStudy(get);
  ASSERT_THAT(study, IsOk());
  EXPECT_EQ(study->study().best_trial().intermediate_values_size(), 0);
  EXPECT_EQ(study->study().best_trial().metadata().at(
                "intermediate_values_omitted"),
            "5");

  // A trial stored with more than a response holds.
  auto stored = storage_->LoadTrials({"", "s"});
  ASSERT_THAT(stored, IsOk());
  v1::Trial huge = (*stored)[1];
  for (int step = 5; step < 40; ++step) {
    *huge.add_intermediate_values() = huge.intermediate_values(0);
    huge.mutable_intermediate_values()->rbegin()->set_step(step);
  }
  ASSERT_GT(static_cast<int64_t>(huge.ByteSizeLong()), options.max_page_bytes);
  ASSERT_THAT(storage_->PutTrials({"", "s"}, {huge}), IsOk());
  Restart(options);
  v1::GetTrialRequest get_trial;
  get_trial.set_study_id("s");
  get_trial.set_trial_id(2);
  auto trial = engine_->GetTrial(get_trial);
  ASSERT_THAT(trial, IsOk());
  EXPECT_EQ(trial->trial().intermediate_values_size(), 0);
  EXPECT_EQ(trial->trial().metadata().at("intermediate_values_omitted"), "40");
  v1::ListTrialsRequest list;
  list.set_study_id("s");
  EXPECT_THAT(engine_->ListTrials(list), IsOk());
}

// An Observe whose trial would not fit a response is refused before it is
// stored (the trial stays ACTIVE).
TEST_F(IntermediateLimitsTest, ObserveOfATrialTooLargeForAResponseIsRefused) {
  EngineOptions options;
  options.max_page_bytes = 64 << 10;
  options.max_trial_intermediate_bytes = 32 << 10;
  Restart(options);
  CreateWithTrials(1);
  int step = 0;
  while (Report(1, step, 40).ok()) ++step;
  v1::ObserveRequest observe;
  observe.set_study_id("s");
  observe.set_trial_id(1);
  observe.set_value(0.5);
  for (int m = 0; m < 256; ++m) {
    (*observe.mutable_metrics())[absl::StrCat(std::string(120, 'o'), m)] = m;
  }
  EXPECT_THAT(engine_->Observe(observe),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("nothing was stored")));
  auto trials = storage_->LoadTrials({"", "s"});
  ASSERT_THAT(trials, IsOk());
  EXPECT_EQ((*trials)[0].state(), v1::TRIAL_STATE_ACTIVE);
  observe.clear_metrics();
  EXPECT_THAT(engine_->Observe(observe), IsOk());
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
