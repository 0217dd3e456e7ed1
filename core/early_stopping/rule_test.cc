#include "core/early_stopping/rule.h"

#include <cmath>
#include <memory>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace metaopt::early_stopping {
namespace {

using ::testing::HasSubstr;

// A curve with values at steps 1, 2, ... (or the given steps).
TrialCurve Curve(int64_t id, v1::TrialState state, std::vector<double> values,
                 int64_t first_step = 1) {
  TrialCurve curve;
  curve.trial_id = id;
  curve.state = state;
  for (size_t i = 0; i < values.size(); ++i) {
    curve.points.push_back({first_step + static_cast<int64_t>(i), values[i]});
  }
  return curve;
}

TrialCurve At(int64_t id, v1::TrialState state,
              std::vector<std::pair<int64_t, double>> points) {
  TrialCurve curve;
  curve.trial_id = id;
  curve.state = state;
  for (const auto& [step, value] : points)
    curve.points.push_back({step, value});
  return curve;
}

// Mirror image of a curve: the same comparisons under the other goal.
TrialCurve Negated(TrialCurve curve) {
  for (Point& p : curve.points) p.value = -p.value;
  return curve;
}

std::vector<TrialCurve> Negated(std::vector<TrialCurve> curves) {
  for (TrialCurve& c : curves) c = Negated(std::move(c));
  return curves;
}

std::unique_ptr<Rule> Make(const v1::EarlyStoppingSpec& spec) {
  auto rule = CreateRule(spec);
  EXPECT_TRUE(rule.ok()) << rule.status();
  return *std::move(rule);
}

// Checks `expected` under minimization and, with every value negated, the
// same decision under maximization.
void ExpectDecision(const Rule& rule, const TrialCurve& trial,
                    const std::vector<TrialCurve>& others, bool expected) {
  const Decision min = rule.ShouldStop(trial, others, v1::GOAL_MINIMIZE);
  EXPECT_EQ(min.stop, expected) << min.reason;
  const Decision max =
      rule.ShouldStop(Negated(trial), Negated(others), v1::GOAL_MAXIMIZE);
  EXPECT_EQ(max.stop, expected) << max.reason;
  if (max.stop) EXPECT_THAT(max.reason, HasSubstr("maximizing"));
}

constexpr v1::TrialState kCompleted = v1::TRIAL_STATE_COMPLETED;
constexpr v1::TrialState kActive = v1::TRIAL_STATE_ACTIVE;

v1::EarlyStoppingSpec MedianSpec(int64_t start_step, int min_trials) {
  v1::EarlyStoppingSpec spec;
  spec.mutable_median()->set_start_step(start_step);
  spec.mutable_median()->set_min_trials(min_trials);
  return spec;
}

TEST(MedianRuleTest, StopsWhenBestIsWorseThanMedianOfRunningAverages) {
  auto rule = Make(MedianSpec(0, 3));
  // Running averages up to step 2: (1+0.8)/2 = 0.9, (0.6+0.4)/2 = 0.5,
  // (2+1)/2 = 1.5 -> median 0.9. Values after step 2 are ignored.
  const std::vector<TrialCurve> others = {
      Curve(1, kCompleted, {1.0, 0.8, 0.1}),
      Curve(2, kCompleted, {0.6, 0.4, 0.1}),
      Curve(3, kCompleted, {2.0, 1.0, 0.1}),
  };
  // Best by step 2 is 0.95 > 0.9: stop.
  ExpectDecision(*rule, Curve(4, kActive, {1.2, 0.95}), others, true);
  // Best by step 2 is 0.85 < 0.9: continue (the best, not the last, counts).
  ExpectDecision(*rule, Curve(4, kActive, {0.85, 1.3}), others, false);
  // Equal to the median: not strictly worse, continue.
  ExpectDecision(*rule, Curve(4, kActive, {1.0, 0.9}), others, false);
}

TEST(MedianRuleTest, MedianOfEvenCountIsMeanOfMiddleTwo) {
  auto rule = Make(MedianSpec(0, 2));
  const std::vector<TrialCurve> others = {
      Curve(1, kCompleted, {0.4}),
      Curve(2, kCompleted, {0.6}),
  };
  ExpectDecision(*rule, Curve(3, kActive, {0.51}), others, true);
  ExpectDecision(*rule, Curve(3, kActive, {0.49}), others, false);
}

TEST(MedianRuleTest, CountsOnlyCompletedTrialsWithReportsByTheStep) {
  auto rule = Make(MedianSpec(0, 3));
  const std::vector<TrialCurve> others = {
      Curve(1, kCompleted, {0.1, 0.1}),
      Curve(2, kCompleted, {0.1, 0.1}),
      // Active and stopped trials do not count, nor one that first reported
      // after step 2.
      Curve(3, kActive, {0.1, 0.1}),
      Curve(4, v1::TRIAL_STATE_STOPPED, {0.1, 0.1}),
      Curve(5, kCompleted, {0.1}, /*first_step=*/3),
  };
  const Decision d = rule->ShouldStop(Curve(6, kActive, {5.0, 5.0}), others,
                                      v1::GOAL_MINIMIZE);
  EXPECT_FALSE(d.stop);
  EXPECT_THAT(d.reason, HasSubstr("2 completed trial(s)"));
  // With the third completed trial reporting by step 2, it decides.
  std::vector<TrialCurve> more = others;
  more.push_back(Curve(7, kCompleted, {0.1, 0.1}));
  EXPECT_TRUE(
      rule->ShouldStop(Curve(6, kActive, {5.0, 5.0}), more, v1::GOAL_MINIMIZE)
          .stop);
}

TEST(MedianRuleTest, NoDecisionBeforeStartStep) {
  auto rule = Make(MedianSpec(3, 1));
  const std::vector<TrialCurve> others = {Curve(1, kCompleted, {0, 0, 0})};
  ExpectDecision(*rule, Curve(2, kActive, {9, 9}), others, false);
  ExpectDecision(*rule, Curve(2, kActive, {9, 9, 9}), others, true);
}

TEST(MedianRuleTest, DefaultMinTrialsIsThree) {
  auto rule = Make(MedianSpec(0, 0));
  std::vector<TrialCurve> others = {Curve(1, kCompleted, {0}),
                                    Curve(2, kCompleted, {0})};
  ExpectDecision(*rule, Curve(9, kActive, {1}), others, false);
  others.push_back(Curve(3, kCompleted, {0}));
  ExpectDecision(*rule, Curve(9, kActive, {1}), others, true);
}

v1::EarlyStoppingSpec AshaSpec(int64_t min_resource, int eta, int64_t grace) {
  v1::EarlyStoppingSpec spec;
  spec.mutable_asha()->set_min_resource(min_resource);
  spec.mutable_asha()->set_reduction_factor(eta);
  spec.mutable_asha()->set_grace_period(grace);
  return spec;
}

TEST(RungsTest, GeometricFromMinResource) {
  const std::vector<int64_t> rungs = RungSteps(2, 3);
  ASSERT_GE(rungs.size(), 4u);
  EXPECT_EQ(rungs[0], 2);
  EXPECT_EQ(rungs[1], 6);
  EXPECT_EQ(rungs[2], 18);
  EXPECT_EQ(rungs[3], 54);
  // Stops before overflowing.
  EXPECT_LT(RungSteps(1, 1000).size(), 8u);
  EXPECT_EQ(RungSteps(1, 2).size(), 63u);
}

TEST(RungsTest, ValueAtRungIsFirstReportAtOrPastIt) {
  const std::vector<Point> curve = {{1, 0.5}, {4, 0.3}, {9, 0.2}};
  double v = 0;
  ASSERT_TRUE(ValueAtRung(curve, 3, &v));
  EXPECT_EQ(v, 0.3);
  ASSERT_TRUE(ValueAtRung(curve, 4, &v));
  EXPECT_EQ(v, 0.3);
  ASSERT_TRUE(ValueAtRung(curve, 0, &v));
  EXPECT_EQ(v, 0.5);
  EXPECT_FALSE(ValueAtRung(curve, 10, &v));
}

TEST(AshaRuleTest, KeepsTopOneOverEtaOfTrialsAtTheRung) {
  // Rungs 1, 3, 9, ... with eta 3.
  auto rule = Make(AshaSpec(1, 3, 0));
  // Five others reached rung 3 (step 3 or the first report past it).
  const std::vector<TrialCurve> others = {
      Curve(1, kCompleted, {0.9, 0.8, 0.7, 0.6}),
      Curve(2, kCompleted, {0.9, 0.8, 0.5}),
      Curve(3, v1::TRIAL_STATE_STOPPED, {0.9, 0.8, 0.9}),
      At(4, kActive, {{1, 0.9}, {5, 0.4}}),  // value at rung 3: 0.4
      Curve(5, kActive, {0.9, 0.8, 0.3}),
      Curve(6, kActive, {0.9}),  // never reached rung 3
  };
  // n = 6 with the trial: keep floor(6/3) = 2; 0.3 and 0.4 are better.
  ExpectDecision(*rule, Curve(7, kActive, {0.9, 0.8, 0.45}), others, true);
  // 0.35 ranks second: continue.
  ExpectDecision(*rule, Curve(7, kActive, {0.9, 0.8, 0.35}), others, false);
  // Ties are in the trial's favour: 0.4 ties trial 4, one strictly better.
  ExpectDecision(*rule, Curve(7, kActive, {0.9, 0.8, 0.4}), others, false);
}

TEST(AshaRuleTest, DecidesOnlyWhenARungIsCrossed) {
  auto rule = Make(AshaSpec(1, 3, 0));
  const std::vector<TrialCurve> others = {
      Curve(1, kCompleted, {0.1, 0.1, 0.1}),
      Curve(2, kCompleted, {0.1, 0.1, 0.1})};
  // Step 2 is between rungs 1 and 3: no decision, however bad.
  const Decision between = rule->ShouldStop(Curve(3, kActive, {0.9, 5.0}),
                                            others, v1::GOAL_MINIMIZE);
  EXPECT_FALSE(between.stop);
  EXPECT_EQ(between.reason, "");
  // Step 3 crosses rung 3: n = 3, keep 1, two better: stop.
  ExpectDecision(*rule, Curve(3, kActive, {0.9, 5.0, 5.0}), others, true);
  // The first rung, on the first report.
  ExpectDecision(*rule, Curve(3, kActive, {5.0}), others, true);
}

TEST(AshaRuleTest, JumpOverRungsDecidesAtTheHighestCrossed) {
  auto rule = Make(AshaSpec(1, 3, 0));
  // Others at rung 9 only if they reported at step >= 9.
  const std::vector<TrialCurve> others = {
      At(1, kCompleted, {{1, 0.1}, {3, 0.1}}),
      At(2, kCompleted, {{9, 0.5}}),
  };
  // Jumping from step 1 to 10 crosses rungs 3 and 9; at rung 9 only trial 2
  // is there: n = 2, keep 1; 0.6 is worse than 0.5: stop.
  ExpectDecision(*rule, At(3, kActive, {{1, 0.1}, {10, 0.6}}), others, true);
  ExpectDecision(*rule, At(3, kActive, {{1, 0.1}, {10, 0.4}}), others, false);
}

TEST(AshaRuleTest, FirstTrialAtARungContinues) {
  auto rule = Make(AshaSpec(1, 3, 0));
  ExpectDecision(*rule, Curve(1, kActive, {100.0}), {}, false);
}

TEST(AshaRuleTest, GracePeriodSkipsLowRungs) {
  auto rule = Make(AshaSpec(1, 2, 4));  // rungs 1, 2, 4, 8
  const std::vector<TrialCurve> others = {Curve(1, kCompleted, {0, 0, 0, 0})};
  ExpectDecision(*rule, Curve(2, kActive, {1}), others, false);
  ExpectDecision(*rule, Curve(2, kActive, {1, 1}), others, false);
  ExpectDecision(*rule, Curve(2, kActive, {1, 1, 1}), others, false);
  ExpectDecision(*rule, Curve(2, kActive, {1, 1, 1, 1}), others, true);
}

TEST(AshaRuleTest, MinResourceSetsFirstRung) {
  auto rule = Make(AshaSpec(5, 2, 0));  // rungs 5, 10, 20
  const std::vector<TrialCurve> others = {
      Curve(1, kCompleted, {0, 0, 0, 0, 0})};
  ExpectDecision(*rule, Curve(2, kActive, {1, 1, 1, 1}), others, false);
  ExpectDecision(*rule, Curve(2, kActive, {1, 1, 1, 1, 1}), others, true);
}

v1::EarlyStoppingSpec ShSpec(int64_t min_resource, int eta, int cohort) {
  v1::EarlyStoppingSpec spec;
  spec.mutable_successive_halving()->set_min_resource(min_resource);
  spec.mutable_successive_halving()->set_reduction_factor(eta);
  spec.mutable_successive_halving()->set_cohort_size(cohort);
  return spec;
}

TEST(SuccessiveHalvingRuleTest, StopsOnceQuotaIsKnownBetter) {
  // Cohorts of 9 trials (ids 1-9, 10-18, ...), eta 3, rungs 1, 3, 9: 3 pass
  // rung 0 (step 1), 1 passes rung 1 (step 3).
  auto rule = Make(ShSpec(1, 3, 9));
  std::vector<TrialCurve> others = {
      Curve(1, kActive, {0.1}),
      Curve(2, kActive, {0.2}),
      // Another cohort: ignored, however good.
      Curve(10, kActive, {0.0}),
      Curve(11, kActive, {0.0}),
      Curve(12, kActive, {0.0}),
  };
  // Two known better, quota 3: continue (ASHA would stop it: n = 3, keep 1).
  ExpectDecision(*rule, Curve(5, kActive, {0.5}), others, false);
  others.push_back(Curve(3, kActive, {0.3}));
  // Three known better: it cannot be in its cohort's top 3.
  ExpectDecision(*rule, Curve(5, kActive, {0.5}), others, true);
  ExpectDecision(*rule, Curve(5, kActive, {0.25}), others, false);
}

TEST(SuccessiveHalvingRuleTest, QuotaShrinksByEtaPerRung) {
  auto rule = Make(ShSpec(1, 3, 9));
  // At rung 1 (step 3) one trial of the cohort passes.
  const std::vector<TrialCurve> others = {Curve(1, kActive, {0.1, 0.1, 0.1})};
  ExpectDecision(*rule, Curve(2, kActive, {0.1, 0.1, 0.2}), others, true);
  ExpectDecision(*rule, Curve(2, kActive, {0.1, 0.1, 0.1}), others, false);
  // Between rungs: no decision.
  ExpectDecision(*rule, Curve(2, kActive, {0.1, 0.9}), others, false);
}

TEST(SuccessiveHalvingRuleTest, QuotaIsAtLeastOne) {
  auto rule = Make(ShSpec(1, 2, 2));  // rung 0 quota floor(2/2)=1, then 1
  const std::vector<TrialCurve> others = {Curve(1, kActive, {0.1, 0.1, 0.1})};
  ExpectDecision(*rule, Curve(2, kActive, {0.1, 0.1, 0.1, 0.1}), others, false);
  ExpectDecision(*rule, Curve(2, kActive, {0.2}), others, true);
}

v1::EarlyStoppingSpec ThresholdSpec(double threshold, int64_t start_step) {
  v1::EarlyStoppingSpec spec;
  spec.mutable_threshold()->set_threshold(threshold);
  spec.mutable_threshold()->set_start_step(start_step);
  return spec;
}

TEST(ThresholdRuleTest, StopsWhenLastValueIsWorse) {
  auto rule = Make(ThresholdSpec(0.5, 2));
  // Minimizing: above 0.5 is worse.
  EXPECT_FALSE(rule->ShouldStop(Curve(1, kActive, {0.9}), {},
                                v1::GOAL_MINIMIZE)
                   .stop);  // before start_step
  EXPECT_TRUE(rule->ShouldStop(Curve(1, kActive, {0.1, 0.9}), {},
                               v1::GOAL_MINIMIZE)
                  .stop);  // the last value, not the best
  EXPECT_FALSE(rule->ShouldStop(Curve(1, kActive, {0.9, 0.5}), {},
                                v1::GOAL_MINIMIZE)
                   .stop);  // equal is not worse
  // Maximizing: below 0.5 is worse.
  EXPECT_FALSE(
      rule->ShouldStop(Curve(1, kActive, {0.1, 0.9}), {}, v1::GOAL_MAXIMIZE)
          .stop);
  const Decision d =
      rule->ShouldStop(Curve(1, kActive, {0.9, 0.1}), {}, v1::GOAL_MAXIMIZE);
  EXPECT_TRUE(d.stop);
  EXPECT_THAT(d.reason, HasSubstr("threshold 0.5"));
}

TEST(ValidateTest, NamesFieldValueAndRule) {
  auto message = [](const v1::EarlyStoppingSpec& spec) {
    return std::string(
        ValidateEarlyStoppingSpec(spec, "spec.early_stopping").message());
  };
  EXPECT_THAT(message(v1::EarlyStoppingSpec()), HasSubstr("no rule set"));
  EXPECT_THAT(
      message(MedianSpec(-1, 0)),
      HasSubstr("spec.early_stopping.median.start_step: -1 is negative"));
  EXPECT_THAT(message(MedianSpec(0, -2)),
              HasSubstr("spec.early_stopping.median.min_trials: -2"));
  EXPECT_THAT(message(AshaSpec(1, 1, 0)),
              HasSubstr("spec.early_stopping.asha.reduction_factor: 1 is "
                        "outside [2, 1000]"));
  EXPECT_THAT(message(AshaSpec(-3, 3, 0)),
              HasSubstr("asha.min_resource: -3 is negative"));
  EXPECT_THAT(message(AshaSpec(1, 3, -1)),
              HasSubstr("asha.grace_period: -1 is negative"));
  EXPECT_THAT(message(ShSpec(1, 3, 0)),
              HasSubstr("successive_halving.cohort_size: 0 is outside"));
  EXPECT_THAT(message(ShSpec(1, 1001, 4)),
              HasSubstr("successive_halving.reduction_factor: 1001"));
  EXPECT_THAT(message(ThresholdSpec(std::nan(""), 0)),
              HasSubstr("threshold.threshold: nan is not a finite number"));
  EXPECT_THAT(message(ThresholdSpec(1, -5)),
              HasSubstr("threshold.start_step: -5 is negative"));
  EXPECT_TRUE(ValidateEarlyStoppingSpec(ShSpec(0, 0, 2), "x").ok());
  EXPECT_TRUE(ValidateEarlyStoppingSpec(AshaSpec(0, 0, 0), "x").ok());
  EXPECT_FALSE(CreateRule(v1::EarlyStoppingSpec()).ok());
}

TEST(ValidateTest, MetricIsANameAndMetricGoalNeedsIt) {
  auto message = [](const v1::EarlyStoppingSpec& spec) {
    return std::string(
        ValidateEarlyStoppingSpec(spec, "spec.early_stopping").message());
  };
  v1::EarlyStoppingSpec spec = AshaSpec(1, 3, 0);
  spec.set_metric("loss");
  EXPECT_TRUE(ValidateEarlyStoppingSpec(spec, "x").ok());
  spec.set_metric_goal(v1::GOAL_MAXIMIZE);
  EXPECT_TRUE(ValidateEarlyStoppingSpec(spec, "x").ok());
  EXPECT_TRUE(CreateRule(spec).ok());
  spec.set_metric("lo\nss");
  EXPECT_THAT(message(spec), HasSubstr("spec.early_stopping.metric: metric"));
  EXPECT_THAT(message(spec), HasSubstr("control character 0x0a"));
  spec.set_metric(std::string(300, 'm'));
  EXPECT_THAT(message(spec), HasSubstr("spec.early_stopping.metric: metric"));
  spec.clear_metric();
  EXPECT_THAT(message(spec),
              HasSubstr("spec.early_stopping.metric_goal: GOAL_MAXIMIZE is "
                        "set without metric"));
  spec.set_metric("loss");
  spec.set_metric_goal(static_cast<v1::Goal>(7));
  EXPECT_THAT(message(spec),
              HasSubstr("spec.early_stopping.metric_goal: 7 is not a Goal"));
  // The rule is still required.
  v1::EarlyStoppingSpec no_rule;
  no_rule.set_metric("loss");
  EXPECT_THAT(message(no_rule), HasSubstr("no rule set"));
}

TEST(CreateRuleTest, Names) {
  EXPECT_EQ(Make(MedianSpec(0, 0))->name(), "median");
  EXPECT_EQ(Make(AshaSpec(0, 0, 0))->name(), "asha");
  EXPECT_EQ(Make(ShSpec(0, 0, 3))->name(), "successive_halving");
  EXPECT_EQ(Make(ThresholdSpec(0, 0))->name(), "threshold");
}

}  // namespace
}  // namespace metaopt::early_stopping
