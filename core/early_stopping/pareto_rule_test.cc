#include "core/early_stopping/pareto_rule.h"

#include <memory>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace metaopt::early_stopping {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

ParetoPoint P(std::vector<double> targets, double violation = 0,
              int64_t step = 1) {
  return {step, std::move(targets), violation};
}

// A curve with one report per (step, targets).
ParetoCurve Curve(int64_t id, std::vector<ParetoPoint> points) {
  ParetoCurve curve;
  curve.trial_id = id;
  curve.state = v1::TRIAL_STATE_ACTIVE;
  curve.points = std::move(points);
  return curve;
}

std::unique_ptr<ParetoRule> Make(const v1::EarlyStoppingSpec& spec) {
  auto rule = CreateParetoRule(spec);
  EXPECT_TRUE(rule.ok()) << rule.status();
  return *std::move(rule);
}

v1::EarlyStoppingSpec AshaSpec(int eta) {
  v1::EarlyStoppingSpec spec;
  spec.mutable_asha()->set_min_resource(1);
  spec.mutable_asha()->set_reduction_factor(eta);
  return spec;
}

TEST(ParetoOrderTest, ConstrainedDominance) {
  EXPECT_TRUE(ConstrainedDominates(P({1, 1}), P({2, 2})));
  EXPECT_FALSE(ConstrainedDominates(P({1, 2}), P({2, 1})));
  EXPECT_FALSE(ConstrainedDominates(P({1, 1}), P({1, 1})));
  // Feasible before infeasible whatever the targets; smaller violations
  // first; equal violations (infeasible) dominate neither way.
  EXPECT_TRUE(ConstrainedDominates(P({9, 9}), P({0, 0}, 0.5)));
  EXPECT_TRUE(ConstrainedDominates(P({9, 9}, 0.1), P({0, 0}, 0.5)));
  EXPECT_FALSE(ConstrainedDominates(P({0, 0}, 0.5), P({9, 9}, 0.5)));
}

TEST(ParetoOrderTest, FrontsInOrder) {
  // Front 0: {0, 1, 2}; front 1: {3} (dominated by 1); front 2: {4}.
  const std::vector<ParetoPoint> points = {P({0, 4}), P({2, 2}), P({4, 0}),
                                           P({3, 3}), P({5, 5})};
  std::vector<int> front;
  const std::vector<int> order = ParetoOrder(points, &front);
  EXPECT_THAT(front, ElementsAre(0, 0, 0, 1, 2));
  // Within front 0: the smallest first target (0), then the farthest from
  // it (2: scaled distance 1.13 against 1's 0.57), then 1.
  EXPECT_THAT(order, ElementsAre(0, 2, 1, 3, 4));
}

TEST(ParetoOrderTest, EpsilonNetSpreadsTheLastFront) {
  // One front of five points on a line; the farthest-first traversal takes
  // the ends, then the middle, then the quarter points (ties: smaller
  // index).
  const std::vector<ParetoPoint> points = {P({0, 4}), P({1, 3}), P({2, 2}),
                                           P({3, 1}), P({4, 0})};
  EXPECT_THAT(ParetoOrder(points), ElementsAre(0, 4, 2, 1, 3));
}

TEST(ParetoOrderTest, LaterFrontsStartFarthestFromTheAdmitted) {
  // Front 0: {0}; front 1: {1, 2}; 2 is farther from 0 than 1 is.
  const std::vector<ParetoPoint> points = {P({0, 0}), P({1, 1.5}),
                                           P({2, 1})};
  std::vector<int> front;
  EXPECT_THAT(ParetoOrder(points, &front), ElementsAre(0, 2, 1));
  EXPECT_THAT(front, ElementsAre(0, 1, 1));
}

TEST(ParetoOrderTest, InfeasibleAfterFeasibleByViolation) {
  const std::vector<ParetoPoint> points = {P({0, 0}, 2), P({5, 5}),
                                           P({1, 1}, 1), P({9, 9}, 2)};
  std::vector<int> front;
  EXPECT_THAT(ParetoOrder(points, &front), ElementsAre(1, 2, 3, 0));
  EXPECT_THAT(front, ElementsAre(2, 0, 1, 2));
}

TEST(ParetoOrderTest, EqualPointsShareAFrontInIndexOrder) {
  const std::vector<ParetoPoint> points = {P({1, 1}), P({1, 1}), P({1, 1})};
  std::vector<int> front;
  EXPECT_THAT(ParetoOrder(points, &front), ElementsAre(0, 1, 2));
  EXPECT_THAT(front, ElementsAre(0, 0, 0));
  EXPECT_TRUE(ParetoOrder({}).empty());
}

TEST(ParetoAshaRuleTest, KeepsTheTopThirdByParetoRank) {
  auto rule = Make(AshaSpec(3));
  // Six trials at rung 0 (step 1): keep 2. Fronts: {1, 2, 3} (trial ids),
  // then {4}, {5}; the epsilon-net admits 1 (smallest first target), then 3.
  const std::vector<ParetoCurve> others = {
      Curve(1, {P({0, 4})}), Curve(2, {P({2, 2})}), Curve(3, {P({4, 0})}),
      Curve(4, {P({3, 3})}), Curve(5, {P({5, 5})})};
  auto decide = [&](int64_t id, ParetoPoint point) {
    std::vector<ParetoCurve> rest;
    for (const ParetoCurve& c : others) {
      if (c.trial_id != id) rest.push_back(c);
    }
    return rule->ShouldStop(Curve(id, {point}), rest);
  };
  // Trial 6 on the first front at the far end: admitted second.
  const Decision far = decide(6, P({4.5, -1}));
  EXPECT_FALSE(far.stop) << far.reason;
  EXPECT_THAT(far.reason, HasSubstr("rank 2 of 6"));
  EXPECT_THAT(far.reason, HasSubstr("Pareto front 1"));
  // Trial 6 dominated by trial 2: front 2, stops.
  const Decision dominated = decide(6, P({2.5, 2.5}));
  EXPECT_TRUE(dominated.stop) << dominated.reason;
  EXPECT_THAT(dominated.reason, HasSubstr("only the top 2 continue"));
  // Among trials 1-5 alone (keep 1) only trial 1, first of the
  // epsilon-net, continues.
  EXPECT_FALSE(decide(1, P({0, 4})).stop);
  EXPECT_TRUE(decide(2, P({2, 2})).stop);
  EXPECT_TRUE(decide(3, P({4, 0})).stop);
}

TEST(ParetoAshaRuleTest, EarlyArrivalsContinueOnlyOnTheFirstPlace) {
  auto rule = Make(AshaSpec(3));
  // Alone at the rung: max(1, floor(1 / 3)) = 1 continues.
  EXPECT_FALSE(rule->ShouldStop(Curve(1, {P({5, 5})}), {}).stop);
  // Two trials: the dominated one stops; a non-dominated one with a larger
  // first target is admitted second and stops too.
  const std::vector<ParetoCurve> first = {Curve(1, {P({1, 1})})};
  EXPECT_TRUE(rule->ShouldStop(Curve(2, {P({2, 2})}), first).stop);
  EXPECT_TRUE(rule->ShouldStop(Curve(2, {P({2, 0})}), first).stop);
  EXPECT_FALSE(rule->ShouldStop(Curve(2, {P({0, 2})}), first).stop);
}

TEST(ParetoAshaRuleTest, InfeasibleReportsRankLast) {
  auto rule = Make(AshaSpec(2));
  // Four trials, keep 2: the two feasible ones, though the infeasible
  // trial's targets dominate theirs.
  const std::vector<ParetoCurve> others = {Curve(1, {P({5, 5})}),
                                           Curve(2, {P({6, 4})}),
                                           Curve(3, {P({9, 9}, 0.5)})};
  EXPECT_TRUE(rule->ShouldStop(Curve(4, {P({0, 0}, 0.1)}), others).stop);
  EXPECT_FALSE(rule->ShouldStop(Curve(4, {P({7, 3})}), others).stop);
}

TEST(ParetoAshaRuleTest, DecidesOnlyWhenCrossingARung) {
  auto rule = Make(AshaSpec(3));
  const std::vector<ParetoCurve> others = {Curve(1, {P({0, 0}, 0, 1)}),
                                           Curve(2, {P({0, 0}, 0, 1)})};
  // Step 2 crosses no rung (rungs 1, 3, 9, ...).
  const Decision between = rule->ShouldStop(
      Curve(3, {P({9, 9}, 0, 1), P({9, 9}, 0, 2)}), others);
  EXPECT_FALSE(between.stop);
  EXPECT_TRUE(between.reason.empty());
  // Step 3 crosses rung 1, which the others have not reached: alone there.
  EXPECT_FALSE(rule->ShouldStop(Curve(3, {P({9, 9}, 0, 2), P({9, 9}, 0, 3)}),
                                others)
                   .stop);
  // The others' value at rung 0 is their first report at or past step 1.
  const std::vector<ParetoCurve> later = {Curve(1, {P({0, 0}, 0, 2)})};
  EXPECT_TRUE(rule->ShouldStop(Curve(3, {P({1, 1}, 0, 1)}), later).stop);
}

TEST(ParetoSuccessiveHalvingRuleTest, StopsOnceQuotaTrialsDominate) {
  v1::EarlyStoppingSpec spec;
  spec.mutable_successive_halving()->set_cohort_size(4);
  spec.mutable_successive_halving()->set_reduction_factor(2);
  auto rule = Make(spec);
  // Rung 0 passes floor(4 / 2) = 2 of cohort 1 (trials 1-4).
  const std::vector<ParetoCurve> one = {Curve(1, {P({1, 1})})};
  EXPECT_FALSE(rule->ShouldStop(Curve(4, {P({2, 2})}), one).stop);
  const std::vector<ParetoCurve> two = {Curve(1, {P({1, 1})}),
                                        Curve(2, {P({0, 1.5})}),
                                        Curve(3, {P({1.5, 0})})};
  // All three dominate (2, 2): at least the quota of 2 precede it.
  const Decision stop = rule->ShouldStop(Curve(4, {P({2, 2})}), two);
  EXPECT_TRUE(stop.stop) << stop.reason;
  EXPECT_THAT(stop.reason, HasSubstr("3 of the 3 other trial(s)"));
  // Non-dominated: can still pass whatever the others report.
  EXPECT_FALSE(rule->ShouldStop(Curve(4, {P({-1, 5})}), two).stop);
  // Trials of another cohort do not count.
  const std::vector<ParetoCurve> other_cohort = {Curve(5, {P({0, 0})}),
                                                 Curve(6, {P({0, 0})})};
  EXPECT_FALSE(rule->ShouldStop(Curve(4, {P({2, 2})}), other_cohort).stop);
}

TEST(ParetoRuleValidationTest, RefusesRulesOfOneValue) {
  v1::EarlyStoppingSpec median;
  median.mutable_median();
  EXPECT_THAT(CheckParetoRule(median, "spec.early_stopping").message(),
              HasSubstr("spec.early_stopping.median: is not supported with "
                        "several objectives"));
  v1::EarlyStoppingSpec threshold;
  threshold.mutable_threshold()->set_threshold(1);
  EXPECT_EQ(CheckParetoRule(threshold, "spec.early_stopping").code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(CreateParetoRule(threshold).status().message(),
              HasSubstr("early_stopping.threshold: is not supported"));
  v1::EarlyStoppingSpec metric = AshaSpec(3);
  metric.set_metric("loss");
  EXPECT_THAT(CheckParetoRule(metric, "spec.early_stopping").message(),
              HasSubstr("spec.early_stopping.metric: \"loss\" is not "
                        "supported with several objectives"));
  EXPECT_TRUE(CheckParetoRule(AshaSpec(3), "spec.early_stopping").ok());
  v1::EarlyStoppingSpec halving;
  halving.mutable_successive_halving()->set_cohort_size(4);
  EXPECT_TRUE(CheckParetoRule(halving, "spec.early_stopping").ok());
  EXPECT_EQ(Make(halving)->name(), "successive_halving");
  EXPECT_EQ(Make(AshaSpec(3))->name(), "asha");
}

}  // namespace
}  // namespace metaopt::early_stopping
