// FSBO's GP over DeepPipe's network (DeepKernelGp::kFsbo): the squared-
// exponential kernel, zero mean and raw targets; its Loss gradient against
// central differences, its artifact and its fine-tunes.
#include <cmath>

#include "Eigen/Core"
#include "core/gp/gaussian_process.h"
#include "core/surrogate/deeppipe_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/deeppipe_fixtures.h"
#include "tests/testutil/status_matchers.h"

namespace metaopt::surrogate {
namespace {

using deeppipe_testing::Data;
using deeppipe_testing::Sample;
using deeppipe_testing::TestSpace;
using ::metaopt::testing::StatusIs;
using ::testing::HasSubstr;

// FSBO's shape, narrowed so that every parameter can be probed.
DeepPipeArchitecture SmallFsbo() {
  DeepPipeArchitecture arch = FsboArchitecture();
  arch.hidden = 6;
  arch.embedding = 3;
  return arch;
}

TEST(FsboDeepKernelTest, ArchitectureIsThePapers) {
  const DeepPipeArchitecture arch = FsboArchitecture();
  METAOPT_ASSERT_OK_AND_ASSIGN(DeepPipeModel model,
                               DeepPipeModel::Create(TestSpace(), arch, 1));
  EXPECT_EQ(model.architecture().encoder_layers, 0);  // a plain MLP
  EXPECT_EQ(model.architecture().aggregation_layers, 2);
  EXPECT_EQ(model.architecture().hidden, 128);
  EXPECT_EQ(model.embedding_dim(), 128);
  EXPECT_EQ(model.gp().kernel().name(), "rbf");
  EXPECT_TRUE(model.zero_mean());
  // d_in -> 128 -> 128 with biases.
  const int d = model.input_dim();
  EXPECT_EQ(model.num_network_parameters(), d * 128 + 128 + 128 * 128 + 128);
}

TEST(FsboDeepKernelTest, LossGradientMatchesFiniteDifferencesAndSkipsTheMean) {
  METAOPT_ASSERT_OK_AND_ASSIGN(
      DeepPipeModel model, DeepPipeModel::Create(TestSpace(), SmallFsbo(), 3));
  Eigen::VectorXd params = model.parameters();
  space::Rng rng(17);
  for (int i = 0; i < model.num_network_parameters(); ++i) {
    params[i] += 0.05 * space::StandardNormal(rng);
  }
  const int kp = model.num_kernel_parameters();
  ASSERT_EQ(kp, 6);  // 3 lengthscales, scale, noise, mean.
  params.tail(kp) << 0.3, -0.2, 0.1, 0.4, std::log(0.05), 0.0;
  METAOPT_ASSERT_OK(model.set_parameters(params));
  const Data data = Sample(model, 14, 9);
  METAOPT_ASSERT_OK_AND_ASSIGN(DeepPipeLoss loss, model.Loss(data.X, data.y));
  const int mean = model.num_network_parameters() + model.gp().mean_index();
  EXPECT_EQ(loss.gradient[mean], 0.0);  // held at 0
  const double h = 1e-6;
  for (int i = 0; i < params.size(); ++i) {
    if (i == mean) continue;
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
  }
  EXPECT_GT(loss.gradient.head(model.num_network_parameters()).norm(), 1e-6);
  // The kernel is FSBO's: the NLL differs from the Matérn model's with the
  // same parameters.
  DeepPipeArchitecture matern = SmallFsbo();
  matern.gp = DeepKernelGp::kDeepPipe;
  METAOPT_ASSERT_OK_AND_ASSIGN(DeepPipeModel other,
                               DeepPipeModel::Create(TestSpace(), matern, 3));
  METAOPT_ASSERT_OK(other.set_parameters(params));
  METAOPT_ASSERT_OK_AND_ASSIGN(DeepPipeLoss other_loss,
                               other.Loss(data.X, data.y));
  EXPECT_GT(std::abs(other_loss.value - loss.value), 1e-6);
}

TEST(FsboDeepKernelTest, TargetsAreNotStandardised) {
  METAOPT_ASSERT_OK_AND_ASSIGN(
      DeepPipeModel model, DeepPipeModel::Create(TestSpace(), SmallFsbo(), 3));
  const Data data = Sample(model, 8, 4);
  const Eigen::VectorXd y = 0.9 + 0.01 * data.y.array();
  const gp::Standardization s = model.TargetStandardization(y);
  EXPECT_EQ(s.offset, 0.0);
  EXPECT_EQ(s.scale, 1.0);
  // Zero mean on raw targets: far from the data, the posterior mean returns
  // to 0, not to the observations' mean (0.9) as a standardised GP's would.
  METAOPT_ASSERT_OK_AND_ASSIGN(auto posterior, model.Posterior(data.X, y));
  EXPECT_EQ(posterior->posterior().standardization().offset, 0.0);
  DeepPipeArchitecture deeppipe = SmallFsbo();
  deeppipe.gp = DeepKernelGp::kDeepPipe;
  METAOPT_ASSERT_OK_AND_ASSIGN(DeepPipeModel standardised,
                               DeepPipeModel::Create(TestSpace(), deeppipe, 3));
  EXPECT_NEAR(standardised.TargetStandardization(y).offset, y.mean(), 1e-12);
}

TEST(FsboDeepKernelTest, TargetStandardizationOptionRoundTrips) {
  METAOPT_ASSERT_OK_AND_ASSIGN(
      DeepPipeModel model, DeepPipeModel::Create(TestSpace(), SmallFsbo(), 3));
  EXPECT_FALSE(model.standardizes_fsbo_targets());
  model.set_standardize_fsbo_targets(true);
  const Data data = Sample(model, 8, 4);
  const Eigen::VectorXd y = 0.9 + 0.01 * data.y.array();
  EXPECT_NEAR(model.TargetStandardization(y).offset, y.mean(), 1e-12);
  METAOPT_ASSERT_OK_AND_ASSIGN(auto posterior, model.Posterior(data.X, y));
  EXPECT_NEAR(posterior->posterior().standardization().offset, y.mean(), 1e-12);
  v1::ModelArtifact artifact;
  model.ToArtifact(&artifact);
  EXPECT_EQ(artifact.normalization().at("target_standardization"), 1.0);
  METAOPT_ASSERT_OK_AND_ASSIGN(DeepPipeModel back,
                               DeepPipeModel::FromArtifact(artifact));
  EXPECT_TRUE(back.standardizes_fsbo_targets());
  // Without the entry (older artifacts): the paper's raw targets.
  artifact.mutable_normalization()->erase("target_standardization");
  METAOPT_ASSERT_OK_AND_ASSIGN(back, DeepPipeModel::FromArtifact(artifact));
  EXPECT_FALSE(back.standardizes_fsbo_targets());
  (*artifact.mutable_normalization())["target_standardization"] = 0.5;
  EXPECT_THAT(DeepPipeModel::FromArtifact(artifact).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("target_standardization")));
}

TEST(FsboDeepKernelTest, ArtifactRecordsFsboAndRoundTrips) {
  METAOPT_ASSERT_OK_AND_ASSIGN(
      DeepPipeModel model, DeepPipeModel::Create(TestSpace(), SmallFsbo(), 3));
  v1::ModelArtifact artifact;
  model.ToArtifact(&artifact);
  EXPECT_EQ(artifact.kind(), v1::MODEL_KIND_FSBO);
  EXPECT_EQ(artifact.normalization().at("target_standardization"), 0.0);
  METAOPT_ASSERT_OK_AND_ASSIGN(DeepPipeModel back,
                               DeepPipeModel::FromArtifact(artifact));
  EXPECT_EQ(back.architecture().gp, DeepKernelGp::kFsbo);
  EXPECT_EQ(back.gp().kernel().name(), "rbf");
  EXPECT_EQ(back.parameters(), model.parameters());
  // A DeepPipe artifact reads back as DeepPipe's GP.
  DeepPipeArchitecture deeppipe = SmallFsbo();
  deeppipe.gp = DeepKernelGp::kDeepPipe;
  METAOPT_ASSERT_OK_AND_ASSIGN(DeepPipeModel dp,
                               DeepPipeModel::Create(TestSpace(), deeppipe, 3));
  v1::ModelArtifact dp_artifact;
  dp.ToArtifact(&dp_artifact);
  EXPECT_EQ(dp_artifact.kind(), v1::MODEL_KIND_DEEPPIPE);
  METAOPT_ASSERT_OK_AND_ASSIGN(DeepPipeModel dp_back,
                               DeepPipeModel::FromArtifact(dp_artifact));
  EXPECT_EQ(dp_back.gp().kernel().name(), "matern52");
  // A DeepPipe model always standardises its targets: 0 is refused.
  EXPECT_EQ(dp_artifact.normalization().at("target_standardization"), 1.0);
  (*dp_artifact.mutable_normalization())["target_standardization"] = 0;
  EXPECT_THAT(DeepPipeModel::FromArtifact(dp_artifact).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("target_standardization")));
}

TEST(FsboDeepKernelTest, FineTunesEitherScopeAndKeepsTheMeanAtZero) {
  METAOPT_ASSERT_OK_AND_ASSIGN(
      DeepPipeModel model, DeepPipeModel::Create(TestSpace(), SmallFsbo(), 3));
  const Data data = Sample(model, 12, 5);
  for (FineTuneScope scope : {FineTuneScope::kKernel, FineTuneScope::kFull}) {
    DeepPipeFineTuneOptions options;
    options.scope = scope;
    options.max_steps = 30;
    options.learning_rate = 1e-2;
    options.patience = 0;
    METAOPT_ASSERT_OK_AND_ASSIGN(DeepPipeFineTuneResult tuned,
                                 model.FineTune(data.X, data.y, options));
    EXPECT_LT(tuned.loss_after, tuned.loss_before);
    const auto& gp = tuned.model.gp();
    EXPECT_EQ(gp.hyperparameters()[gp.mean_index()], 0.0);
    const int net = model.num_network_parameters();
    const bool network_moved =
        tuned.model.parameters().head(net) != model.parameters().head(net);
    EXPECT_EQ(network_moved, scope == FineTuneScope::kFull);
  }
}

// Predict embeds a large query in blocks (DeepPipeSurrogate::kEmbedBlock);
// its predictions are those of the whole query embedded at once, bit for bit,
// whether the last block is short, takes a single leftover row or is full.
TEST(FsboDeepKernelTest, BlockwisePredictEqualsWholeEmbeddingBitForBit) {
  METAOPT_ASSERT_OK_AND_ASSIGN(
      DeepPipeModel model,
      DeepPipeModel::Create(TestSpace(), FsboArchitecture(), 5));
  const Data observed = Sample(model, 20, 2);
  METAOPT_ASSERT_OK_AND_ASSIGN(std::shared_ptr<const DeepPipeSurrogate> post,
                               model.Posterior(observed.X, observed.y));
  constexpr int kBlock = static_cast<int>(DeepPipeSurrogate::kEmbedBlock);
  static_assert(kBlock % gp::GpPosterior::kPredictBlock == 0);
  const Data catalogue = Sample(model, 2 * kBlock + 301, 3);
  for (int m : {2 * kBlock + 301, 2 * kBlock + 1, 2 * kBlock, kBlock + 1,
                kBlock + 2, 7}) {
    const Eigen::MatrixXd X = catalogue.X.topRows(m);
    METAOPT_ASSERT_OK_AND_ASSIGN(gp::Prediction blocked, post->Predict(X));
    METAOPT_ASSERT_OK_AND_ASSIGN(Eigen::MatrixXd Z, model.Embed(X));
    METAOPT_ASSERT_OK_AND_ASSIGN(gp::Prediction whole,
                                 post->PredictEmbedded(Z));
    ASSERT_EQ(blocked.mean.size(), m);
    ASSERT_EQ(blocked.variance.size(), m);
    int differ = 0;
    for (int i = 0; i < m; ++i) {
      differ += blocked.mean[i] != whole.mean[i] ||
                blocked.variance[i] != whole.variance[i];
    }
    EXPECT_EQ(differ, 0) << "rows " << m;
  }
}

}  // namespace
}  // namespace metaopt::surrogate
