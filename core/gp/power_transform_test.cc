#include "core/gp/power_transform.h"

#include <cmath>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace metaopt::gp {
namespace {

std::vector<double> Normal(int n, double mean, double sd, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(mean, sd);
  std::vector<double> out(n);
  for (double& v : out) v = normal(rng);
  return out;
}

TEST(PowerTransformTest, LogNormalValuesGetBoxCoxNearTheLogarithm) {
  // Times spread over orders of magnitude, as a fit time is.
  std::vector<double> times = Normal(400, 0.0, 2.0, 1);
  for (double& v : times) v = std::exp(v);
  const PowerTransform warp = PowerTransform::Fit(times);
  EXPECT_EQ(warp.family(), PowerTransform::Family::kBoxCox);
  EXPECT_NEAR(warp.lambda(), 0.0, 0.1);
  // Box-Cox by its definition at the fitted lambda.
  for (double y : {0.01, 0.5, 3.0, 250.0}) {
    const double l = warp.lambda();
    EXPECT_NEAR(warp.Apply(y), (std::pow(y, l) - 1) / l, 1e-9 * (1 + y));
  }
}

TEST(PowerTransformTest, NormalValuesAreLeftNearlyAlone) {
  // Values of both signs take Yeo-Johnson, whose lambda = 1 is the identity
  // (of the standardised values).
  const PowerTransform warp = PowerTransform::Fit(Normal(400, 0.1, 1.0, 2));
  EXPECT_EQ(warp.family(), PowerTransform::Family::kYeoJohnson);
  EXPECT_NEAR(warp.lambda(), 1.0, 0.2);
}

TEST(PowerTransformTest, SkewedValuesOfBothSignsAreCompressedAtTheTop) {
  std::vector<double> values = Normal(400, 0.0, 1.0, 3);
  for (double& v : values) v = std::exp(1.5 * v) - 1.5;
  const PowerTransform warp = PowerTransform::Fit(values);
  EXPECT_EQ(warp.family(), PowerTransform::Family::kYeoJohnson);
  EXPECT_LT(warp.lambda(), 0.7);
}

TEST(PowerTransformTest, EveryFittedWarpIsStrictlyIncreasing) {
  std::vector<double> positive = Normal(50, 0.0, 3.0, 4);
  for (double& v : positive) v = std::exp(v);
  std::vector<double> mixed = Normal(50, 0.0, 1.0, 5);
  for (double& v : mixed) v = v * v * v;
  for (const std::vector<double>& values : {positive, mixed}) {
    const PowerTransform warp = PowerTransform::Fit(values);
    double previous = -INFINITY;
    for (double y = -50; y <= 50; y += 0.037) {
      if (!warp.InDomain(y)) continue;
      const double t = warp.Apply(y);
      EXPECT_GT(t, previous) << warp.DebugString() << " at " << y;
      previous = t;
    }
  }
}

TEST(PowerTransformTest, TooFewOrDegenerateValuesGiveTheIdentity) {
  const std::vector<std::vector<double>> cases = {
      {}, {1.0, 2.0}, {3.0, 3.0, 3.0}, {1.0, NAN, 2.0, 5.0},
      {1.0, INFINITY, 2.0}};
  for (const std::vector<double>& values : cases) {
    const PowerTransform warp = PowerTransform::Fit(values);
    EXPECT_EQ(warp.family(), PowerTransform::Family::kIdentity);
    EXPECT_EQ(warp.Apply(-7.5), -7.5);
    EXPECT_TRUE(warp.InDomain(-7.5));
    EXPECT_EQ(warp.DebugString(), "identity");
  }
}

TEST(PowerTransformTest, BoxCoxIsDefinedForPositiveValuesOnly) {
  const PowerTransform warp = PowerTransform::Fit({0.5, 2.0, 9.0, 40.0});
  ASSERT_EQ(warp.family(), PowerTransform::Family::kBoxCox);
  EXPECT_TRUE(warp.InDomain(1e-9));
  EXPECT_FALSE(warp.InDomain(0.0));
  EXPECT_FALSE(warp.InDomain(-1.0));
  EXPECT_FALSE(warp.InDomain(INFINITY));
}

}  // namespace
}  // namespace metaopt::gp
