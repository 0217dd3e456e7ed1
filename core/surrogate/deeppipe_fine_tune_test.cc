// DeepPipe fine-tuning: the kernel objective and FineTune's scopes, early
// stopping and budget.
#include <cmath>
#include <memory>

#include "Eigen/Cholesky"
#include "Eigen/Core"
#include "absl/time/time.h"
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
using ::metaopt::testing::StatusIs;
using ::testing::HasSubstr;

TEST(DeepPipeModelTest, KernelFineTuneLowersTheLossAndKeepsTheNetwork) {
  METAOPT_ASSERT_OK_AND_ASSIGN(
      DeepPipeModel model,
      DeepPipeModel::Create(TestSpace(), SmallArchitecture(1), 6));
  const Data data = Sample(model, 25, 4);
  DeepPipeFineTuneOptions options;
  options.max_steps = 60;
  options.learning_rate = 0.05;
  options.patience = 0;
  METAOPT_ASSERT_OK_AND_ASSIGN(DeepPipeFineTuneResult tuned,
                               model.FineTune(data.X, data.y, options));
  EXPECT_EQ(tuned.steps_run, 60);
  EXPECT_LT(tuned.loss_after, tuned.loss_before);
  const int net = model.num_network_parameters();
  EXPECT_EQ(tuned.model.parameters().head(net), model.parameters().head(net));
  EXPECT_NE(tuned.model.parameters().tail(model.num_kernel_parameters()),
            model.parameters().tail(model.num_kernel_parameters()));
  // loss_after is the reported model's loss on the standardised targets.
  const Eigen::VectorXd ys =
      gp::Standardization::FromTargets(data.y).Apply(data.y);
  METAOPT_ASSERT_OK_AND_ASSIGN(DeepPipeLoss check,
                               tuned.model.Loss(data.X, ys));
  EXPECT_NEAR(check.value, tuned.loss_after, 1e-9);
  METAOPT_ASSERT_OK_AND_ASSIGN(DeepPipeLoss start, model.Loss(data.X, ys));
  EXPECT_NEAR(start.value, tuned.loss_before, 1e-9);
}

// The cached-distance kernel objective equals the GP's own NLL, gradient and
// leave-one-out NLL, at the model's and at perturbed hyperparameters.
TEST(DeepPipeKernelObjectiveTest, MatchesTheGaussianProcess) {
  METAOPT_ASSERT_OK_AND_ASSIGN(
      DeepPipeModel model,
      DeepPipeModel::Create(TestSpace(), SmallArchitecture(1), 8));
  const Data data = Sample(model, 30, 5);
  METAOPT_ASSERT_OK_AND_ASSIGN(Eigen::MatrixXd Z, model.Embed(data.X));
  METAOPT_ASSERT_OK_AND_ASSIGN(
      DeepPipeKernelObjective objective,
      DeepPipeKernelObjective::Create(model.gp(), Z, data.y));
  space::Rng rng(3);
  for (int trial = 0; trial < 3; ++trial) {
    Eigen::VectorXd h = model.gp().hyperparameters();
    if (trial > 0) {
      for (Eigen::Index i = 0; i < h.size(); ++i) {
        h[i] += 0.5 * space::StandardNormal(rng);
      }
    }
    gp::GaussianProcess reference = model.gp();
    ASSERT_THAT(reference.set_hyperparameters(h), metaopt::testing::IsOk());
    METAOPT_ASSERT_OK_AND_ASSIGN(
        gp::NllResult nll, reference.NegativeLogMarginalLikelihood(Z, data.y));
    METAOPT_ASSERT_OK_AND_ASSIGN(DeepPipeLoss loss, objective.Evaluate(h));
    const double n = static_cast<double>(data.y.size());
    EXPECT_NEAR(loss.value, nll.value / n, 1e-9);
    EXPECT_NEAR(loss.loo, nll.loo_nll / n, 1e-9);
    ASSERT_EQ(loss.gradient.size(), nll.grad_hyper.size());
    for (Eigen::Index i = 0; i < h.size(); ++i) {
      EXPECT_NEAR(loss.gradient[i], nll.grad_hyper[i] / n, 1e-8) << i;
    }
  }
}

// The leave-one-out NLL is that of n refits without each point.
TEST(DeepPipeKernelObjectiveTest, LeaveOneOutMatchesRefits) {
  METAOPT_ASSERT_OK_AND_ASSIGN(
      DeepPipeModel model,
      DeepPipeModel::Create(TestSpace(), SmallArchitecture(0), 9));
  const Data data = Sample(model, 12, 6);
  METAOPT_ASSERT_OK_AND_ASSIGN(Eigen::MatrixXd Z, model.Embed(data.X));
  METAOPT_ASSERT_OK_AND_ASSIGN(
      DeepPipeKernelObjective objective,
      DeepPipeKernelObjective::Create(model.gp(), Z, data.y));
  METAOPT_ASSERT_OK_AND_ASSIGN(
      DeepPipeLoss loss, objective.Evaluate(model.gp().hyperparameters()));
  const gp::GaussianProcess& g = model.gp();
  const Eigen::Index n = data.y.size();
  double expected = 0.0;
  for (Eigen::Index i = 0; i < n; ++i) {
    std::vector<Eigen::Index> rest;
    for (Eigen::Index j = 0; j < n; ++j) {
      if (j != i) rest.push_back(j);
    }
    const Eigen::MatrixXd Zr = Z(rest, Eigen::all);
    const Eigen::VectorXd yr = data.y(rest);
    Eigen::MatrixXd K = g.kernel().Matrix(Zr);
    K.diagonal().array() += g.noise_variance();
    const Eigen::VectorXd k = g.kernel().Matrix(Z.row(i), Zr).transpose();
    const Eigen::LLT<Eigen::MatrixXd> llt(K);
    const double mean =
        g.hyperparameters()[g.mean_index()] +
        k.dot(llt.solve(
            (yr.array() - g.hyperparameters()[g.mean_index()]).matrix()));
    const double var =
        g.kernel().output_scale() + g.noise_variance() - k.dot(llt.solve(k));
    const double r = data.y[i] - mean;
    expected += 0.5 * (std::log(2 * M_PI * var) + r * r / var);
  }
  EXPECT_NEAR(loss.loo, expected / static_cast<double>(n), 1e-7);
}

TEST(DeepPipeKernelObjectiveTest, RejectsBadInputs) {
  METAOPT_ASSERT_OK_AND_ASSIGN(
      DeepPipeModel model,
      DeepPipeModel::Create(TestSpace(), SmallArchitecture(0), 9));
  const int z = model.embedding_dim();
  EXPECT_THAT(
      DeepPipeKernelObjective::Create(model.gp(), Eigen::MatrixXd::Zero(3, z),
                                      Eigen::VectorXd::Zero(2)),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("3 x 3 and 2")));
  EXPECT_THAT(
      DeepPipeKernelObjective::Create(model.gp(), Eigen::MatrixXd::Zero(0, z),
                                      Eigen::VectorXd()),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("0 x 3 and 0")));
  METAOPT_ASSERT_OK_AND_ASSIGN(
      DeepPipeKernelObjective objective,
      DeepPipeKernelObjective::Create(model.gp(), Eigen::MatrixXd::Zero(2, z),
                                      Eigen::VectorXd::Ones(2)));
  EXPECT_THAT(objective.Evaluate(Eigen::VectorXd::Zero(z)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("hyperparameters")));
}

TEST(DeepPipeModelTest, FullFineTuneTrainsTheNetwork) {
  METAOPT_ASSERT_OK_AND_ASSIGN(
      DeepPipeModel model,
      DeepPipeModel::Create(TestSpace(), SmallArchitecture(1), 6));
  const Data data = Sample(model, 25, 4);
  DeepPipeFineTuneOptions options;
  options.scope = FineTuneScope::kFull;
  options.max_steps = 100;
  options.learning_rate = 0.01;
  options.max_gradient_norm = 10.0;
  METAOPT_ASSERT_OK_AND_ASSIGN(DeepPipeFineTuneResult tuned,
                               model.FineTune(data.X, data.y, options));
  EXPECT_GT(tuned.steps_run, 0);
  EXPECT_LT(tuned.loss_after, tuned.loss_before);
  const int net = model.num_network_parameters();
  EXPECT_NE(tuned.model.parameters().head(net), model.parameters().head(net));
}

TEST(DeepPipeModelTest, FineTuneStopsEarlyAndHonoursItsBudget) {
  METAOPT_ASSERT_OK_AND_ASSIGN(
      DeepPipeModel model,
      DeepPipeModel::Create(TestSpace(), SmallArchitecture(0), 6));
  const Data data = Sample(model, 10, 4);
  DeepPipeFineTuneOptions options;
  options.max_steps = 1000;
  options.learning_rate = 1e-9;  // The loss barely moves: early stop.
  options.patience = 5;
  METAOPT_ASSERT_OK_AND_ASSIGN(DeepPipeFineTuneResult calm,
                               model.FineTune(data.X, data.y, options));
  EXPECT_TRUE(calm.early_stopped);
  EXPECT_EQ(calm.steps_run, 6);

  options.time_budget = absl::ZeroDuration();
  METAOPT_ASSERT_OK_AND_ASSIGN(DeepPipeFineTuneResult none,
                               model.FineTune(data.X, data.y, options));
  EXPECT_EQ(none.steps_run, 0);
  EXPECT_EQ(none.loss_after, none.loss_before);

  options.learning_rate = 0.0;
  EXPECT_THAT(
      model.FineTune(data.X, data.y, options).status(),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("learning rate")));
  EXPECT_THAT(
      model.FineTune(data.X, Eigen::VectorXd(3), DeepPipeFineTuneOptions())
          .status(),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("3 targets")));
}

}  // namespace
}  // namespace metaopt::surrogate
