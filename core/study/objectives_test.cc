// Studies with several objectives and with constraints through the engine:
// validation, Observe's outcomes, the Pareto front and its summary, and the
// Pareto acquisition's suggestions.
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "core/objective/pareto.h"
#include "core/storage/storage.h"
#include "core/study/study_engine.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"
#include "tests/testutil/test_specs.h"

namespace metaopt::study {
namespace {

using ::metaopt::testing::HpoSpace;
using ::metaopt::testing::HpoValue;
using ::metaopt::testing::IsOk;
using ::metaopt::testing::StatusIs;
using ::testing::HasSubstr;

// accuracy (maximized) against fit_seconds (minimized), subject to
// memory_mb <= 300.
v1::StudySpec TwoObjectiveSpec(v1::AlgorithmKind kind) {
  v1::StudySpec spec;
  *spec.mutable_search_space() = HpoSpace();
  metaopt::testing::SetAccuracyAndFitSeconds(300, &spec);
  spec.mutable_algorithm()->set_kind(kind);
  spec.mutable_algorithm()->set_initial_trials(5);
  spec.set_seed(5);
  return spec;
}

// A trade-off: deeper trees and larger learning rates are more accurate and
// slower; memory grows with depth.
struct Outcome {
  double accuracy;
  double seconds;
  double memory;
};
Outcome Evaluate(const v1::Configuration& config) {
  v1::Configuration copy = config;
  const double lr = std::log10(HpoValue(copy, "lr").number()) + 5;  // [0, 5]
  const double depth = HpoValue(copy, "depth").number();             // [2, 10]
  const double accuracy = 1 - 0.5 * std::exp(-0.3 * depth - 0.4 * lr);
  const double seconds = depth * depth * (1 + lr) / 10;
  return {accuracy, seconds, 40.0 * depth};
}

class ObjectivesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto storage = storage::OpenInMemoryStorage();
    ASSERT_THAT(storage, IsOk());
    storage_ = *std::move(storage);
    engine_ = std::make_unique<StudyEngine>(storage_.get(), nullptr,
                                            EngineOptions{});
  }

  absl::StatusOr<v1::CreateStudyResponse> Create(const v1::StudySpec& spec,
                                                 const std::string& id = "s") {
    v1::CreateStudyRequest request;
    request.set_study_id(id);
    *request.mutable_spec() = spec;
    return engine_->CreateStudy(request);
  }

  // Suggest, evaluate and observe one trial (all values in metrics); the
  // suggestion's source.
  std::string Step(const std::string& id = "s") {
    v1::SuggestRequest suggest;
    suggest.set_study_id(id);
    absl::StatusOr<v1::SuggestResponse> r = engine_->Suggest(suggest);
    EXPECT_THAT(r, IsOk());
    if (!r.ok() || r->trials_size() != 1) return "";
    const Outcome o = Evaluate(r->trials(0).configuration());
    v1::ObserveRequest observe;
    observe.set_study_id(id);
    observe.set_trial_id(r->trials(0).id());
    (*observe.mutable_metrics())["accuracy"] = o.accuracy;
    (*observe.mutable_metrics())["fit_seconds"] = o.seconds;
    (*observe.mutable_metrics())["memory_mb"] = o.memory;
    EXPECT_THAT(engine_->Observe(observe), IsOk());
    return r->trials(0).metadata().at("policy");
  }

  // The ids of the trials on the study's Pareto front.
  std::vector<int64_t> FrontIds(const std::string& id = "s") {
    v1::GetParetoFrontRequest request;
    request.set_study_id(id);
    absl::StatusOr<v1::GetParetoFrontResponse> front =
        engine_->GetParetoFront(request);
    EXPECT_THAT(front, IsOk());
    std::vector<int64_t> ids;
    if (front.ok()) {
      for (const v1::Trial& t : front->trials()) ids.push_back(t.id());
    }
    return ids;
  }

  std::vector<v1::Trial> AllTrials(const std::string& id = "s") {
    v1::ListTrialsRequest list;
    list.set_study_id(id);
    list.set_page_size(1000);
    absl::StatusOr<v1::ListTrialsResponse> r = engine_->ListTrials(list);
    EXPECT_THAT(r, IsOk());
    return {r->trials().begin(), r->trials().end()};
  }

  // A batch Suggest of three on study "s" returns three trials, the first two
  // distinct (pending picks are fantasies, believed picks join the front).
  void ExpectADistinctBatchOfThree() {
    v1::SuggestRequest batch;
    batch.set_study_id("s");
    batch.set_count(3);
    absl::StatusOr<v1::SuggestResponse> r = engine_->Suggest(batch);
    ASSERT_THAT(r, IsOk());
    ASSERT_EQ(r->trials_size(), 3);
    EXPECT_NE(r->trials(0).configuration().DebugString(),
              r->trials(1).configuration().DebugString());
  }

  std::unique_ptr<storage::Storage> storage_;
  std::unique_ptr<StudyEngine> engine_;
};

TEST_F(ObjectivesTest, SpecsAreValidatedNamingTheFieldAndRule) {
  v1::StudySpec four = TwoObjectiveSpec(v1::ALGORITHM_KIND_GP);
  four.add_objectives()->CopyFrom(four.objectives(1));
  four.mutable_objectives(2)->set_name("c");
  four.add_objectives()->CopyFrom(four.objectives(2));
  four.mutable_objectives(3)->set_name("d");
  EXPECT_THAT(Create(four), StatusIs(absl::StatusCode::kInvalidArgument,
                                     HasSubstr("spec.objectives: 4 objectives "
                                               "exceed the limit of 3")));
  v1::StudySpec repeated = TwoObjectiveSpec(v1::ALGORITHM_KIND_GP);
  repeated.mutable_objectives(1)->set_name("accuracy");
  EXPECT_THAT(Create(repeated),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("spec.objectives[1].name: \"accuracy\" "
                                 "repeats spec.objectives[0]")));
  v1::StudySpec unnamed = TwoObjectiveSpec(v1::ALGORITHM_KIND_GP);
  unnamed.mutable_objectives(1)->clear_name();
  EXPECT_THAT(Create(unnamed),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("spec.objectives[1].name: name must not be "
                                 "empty")));
  v1::StudySpec differs = TwoObjectiveSpec(v1::ALGORITHM_KIND_GP);
  differs.mutable_objective()->set_name("loss");
  differs.mutable_objective()->set_goal(v1::GOAL_MINIMIZE);
  EXPECT_THAT(Create(differs),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("spec.objective: differs from "
                                 "spec.objectives[0]")));
  v1::StudySpec sense = TwoObjectiveSpec(v1::ALGORITHM_KIND_GP);
  sense.mutable_constraints(0)->set_sense(v1::CONSTRAINT_SENSE_UNSPECIFIED);
  EXPECT_THAT(Create(sense),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("spec.constraints[0].sense: "
                                 "CONSTRAINT_SENSE_UNSPECIFIED is not "
                                 "allowed")));
  v1::StudySpec bound = TwoObjectiveSpec(v1::ALGORITHM_KIND_GP);
  bound.mutable_constraints(0)->set_bound(std::nan(""));
  EXPECT_THAT(Create(bound),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("spec.constraints[0].bound: nan is not "
                                 "finite")));
  v1::StudySpec grosi = TwoObjectiveSpec(v1::ALGORITHM_KIND_GROSI);
  EXPECT_THAT(Create(grosi),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("spec.objectives: 2 objectives; "
                                 "ALGORITHM_KIND_GROSI optimizes one; for "
                                 "several use one of ALGORITHM_KIND_RANDOM, "
                                 "ALGORITHM_KIND_GP, ALGORITHM_KIND_DEEPPIPE, "
                                 "ALGORITHM_KIND_PMF, ALGORITHM_KIND_MOSAIC")));
  v1::StudySpec stopping = TwoObjectiveSpec(v1::ALGORITHM_KIND_GP);
  stopping.mutable_early_stopping()->mutable_median();
  EXPECT_THAT(Create(stopping),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("spec.early_stopping.median: is not "
                                 "supported with several objectives")));
  stopping.mutable_early_stopping()->mutable_threshold()->set_threshold(0.5);
  EXPECT_THAT(Create(stopping),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("spec.early_stopping.threshold: is not "
                                 "supported with several objectives")));
  stopping.mutable_early_stopping()->mutable_asha();
  stopping.mutable_early_stopping()->set_metric("loss");
  EXPECT_THAT(Create(stopping),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("spec.early_stopping.metric: \"loss\" is "
                                 "not supported with several objectives")));
  stopping.mutable_early_stopping()->clear_metric();
  stopping.mutable_early_stopping()->mutable_asha()->set_reduction_factor(1);
  EXPECT_THAT(Create(stopping),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("spec.early_stopping.asha.reduction_factor: "
                                 "1 is outside [2, 1000]")));
}

TEST_F(ObjectivesTest, TheMultiObjectiveAcquisitionIsValidated) {
  v1::StudySpec unknown = TwoObjectiveSpec(v1::ALGORITHM_KIND_GP);
  unknown.mutable_algorithm()->set_multi_objective_acquisition(
      static_cast<v1::MultiObjectiveAcquisition>(7));
  EXPECT_THAT(Create(unknown),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("spec.algorithm.multi_objective_acquisition: "
                                 "7 is not a MultiObjectiveAcquisition")));
  // Mosaic takes several objectives by ParEGO only (its default), and
  // constraints (its playouts weigh EI by the probability of feasibility).
  v1::StudySpec mosaic = TwoObjectiveSpec(v1::ALGORITHM_KIND_MOSAIC);
  mosaic.clear_constraints();
  mosaic.mutable_algorithm()->set_multi_objective_acquisition(
      v1::MULTI_OBJECTIVE_ACQUISITION_EHVI);
  EXPECT_THAT(
      Create(mosaic),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("spec.algorithm.multi_objective_acquisition: "
                         "MULTI_OBJECTIVE_ACQUISITION_EHVI: "
                         "ALGORITHM_KIND_MOSAIC takes several objectives by "
                         "ParEGO only; set MULTI_OBJECTIVE_ACQUISITION_PAREGO "
                         "(or leave it unset)")));
  v1::StudySpec constrained = TwoObjectiveSpec(v1::ALGORITHM_KIND_MOSAIC);
  EXPECT_THAT(Create(constrained, "mosaic-constrained"), IsOk());
  v1::StudySpec grosi = TwoObjectiveSpec(v1::ALGORITHM_KIND_GROSI);
  grosi.mutable_objectives()->DeleteSubrange(1, 1);
  EXPECT_THAT(Create(grosi),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("spec.constraints: ALGORITHM_KIND_GROSI "
                                 "does not take constraints")));
  // PMF's latent rows model y: EHVI only.
  v1::StudySpec pmf = TwoObjectiveSpec(v1::ALGORITHM_KIND_PMF);
  pmf.mutable_algorithm()->set_multi_objective_acquisition(
      v1::MULTI_OBJECTIVE_ACQUISITION_PAREGO);
  EXPECT_THAT(
      Create(pmf),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("spec.algorithm.multi_objective_acquisition: "
                         "MULTI_OBJECTIVE_ACQUISITION_PAREGO: "
                         "ALGORITHM_KIND_PMF takes several objectives by EHVI "
                         "only; set MULTI_OBJECTIVE_ACQUISITION_EHVI (or leave "
                         "it unset), or use one of ALGORITHM_KIND_RANDOM, "
                         "ALGORITHM_KIND_GP, ALGORITHM_KIND_DEEPPIPE, "
                         "ALGORITHM_KIND_MOSAIC")));
  // With one objective the field is ignored, as long as it is known.
  v1::StudySpec one = TwoObjectiveSpec(v1::ALGORITHM_KIND_MOSAIC);
  one.mutable_objectives()->RemoveLast();
  one.clear_constraints();
  one.mutable_algorithm()->set_multi_objective_acquisition(
      v1::MULTI_OBJECTIVE_ACQUISITION_EHVI);
  EXPECT_THAT(Create(one), IsOk());
}

TEST_F(ObjectivesTest, TheOutputWarpingIsValidated) {
  v1::StudySpec unknown = TwoObjectiveSpec(v1::ALGORITHM_KIND_GP);
  unknown.mutable_algorithm()->set_output_warping(
      static_cast<v1::OutputWarping>(9));
  EXPECT_THAT(Create(unknown),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("spec.algorithm.output_warping: 9 is not an "
                                 "OutputWarping")));
}

// The power warp of fit_seconds and memory_mb changes what the Pareto step
// models, so the suggestions after the design differ from the unwarped ones.
TEST_F(ObjectivesTest, PowerWarpingRunsEndToEndAndChangesTheSuggestions) {
  v1::StudySpec none = TwoObjectiveSpec(v1::ALGORITHM_KIND_GP);
  none.mutable_algorithm()->set_output_warping(v1::OUTPUT_WARPING_NONE);
  v1::StudySpec power = none;
  power.mutable_algorithm()->set_output_warping(v1::OUTPUT_WARPING_POWER);
  ASSERT_THAT(Create(none), IsOk());
  ASSERT_THAT(Create(power, "power"), IsOk());
  std::string source;
  for (int i = 0; i < 14; ++i) {
    Step();
    source = Step("power");
  }
  EXPECT_EQ(source, "gp/ehvi");
  const std::vector<v1::Trial> a = AllTrials();
  const std::vector<v1::Trial> b = AllTrials("power");
  int differ = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].configuration().DebugString() !=
        b[i].configuration().DebugString()) {
      ++differ;
    }
  }
  EXPECT_GT(differ, 0);
  // The initial design does not model anything: the same five.
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(a[i].configuration().DebugString(),
              b[i].configuration().DebugString());
  }
}

TEST_F(ObjectivesTest, ObjectivesAreStoredCanonically) {
  v1::StudySpec spec = TwoObjectiveSpec(v1::ALGORITHM_KIND_RANDOM);
  spec.clear_objective();
  absl::StatusOr<v1::CreateStudyResponse> created = Create(spec);
  ASSERT_THAT(created, IsOk());
  // The first objective is also `objective`, for clients that know one.
  EXPECT_EQ(created->study().spec().objective().name(), "accuracy");
  EXPECT_EQ(created->study().spec().objectives_size(), 2);

  v1::StudySpec one;
  *one.mutable_search_space() = HpoSpace();
  one.add_objectives()->set_name("loss");
  one.mutable_objectives(0)->set_goal(v1::GOAL_MINIMIZE);
  one.mutable_algorithm()->set_kind(v1::ALGORITHM_KIND_RANDOM);
  absl::StatusOr<v1::CreateStudyResponse> single = Create(one, "one");
  ASSERT_THAT(single, IsOk());
  EXPECT_EQ(single->study().spec().objective().name(), "loss");
  EXPECT_EQ(single->study().spec().objectives_size(), 0);
}

TEST_F(ObjectivesTest, AnObservationMissingAValueIsRefusedAndNotStored) {
  ASSERT_THAT(Create(TwoObjectiveSpec(v1::ALGORITHM_KIND_RANDOM)), IsOk());
  v1::SuggestRequest suggest;
  suggest.set_study_id("s");
  absl::StatusOr<v1::SuggestResponse> r = engine_->Suggest(suggest);
  ASSERT_THAT(r, IsOk());
  v1::ObserveRequest observe;
  observe.set_study_id("s");
  observe.set_trial_id(r->trials(0).id());
  observe.set_value(0.9);  // the first objective's value
  (*observe.mutable_metrics())["memory_mb"] = 10;
  EXPECT_THAT(engine_->Observe(observe),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("metrics[\"fit_seconds\"]: missing")));
  (*observe.mutable_metrics())["fit_seconds"] = 2;
  observe.mutable_metrics()->erase("memory_mb");
  EXPECT_THAT(engine_->Observe(observe),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("metrics[\"memory_mb\"]: missing; the study "
                                 "constrains it")));
  EXPECT_EQ(AllTrials()[0].state(), v1::TRIAL_STATE_ACTIVE);
  // A failure needs no metrics.
  v1::ObserveRequest failed;
  failed.set_study_id("s");
  failed.set_trial_id(r->trials(0).id());
  failed.mutable_failure()->set_state(v1::TRIAL_STATE_FAILED);
  EXPECT_THAT(engine_->Observe(failed), IsOk());
}

TEST_F(ObjectivesTest, TheFrontIsTheFeasibleNonDominatedTrials) {
  ASSERT_THAT(Create(TwoObjectiveSpec(v1::ALGORITHM_KIND_RANDOM)), IsOk());
  for (int i = 0; i < 30; ++i) Step();
  const std::vector<v1::Trial> trials = AllTrials();
  std::vector<objective::Point> feasible;
  std::vector<int64_t> feasible_ids;
  int infeasible = 0;
  for (const v1::Trial& trial : trials) {
    ASSERT_EQ(trial.state(), v1::TRIAL_STATE_COMPLETED);
    ASSERT_TRUE(trial.has_feasible());
    EXPECT_EQ(trial.feasible(), trial.metrics().at("memory_mb") <= 300);
    EXPECT_EQ(trial.value(), trial.metrics().at("accuracy"));
    if (!trial.feasible()) {
      ++infeasible;
      continue;
    }
    feasible.push_back(
        {-trial.metrics().at("accuracy"), trial.metrics().at("fit_seconds")});
    feasible_ids.push_back(trial.id());
  }
  ASSERT_GT(infeasible, 0);  // infeasible trials are kept, not errors
  std::vector<int64_t> expected;
  for (int index : objective::NonDominated(feasible)) {
    expected.push_back(feasible_ids[index]);
  }
  v1::GetParetoFrontRequest get;
  get.set_study_id("s");
  get.set_page_size(2);  // pages of two
  std::vector<int64_t> got;
  v1::ParetoFrontSummary summary;
  do {
    absl::StatusOr<v1::GetParetoFrontResponse> page =
        engine_->GetParetoFront(get);
    ASSERT_THAT(page, IsOk());
    for (const v1::Trial& trial : page->trials()) got.push_back(trial.id());
    summary = page->summary();
    get.set_page_token(page->next_page_token());
  } while (!get.page_token().empty());
  EXPECT_EQ(got, expected);
  EXPECT_EQ(summary.size(), static_cast<int64_t>(expected.size()));
  // The default reference: the worst feasible values, a tenth of the range
  // further.
  double worst_accuracy = 1;
  double best_accuracy = 0;
  double worst_seconds = 0;
  double best_seconds = 1e9;
  for (const objective::Point& p : feasible) {
    worst_accuracy = std::min(worst_accuracy, -p[0]);
    best_accuracy = std::max(best_accuracy, -p[0]);
    worst_seconds = std::max(worst_seconds, p[1]);
    best_seconds = std::min(best_seconds, p[1]);
  }
  ASSERT_EQ(summary.reference_point_size(), 2);
  EXPECT_NEAR(summary.reference_point(0),
              worst_accuracy - 0.1 * (best_accuracy - worst_accuracy), 1e-12);
  EXPECT_NEAR(summary.reference_point(1),
              worst_seconds + 0.1 * (worst_seconds - best_seconds), 1e-12);
  EXPECT_NEAR(summary.hypervolume(),
              objective::Hypervolume2D(
                  feasible, {-summary.reference_point(0),
                             summary.reference_point(1)}),
              1e-12);
  // GetStudy reports the same front; its best trial is the front's most
  // accurate.
  v1::GetStudyRequest study;
  study.set_study_id("s");
  absl::StatusOr<v1::GetStudyResponse> described = engine_->GetStudy(study);
  ASSERT_THAT(described, IsOk());
  EXPECT_EQ(described->study().pareto_front().size(), summary.size());
  EXPECT_EQ(described->study().pareto_front().hypervolume(),
            summary.hypervolume());
  EXPECT_TRUE(described->study().best_trial().feasible());
  EXPECT_EQ(described->study().best_trial().value(), best_accuracy);
}

TEST_F(ObjectivesTest, GpSuggestsByExpectedHypervolumeImprovement) {
  ASSERT_THAT(Create(TwoObjectiveSpec(v1::ALGORITHM_KIND_GP)), IsOk());
  std::vector<std::string> sources;
  for (int i = 0; i < 12; ++i) sources.push_back(Step());
  EXPECT_THAT(sources.front(), HasSubstr("initial-design"));
  EXPECT_EQ(sources.back(), "gp/ehvi");
  ExpectADistinctBatchOfThree();
}

// ParEGO's weight vectors make the suggestions after the design spread along
// the front: some among the fastest trials, some among the most accurate.
void ExpectSpreadAlongTheFront(const std::vector<v1::Trial>& trials,
                               int design, size_t front_size) {
  ASSERT_GT(static_cast<int>(trials.size()), design);
  std::vector<double> accuracy;
  std::vector<double> seconds;
  for (const v1::Trial& trial : trials) {
    accuracy.push_back(trial.metrics().at("accuracy"));
    seconds.push_back(trial.metrics().at("fit_seconds"));
  }
  std::vector<double> sorted_accuracy = accuracy;
  std::vector<double> sorted_seconds = seconds;
  std::sort(sorted_accuracy.begin(), sorted_accuracy.end());
  std::sort(sorted_seconds.begin(), sorted_seconds.end());
  const size_t quarter = trials.size() / 4;
  const double accurate = sorted_accuracy[trials.size() - 1 - quarter];
  const double fast = sorted_seconds[quarter];
  int accurate_picks = 0;
  int fast_picks = 0;
  for (size_t i = design; i < trials.size(); ++i) {
    if (accuracy[i] >= accurate) ++accurate_picks;
    if (seconds[i] <= fast) ++fast_picks;
  }
  EXPECT_GE(accurate_picks, 2);
  EXPECT_GE(fast_picks, 2);
  EXPECT_GE(front_size, 4u);
}

TEST_F(ObjectivesTest, GpParegoSuggestionsSpreadAlongTheFront) {
  v1::StudySpec spec = TwoObjectiveSpec(v1::ALGORITHM_KIND_GP);
  spec.clear_constraints();
  spec.mutable_algorithm()->set_multi_objective_acquisition(
      v1::MULTI_OBJECTIVE_ACQUISITION_PAREGO);
  ASSERT_THAT(Create(spec), IsOk());
  std::vector<std::string> sources;
  for (int i = 0; i < 30; ++i) sources.push_back(Step());
  EXPECT_THAT(sources.front(), HasSubstr("initial-design"));
  EXPECT_EQ(sources.back(), "gp/parego");
  ExpectSpreadAlongTheFront(AllTrials(), 5, FrontIds().size());
  // Deterministic given the seed: a second study suggests the same.
  ASSERT_THAT(Create(spec, "again"), IsOk());
  for (int i = 0; i < 8; ++i) Step("again");
  const std::vector<v1::Trial> first = AllTrials();
  const std::vector<v1::Trial> second = AllTrials("again");
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(first[i].configuration().DebugString(),
              second[i].configuration().DebugString())
        << i;
  }
}

TEST_F(ObjectivesTest, ParegoWithAConstraint) {
  v1::StudySpec spec = TwoObjectiveSpec(v1::ALGORITHM_KIND_GP);
  spec.mutable_algorithm()->set_multi_objective_acquisition(
      v1::MULTI_OBJECTIVE_ACQUISITION_PAREGO);
  ASSERT_THAT(Create(spec), IsOk());
  std::vector<std::string> sources;
  for (int i = 0; i < 12; ++i) sources.push_back(Step());
  EXPECT_EQ(sources.back(), "gp/parego");
  ExpectADistinctBatchOfThree();
}

TEST_F(ObjectivesTest, MosaicSuggestionsSpreadAlongTheFront) {
  v1::StudySpec spec = TwoObjectiveSpec(v1::ALGORITHM_KIND_MOSAIC);
  spec.clear_constraints();
  ASSERT_THAT(Create(spec), IsOk());
  std::vector<std::string> sources;
  for (int i = 0; i < 30; ++i) sources.push_back(Step());
  EXPECT_THAT(sources.back(), HasSubstr("mcts-parego"));
  ExpectSpreadAlongTheFront(AllTrials(), 5, FrontIds().size());
}

TEST_F(ObjectivesTest, ConstrainedSingleObjective) {
  v1::StudySpec spec = TwoObjectiveSpec(v1::ALGORITHM_KIND_GP);
  spec.mutable_objectives()->RemoveLast();
  ASSERT_THAT(Create(spec), IsOk());
  std::vector<std::string> sources;
  for (int i = 0; i < 10; ++i) sources.push_back(Step());
  EXPECT_EQ(sources.back(), "gp/constrained-ei");
  double best = 0;
  for (const v1::Trial& trial : AllTrials()) {
    if (trial.feasible()) best = std::max(best, trial.value());
  }
  v1::GetStudyRequest study;
  study.set_study_id("s");
  absl::StatusOr<v1::GetStudyResponse> described = engine_->GetStudy(study);
  ASSERT_THAT(described, IsOk());
  EXPECT_EQ(described->study().best_trial().value(), best);
  EXPECT_TRUE(described->study().best_trial().feasible());
}

TEST_F(ObjectivesTest, OneObjectiveFrontIsTheBestTrial) {
  v1::StudySpec spec;
  *spec.mutable_search_space() = HpoSpace();
  spec.mutable_objective()->set_name("accuracy");
  spec.mutable_objective()->set_goal(v1::GOAL_MAXIMIZE);
  spec.mutable_algorithm()->set_kind(v1::ALGORITHM_KIND_RANDOM);
  ASSERT_THAT(Create(spec), IsOk());
  for (int i = 0; i < 5; ++i) Step();
  double best = 0;
  int64_t best_id = 0;
  for (const v1::Trial& trial : AllTrials()) {
    if (trial.value() > best) {
      best = trial.value();
      best_id = trial.id();
    }
  }
  v1::GetParetoFrontRequest get;
  get.set_study_id("s");
  absl::StatusOr<v1::GetParetoFrontResponse> front =
      engine_->GetParetoFront(get);
  ASSERT_THAT(front, IsOk());
  ASSERT_EQ(front->trials_size(), 1);
  EXPECT_EQ(front->trials(0).id(), best_id);
}

}  // namespace
}  // namespace metaopt::study
