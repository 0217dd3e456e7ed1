#include "core/nn/optimizer.h"

#include <cmath>

#include "Eigen/Core"
#include "gtest/gtest.h"

namespace metaopt::nn {
namespace {

TEST(AdamTest, MinimizesAnIllConditionedQuadratic) {
  // f(p) = 0.5 sum_i a_i (p_i - c_i)^2.
  Eigen::VectorXd a(3), c(3);
  a << 1.0, 10.0, 100.0;
  c << 1.0, -2.0, 0.5;
  Eigen::VectorXd p = Eigen::VectorXd::Zero(3);
  Adam adam(3);
  for (int t = 0; t < 3000; ++t) {
    const Eigen::VectorXd grad = a.cwiseProduct(p - c);
    adam.Step(grad, CosineLearningRate(0.05, 1e-4, t, 3000), p);
  }
  EXPECT_EQ(adam.steps(), 3000);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(p[i], c[i], 1e-3) << i;
}

TEST(AdamTest, FirstStepHasLearningRateMagnitude) {
  // With bias correction the first step is lr * g / (|g| + eps): about lr.
  Eigen::VectorXd p = Eigen::VectorXd::Zero(2);
  Eigen::VectorXd g(2);
  g << 1e-3, -50.0;
  Adam adam(2);
  adam.Step(g, 0.1, p);
  EXPECT_NEAR(p[0], -0.1, 1e-5);
  EXPECT_NEAR(p[1], 0.1, 1e-9);
  adam.Reset();
  EXPECT_EQ(adam.steps(), 0);
}

TEST(CosineLearningRateTest, DecaysFromBaseToMin) {
  EXPECT_DOUBLE_EQ(CosineLearningRate(1.0, 0.0, 0, 10), 1.0);
  EXPECT_NEAR(CosineLearningRate(1.0, 0.0, 5, 10), 0.5, 1e-12);
  EXPECT_NEAR(CosineLearningRate(1e-3, 1e-7, 10, 10), 1e-7, 1e-18);
  EXPECT_NEAR(CosineLearningRate(1e-3, 1e-7, 20, 10), 1e-7, 1e-18);
  EXPECT_DOUBLE_EQ(CosineLearningRate(0.3, 0.0, 5, 0), 0.3);
  double previous = 2.0;
  for (int t = 0; t <= 100; ++t) {
    const double lr = CosineLearningRate(1.0, 0.01, t, 100);
    EXPECT_LE(lr, previous);
    previous = lr;
  }
}

TEST(ClipGradientNormTest, ScalesOnlyLargeGradients) {
  Eigen::VectorXd g(2);
  g << 3.0, 4.0;
  EXPECT_DOUBLE_EQ(ClipGradientNorm(g, 10.0), 5.0);
  EXPECT_DOUBLE_EQ(g[0], 3.0);
  EXPECT_DOUBLE_EQ(ClipGradientNorm(g, 1.0), 5.0);
  EXPECT_NEAR(g.norm(), 1.0, 1e-12);
  EXPECT_NEAR(g[0] / g[1], 0.75, 1e-12);
  Eigen::VectorXd h(1);
  h << 7.0;
  EXPECT_DOUBLE_EQ(ClipGradientNorm(h, 0.0), 7.0);  // Disabled.
  EXPECT_DOUBLE_EQ(h[0], 7.0);
}

}  // namespace
}  // namespace metaopt::nn
