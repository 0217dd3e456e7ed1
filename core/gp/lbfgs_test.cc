#include "core/gp/lbfgs.h"

#include <cmath>
#include <limits>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"

namespace metaopt::gp {
namespace {

using ::metaopt::testing::StatusIs;
using ::testing::HasSubstr;

double Rosenbrock(const Eigen::VectorXd& x, Eigen::VectorXd* g) {
  const double a = 1.0 - x[0], b = x[1] - x[0] * x[0];
  (*g)[0] = -2.0 * a - 400.0 * x[0] * b;
  (*g)[1] = 200.0 * b;
  return a * a + 100.0 * b * b;
}

TEST(LbfgsTest, MinimizesRosenbrock) {
  LbfgsOptions options;
  options.max_iterations = 500;
  options.relative_function_tolerance = 0.0;
  options.gradient_tolerance = 1e-9;
  METAOPT_ASSERT_OK_AND_ASSIGN(
      LbfgsResult r,
      MinimizeLbfgs(Rosenbrock, Eigen::Vector2d(-1.2, 1.0), options));
  EXPECT_NEAR(r.x[0], 1.0, 1e-6);
  EXPECT_NEAR(r.x[1], 1.0, 1e-6);
  EXPECT_LT(r.value, 1e-12);
  EXPECT_LT(r.iterations, 200);
}

TEST(LbfgsTest, StopsAtActiveBound) {
  // min (x0 - 3)^2 + (x1 + 1)^2 with x0 <= 1 and x1 >= 0.
  auto f = [](const Eigen::VectorXd& x, Eigen::VectorXd* g) {
    (*g)[0] = 2.0 * (x[0] - 3.0);
    (*g)[1] = 2.0 * (x[1] + 1.0);
    return (x[0] - 3.0) * (x[0] - 3.0) + (x[1] + 1.0) * (x[1] + 1.0);
  };
  LbfgsOptions options;
  options.lower = Eigen::Vector2d(-10.0, 0.0);
  options.upper = Eigen::Vector2d(1.0, 10.0);
  METAOPT_ASSERT_OK_AND_ASSIGN(
      LbfgsResult r, MinimizeLbfgs(f, Eigen::Vector2d(0.0, 5.0), options));
  EXPECT_NEAR(r.x[0], 1.0, 1e-12);
  EXPECT_NEAR(r.x[1], 0.0, 1e-12);
  EXPECT_EQ(r.termination, LbfgsTermination::kGradientTolerance);
}

TEST(LbfgsTest, BacktracksOutOfInfeasibleRegion) {
  // log barrier: f = x - log(x) has its minimum at 1, infinite for x <= 0.
  auto f = [](const Eigen::VectorXd& x, Eigen::VectorXd* g) {
    if (x[0] <= 0) return std::numeric_limits<double>::infinity();
    (*g)[0] = 1.0 - 1.0 / x[0];
    return x[0] - std::log(x[0]);
  };
  METAOPT_ASSERT_OK_AND_ASSIGN(
      LbfgsResult r, MinimizeLbfgs(f, Eigen::VectorXd::Constant(1, 5.0), {}));
  EXPECT_NEAR(r.x[0], 1.0, 1e-5);
}

TEST(LbfgsTest, RejectsNonFiniteStartAndBadBounds) {
  auto f = [](const Eigen::VectorXd&, Eigen::VectorXd*) {
    return std::numeric_limits<double>::quiet_NaN();
  };
  EXPECT_THAT(MinimizeLbfgs(f, Eigen::Vector2d(0, 0), {}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("starting point")));
  LbfgsOptions options;
  options.lower = Eigen::Vector2d(1, 1);
  options.upper = Eigen::Vector2d(0, 2);
  EXPECT_THAT(
      MinimizeLbfgs(Rosenbrock, Eigen::Vector2d(0, 0), options).status(),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bound")));
}

TEST(LbfgsTest, HonoursZeroTimeBudget) {
  LbfgsOptions options;
  options.time_budget = absl::ZeroDuration();
  METAOPT_ASSERT_OK_AND_ASSIGN(
      LbfgsResult r,
      MinimizeLbfgs(Rosenbrock, Eigen::Vector2d(-1.2, 1.0), options));
  EXPECT_EQ(r.termination, LbfgsTermination::kTimeBudget);
  EXPECT_EQ(r.iterations, 0);
  EXPECT_EQ(r.x, Eigen::Vector2d(-1.2, 1.0));
}

}  // namespace
}  // namespace metaopt::gp
