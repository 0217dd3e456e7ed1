// DeepPipeModel::Loss: its gradient against central differences.
#include <cmath>
#include <tuple>

#include "Eigen/Core"
#include "core/surrogate/deeppipe_model.h"
#include "tests/testutil/deeppipe_fixtures.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"

namespace metaopt::surrogate {
namespace {

using deeppipe_testing::Data;
using deeppipe_testing::Sample;
using deeppipe_testing::SmallArchitecture;
using deeppipe_testing::TestSpace;
using deeppipe_testing::TwoFeatures;

// Every parameter group, checked by central differences of Loss, for
// unconditioned and task-conditioned models (task inputs and mean head); the
// float32 network path against the same (double) differences, with
// tolerances for float rounding.
class DeepPipeGradientTest
    : public ::testing::TestWithParam<std::tuple<int, bool>> {};

TEST_P(DeepPipeGradientTest, LossGradientMatchesFiniteDifferences) {
  const auto [encoder_layers, conditioned] = GetParam();
  auto data_model = DeepPipeModel::Create(
      TestSpace(), SmallArchitecture(encoder_layers), /*seed=*/3,
      conditioned ? TwoFeatures() : FeatureScaler());
  METAOPT_ASSERT_OK(data_model.status());
  DeepPipeModel model = *std::move(data_model);
  ASSERT_EQ(model.conditioned(), conditioned);
  if (conditioned)
    METAOPT_ASSERT_OK(model.set_task(Eigen::Vector2d(0.7, -1.2)));
  // Away from ReLU kinks: zero biases and inputs that are exactly 0 (the
  // lowest value of a parameter) put pre-activations exactly at the kink,
  // where central differences see half a one-sided derivative.
  Eigen::VectorXd params = model.parameters();
  space::Rng rng(17);
  for (int i = 0; i < model.num_network_parameters(); ++i) {
    params[i] += 0.05 * space::StandardNormal(rng);
  }
  // Kernel hyperparameters away from their defaults (non-zero mean, ARD).
  const int kp = model.num_kernel_parameters();
  params.tail(kp) << 0.3, -0.2, 0.1, 0.4, std::log(0.05), 0.2;
  METAOPT_ASSERT_OK(model.set_parameters(params));
  ASSERT_EQ(kp, 6);  // 3 lengthscales, scale, noise, mean.

  const Data data = Sample(model, 14, 9);
  // Conditioned: with the mean head's regression term too.
  const double mean_weight = conditioned ? 0.7 : 0.0;
  METAOPT_ASSERT_OK_AND_ASSIGN(DeepPipeLoss loss,
                               model.Loss(data.X, data.y, mean_weight));
  ASSERT_EQ(loss.gradient.size(), model.num_parameters());
  METAOPT_ASSERT_OK_AND_ASSIGN(
      DeepPipeLoss loss_f,
      model.Loss(data.X, data.y, mean_weight, NetworkPrecision::kFloat32));
  ASSERT_EQ(loss_f.gradient.size(), model.num_parameters());
  EXPECT_NEAR(loss_f.value, loss.value, 1e-5 * std::abs(loss.value));
  EXPECT_NE(loss_f.gradient, loss.gradient);  // Really another arithmetic.

  const double h = 1e-6;
  int checked = 0;
  for (int i = 0; i < params.size(); ++i) {
    DeepPipeModel probe = model;
    Eigen::VectorXd p = params;
    p[i] += h;
    METAOPT_ASSERT_OK(probe.set_parameters(p));
    METAOPT_ASSERT_OK_AND_ASSIGN(DeepPipeLoss up,
                                 probe.Loss(data.X, data.y, mean_weight));
    p[i] -= 2 * h;
    METAOPT_ASSERT_OK(probe.set_parameters(p));
    METAOPT_ASSERT_OK_AND_ASSIGN(DeepPipeLoss down,
                                 probe.Loss(data.X, data.y, mean_weight));
    const double numeric = (up.value - down.value) / (2 * h);
    EXPECT_NEAR(loss.gradient[i], numeric, 1e-6 + 1e-4 * std::abs(numeric))
        << "parameter " << i << " of " << params.size() << " ("
        << (i >= params.size() - kp ? "kernel" : "network") << ")";
    EXPECT_NEAR(loss_f.gradient[i], numeric, 1e-5 + 1e-3 * std::abs(numeric))
        << "float32, parameter " << i;
    ++checked;
  }
  EXPECT_EQ(checked, model.num_parameters());
  // Every network group actually receives gradient (a broken backward pass
  // that returns zeros would pass the check above only for dead units).
  EXPECT_GT(loss.gradient.head(model.num_network_parameters()).norm(), 1e-6);
}

INSTANTIATE_TEST_SUITE_P(EncoderLayersAndConditioning, DeepPipeGradientTest,
                         ::testing::Combine(::testing::Values(0, 1, 2),
                                            ::testing::Bool()));

}  // namespace
}  // namespace metaopt::surrogate
