#include "core/surrogate/deeppipe_model.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "Eigen/Cholesky"
#include "Eigen/Core"
#include "absl/time/time.h"
#include "core/registry/artifact.h"
#include "core/registry/test_artifacts.h"
#include "core/space/search_space.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"

namespace metaopt::surrogate {
namespace {

using ::metaopt::testing::StatusIs;
using ::testing::HasSubstr;

// Two stages ("preprocessor": none | pca, "estimator": RF | GBT); "none" has
// no parameters, so its encoder reads the dummy column.
v1::SearchSpace TestSpace() { return registry::testing::TestSearchSpace(); }

// n random configurations of the test space, encoded, and a smooth target.
struct Data {
  Eigen::MatrixXd X;
  Eigen::VectorXd y;
};

Data Sample(const DeepPipeModel& model, int n, uint64_t seed) {
  absl::StatusOr<space::SearchSpace> space =
      space::SearchSpace::Create(model.search_space());
  EXPECT_TRUE(space.ok()) << space.status();
  space::Rng rng(seed);
  std::vector<v1::Configuration> configs;
  for (int i = 0; i < n; ++i) configs.push_back(space->Sample(rng));
  Data d;
  d.X = model.encoder().EncodeBatch(configs);
  d.y.resize(n);
  for (int i = 0; i < n; ++i) {
    d.y[i] =
        std::sin(3.0 * d.X.row(i).sum()) + 0.1 * space::StandardNormal(rng);
  }
  return d;
}

DeepPipeArchitecture SmallArchitecture(int encoder_layers) {
  DeepPipeArchitecture arch;
  arch.encoder_layers = encoder_layers;
  arch.width_factor = 2;
  arch.hidden = 6;
  arch.embedding = 3;
  return arch;
}

// Two meta-features with training statistics, for conditioned models.
FeatureScaler TwoFeatures() {
  absl::StatusOr<FeatureScaler> scaler = FeatureScaler::Create(
      {"log_rows", "n_classes"}, Eigen::Vector2d(8.0, 3.0),
      Eigen::Vector2d(2.0, 1.5));
  EXPECT_TRUE(scaler.ok()) << scaler.status();
  return *scaler;
}

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

TEST(DeepPipeModelTest, ConditionedModelRanksByItsMeanHeadBeforeAnyData) {
  METAOPT_ASSERT_OK_AND_ASSIGN(
      DeepPipeModel model,
      DeepPipeModel::Create(TestSpace(), SmallArchitecture(1), 5,
                            TwoFeatures()));
  EXPECT_EQ(model.task(), Eigen::Vector2d::Zero());
  Eigen::VectorXd params = model.parameters();
  const int net = model.num_network_parameters();
  const int kp = model.num_kernel_parameters();
  const int z = model.embedding_dim();
  params.segment(net - z, z) << 1.0, -0.5, 0.25;  // The mean head w.
  METAOPT_ASSERT_OK(model.set_parameters(params));
  const Data query = Sample(model, 12, 4);

  // Missing and non-finite features take their training mean (z = 0) and
  // are reported; unknown names are ignored.
  std::map<std::string, double> raw = {
      {"log_rows", 12.0}, {"n_classes", std::nan("")}, {"other", 1.0}};
  EXPECT_THAT(model.SetTaskFeatures(raw), ::testing::ElementsAre("n_classes"));
  EXPECT_EQ(model.task(), Eigen::Vector2d(2.0, 0.0));

  // No observations: the posterior mean is the GP's constant mean plus w'z.
  METAOPT_ASSERT_OK_AND_ASSIGN(
      auto prior, model.Posterior(Eigen::MatrixXd(0, model.input_dim()),
                                  Eigen::VectorXd(0)));
  METAOPT_ASSERT_OK_AND_ASSIGN(gp::Prediction p, prior->Predict(query.X));
  METAOPT_ASSERT_OK_AND_ASSIGN(Eigen::MatrixXd Z, model.Embed(query.X));
  const double c = params[params.size() - 1];
  ASSERT_EQ(kp, 6);
  for (Eigen::Index i = 0; i < Z.rows(); ++i) {
    EXPECT_NEAR(p.mean[i], c + Z.row(i).dot(Eigen::Vector3d(1.0, -0.5, 0.25)),
                1e-12);
  }
  // Another dataset, another embedding and another ranking.
  DeepPipeModel other = model;
  METAOPT_ASSERT_OK(other.set_task(Eigen::Vector2d(-3.0, 2.0)));
  METAOPT_ASSERT_OK_AND_ASSIGN(Eigen::MatrixXd Z_other, other.Embed(query.X));
  EXPECT_GT((Z - Z_other).norm(), 1e-6);
  // Conditioning on data: the embedded-query surrogate predicts as the
  // surrogate does, mean head included, before and after fantasies.
  const Data data = Sample(model, 8, 6);
  METAOPT_ASSERT_OK_AND_ASSIGN(auto posterior, model.Posterior(data.X, data.y));
  METAOPT_ASSERT_OK_AND_ASSIGN(gp::Prediction direct,
                               posterior->Predict(query.X));
  DeepPipeEmbeddedSurrogate embedded(posterior);
  METAOPT_ASSERT_OK_AND_ASSIGN(gp::Prediction via, embedded.Predict(Z));
  EXPECT_TRUE(direct.mean.isApprox(via.mean, 1e-12));
  EXPECT_TRUE(direct.variance.isApprox(via.variance, 1e-12));
  METAOPT_ASSERT_OK_AND_ASSIGN(auto fantasized,
                               posterior->WithFantasies(query.X.topRows(2)));
  METAOPT_ASSERT_OK_AND_ASSIGN(auto fantasized_embedded,
                               embedded.WithFantasies(Z.topRows(2)));
  METAOPT_ASSERT_OK_AND_ASSIGN(gp::Prediction f1, fantasized->Predict(query.X));
  METAOPT_ASSERT_OK_AND_ASSIGN(gp::Prediction f2,
                               fantasized_embedded->Predict(Z));
  EXPECT_TRUE(f1.mean.isApprox(f2.mean, 1e-10));
  // A fantasy at the posterior mean keeps the mean there, and shrinks the
  // variance.
  EXPECT_NEAR(f1.mean[0], direct.mean[0], 1e-8);
  EXPECT_LT(f1.variance[0], direct.variance[0]);

  EXPECT_THAT(model.set_task(Eigen::Vector3d::Zero()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("3 entries, expected 2")));
}

TEST(DeepPipeModelTest, ResolvesTheAuthorsDefaultShapes) {
  // Test space: L = (1, 3) (pca has 1 parameter, RF 3 encoded dimensions).
  METAOPT_ASSERT_OK_AND_ASSIGN(DeepPipeModel flat,
                               DeepPipeModel::Create(TestSpace(), {}, 1));
  EXPECT_EQ(flat.architecture().aggregation_layers, 4);
  EXPECT_EQ(flat.architecture().hidden, 32);  // max(8 * (1 + 3), 24).
  EXPECT_EQ(flat.embedding_dim(), 20);
  const int d = flat.input_dim();
  EXPECT_EQ(flat.num_network_parameters(),
            (d + 1) * 32 + 2 * 33 * 32 + 33 * 20);
  EXPECT_EQ(flat.num_kernel_parameters(), 23);

  DeepPipeArchitecture one;
  one.encoder_layers = 1;
  METAOPT_ASSERT_OK_AND_ASSIGN(DeepPipeModel enc,
                               DeepPipeModel::Create(TestSpace(), one, 1));
  EXPECT_EQ(enc.architecture().aggregation_layers, 3);
  // Encoders: none (dummy 1 -> 8), pca (1 -> 8), RF (3 -> 24), GBT (2 -> 24);
  // aggregator 32 -> 32 -> 32 -> 20.
  EXPECT_EQ(enc.num_network_parameters(),
            2 * 8 + 2 * 8 + 4 * 24 + 3 * 24 + 33 * 32 + 33 * 32 + 33 * 20);
}

TEST(DeepPipeModelTest, CreateRejectsBadArchitectures) {
  DeepPipeArchitecture arch;
  arch.embedding = 0;
  EXPECT_THAT(
      DeepPipeModel::Create(TestSpace(), arch, 1).status(),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("embedding 0")));
  arch = {};
  arch.encoder_layers = -1;
  EXPECT_THAT(DeepPipeModel::Create(TestSpace(), arch, 1).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("encoder_layers -1")));
  EXPECT_THAT(DeepPipeModel::Create(v1::SearchSpace(), {}, 1).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("stage")));
}

TEST(DeepPipeModelTest, EncodersSeeOnlyTheActiveAlgorithm) {
  DeepPipeArchitecture arch;
  arch.encoder_layers = 1;
  METAOPT_ASSERT_OK_AND_ASSIGN(DeepPipeModel model,
                               DeepPipeModel::Create(TestSpace(), arch, 4));
  const Data data = Sample(model, 20, 2);
  METAOPT_ASSERT_OK_AND_ASSIGN(Eigen::MatrixXd Z, model.Embed(data.X));
  // Junk in the blocks of the algorithms that are not chosen changes nothing.
  const space::EncodingLayout& layout = model.encoder().layout();
  Eigen::MatrixXd junk = data.X;
  for (int r = 0; r < junk.rows(); ++r) {
    for (const space::BlockLayout& block : layout.blocks) {
      const space::StageLayout& stage = layout.stages[block.stage];
      if (junk(r, stage.offset + block.algorithm) > 0.5) continue;  // Active.
      junk.row(r).segment(block.offset, block.size).setConstant(0.77);
    }
  }
  METAOPT_ASSERT_OK_AND_ASSIGN(Eigen::MatrixXd Zj, model.Embed(junk));
  EXPECT_TRUE(Zj.isApprox(Z, 1e-14));
  EXPECT_THAT(
      model.Embed(Eigen::MatrixXd::Zero(2, 3)).status(),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("3 columns")));
}

TEST(DeepPipeModelTest, PosteriorInterpolatesAndFantasiesShrinkVariance) {
  METAOPT_ASSERT_OK_AND_ASSIGN(
      DeepPipeModel model,
      DeepPipeModel::Create(TestSpace(), SmallArchitecture(1), 5));
  const Data data = Sample(model, 12, 3);
  METAOPT_ASSERT_OK_AND_ASSIGN(std::shared_ptr<const Surrogate> posterior,
                               model.Posterior(data.X, data.y));
  METAOPT_ASSERT_OK_AND_ASSIGN(gp::Prediction at_data,
                               posterior->Predict(data.X));
  const double sd = std::sqrt((data.y.array() - data.y.mean()).square().sum() /
                              (data.y.size() - 1));
  for (int i = 0; i < data.y.size(); ++i) {
    EXPECT_LT(at_data.variance[i], 0.5 * sd * sd) << i;
  }
  const Data query = Sample(model, 5, 77);
  METAOPT_ASSERT_OK_AND_ASSIGN(gp::Prediction before,
                               posterior->Predict(query.X));
  METAOPT_ASSERT_OK_AND_ASSIGN(std::unique_ptr<const Surrogate> fantasy,
                               posterior->WithFantasies(query.X.topRows(1)));
  METAOPT_ASSERT_OK_AND_ASSIGN(gp::Prediction after, fantasy->Predict(query.X));
  EXPECT_LT(after.variance[0], before.variance[0]);
  EXPECT_NEAR(after.mean[0], before.mean[0],
              1e-6 * (1 + std::abs(before.mean[0])));

  // No observations: the prior.
  METAOPT_ASSERT_OK_AND_ASSIGN(
      std::shared_ptr<const Surrogate> prior,
      model.Posterior(Eigen::MatrixXd(0, model.input_dim()),
                      Eigen::VectorXd()));
  METAOPT_ASSERT_OK_AND_ASSIGN(gp::Prediction p, prior->Predict(query.X));
  EXPECT_EQ(p.mean.size(), 5);
}

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

TEST(DeepPipeModelTest, SetParametersValidates) {
  METAOPT_ASSERT_OK_AND_ASSIGN(
      DeepPipeModel model,
      DeepPipeModel::Create(TestSpace(), SmallArchitecture(1), 6));
  EXPECT_THAT(
      model.set_parameters(Eigen::VectorXd::Zero(3)),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("expected")));
  Eigen::VectorXd p = model.parameters();
  p[0] = std::nan("");
  EXPECT_THAT(
      model.set_parameters(p),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("non-finite")));
}

v1::ModelArtifact ArtifactOf(const DeepPipeModel& model) {
  v1::ModelArtifact artifact;
  artifact.set_format_version(registry::kCurrentFormatVersion);
  artifact.mutable_objective()->set_name("accuracy");
  artifact.mutable_objective()->set_goal(v1::GOAL_MAXIMIZE);
  model.ToArtifact(&artifact);
  return artifact;
}

class DeepPipeArtifactTest
    : public ::testing::TestWithParam<std::tuple<int, bool>> {};

TEST_P(DeepPipeArtifactTest, RoundTripGivesIdenticalPredictions) {
  DeepPipeArchitecture arch;
  const auto [encoder_layers, conditioned] = GetParam();
  arch.encoder_layers = encoder_layers;
  METAOPT_ASSERT_OK_AND_ASSIGN(
      DeepPipeModel model,
      DeepPipeModel::Create(TestSpace(), arch, 8,
                            conditioned ? TwoFeatures() : FeatureScaler()));
  // Non-default kernel parameters.
  Eigen::VectorXd p = model.parameters();
  p.tail(model.num_kernel_parameters()).array() += 0.25;
  METAOPT_ASSERT_OK(model.set_parameters(p));

  const v1::ModelArtifact artifact = ArtifactOf(model);
  METAOPT_ASSERT_OK(registry::ValidateArtifact(artifact));
  EXPECT_EQ(artifact.kind(), v1::MODEL_KIND_DEEPPIPE);
  EXPECT_EQ(artifact.int_options().at("encoder_layers"), encoder_layers);
  EXPECT_EQ(artifact.int_options().at("task_features"), conditioned ? 2 : 0);
  // Through the wire format.
  v1::ModelArtifact parsed;
  ASSERT_TRUE(parsed.ParseFromString(artifact.SerializeAsString()));
  METAOPT_ASSERT_OK_AND_ASSIGN(DeepPipeModel loaded,
                               DeepPipeModel::FromArtifact(parsed));
  EXPECT_EQ(loaded.parameters(), model.parameters());
  EXPECT_EQ(loaded.architecture().hidden, model.architecture().hidden);
  EXPECT_EQ(loaded.task_features().names(), model.task_features().names());
  EXPECT_EQ(loaded.task_features().stds(), model.task_features().stds());
  const std::map<std::string, double> raw = {{"log_rows", 5.0}};
  model.SetTaskFeatures(raw);
  loaded.SetTaskFeatures(raw);

  const Data data = Sample(model, 15, 12);
  const Data query = Sample(model, 30, 13);
  METAOPT_ASSERT_OK_AND_ASSIGN(auto a, model.Posterior(data.X, data.y));
  METAOPT_ASSERT_OK_AND_ASSIGN(auto b, loaded.Posterior(data.X, data.y));
  METAOPT_ASSERT_OK_AND_ASSIGN(gp::Prediction pa, a->Predict(query.X));
  METAOPT_ASSERT_OK_AND_ASSIGN(gp::Prediction pb, b->Predict(query.X));
  EXPECT_EQ(pa.mean, pb.mean);
  EXPECT_EQ(pa.variance, pb.variance);
}

INSTANTIATE_TEST_SUITE_P(EncoderLayersAndConditioning, DeepPipeArtifactTest,
                         ::testing::Combine(::testing::Values(0, 1),
                                            ::testing::Bool()));

TEST(DeepPipeArtifactTest, FromArtifactRejectsBrokenConditioning) {
  METAOPT_ASSERT_OK_AND_ASSIGN(
      DeepPipeModel model,
      DeepPipeModel::Create(TestSpace(), DeepPipeArchitecture(), 8,
                            TwoFeatures()));
  const v1::ModelArtifact good = ArtifactOf(model);
  v1::ModelArtifact a = good;
  a.mutable_normalization()->erase("feature_std/n_classes");
  EXPECT_THAT(DeepPipeModel::FromArtifact(a).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("feature_std/n_classes\"]: missing")));
  a = good;
  (*a.mutable_int_options())["task_features"] = 3;
  EXPECT_THAT(DeepPipeModel::FromArtifact(a).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("int_options[\"task_features\"]: 3")));
  a = good;
  a.mutable_int_options()->erase("task_features");
  EXPECT_THAT(DeepPipeModel::FromArtifact(a).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("holds meta-feature statistics")));
  a = good;
  for (int i = 0; i < a.tensors_size(); ++i) {
    if (a.tensors(i).name() == "mean_head.weight") {
      a.mutable_tensors()->DeleteSubrange(i, 1);
      break;
    }
  }
  EXPECT_THAT(DeepPipeModel::FromArtifact(a).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("\"mean_head.weight\": missing")));
}

TEST(DeepPipeArtifactTest, FromArtifactRejectsBrokenArtifacts) {
  DeepPipeArchitecture arch;
  arch.encoder_layers = 1;
  METAOPT_ASSERT_OK_AND_ASSIGN(DeepPipeModel model,
                               DeepPipeModel::Create(TestSpace(), arch, 8));
  const v1::ModelArtifact good = ArtifactOf(model);

  v1::ModelArtifact a = good;
  a.set_kind(v1::MODEL_KIND_PMF);
  EXPECT_THAT(DeepPipeModel::FromArtifact(a).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("artifact.kind: MODEL_KIND_PMF")));
  a = good;
  a.mutable_int_options()->erase("embedding");
  EXPECT_THAT(DeepPipeModel::FromArtifact(a).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("int_options[\"embedding\"]: missing")));
  a = good;
  (*a.mutable_int_options())["input_dim"] = 3;
  EXPECT_THAT(DeepPipeModel::FromArtifact(a).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("int_options[\"input_dim\"]: 3")));
  a = good;
  a.mutable_tensors()->RemoveLast();  // gp.mean
  EXPECT_THAT(DeepPipeModel::FromArtifact(a).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("\"gp.mean\": missing")));
  a = good;
  a.mutable_tensors(0)->set_shape(0, 7);
  EXPECT_THAT(DeepPipeModel::FromArtifact(a).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("encoder.preprocessor.none.layer0.weight")));
  a = good;
  a.add_tensors()->set_name("extra");
  EXPECT_THAT(DeepPipeModel::FromArtifact(a).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unexpected tensor \"extra\"")));
}

}  // namespace
}  // namespace metaopt::surrogate

namespace metaopt::surrogate {
namespace {

// The test space plus an "SVM" estimator with one float parameter; without
// "none" in the preprocessor (masked) and with a narrower n_estimators.
v1::SearchSpace StudySpaceWithNewAlgorithm() {
  v1::SearchSpace study = TestSpace();
  study.mutable_stages(0)->mutable_algorithms()->DeleteSubrange(0, 1);
  study.mutable_stages(1)
      ->mutable_algorithms(0)
      ->mutable_parameters(0)
      ->mutable_int_domain()
      ->set_high(200);
  v1::Algorithm* svm = study.mutable_stages(1)->add_algorithms();
  svm->set_name("SVM");
  for (const char* name : {"C", "gamma"}) {
    v1::Parameter* p = svm->add_parameters();
    p->set_name(name);
    p->mutable_float_domain()->set_low(0.1);
    p->mutable_float_domain()->set_high(10);
    p->mutable_float_domain()->set_log(true);
  }
  return study;
}

// A trained-looking model with one encoder layer (perturbed parameters).
DeepPipeModel MetaModelWithEncoders() {
  DeepPipeModel model =
      DeepPipeModel::Create(TestSpace(), SmallArchitecture(1), 3).value();
  Eigen::VectorXd params = model.parameters();
  space::Rng rng(23);
  for (int i = 0; i < model.num_network_parameters(); ++i) {
    params[i] += 0.05 * space::StandardNormal(rng);
  }
  EXPECT_TRUE(model.set_parameters(params).ok());
  return model;
}

// The number of parameters of each block's encoder (one layer, width F * L_s
// with F = 2 from SmallArchitecture; the SVM block is narrower than the
// stage's widest, so the extension keeps L_s).
std::vector<int> EncoderSizes(const DeepPipeModel& model) {
  const space::EncodingLayout& layout = model.encoder().layout();
  std::vector<int> widest(layout.stages.size(), 1);
  for (const space::BlockLayout& block : layout.blocks) {
    widest[block.stage] = std::max(widest[block.stage], block.size);
  }
  std::vector<int> sizes;
  for (const space::BlockLayout& block : layout.blocks) {
    sizes.push_back((std::max(1, block.size) + 1) * 2 * widest[block.stage]);
  }
  return sizes;
}

TEST(DeepPipePartialBindingTest,
     KnownAlgorithmsKeepTheirEncodersNewOnesAreSeeded) {
  const DeepPipeModel meta = MetaModelWithEncoders();
  METAOPT_ASSERT_OK_AND_ASSIGN(
      DeepPipeModel extended,
      meta.ForStudySpace(StudySpaceWithNewAlgorithm(), /*seed=*/5));
  EXPECT_EQ(extended.num_new_encoders(), 1);
  EXPECT_EQ(meta.num_new_encoders(), 0);
  // The extended space is the model's (ranges included) plus SVM.
  ASSERT_EQ(extended.search_space().stages(1).algorithms_size(), 3);
  EXPECT_EQ(extended.search_space().stages(1).algorithms(2).name(), "SVM");
  EXPECT_EQ(extended.search_space().stages(0).algorithms_size(), 2);
  EXPECT_EQ(extended.search_space()
                .stages(1)
                .algorithms(0)
                .parameters(0)
                .int_domain()
                .high(),
            500);
  // Configurations of known algorithms embed exactly as in the model.
  const Data known = Sample(meta, 20, 8);
  std::vector<v1::Configuration> configs;
  for (int i = 0; i < known.X.rows(); ++i) {
    configs.push_back(meta.encoder().Decode(known.X.row(i).transpose()));
  }
  METAOPT_ASSERT_OK_AND_ASSIGN(Eigen::MatrixXd z_meta, meta.Embed(known.X));
  METAOPT_ASSERT_OK_AND_ASSIGN(
      Eigen::MatrixXd z_extended,
      extended.Embed(extended.encoder().EncodeBatch(configs)));
  EXPECT_LT((z_meta - z_extended).norm(), 1e-12);
  // The kernel is the model's.
  const int kp = meta.num_kernel_parameters();
  EXPECT_EQ(extended.parameters().tail(kp), meta.parameters().tail(kp));
  // The new encoder depends on the seed only.
  METAOPT_ASSERT_OK_AND_ASSIGN(
      DeepPipeModel again, meta.ForStudySpace(StudySpaceWithNewAlgorithm(), 5));
  METAOPT_ASSERT_OK_AND_ASSIGN(
      DeepPipeModel other, meta.ForStudySpace(StudySpaceWithNewAlgorithm(), 6));
  EXPECT_EQ(again.parameters(), extended.parameters());
  EXPECT_NE(other.parameters(), extended.parameters());
  // Without new algorithms the model is unchanged.
  v1::SearchSpace narrowed = TestSpace();
  narrowed.mutable_stages(1)
      ->mutable_algorithms(0)
      ->mutable_parameters(0)
      ->mutable_int_domain()
      ->set_low(20);
  METAOPT_ASSERT_OK_AND_ASSIGN(DeepPipeModel same,
                               meta.ForStudySpace(narrowed, 5));
  EXPECT_EQ(same.num_new_encoders(), 0);
  EXPECT_EQ(same.parameters(), meta.parameters());
}

TEST(DeepPipePartialBindingTest, RefusesWhatItCannotServe) {
  // No encoder layers: nothing to give a new algorithm.
  DeepPipeModel flat =
      DeepPipeModel::Create(TestSpace(), SmallArchitecture(0), 3).value();
  EXPECT_THAT(flat.ForStudySpace(StudySpaceWithNewAlgorithm(), 1),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("estimator/SVM")));
  v1::SearchSpace wider = TestSpace();
  wider.mutable_stages(1)
      ->mutable_algorithms(0)
      ->mutable_parameters(0)
      ->mutable_int_domain()
      ->set_high(900);
  EXPECT_THAT(MetaModelWithEncoders().ForStudySpace(wider, 1),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("is not within the model's")));
}

// Rows choosing the new algorithm reach the new encoder: the loss gradient
// w.r.t. its parameters matches central differences (the meta-learned part
// is checked by DeepPipeGradientTest).
TEST(DeepPipePartialBindingTest, NewEncoderGradientMatchesFiniteDifferences) {
  METAOPT_ASSERT_OK_AND_ASSIGN(
      DeepPipeModel model,
      MetaModelWithEncoders().ForStudySpace(StudySpaceWithNewAlgorithm(), 5));
  Eigen::VectorXd params = model.parameters();
  space::Rng rng(31);
  for (int i = 0; i < model.num_network_parameters(); ++i) {
    params[i] += 0.05 * space::StandardNormal(rng);
  }
  METAOPT_ASSERT_OK(model.set_parameters(params));
  const Data data = Sample(model, 24, 13);
  METAOPT_ASSERT_OK_AND_ASSIGN(DeepPipeLoss loss, model.Loss(data.X, data.y));
  // The new encoder's parameters: the third estimator block's.
  const std::vector<int> sizes = EncoderSizes(model);
  const space::EncodingLayout& layout = model.encoder().layout();
  int first_new = -1;
  int new_params = 0;
  for (size_t b = 0, offset = 0; b < layout.blocks.size();
       offset += sizes[b++]) {
    if (layout.blocks[b].stage == 1 && layout.blocks[b].algorithm == 2) {
      first_new = static_cast<int>(offset);
      new_params = sizes[b];
    }
  }
  ASSERT_GE(first_new, 0);
  ASSERT_EQ(new_params, (2 + 1) * 6);  // 2 inputs -> F * L_1 = 2 * 3
  double norm = 0.0;
  const double h = 1e-6;
  for (int i = first_new; i < first_new + new_params; ++i) {
    DeepPipeModel probe = model;
    Eigen::VectorXd p = params;
    p[i] += h;
    METAOPT_ASSERT_OK(probe.set_parameters(p));
    METAOPT_ASSERT_OK_AND_ASSIGN(DeepPipeLoss up, probe.Loss(data.X, data.y));
    p[i] -= 2 * h;
    METAOPT_ASSERT_OK(probe.set_parameters(p));
    METAOPT_ASSERT_OK_AND_ASSIGN(DeepPipeLoss down, probe.Loss(data.X, data.y));
    const double numeric = (up.value - down.value) / (2 * h);
    EXPECT_NEAR(loss.gradient[i], numeric, 1e-6 + 1e-4 * std::abs(numeric))
        << "parameter " << i;
    norm += loss.gradient[i] * loss.gradient[i];
  }
  EXPECT_GT(norm, 1e-12);
}

TEST(DeepPipePartialBindingTest, NewEncoderFineTuneFreezesTheMetaLearnedPart) {
  METAOPT_ASSERT_OK_AND_ASSIGN(
      DeepPipeModel model,
      MetaModelWithEncoders().ForStudySpace(StudySpaceWithNewAlgorithm(), 5));
  const Data data = Sample(model, 30, 4);
  DeepPipeFineTuneOptions options;
  options.scope = FineTuneScope::kNewEncoders;
  options.max_steps = 60;
  options.learning_rate = 0.01;
  options.patience = 0;
  METAOPT_ASSERT_OK_AND_ASSIGN(DeepPipeFineTuneResult tuned,
                               model.FineTune(data.X, data.y, options));
  EXPECT_EQ(tuned.steps_run, 60);
  EXPECT_LT(tuned.loss_after, tuned.loss_before);
  const Eigen::VectorXd before = model.parameters();
  const Eigen::VectorXd after = tuned.model.parameters();
  // Exactly the new encoder's parameters and the kernel's moved.
  const space::EncodingLayout& layout = model.encoder().layout();
  const std::vector<int> sizes = EncoderSizes(model);
  int offset = 0;
  int moved_new = 0;
  for (size_t b = 0; b < layout.blocks.size(); ++b) {
    const space::BlockLayout& block = layout.blocks[b];
    const int n = sizes[b];
    const bool is_new = block.stage == 1 && block.algorithm == 2;
    const bool moved = before.segment(offset, n) != after.segment(offset, n);
    EXPECT_EQ(moved, is_new)
        << "block " << block.stage << "/" << block.algorithm;
    moved_new += moved && is_new;
    offset += n;
  }
  EXPECT_EQ(moved_new, 1);
  const int net = model.num_network_parameters();
  EXPECT_EQ(before.segment(offset, net - offset),
            after.segment(offset, net - offset))
      << "aggregator";
  EXPECT_NE(before.tail(model.num_kernel_parameters()),
            after.tail(model.num_kernel_parameters()));
}

}  // namespace
}  // namespace metaopt::surrogate

namespace metaopt::surrogate {

// Reaches the new-encoder fine-tuning objective (a private detail).
class DeepPipeModelTestAccess {
 public:
  static std::vector<Eigen::Index> TrainedIndices(const DeepPipeModel& model) {
    return model.NewEncoderParameterIndices();
  }
  static std::function<absl::StatusOr<DeepPipeLoss>(const Eigen::VectorXd&)>
  NewEncoderObjective(const DeepPipeModel& model, const Eigen::MatrixXd& X,
                      const Eigen::VectorXd& y) {
    return model.NewEncoderObjective(X, y);
  }
};

namespace {

class DeepPipeNewEncoderObjectiveTest
    : public ::testing::TestWithParam<std::tuple<bool, bool>> {};

// FineTuneScope::kNewEncoders' objective is the whole network's Loss with its
// gradient restricted to the trained entries, bit for bit: at the start,
// after moves of the new encoders and the kernel, back at the start (nothing
// leaks between calls), and with a new algorithm that no row chooses; for a
// small network and one wide enough for Eigen's blocked products.
TEST_P(DeepPipeNewEncoderObjectiveTest, EqualsTheWholeNetworksLossExactly) {
  const auto [conditioned, wide] = GetParam();
  DeepPipeArchitecture architecture = SmallArchitecture(1);
  if (wide) {
    architecture.width_factor = 8;
    architecture.hidden = 128;
    architecture.embedding = 20;
  }
  const int f = architecture.width_factor;
  DeepPipeModel meta =
      DeepPipeModel::Create(TestSpace(), architecture, 3,
                            conditioned ? TwoFeatures() : FeatureScaler())
          .value();
  Eigen::VectorXd meta_params = meta.parameters();
  space::Rng rng(41);
  for (int i = 0; i < meta.num_network_parameters(); ++i) {
    meta_params[i] += 0.1 * space::StandardNormal(rng);
  }
  METAOPT_ASSERT_OK(meta.set_parameters(meta_params));
  if (conditioned) METAOPT_ASSERT_OK(meta.set_task(Eigen::Vector2d(0.7, -1.2)));
  // New algorithms in both stages: SVM (two inputs) and a parameterless
  // preprocessor (the dummy column).
  v1::SearchSpace study = StudySpaceWithNewAlgorithm();
  study.mutable_stages(0)->add_algorithms()->set_name("scaler");
  METAOPT_ASSERT_OK_AND_ASSIGN(DeepPipeModel model,
                               meta.ForStudySpace(study, /*seed=*/5));
  ASSERT_EQ(model.num_new_encoders(), 2);
  const std::vector<Eigen::Index> trained =
      DeepPipeModelTestAccess::TrainedIndices(model);
  const Eigen::VectorXd all = model.parameters();
  const Eigen::VectorXd start = all(trained);
  Eigen::VectorXd moved = start;
  for (Eigen::Index i = 0; i < moved.size(); ++i) {
    moved[i] += 0.2 * space::StandardNormal(rng);
  }
  const Eigen::VectorXd further = moved + 0.3 * (moved - start);

  const Data data = Sample(model, 40, 13);
  // Three row sets: all rows; those without "scaler" (stage 0, appended as
  // algorithm 2); those without either new algorithm (SVM: stage 1,
  // algorithm 2), where no embedding moves.
  const space::EncodingLayout& layout = model.encoder().layout();
  const int scaler = layout.stages[0].offset + 2;
  const int svm = layout.stages[1].offset + 2;
  std::vector<std::vector<Eigen::Index>> row_sets(3);
  for (Eigen::Index r = 0; r < data.X.rows(); ++r) {
    row_sets[0].push_back(r);
    if (data.X(r, scaler) == 1.0) continue;
    row_sets[1].push_back(r);
    if (data.X(r, svm) != 1.0) row_sets[2].push_back(r);
  }
  ASSERT_LT(row_sets[1].size(), row_sets[0].size());
  ASSERT_LT(row_sets[2].size(), row_sets[1].size());
  ASSERT_GT(row_sets[2].size(), 1u);

  for (int set = 0; set < 3; ++set) {
    SCOPED_TRACE(::testing::Message() << "row set " << set);
    const Eigen::MatrixXd X = data.X(row_sets[set], Eigen::all);
    const Eigen::VectorXd y = data.y(row_sets[set]);
    auto objective = DeepPipeModelTestAccess::NewEncoderObjective(model, X, y);
    for (const Eigen::VectorXd& q : {start, moved, further, start}) {
      Eigen::VectorXd w = all;
      w(trained) = q;
      DeepPipeModel reference = model;
      METAOPT_ASSERT_OK(reference.set_parameters(w));
      METAOPT_ASSERT_OK_AND_ASSIGN(DeepPipeLoss expected, reference.Loss(X, y));
      METAOPT_ASSERT_OK_AND_ASSIGN(DeepPipeLoss fast, objective(q));
      EXPECT_EQ(fast.value, expected.value);
      EXPECT_EQ(fast.loo, expected.loo);
      ASSERT_EQ(fast.gradient.size(), q.size());
      EXPECT_EQ(fast.gradient, Eigen::VectorXd(expected.gradient(trained)));
      // Trained: scaler's encoder (1 input -> F * L_0 = F), SVM's (2 inputs
      // -> F * L_1 = 3 F), the kernel; an encoder learns only from its rows.
      ASSERT_EQ(q.size(),
                (1 + 1) * f + (2 + 1) * 3 * f + model.num_kernel_parameters());
      EXPECT_EQ(fast.gradient.head(2 * f).norm() > 0.0, set == 0);
      EXPECT_EQ(fast.gradient.segment(2 * f, 9 * f).norm() > 0.0, set < 2);
      EXPECT_GT(fast.gradient.tail(model.num_kernel_parameters()).norm(), 0.0);
    }
    Eigen::VectorXd broken = start;
    broken[0] = std::nan("");
    EXPECT_THAT(
        objective(broken).status(),
        StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("non-finite")));
  }
}

INSTANTIATE_TEST_SUITE_P(ConditioningAndWidth, DeepPipeNewEncoderObjectiveTest,
                         ::testing::Combine(::testing::Bool(),
                                            ::testing::Bool()));

}  // namespace
}  // namespace metaopt::surrogate
