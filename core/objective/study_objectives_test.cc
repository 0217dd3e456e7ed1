#include "core/objective/study_objectives.h"

#include <optional>
#include <vector>

#include "gtest/gtest.h"
#include "tests/testutil/test_specs.h"

namespace metaopt::objective {
namespace {

v1::StudySpec TwoObjectives() {
  v1::StudySpec spec;
  metaopt::testing::SetAccuracyAndFitSeconds(100, &spec);
  *spec.mutable_objective() = spec.objectives(0);
  return spec;
}

google::protobuf::Map<std::string, double> Metrics(
    std::initializer_list<std::pair<const std::string, double>> entries) {
  google::protobuf::Map<std::string, double> metrics;
  for (const auto& [name, value] : entries) metrics[name] = value;
  return metrics;
}

v1::Trial Completed(int64_t id, double accuracy, double seconds,
                    std::optional<bool> feasible = std::nullopt) {
  v1::Trial trial;
  trial.set_id(id);
  trial.set_state(v1::TRIAL_STATE_COMPLETED);
  trial.set_value(accuracy);
  (*trial.mutable_metrics())["accuracy"] = accuracy;
  (*trial.mutable_metrics())["fit_seconds"] = seconds;
  if (feasible.has_value()) trial.set_feasible(*feasible);
  return trial;
}

TEST(StudyObjectivesTest, OneObjectiveFromTheSingularField) {
  v1::StudySpec spec;
  spec.mutable_objective()->set_name("loss");
  spec.mutable_objective()->set_goal(v1::GOAL_MINIMIZE);
  const StudyObjectives objectives(spec);
  EXPECT_EQ(objectives.size(), 1);
  EXPECT_FALSE(objectives.multiple());
  EXPECT_FALSE(objectives.constrained());
  EXPECT_TRUE(objectives.PolicyMetricNames().empty());
}

TEST(StudyObjectivesTest, CompleteOutcomeTakesValuesFromValueOrMetrics) {
  const StudyObjectives objectives(TwoObjectives());
  v1::Trial trial;
  ASSERT_TRUE(objectives
                  .CompleteOutcome(std::nullopt,
                                   Metrics({{"accuracy", 0.9},
                                            {"fit_seconds", 3},
                                            {"memory_mb", 150}}),
                                   &trial)
                  .ok());
  EXPECT_EQ(trial.value(), 0.9);
  EXPECT_EQ(trial.metrics().at("fit_seconds"), 3);
  ASSERT_TRUE(trial.has_feasible());
  EXPECT_FALSE(trial.feasible());  // 150 MB > 100 MB: kept, infeasible

  v1::Trial from_value;
  ASSERT_TRUE(objectives
                  .CompleteOutcome(0.8,
                                   Metrics({{"fit_seconds", 2},
                                            {"memory_mb", 100}}),
                                   &from_value)
                  .ok());
  EXPECT_EQ(from_value.value(), 0.8);
  // The first objective's value is stored under its name too.
  EXPECT_EQ(from_value.metrics().at("accuracy"), 0.8);
  EXPECT_TRUE(from_value.feasible());  // the bound itself is allowed
}

TEST(StudyObjectivesTest, CompleteOutcomeNamesWhatIsMissingOrInconsistent) {
  const StudyObjectives objectives(TwoObjectives());
  v1::Trial trial;
  absl::Status missing = objectives.CompleteOutcome(
      0.8, Metrics({{"memory_mb", 1}}), &trial);
  EXPECT_EQ(missing.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(missing.message().find("metrics[\"fit_seconds\"]: missing"),
            absl::string_view::npos)
      << missing;
  absl::Status constraint = objectives.CompleteOutcome(
      0.8, Metrics({{"fit_seconds", 1}}), &trial);
  EXPECT_NE(constraint.message().find("metrics[\"memory_mb\"]: missing"),
            absl::string_view::npos)
      << constraint;
  absl::Status first = objectives.CompleteOutcome(
      std::nullopt, Metrics({{"fit_seconds", 1}, {"memory_mb", 1}}), &trial);
  EXPECT_NE(first.message().find("metrics[\"accuracy\"]: missing"),
            absl::string_view::npos)
      << first;
  absl::Status differ = objectives.CompleteOutcome(
      0.8, Metrics({{"accuracy", 0.7}, {"fit_seconds", 1}, {"memory_mb", 1}}),
      &trial);
  EXPECT_NE(differ.message().find("differs from value 0.8"),
            absl::string_view::npos)
      << differ;
  absl::Status huge = objectives.CompleteOutcome(
      0.8, Metrics({{"fit_seconds", 1e101}, {"memory_mb", 1}}), &trial);
  EXPECT_NE(huge.message().find("metrics[\"fit_seconds\"]: 1e+101 is outside"),
            absl::string_view::npos)
      << huge;
}

TEST(StudyObjectivesTest, TargetsAreMinimised) {
  const StudyObjectives objectives(TwoObjectives());
  const std::optional<Point> targets = objectives.Targets(Completed(1, 0.9, 3));
  ASSERT_TRUE(targets.has_value());
  EXPECT_EQ(*targets, (Point{-0.9, 3}));
  v1::Trial lacking = Completed(2, 0.9, 3);
  lacking.mutable_metrics()->erase("fit_seconds");
  EXPECT_FALSE(objectives.Targets(lacking).has_value());
}

TEST(StudyObjectivesTest, ParetoFrontKeepsFeasibleNonDominatedTrials) {
  const StudyObjectives objectives(TwoObjectives());
  std::vector<v1::Trial> trials = {
      Completed(1, 0.90, 5, true),   // front
      Completed(2, 0.80, 2, true),   // front
      Completed(3, 0.85, 6, true),   // dominated by 1
      Completed(4, 0.99, 1, false),  // would dominate all, but infeasible
      Completed(5, 0.70, 1, true),   // front
  };
  v1::Trial failed;
  failed.set_id(6);
  failed.set_state(v1::TRIAL_STATE_FAILED);
  trials.push_back(failed);
  EXPECT_EQ(objectives.ParetoFront(trials), (std::vector<int>{0, 1, 4}));
}

TEST(StudyObjectivesTest, SummaryOnAKnownFront) {
  v1::StudySpec spec = TwoObjectives();
  spec.mutable_objectives(0)->set_reference(0.5);  // accuracy >= 0.5
  spec.mutable_objectives(1)->set_reference(10);   // seconds <= 10
  const StudyObjectives objectives(spec);
  const std::vector<Point> front = {{-0.9, 5}, {-0.8, 2}};
  const v1::ParetoFrontSummary summary = objectives.Summarize(front, front);
  EXPECT_EQ(summary.size(), 2);
  // Minimised reference (-0.5, 10): (0.9-0.5)*(10-5) + (0.8-0.5)*(5-2).
  EXPECT_NEAR(summary.hypervolume(), 0.4 * 5 + 0.3 * 3, 1e-12);
  ASSERT_EQ(summary.reference_point_size(), 2);
  EXPECT_DOUBLE_EQ(summary.reference_point(0), 0.5);
  EXPECT_DOUBLE_EQ(summary.reference_point(1), 10);
}

TEST(StudyObjectivesTest, DefaultReferenceIsTheWorstMovedATenthOfTheRange) {
  const StudyObjectives objectives(TwoObjectives());
  const std::vector<Point> points = {{-0.9, 5}, {-0.7, 1}, {-0.8, 3}};
  const Point reference = objectives.ReferencePoint(points);
  EXPECT_NEAR(reference[0], -0.7 + 0.1 * 0.2, 1e-12);
  EXPECT_NEAR(reference[1], 5 + 0.1 * 4, 1e-12);
  // Equal values: a tenth of max(1, |worst|).
  const Point flat = objectives.ReferencePoint({{-0.9, 20}, {-0.9, 20}});
  EXPECT_NEAR(flat[0], -0.9 + 0.1, 1e-12);
  EXPECT_NEAR(flat[1], 22, 1e-12);
}

TEST(HypervolumeTest, OneDimensionIsTheBestDistance) {
  EXPECT_EQ(Hypervolume({{3}, {1}, {2}}, {5}), 4);
  EXPECT_EQ(Hypervolume({{6}}, {5}), 0);
}

TEST(StudyObjectivesTest, PolicyMetricNamesWithoutRepeats) {
  v1::StudySpec spec = TwoObjectives();
  v1::Constraint* again = spec.add_constraints();
  again->set_metric("fit_seconds");
  again->set_sense(v1::CONSTRAINT_SENSE_AT_MOST);
  again->set_bound(60);
  EXPECT_EQ(StudyObjectives(spec).PolicyMetricNames(),
            (std::vector<std::string>{"fit_seconds", "memory_mb"}));
}

}  // namespace
}  // namespace metaopt::objective
