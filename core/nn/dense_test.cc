#include "core/nn/dense.h"

#include <cmath>

#include "Eigen/Core"
#include "gtest/gtest.h"

namespace metaopt::nn {
namespace {

Eigen::MatrixXd RandomMatrix(int rows, int cols, space::Rng& rng) {
  Eigen::MatrixXd m(rows, cols);
  for (int j = 0; j < cols; ++j) {
    for (int i = 0; i < rows; ++i) m(i, j) = space::StandardNormal(rng);
  }
  return m;
}

// L = sum(R .* Y) for a fixed random R, so dL/dY = R.
double Loss(const Dense& layer, const Eigen::MatrixXd& X,
            const Eigen::MatrixXd& R) {
  return (layer.Forward(X).array() * R.array()).sum();
}

class DenseGradientTest : public ::testing::TestWithParam<Activation> {};

TEST_P(DenseGradientTest, MatchesFiniteDifferences) {
  space::Rng rng(7);
  Dense layer(4, 3, GetParam());
  layer.Initialize(InitScheme::kTorchDefault, rng);
  const Eigen::MatrixXd X = RandomMatrix(6, 4, rng);
  const Eigen::MatrixXd R = RandomMatrix(6, 3, rng);
  const Eigen::MatrixXd Y = layer.Forward(X);

  Eigen::VectorXd grad = Eigen::VectorXd::Zero(layer.num_parameters());
  Eigen::MatrixXd dX;
  layer.Backward(X, Y, R, grad, &dX);

  Eigen::VectorXd params(layer.num_parameters());
  layer.GetParameters(params);
  const double h = 1e-6;
  for (int i = 0; i < params.size(); ++i) {
    Dense probe = layer;
    Eigen::VectorXd p = params;
    p[i] += h;
    probe.SetParameters(p);
    const double up = Loss(probe, X, R);
    p[i] -= 2 * h;
    probe.SetParameters(p);
    const double down = Loss(probe, X, R);
    EXPECT_NEAR(grad[i], (up - down) / (2 * h), 1e-6) << "parameter " << i;
  }
  for (int r = 0; r < X.rows(); ++r) {
    for (int c = 0; c < X.cols(); ++c) {
      Eigen::MatrixXd Xp = X;
      Xp(r, c) += h;
      const double up = Loss(layer, Xp, R);
      Xp(r, c) -= 2 * h;
      const double down = Loss(layer, Xp, R);
      EXPECT_NEAR(dX(r, c), (up - down) / (2 * h), 1e-6)
          << "input " << r << "," << c;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Activations, DenseGradientTest,
                         ::testing::Values(Activation::kLinear,
                                           Activation::kRelu));

TEST(DenseTest, ReluZeroesNegativePreActivations) {
  Dense layer(1, 2, Activation::kRelu);
  layer.mutable_weight() << 1.0, -1.0;
  Eigen::MatrixXd X(2, 1);
  X << 2.0, -3.0;
  const Eigen::MatrixXd Y = layer.Forward(X);
  EXPECT_DOUBLE_EQ(Y(0, 0), 2.0);
  EXPECT_DOUBLE_EQ(Y(0, 1), 0.0);
  EXPECT_DOUBLE_EQ(Y(1, 0), 0.0);
  EXPECT_DOUBLE_EQ(Y(1, 1), 3.0);
}

TEST(DenseTest, ZeroInputLayerIsALearnedConstant) {
  Dense layer(0, 3, Activation::kLinear);
  layer.mutable_bias() << 1.0, 2.0, 3.0;
  const Eigen::MatrixXd Y = layer.Forward(Eigen::MatrixXd(4, 0));
  ASSERT_EQ(Y.rows(), 4);
  for (int r = 0; r < 4; ++r) EXPECT_DOUBLE_EQ(Y(r, 2), 3.0);
  Eigen::VectorXd grad = Eigen::VectorXd::Zero(3);
  layer.Backward(Eigen::MatrixXd(4, 0), Y, Eigen::MatrixXd::Ones(4, 3), grad,
                 nullptr);
  EXPECT_DOUBLE_EQ(grad[0], 4.0);
}

TEST(DenseTest, InitializationIsSeededAndScaled) {
  space::Rng a(3), b(3);
  Dense x(200, 100, Activation::kRelu), y(200, 100, Activation::kRelu);
  x.Initialize(InitScheme::kHe, a);
  y.Initialize(InitScheme::kHe, b);
  EXPECT_EQ(x.weight(), y.weight());
  const double var = x.weight().array().square().mean();
  EXPECT_NEAR(var, 2.0 / 200.0, 0.1 * 2.0 / 200.0);
  EXPECT_TRUE(x.bias().isZero());

  Dense g(200, 100, Activation::kLinear);
  g.Initialize(InitScheme::kAuto, a);  // Glorot uniform for a linear layer.
  EXPECT_LE(g.weight().cwiseAbs().maxCoeff(), std::sqrt(6.0 / 300.0));
  Dense t(16, 4, Activation::kLinear);
  t.Initialize(InitScheme::kTorchDefault, a);
  EXPECT_LE(t.bias().cwiseAbs().maxCoeff(), 0.25);
  EXPECT_FALSE(t.bias().isZero());
}

}  // namespace
}  // namespace metaopt::nn
