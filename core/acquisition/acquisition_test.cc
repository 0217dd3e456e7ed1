#include "core/acquisition/acquisition.h"

#include <cmath>
#include <limits>
#include <vector>

#include "core/acquisition/acquisition_function.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"

namespace metaopt::acquisition {
namespace {

using ::metaopt::testing::StatusIs;
using ::testing::HasSubstr;

// h(z) = phi(z) + z Phi(z) in 80-bit long double: an independent reference
// whose range reaches far below double's (phi(-40) ~ 1e-348) and whose
// cancellation costs only log10(z^2) digits.
long double ReferenceH(long double z) {
  const long double pi = 3.141592653589793238462643383279502884L;
  const long double phi = std::exp(-0.5L * z * z) / std::sqrt(2.0L * pi);
  const long double cdf = 0.5L * std::erfc(-z / std::sqrt(2.0L));
  return phi + z * cdf;
}

TEST(ExpectedImprovementTest, KnownValues) {
  // mean 0, sd 1, best 0: EI = phi(0).
  EXPECT_NEAR(ExpectedImprovement(0.0, 1.0, 0.0), 0.3989422804014327, 1e-15);
  // mean 1, sd 2, best 2: z = 0.5, EI = 2 (phi(0.5) + 0.5 Phi(0.5)).
  EXPECT_NEAR(ExpectedImprovement(1.0, 4.0, 2.0),
              2.0 * (0.3520653267642995 + 0.5 * 0.6914624612740131), 1e-14);
  // No uncertainty: the plain improvement.
  EXPECT_DOUBLE_EQ(ExpectedImprovement(1.0, 0.0, 3.0), 2.0);
  EXPECT_DOUBLE_EQ(ExpectedImprovement(4.0, 0.0, 3.0), 0.0);
  EXPECT_DOUBLE_EQ(LogExpectedImprovement(1.0, 0.0, 3.0), std::log(2.0));
  EXPECT_EQ(LogExpectedImprovement(4.0, 0.0, 3.0),
            -std::numeric_limits<double>::infinity());
}

TEST(ExpectedImprovementTest, MatchesNumericalIntegration) {
  struct Case {
    double mean, sd, best;
  };
  for (const Case& c : std::vector<Case>{{0.0, 1.0, 0.0},
                                         {0.3, 0.5, -0.2},
                                         {-1.0, 2.0, 1.5},
                                         {2.0, 0.1, 1.8}}) {
    // Simpson's rule for E[max(best - f, 0)], f ~ N(mean, sd^2): the integrand
    // is smooth on [mean - 12 sd, best] and zero above.
    const int n = 20000;
    const double lo = c.mean - 12 * c.sd, hi = c.best;
    const double step = (hi - lo) / n;
    double integral = 0.0;
    for (int i = 0; i <= n; ++i) {
      const double f = lo + i * step;
      const double w = (i == 0 || i == n) ? 1.0 : (i % 2 == 1 ? 4.0 : 2.0);
      const double density = NormalPdf((f - c.mean) / c.sd) / c.sd;
      integral += w * (c.best - f) * density;
    }
    integral *= step / 3.0;
    EXPECT_NEAR(ExpectedImprovement(c.mean, c.sd * c.sd, c.best), integral,
                1e-9)
        << c.mean << " " << c.sd << " " << c.best;
  }
}

TEST(LogHTest, MatchesLongDoubleReferenceAndIsMonotone) {
  double previous = -std::numeric_limits<double>::infinity();
  for (double z = -40.0; z <= 5.0; z += 0.0625) {
    const double log_h = LogH(z);
    ASSERT_TRUE(std::isfinite(log_h)) << z;
    const double reference = static_cast<double>(std::log(ReferenceH(z)));
    EXPECT_NEAR(log_h, reference, 1e-10 * std::max(1.0, std::abs(reference)))
        << z;
    EXPECT_GT(log_h, previous) << z;
    previous = log_h;
  }
}

TEST(LogHTest, EqualsLogOfEiWhereRepresentable) {
  for (double z = -30.0; z <= 5.0; z += 0.25) {
    // mean 0, sd 1.5, best = 1.5 z.
    const double ei = ExpectedImprovement(0.0, 2.25, 1.5 * z);
    ASSERT_GT(ei, 0.0) << z;
    const double h = static_cast<double>(ReferenceH(z));
    EXPECT_NEAR(LogExpectedImprovement(0.0, 2.25, 1.5 * z), std::log(1.5 * h),
                1e-10 * std::max(1.0, std::abs(std::log(1.5 * h))))
        << z;
    EXPECT_NEAR(std::log(ei), LogExpectedImprovement(0.0, 2.25, 1.5 * z),
                1e-10 * std::max(1.0, std::abs(std::log(ei))))
        << z;
  }
}

TEST(LogHTest, MatchesAsymptoticFarInTheTail) {
  const double z = -40.0;
  // log h(z) ~ log phi(z) - 2 log|z| + log(1 - 3/z^2 + 15/z^4 - 105/z^6).
  const double z2 = z * z;
  const double asymptotic =
      -0.5 * z2 - 0.5 * std::log(2 * M_PI) - 2.0 * std::log(-z) +
      std::log1p(-3.0 / z2 + 15.0 / (z2 * z2) - 105.0 / (z2 * z2 * z2));
  EXPECT_NEAR(LogH(z), asymptotic, 1e-6 * std::abs(asymptotic));
  // Plain log(EI) underflows here; log-EI does not.
  EXPECT_EQ(ExpectedImprovement(40.0, 1.0, 0.0), 0.0);
  EXPECT_TRUE(std::isfinite(LogExpectedImprovement(40.0, 1.0, 0.0)));
  // And much further out.
  const double far = LogH(-1e5);
  EXPECT_TRUE(std::isfinite(far));
  EXPECT_NEAR(far, -0.5e10 - 0.5 * std::log(2 * M_PI) - 2.0 * std::log(1e5),
              1e-6);
}

TEST(LogHTest, ContinuousAcrossBranchBoundaries) {
  for (double z : {-1.0, -10.0}) {
    EXPECT_NEAR(LogH(z - 1e-12), LogH(z + 1e-12), 1e-10) << z;
  }
}

TEST(AcquisitionBatchTest, ElementwiseAndValidated) {
  const Eigen::Vector3d mean(0.0, 1.0, -2.0);
  const Eigen::Vector3d variance(1.0, 4.0, 0.0);
  METAOPT_ASSERT_OK_AND_ASSIGN(Eigen::VectorXd ei,
                               ExpectedImprovement(mean, variance, 0.5));
  METAOPT_ASSERT_OK_AND_ASSIGN(Eigen::VectorXd log_ei,
                               LogExpectedImprovement(mean, variance, 0.5));
  for (int i = 0; i < 3; ++i) {
    EXPECT_DOUBLE_EQ(ei[i], ExpectedImprovement(mean[i], variance[i], 0.5));
    EXPECT_NEAR(log_ei[i], std::log(ei[i]), 1e-12);
  }

  EXPECT_THAT(ExpectedImprovement(mean, Eigen::Vector2d(1, 1), 0.0).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("3 means but 2 variances")));
  EXPECT_THAT(LogExpectedImprovement(mean, variance, std::nan("")).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("best")));
}

TEST(LogExpectedImprovementFunctionTest, ScoresAsLogExpectedImprovement) {
  gp::Prediction prediction;
  prediction.mean = Eigen::Vector3d(0.0, 1.0, -2.0);
  prediction.variance = Eigen::Vector3d(1.0, 0.25, 0.0);
  const LogExpectedImprovementFunction log_ei(0.5);
  EXPECT_EQ(log_ei.best(), 0.5);
  EXPECT_TRUE(log_ei.GrowsWithVariance());
  METAOPT_ASSERT_OK_AND_ASSIGN(Eigen::VectorXd scores, log_ei.Score(prediction, Eigen::MatrixXd()));
  ASSERT_EQ(scores.size(), 3);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(scores[i], LogExpectedImprovement(prediction.mean[i],
                                                prediction.variance[i], 0.5));
  }
  // A deterministic prediction below the incumbent: log(0.5 - (-2)).
  EXPECT_DOUBLE_EQ(scores[2], std::log(2.5));
  // Sizes that differ are INVALID_ARGUMENT.
  prediction.variance = Eigen::Vector2d(1.0, 1.0);
  EXPECT_EQ(log_ei.Score(prediction, Eigen::MatrixXd()).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace metaopt::acquisition
