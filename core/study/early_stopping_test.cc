// ReportIntermediate and early stopping through the engine: recording,
// idempotency, validation, the stop decision, STOPPED after Observe, leases
// and durability across a restart.
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "core/common/proto_time.h"
#include "core/storage/storage.h"
#include "core/study/intermediate.h"
#include "tests/testutil/fake_clock.h"
#include "tests/testutil/restartable_engine.h"
#include "core/study/study_engine.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/time_util.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"
#include "tests/testutil/storage_fixtures.h"
#include "tests/testutil/temp_dir.h"
#include "tests/testutil/test_specs.h"

namespace metaopt::study {
namespace {

using ::metaopt::testing::CatalogueSpec;
using ::metaopt::testing::IsOk;
using ::metaopt::testing::PipelineSpec;
using ::metaopt::testing::StatusIs;
using ::metaopt::storage::EqualsProto;
using ::testing::HasSubstr;

v1::StudySpec WithThreshold(v1::StudySpec spec, double threshold) {
  spec.mutable_early_stopping()->mutable_threshold()->set_threshold(threshold);
  return spec;
}

class EarlyStoppingTest : public RestartableEngineTest<10> {
 protected:
  absl::Status Create(const v1::StudySpec& spec, const std::string& id = "s") {
    v1::CreateStudyRequest request;
    request.set_study_id(id);
    *request.mutable_spec() = spec;
    return engine_->CreateStudy(request).status();
  }

  absl::StatusOr<v1::ReportIntermediateResponse> Report(
      int64_t trial, int64_t step, double value,
      std::map<std::string, double> metrics = {}) {
    v1::ReportIntermediateRequest request;
    request.set_study_id("s");
    request.set_trial_id(trial);
    request.set_step(step);
    request.set_value(value);
    for (const auto& [k, v] : metrics) (*request.mutable_metrics())[k] = v;
    return engine_->ReportIntermediate(request);
  }

  absl::StatusOr<v1::Trial> Observe(int64_t trial, double value) {
    v1::ObserveRequest request;
    request.set_study_id("s");
    request.set_trial_id(trial);
    request.set_value(value);
    auto response = engine_->Observe(request);
    if (!response.ok()) return response.status();
    return response->trial();
  }

  v1::Trial Get(int64_t trial) {
    v1::GetTrialRequest request;
    request.set_study_id("s");
    request.set_trial_id(trial);
    auto response = engine_->GetTrial(request);
    EXPECT_THAT(response, IsOk());
    return response.ok() ? response->trial() : v1::Trial();
  }

  v1::Study Study() {
    v1::GetStudyRequest request;
    request.set_study_id("s");
    auto response = engine_->GetStudy(request);
    EXPECT_THAT(response, IsOk());
    return response.ok() ? response->study() : v1::Study();
  }
};

TEST_F(EarlyStoppingTest, RecordsValuesByStepAndNeverStopsWithoutARule) {
  ASSERT_THAT(Create(PipelineSpec()), IsOk());
  const int64_t id = Suggest(1).at(0);
  for (int64_t step : {0, 5, 2}) {
    auto r = Report(id, step, 0.1 * step, {{"loss", 1.0 + step}});
    ASSERT_THAT(r, IsOk());
    EXPECT_FALSE(r->should_stop());
    EXPECT_EQ(r->reason(), "");
  }
  const v1::Trial trial = Get(id);
  ASSERT_EQ(trial.intermediate_values_size(), 3);
  EXPECT_EQ(trial.intermediate_values(0).step(), 0);
  EXPECT_EQ(trial.intermediate_values(1).step(), 2);
  EXPECT_EQ(trial.intermediate_values(2).step(), 5);
  EXPECT_DOUBLE_EQ(trial.intermediate_values(1).value(), 0.2);
  EXPECT_EQ(trial.intermediate_values(2).metrics().at("loss"), 6.0);
  EXPECT_TRUE(trial.intermediate_values(0).has_report_time());
  auto observed = Observe(id, 0.5);
  ASSERT_THAT(observed, IsOk());
  EXPECT_EQ(observed->state(), v1::TRIAL_STATE_COMPLETED);
  EXPECT_EQ(observed->intermediate_values_size(), 3);
}

TEST_F(EarlyStoppingTest, ValidatesTheRequest) {
  ASSERT_THAT(Create(PipelineSpec()), IsOk());
  const int64_t id = Suggest(1).at(0);
  EXPECT_THAT(Report(id, -1, 0.5), StatusIs(absl::StatusCode::kInvalidArgument,
                                            HasSubstr("step: -1 is negative")));
  EXPECT_THAT(Report(id, 1, std::nan("")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("value: nan is not a finite number")));
  EXPECT_THAT(Report(id, 1, 1e300),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("value")));
  EXPECT_THAT(Report(0, 1, 0.5), StatusIs(absl::StatusCode::kInvalidArgument,
                                          HasSubstr("trial_id: 0")));
  EXPECT_THAT(Report(id, 1, 0.5, {{"loss", INFINITY}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("metrics[\"loss\"]: inf")));
  EXPECT_THAT(Report(id + 1, 1, 0.5),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("no trial")));
  v1::ReportIntermediateRequest other;
  other.set_study_id("nope");
  other.set_trial_id(1);
  EXPECT_THAT(engine_->ReportIntermediate(other),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("nope")));
  // Nothing was recorded.
  EXPECT_EQ(Get(id).intermediate_values_size(), 0);
  // Only ACTIVE trials report.
  ASSERT_THAT(Observe(id, 0.5), IsOk());
  EXPECT_THAT(Report(id, 1, 0.5),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("is TRIAL_STATE_COMPLETED")));
}

TEST_F(EarlyStoppingTest, RejectsInvalidRuleAtCreate) {
  v1::StudySpec spec = PipelineSpec();
  spec.mutable_early_stopping()->mutable_asha()->set_reduction_factor(1);
  EXPECT_THAT(Create(spec),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("spec.early_stopping.asha.reduction_factor: "
                                 "1 is outside [2, 1000]")));
  spec.mutable_early_stopping()->Clear();
  EXPECT_THAT(Create(spec),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("spec.early_stopping: no rule")));
}

// A report can answer without the trial's history (the answer then has the
// same size at every step) and carries the value it recorded; a retry
// carries the one recorded first. The values stay readable, also after a
// restart on SQLite, where each is a row of its own.
TEST_F(EarlyStoppingTest, AnswerWithoutHistoryCarriesTheRecordedValue) {
  UseSqlite();
  ASSERT_THAT(Create(PipelineSpec()), IsOk());
  const int64_t id = Suggest(1).at(0);
  v1::ReportIntermediateRequest request;
  request.set_study_id("s");
  request.set_trial_id(id);
  request.set_omit_intermediate_values(true);
  std::vector<v1::ReportIntermediateResponse> answers;
  for (const int64_t step : {0, 1, 1}) {
    request.set_step(step);
    request.set_value(1.0 / (step + 2));
    auto answered = engine_->ReportIntermediate(request);
    ASSERT_THAT(answered, IsOk());
    answers.push_back(*answered);
  }
  for (const auto& answer : answers) {
    EXPECT_EQ(answer.trial().intermediate_values_size(), 0);
    EXPECT_EQ(answer.trial().state(), v1::TRIAL_STATE_ACTIVE);
    EXPECT_TRUE(answer.trial().has_lease_expire_time());
  }
  EXPECT_EQ(answers[0].trial().metadata().at(kOmittedIntermediateKey), "1");
  EXPECT_EQ(answers[2].trial().metadata().at(kOmittedIntermediateKey), "2");
  EXPECT_EQ(answers[1].recorded().step(), 1);
  EXPECT_DOUBLE_EQ(answers[1].recorded().value(), 1.0 / 3);
  EXPECT_TRUE(answers[1].recorded().has_report_time());
  EXPECT_THAT(answers[2].recorded(), EqualsProto(answers[1].recorded()));
  // By default the answer holds the whole trial, as GetTrial does.
  request.set_omit_intermediate_values(false);
  request.set_step(2);
  auto whole = engine_->ReportIntermediate(request);
  ASSERT_THAT(whole, IsOk());
  EXPECT_THAT(whole->trial(), EqualsProto(Get(id)));
  ASSERT_EQ(whole->trial().intermediate_values_size(), 3);
  EXPECT_THAT(whole->trial().intermediate_values(1),
              EqualsProto(answers[1].recorded()));
  Restart();
  EXPECT_THAT(Get(id), EqualsProto(whole->trial()));
}

TEST_F(EarlyStoppingTest, RepeatedStepIsIdempotentAndConflictIsRejected) {
  // Maximizing accuracy: below 0.5 is stopped.
  ASSERT_THAT(Create(WithThreshold(PipelineSpec(), 0.5)), IsOk());
  const int64_t id = Suggest(1).at(0);
  auto first = Report(id, 1, 0.7, {{"loss", 0.3}});
  ASSERT_THAT(first, IsOk());
  EXPECT_FALSE(first->should_stop());
  auto again = Report(id, 1, 0.7, {{"loss", 0.3}});
  ASSERT_THAT(again, IsOk());
  EXPECT_FALSE(again->should_stop());
  EXPECT_EQ(again->trial().intermediate_values_size(), 1);
  EXPECT_THAT(Report(id, 1, 0.8, {{"loss", 0.3}}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("step: 1 of trial 1 is already recorded "
                                 "with value 0.7")));
  EXPECT_THAT(Report(id, 1, 0.7, {{"loss", 0.4}}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("other metrics")));

  // The stop decision at step 3 is recorded; its retry and every later step
  // answer it again, an earlier step's retry still answers continue.
  auto stop = Report(id, 3, 0.2);
  ASSERT_THAT(stop, IsOk());
  EXPECT_TRUE(stop->should_stop());
  EXPECT_THAT(stop->reason(), HasSubstr("threshold 0.5"));
  EXPECT_EQ(stop->trial().metadata().at("stop_step"), "3");
  auto stop_again = Report(id, 3, 0.2);
  ASSERT_THAT(stop_again, IsOk());
  EXPECT_TRUE(stop_again->should_stop());
  EXPECT_EQ(stop_again->reason(), stop->reason());
  auto later = Report(id, 4, 0.9);
  ASSERT_THAT(later, IsOk());
  EXPECT_TRUE(later->should_stop());
  auto early_retry = Report(id, 1, 0.7, {{"loss", 0.3}});
  ASSERT_THAT(early_retry, IsOk());
  EXPECT_FALSE(early_retry->should_stop());
  // Still ACTIVE until observed.
  EXPECT_EQ(Get(id).state(), v1::TRIAL_STATE_ACTIVE);
}

TEST_F(EarlyStoppingTest, StoppedTrialEndsStoppedAndIsCountedApart) {
  v1::StudySpec spec = WithThreshold(PipelineSpec(), 0.5);
  ASSERT_THAT(Create(spec), IsOk());
  const std::vector<int64_t> ids = Suggest(2);
  ASSERT_EQ(ids.size(), 2u);
  auto stop = Report(ids[0], 1, 0.9);
  ASSERT_THAT(stop, IsOk());
  EXPECT_FALSE(stop->should_stop());
  stop = Report(ids[0], 2, 0.3);
  ASSERT_THAT(stop, IsOk());
  ASSERT_TRUE(stop->should_stop());
  auto stopped = Observe(ids[0], 0.3);
  ASSERT_THAT(stopped, IsOk());
  EXPECT_EQ(stopped->state(), v1::TRIAL_STATE_STOPPED);
  EXPECT_EQ(stopped->value(), 0.3);
  EXPECT_THAT(stopped->metadata().at("stop_reason"), HasSubstr("threshold"));
  EXPECT_FALSE(stopped->has_lease_expire_time());
  // A report of a trial never told to stop completes it.
  ASSERT_THAT(Report(ids[1], 1, 0.6), IsOk());
  auto completed = Observe(ids[1], 0.2);
  ASSERT_THAT(completed, IsOk());
  EXPECT_EQ(completed->state(), v1::TRIAL_STATE_COMPLETED);
  // No report after the end.
  EXPECT_THAT(Report(ids[0], 3, 0.3),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("TRIAL_STATE_STOPPED")));
  // ListTrials filters by the new state.
  v1::ListTrialsRequest list;
  list.set_study_id("s");
  list.set_state(v1::TRIAL_STATE_STOPPED);
  auto listed = engine_->ListTrials(list);
  ASSERT_THAT(listed, IsOk());
  ASSERT_EQ(listed->trials_size(), 1);
  EXPECT_EQ(listed->trials(0).id(), ids[0]);
  // The best trial is the COMPLETED one, although the stopped one's last
  // value (0.3) is higher.
  EXPECT_EQ(Study().best_trial().id(), ids[1]);
  const StudyEngine::LoadedStats stats = engine_->Stats();
  EXPECT_EQ(stats.trials_by_state[v1::TRIAL_STATE_STOPPED], 1);
  EXPECT_EQ(stats.trials_by_state[v1::TRIAL_STATE_COMPLETED], 1);
}

TEST_F(EarlyStoppingTest, RuleComparesTheMetricInItsGoal) {
  // Minimized objective; the rule compares "accuracy", maximized: a trial
  // stops when its accuracy is below 0.5, whatever its value.
  v1::StudySpec spec = WithThreshold(PipelineSpec(), 0.5);
  spec.mutable_objective()->set_goal(v1::GOAL_MINIMIZE);
  spec.mutable_early_stopping()->set_metric("accuracy");
  spec.mutable_early_stopping()->set_metric_goal(v1::GOAL_MAXIMIZE);
  ASSERT_THAT(Create(spec), IsOk());
  const std::vector<int64_t> ids = Suggest(2);
  ASSERT_EQ(ids.size(), 2u);
  // Every report must carry the metric; the refused report records nothing.
  EXPECT_THAT(Report(ids[0], 1, 0.9, {{"loss", 0.1}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("metrics: no \"accuracy\"")));
  EXPECT_EQ(Get(ids[0]).intermediate_values_size(), 0);
  // A bad value (0.9) with a good accuracy goes on.
  auto going = Report(ids[0], 1, 0.9, {{"accuracy", 0.8}});
  ASSERT_THAT(going, IsOk());
  EXPECT_FALSE(going->should_stop());
  // A good value (0.1) with a low accuracy stops, named by the metric's goal.
  auto stop = Report(ids[1], 1, 0.1, {{"accuracy", 0.3}});
  ASSERT_THAT(stop, IsOk());
  EXPECT_TRUE(stop->should_stop());
  EXPECT_THAT(stop->reason(), HasSubstr("value 0.3 at step 1 is worse than "
                                        "the threshold 0.5 (maximizing)"));
  // The trial is observed with the objective's value.
  auto stopped = Observe(ids[1], 0.1);
  ASSERT_THAT(stopped, IsOk());
  EXPECT_EQ(stopped->state(), v1::TRIAL_STATE_STOPPED);
  EXPECT_EQ(stopped->value(), 0.1);
}

TEST_F(EarlyStoppingTest, AshaRanksByTheMetricWithTheObjectivesGoal) {
  // No metric_goal: the metric follows the objective (minimized). The values
  // rank the trials the other way round, so only the metric can stop trial 2.
  v1::StudySpec spec = PipelineSpec();
  spec.mutable_objective()->set_goal(v1::GOAL_MINIMIZE);
  spec.mutable_early_stopping()->mutable_asha()->set_min_resource(1);
  spec.mutable_early_stopping()->mutable_asha()->set_reduction_factor(2);
  spec.mutable_early_stopping()->set_metric("loss");
  ASSERT_THAT(Create(spec), IsOk());
  const std::vector<int64_t> ids = Suggest(2);
  ASSERT_EQ(ids.size(), 2u);
  auto first = Report(ids[0], 1, 0.9, {{"loss", 0.2}});
  ASSERT_THAT(first, IsOk());
  EXPECT_FALSE(first->should_stop());
  auto second = Report(ids[1], 1, 0.1, {{"loss", 0.7}});
  ASSERT_THAT(second, IsOk());
  EXPECT_TRUE(second->should_stop());
  EXPECT_THAT(second->reason(), HasSubstr("asha: value 0.7 at rung 0"));
}

// accuracy (the value, maximised) against fit_seconds (minimised), subject
// to memory_mb <= 300, stopped by ASHA over Pareto ranks (eta 2).
v1::StudySpec TwoObjectiveAsha() {
  v1::StudySpec spec = PipelineSpec();
  metaopt::testing::SetAccuracyAndFitSeconds(300, &spec);
  spec.mutable_early_stopping()->mutable_asha()->set_min_resource(1);
  spec.mutable_early_stopping()->mutable_asha()->set_reduction_factor(2);
  return spec;
}

TEST_F(EarlyStoppingTest, TwoObjectiveAshaStopsByParetoRank) {
  UseSqlite();
  ASSERT_THAT(Create(TwoObjectiveAsha()), IsOk());
  const std::vector<int64_t> ids = Suggest(4);
  ASSERT_EQ(ids.size(), 4u);
  // Every report carries every objective and constrained metric; a refused
  // report records nothing.
  EXPECT_THAT(Report(ids[0], 1, 0.8, {{"memory_mb", 100}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("metrics[\"fit_seconds\"]: missing")));
  EXPECT_THAT(Report(ids[0], 1, 0.8, {{"fit_seconds", 10}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("metrics[\"memory_mb\"]: missing")));
  EXPECT_THAT(
      Report(ids[0], 1, 0.8,
             {{"accuracy", 0.7}, {"fit_seconds", 10}, {"memory_mb", 100}}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("metrics[\"accuracy\"]: 0.7 differs from value 0.8")));
  EXPECT_EQ(Get(ids[0]).intermediate_values_size(), 0);
  // Alone at rung 0 (step 1): continues.
  auto first = Report(ids[0], 1, 0.8,
                      {{"accuracy", 0.8}, {"fit_seconds", 10}, {"memory_mb", 100}});
  ASSERT_THAT(first, IsOk());
  EXPECT_FALSE(first->should_stop()) << first->reason();
  // Less accurate and slower than trial 1: dominated; of 2, 1 continues.
  auto dominated =
      Report(ids[1], 1, 0.7, {{"fit_seconds", 20}, {"memory_mb", 100}});
  ASSERT_THAT(dominated, IsOk());
  EXPECT_TRUE(dominated->should_stop());
  EXPECT_THAT(dominated->reason(),
              HasSubstr("asha: targets (-0.7, 20) at rung 0 (step 1) rank 2 "
                        "of 2 trial(s) there (Pareto front 2)"));
  // Better in both objectives but over the memory bound: ranks after the
  // feasible trials.
  auto infeasible =
      Report(ids[2], 1, 0.9, {{"fit_seconds", 5}, {"memory_mb", 400}});
  ASSERT_THAT(infeasible, IsOk());
  EXPECT_TRUE(infeasible->should_stop());
  EXPECT_THAT(infeasible->reason(),
              HasSubstr("violating the constraints by 100"));
  // On the first front with trial 1 and the most accurate: of 4, 2 continue
  // and it is the first.
  auto front = Report(ids[3], 1, 0.95, {{"fit_seconds", 30}, {"memory_mb", 200}});
  ASSERT_THAT(front, IsOk());
  EXPECT_FALSE(front->should_stop()) << front->reason();
  // The rule and the reports survive a restart: at rung 1 (step 2) trial 4,
  // now dominated by trial 1's report there, stops.
  Restart();
  ASSERT_THAT(Report(ids[0], 2, 0.85, {{"fit_seconds", 12}, {"memory_mb", 100}}),
              IsOk());
  auto later = Report(ids[3], 2, 0.6, {{"fit_seconds", 40}, {"memory_mb", 200}});
  ASSERT_THAT(later, IsOk());
  EXPECT_TRUE(later->should_stop());
  EXPECT_THAT(later->reason(), HasSubstr("at rung 1 (step 2) rank 2 of 2"));
  // A stopped trial ends STOPPED, observed with every objective.
  v1::ObserveRequest observe;
  observe.set_study_id("s");
  observe.set_trial_id(ids[1]);
  (*observe.mutable_metrics())["accuracy"] = 0.7;
  (*observe.mutable_metrics())["fit_seconds"] = 20;
  (*observe.mutable_metrics())["memory_mb"] = 100;
  auto stopped = engine_->Observe(observe);
  ASSERT_THAT(stopped, IsOk());
  EXPECT_EQ(stopped->trial().state(), v1::TRIAL_STATE_STOPPED);
}

TEST_F(EarlyStoppingTest, ReportExtendsTheLease) {
  ASSERT_THAT(Create(PipelineSpec()), IsOk());
  const int64_t id = Suggest(1).at(0);
  clock_.Advance(kLease - absl::Minutes(1));
  ASSERT_THAT(Report(id, 1, 0.5), IsOk());
  EXPECT_EQ(Get(id).lease_expire_time(),
            ToProtoTimestamp(clock_.Peek() + kLease));
  // Past the original lease, the trial is still ACTIVE.
  clock_.Advance(absl::Minutes(5));
  EXPECT_EQ(Get(id).state(), v1::TRIAL_STATE_ACTIVE);
  // Once the lease runs out, the trial is STALE and reports are refused.
  clock_.Advance(kLease);
  EXPECT_THAT(Report(id, 2, 0.5),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("lease expired")));
}

TEST_F(EarlyStoppingTest, MedianRuleStopsABadTrialWhenMaximizing) {
  v1::StudySpec spec = PipelineSpec();  // maximizes accuracy
  spec.mutable_early_stopping()->mutable_median()->set_min_trials(3);
  ASSERT_THAT(Create(spec), IsOk());
  const std::vector<int64_t> ids = Suggest(5);
  ASSERT_EQ(ids.size(), 5u);
  // Three trials run to completion with accuracies climbing to 0.8.
  for (int i = 0; i < 3; ++i) {
    for (int step = 1; step <= 3; ++step) {
      auto r = Report(ids[i], step, 0.5 + 0.1 * step);
      ASSERT_THAT(r, IsOk());
      EXPECT_FALSE(r->should_stop()) << r->reason();
    }
    ASSERT_THAT(Observe(ids[i], 0.8), IsOk());
  }
  // Running averages by step 2: 0.65 each, by step 1: 0.6. A trial at 0.7
  // continues, one at 0.4 (worse, since higher is better) stops.
  ASSERT_THAT(Report(ids[3], 1, 0.7), IsOk());
  auto good = Report(ids[3], 2, 0.7);
  ASSERT_THAT(good, IsOk());
  EXPECT_FALSE(good->should_stop());
  auto bad = Report(ids[4], 1, 0.4);
  ASSERT_THAT(bad, IsOk());
  EXPECT_TRUE(bad->should_stop());
  EXPECT_THAT(bad->reason(), HasSubstr("median 0.6"));
  EXPECT_THAT(bad->reason(), HasSubstr("maximizing"));
}

TEST_F(EarlyStoppingTest, StoppedCatalogueEntryIsNotSuggestedAgain) {
  ASSERT_THAT(Create(WithThreshold(CatalogueSpec(2), 0.5)), IsOk());
  const std::vector<int64_t> ids = Suggest(1);
  ASSERT_EQ(ids.size(), 1u);
  auto r = Report(ids[0], 1, 100.0);  // catalogue spec minimizes
  ASSERT_THAT(r, IsOk());
  ASSERT_TRUE(r->should_stop());
  ASSERT_THAT(Observe(ids[0], 100.0), IsOk());
  const std::vector<int64_t> next = Suggest(2);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_NE(Get(next[0]).configuration().SerializeAsString(),
            Get(ids[0]).configuration().SerializeAsString());
}

TEST_F(EarlyStoppingTest, ClientStopsATrialByItsOwnRule) {
  // No rule in the study: only the client's stop marks the trial.
  ASSERT_THAT(Create(PipelineSpec()), IsOk());
  const std::vector<int64_t> ids = Suggest(2);
  ASSERT_EQ(ids.size(), 2u);
  ASSERT_THAT(Report(ids[0], 1, 0.9), IsOk());
  v1::ReportIntermediateRequest request;
  request.set_study_id("s");
  request.set_trial_id(ids[0]);
  request.set_step(4);
  request.set_value(0.7);
  request.set_client_stop_reason("optuna MedianPruner");
  auto stop = engine_->ReportIntermediate(request);
  ASSERT_THAT(stop, IsOk());
  EXPECT_TRUE(stop->should_stop());
  EXPECT_EQ(stop->reason(), "client: optuna MedianPruner");
  EXPECT_EQ(stop->trial().metadata().at("stop_step"), "4");
  // A retry gets the same answer; the mark is not replaced.
  auto retry = engine_->ReportIntermediate(request);
  ASSERT_THAT(retry, IsOk());
  EXPECT_TRUE(retry->should_stop());
  request.set_step(5);
  request.set_client_stop_reason("another");
  auto later = engine_->ReportIntermediate(request);
  ASSERT_THAT(later, IsOk());
  EXPECT_EQ(later->reason(), "client: optuna MedianPruner");
  auto observed = Observe(ids[0], 0.7);
  ASSERT_THAT(observed, IsOk());
  EXPECT_EQ(observed->state(), v1::TRIAL_STATE_STOPPED);
  EXPECT_EQ(observed->value(), 0.7);
  EXPECT_EQ(observed->intermediate_values_size(), 3);
  // A trial whose reports carry no stop reason completes.
  ASSERT_THAT(Report(ids[1], 1, 0.2), IsOk());
  auto completed = Observe(ids[1], 0.2);
  ASSERT_THAT(completed, IsOk());
  EXPECT_EQ(completed->state(), v1::TRIAL_STATE_COMPLETED);
}

TEST_F(EarlyStoppingTest, RejectsAnOversizeClientStopReason) {
  ASSERT_THAT(Create(PipelineSpec()), IsOk());
  v1::ReportIntermediateRequest request;
  request.set_study_id("s");
  request.set_trial_id(Suggest(1).at(0));
  request.set_step(1);
  request.set_value(0.5);
  request.set_client_stop_reason(std::string(1001, 'x'));
  EXPECT_THAT(engine_->ReportIntermediate(request),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("has 1001 bytes, more than the limit of "
                                 "1000")));
}

TEST_F(EarlyStoppingTest, ValuesAndStopMarkSurviveARestart) {
  UseSqlite();
  ASSERT_THAT(Create(WithThreshold(PipelineSpec(), 0.5)), IsOk());
  const int64_t id = Suggest(1).at(0);
  ASSERT_THAT(Report(id, 1, 0.9, {{"loss", 0.1}}), IsOk());
  auto stop = Report(id, 2, 0.1);
  ASSERT_THAT(stop, IsOk());
  ASSERT_TRUE(stop->should_stop());
  Restart();
  const v1::Trial trial = Get(id);
  ASSERT_EQ(trial.intermediate_values_size(), 2);
  EXPECT_EQ(trial.intermediate_values(0).metrics().at("loss"), 0.1);
  EXPECT_EQ(trial.intermediate_values(1).value(), 0.1);
  // The retry after the restart gets the recorded answer.
  auto retry = Report(id, 2, 0.1);
  ASSERT_THAT(retry, IsOk());
  EXPECT_TRUE(retry->should_stop());
  auto observed = Observe(id, 0.1);
  ASSERT_THAT(observed, IsOk());
  Restart();
  EXPECT_EQ(Get(id).state(), v1::TRIAL_STATE_STOPPED);
  EXPECT_EQ(Get(id).intermediate_values_size(), 2);
}

}  // namespace
}  // namespace metaopt::study
