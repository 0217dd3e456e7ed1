#include "core/objective/constraint.h"

#include <limits>
#include <vector>

#include "gtest/gtest.h"

namespace metaopt::objective {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(ViolationTest, DistancePastTheBound) {
  const Constraint at_most{"latency", Constraint::Sense::kAtMost, 10};
  EXPECT_EQ(Violation(at_most, 4), 0);
  EXPECT_EQ(Violation(at_most, 10), 0);  // the bound is allowed
  EXPECT_EQ(Violation(at_most, 12.5), 2.5);
  const Constraint at_least{"accuracy", Constraint::Sense::kAtLeast, 0.9};
  EXPECT_EQ(Violation(at_least, 0.95), 0);
  EXPECT_EQ(Violation(at_least, 0.9), 0);
  EXPECT_DOUBLE_EQ(Violation(at_least, 0.5), 0.4);
  EXPECT_EQ(Violation(at_least, std::nan("")), kInf);
}

TEST(FeasibleTest, EveryConstraintHolds) {
  const std::vector<Constraint> constraints = {
      {"latency", Constraint::Sense::kAtMost, 10},
      {"accuracy", Constraint::Sense::kAtLeast, 0.9}};
  EXPECT_TRUE(Feasible(constraints, {{"latency", 3}, {"accuracy", 0.92}}));
  EXPECT_FALSE(Feasible(constraints, {{"latency", 11}, {"accuracy", 0.92}}));
  EXPECT_DOUBLE_EQ(
      TotalViolation(constraints, {{"latency", 11}, {"accuracy", 0.8}}), 1.1);
  // A metric not reported breaks its constraint.
  EXPECT_FALSE(Feasible(constraints, {{"latency", 3}}));
  EXPECT_EQ(TotalViolation(constraints, {{"latency", 3}}), kInf);
  EXPECT_TRUE(Feasible({}, {}));
}

}  // namespace
}  // namespace metaopt::objective
