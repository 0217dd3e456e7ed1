#include "core/surrogate/grosi_model.h"

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "Eigen/Core"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"
#include "tests/testutil/test_specs.h"

namespace metaopt::surrogate {
namespace {

using ::metaopt::testing::StatusIs;
using ::testing::HasSubstr;

GrosiArchitecture SmallArchitecture(bool joint_psi1 = true) {
  GrosiArchitecture a;
  a.joint_psi1 = joint_psi1;
  a.embedding = 4;
  a.feature_hidden = 5;
  a.tower_layers = 2;
  a.tower_width = 4;
  a.head_layers = 2;
  a.head_width = 4;
  return a;
}

GrosiModel SmallModel(uint64_t seed = 1, bool joint_psi1 = true) {
  absl::StatusOr<GrosiModel> model =
      GrosiModel::Create(metaopt::testing::PipelineSpec().search_space(),
                         {"a", "b", "c"}, SmallArchitecture(joint_psi1), seed);
  EXPECT_TRUE(model.ok()) << model.status();
  return *model;
}

GrosiStepBatch RandomBatch(const GrosiModel& model, int n, uint64_t seed) {
  absl::StatusOr<space::SearchSpace> space =
      space::SearchSpace::Create(model.space_proto());
  EXPECT_TRUE(space.ok());
  space::Rng rng(seed);
  std::vector<v1::Configuration> configs;
  for (int i = 0; i < n; ++i) configs.push_back(space->Sample(rng));
  GrosiStepBatch batch;
  batch.X = model.encoder().EncodeBatch(configs);
  batch.y.resize(n);
  for (int i = 0; i < n; ++i) batch.y[i] = space::Uniform01(rng);
  auto features = [&] {
    Eigen::VectorXd z(model.num_features());
    for (int f = 0; f < z.size(); ++f) z[f] = space::StandardNormal(rng);
    return z;
  };
  batch.features = features();
  batch.positive = batch.features + 0.3 * features();
  batch.negative = features();
  return batch;
}

GrosiLossWeights Weights(double regression, double alpha, double delta) {
  GrosiLossWeights w;
  w.regression = regression;
  w.alpha = alpha;
  w.delta = delta;
  return w;
}

// Zero biases put ReLU inputs exactly on the kink (a row of zeros times any
// weight): every parameter moved away from it.
void Jitter(GrosiModel& model, uint64_t seed) {
  space::Rng rng(seed);
  Eigen::VectorXd theta = model.parameters();
  for (Eigen::Index i = 0; i < theta.size(); ++i) {
    theta[i] += 0.05 * space::StandardNormal(rng);
  }
  ASSERT_TRUE(model.set_parameters(theta).ok());
}

void ExpectGradientMatchesFor(GrosiModel model,
                              const GrosiLossWeights& weights, uint64_t seed) {
  const GrosiStepBatch batch = RandomBatch(model, 7, seed + 100);
  Jitter(model, seed + 200);
  const Eigen::VectorXd theta = model.parameters();
  // Not a network whose ReLUs are all off (its gradient would be 0 both
  // ways): psi varies over the configurations at each view.
  for (const Eigen::VectorXd* z : {&batch.features, &batch.negative}) {
    const Eigen::VectorXd psi = model.Predict(model.Embed(*z), batch.X);
    ASSERT_GT(psi.maxCoeff() - psi.minCoeff(), 1e-6) << "seed " << seed;
  }
  const GrosiLoss loss = model.Loss(batch, weights);
  ASSERT_EQ(loss.gradient.size(), theta.size());
  constexpr double kStep = 1e-6;
  int checked = 0;
  for (Eigen::Index i = 0; i < theta.size(); ++i) {
    Eigen::VectorXd plus = theta, minus = theta;
    plus[i] += kStep;
    minus[i] -= kStep;
    ASSERT_TRUE(model.set_parameters(plus).ok());
    const double f_plus = model.Loss(batch, weights).value;
    ASSERT_TRUE(model.set_parameters(minus).ok());
    const double f_minus = model.Loss(batch, weights).value;
    const double numeric = (f_plus - f_minus) / (2 * kStep);
    EXPECT_NEAR(loss.gradient[i], numeric,
                1e-5 * std::max(1.0, std::abs(numeric)))
        << "parameter " << i << " of " << theta.size();
    ++checked;
  }
  ASSERT_TRUE(model.set_parameters(theta).ok());
  EXPECT_EQ(checked, model.num_parameters());
}

// Central differences of Loss(weights).value against its gradient, for every
// parameter, with psi1 joint (the paper's) or as two towers.
void ExpectGradientMatches(const GrosiLossWeights& weights, uint64_t seed) {
  for (const bool joint_psi1 : {true, false}) {
    SCOPED_TRACE(joint_psi1 ? "joint psi1" : "two towers");
    ExpectGradientMatchesFor(SmallModel(seed, joint_psi1), weights, seed);
  }
}

TEST(GrosiModelTest, RegressionLossGradient) {
  ExpectGradientMatches(Weights(1.0, 0.0, 0.0), 1);
}

TEST(GrosiModelTest, ConsistencyLossGradient) {
  ExpectGradientMatches(Weights(0.0, 1.0, 0.0), 2);
}

TEST(GrosiModelTest, IdentificationLossGradient) {
  ExpectGradientMatches(Weights(0.0, 0.0, 1.0), 3);
}

// The trained objective O + alpha R + delta P (Eq. 8) with the default
// weights (alpha = 0.5, delta = 1) and with uneven ones.
TEST(GrosiModelTest, TotalLossGradient) {
  ExpectGradientMatches(GrosiLossWeights(), 4);
  ExpectGradientMatches(Weights(0.7, 1.3, 0.4), 5);
}

TEST(GrosiModelTest, RegressionLossOnlyMatchesLossWithoutPairTerms) {
  GrosiModel model = SmallModel();
  const GrosiStepBatch batch = RandomBatch(model, 5, 9);
  const GrosiLoss regression =
      model.RegressionLoss(batch.features, batch.X, batch.y);
  const GrosiLoss full = model.Loss(batch, Weights(1.0, 0.0, 0.0));
  EXPECT_NEAR(regression.value, full.value, 1e-12);
  EXPECT_LT((regression.gradient - full.gradient).norm(), 1e-12);
  const Eigen::VectorXd prediction =
      model.Predict(model.Embed(batch.features), batch.X);
  EXPECT_NEAR(regression.value, (prediction - batch.y).squaredNorm() / 5,
              1e-12);
}

TEST(GrosiModelTest, LossTermsHaveTheirDefinitions) {
  GrosiModel model = SmallModel();
  const GrosiStepBatch batch = RandomBatch(model, 6, 11);
  const GrosiLoss loss = model.Loss(batch, {});
  const Eigen::VectorXd phi_t = model.Embed(batch.features);
  const Eigen::VectorXd phi_p = model.Embed(batch.positive);
  const Eigen::VectorXd phi_q = model.Embed(batch.negative);
  const Eigen::VectorXd pt = model.Predict(phi_t, batch.X);
  const Eigen::VectorXd pq = model.Predict(phi_q, batch.X);
  const double d_tq = (phi_t - phi_q).norm();
  const double d_tp = (phi_t - phi_p).norm();
  EXPECT_NEAR(loss.regression, (pt - batch.y).squaredNorm() / 6, 1e-9);
  EXPECT_NEAR(loss.consistency, std::exp(-d_tq) * (pt - pq).squaredNorm() / 6,
              1e-9);
  EXPECT_NEAR(loss.identification, 0.5 * (d_tp - std::log(1 - std::exp(-d_tq))),
              1e-6);
  EXPECT_NEAR(loss.value,
              loss.regression + 0.5 * loss.consistency + loss.identification,
              1e-12);
}

TEST(GrosiModelTest, StandardizeImputesMissingAndClips) {
  GrosiModel model = SmallModel();
  ASSERT_TRUE(model
                  .SetFeatureStatistics(Eigen::Vector3d(1.0, 2.0, 3.0),
                                        Eigen::Vector3d(2.0, 0.0, 1.0))
                  .ok());
  std::vector<std::string> imputed;
  const std::map<std::string, double> raw = {
      {"a", 5.0}, {"b", 7.0}, {"unknown", 1.0}};
  const Eigen::VectorXd z = model.Standardize(raw, &imputed);
  EXPECT_DOUBLE_EQ(z[0], 2.0);  // (5 - 1) / 2
  EXPECT_DOUBLE_EQ(z[1], 0.0);  // constant in training
  EXPECT_DOUBLE_EQ(z[2], 0.0);  // missing: the training mean
  EXPECT_THAT(imputed, ::testing::ElementsAre("c"));
  const Eigen::VectorXd clipped =
      model.Standardize(std::map<std::string, double>{{"a", 1e9}}, nullptr);
  EXPECT_DOUBLE_EQ(clipped[0], GrosiModel::kFeatureClip);
}

TEST(GrosiModelTest, ArtifactRoundTrip) {
  GrosiModel model = SmallModel(5);
  ASSERT_TRUE(model
                  .SetFeatureStatistics(Eigen::Vector3d(1.0, 2.0, 3.0),
                                        Eigen::Vector3d(2.0, 0.5, 1.0))
                  .ok());
  v1::ModelArtifact artifact;
  model.ToArtifact(&artifact);
  EXPECT_EQ(artifact.kind(), v1::MODEL_KIND_GROSI);
  absl::StatusOr<GrosiModel> read = GrosiModel::FromArtifact(artifact);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->feature_names(), model.feature_names());
  EXPECT_EQ(read->parameters(), model.parameters());
  EXPECT_EQ(read->feature_stds(), model.feature_stds());
  const GrosiStepBatch batch = RandomBatch(model, 4, 3);
  EXPECT_EQ(read->Predict(read->Embed(batch.features), batch.X),
            model.Predict(model.Embed(batch.features), batch.X));

  v1::ModelArtifact broken = artifact;
  broken.mutable_normalization()->erase("feature_std/b");
  EXPECT_THAT(
      GrosiModel::FromArtifact(broken).status(),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("feature_std/b")));
  broken = artifact;
  (*broken.mutable_int_options())["feature_dim"] = 4;
  EXPECT_THAT(
      GrosiModel::FromArtifact(broken).status(),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("feature_dim")));
  broken = artifact;
  broken.set_kind(v1::MODEL_KIND_DEEPPIPE);
  EXPECT_THAT(GrosiModel::FromArtifact(broken).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("MODEL_KIND_GROSI")));
}

// psi reads the dataset in both layouts, and the joint psi1's first layer
// reads the pair [x; phi] (the paper's psi1 : R^K x Lambda -> R^{K_psi1}).
TEST(GrosiModelTest, PredictionsDependOnTheDatasetInBothLayouts) {
  for (const bool joint_psi1 : {true, false}) {
    SCOPED_TRACE(joint_psi1 ? "joint psi1" : "two towers");
    GrosiModel model = SmallModel(7, joint_psi1);
    Jitter(model, 8);
    const GrosiStepBatch batch = RandomBatch(model, 6, 13);
    const Eigen::VectorXd at_t =
        model.Predict(model.Embed(batch.features), batch.X);
    const Eigen::VectorXd at_q =
        model.Predict(model.Embed(batch.negative), batch.X);
    EXPECT_GT((at_t - at_q).norm(), 1e-6);
  }
  const GrosiModel joint = SmallModel(7, true);
  const GrosiModel towers = SmallModel(7, false);
  EXPECT_NE(joint.num_parameters(), towers.num_parameters());
  v1::ModelArtifact artifact;
  joint.ToArtifact(&artifact);
  EXPECT_EQ(artifact.int_options().at("joint_psi1"), 1);
  bool found_psi1 = false;
  for (const v1::Tensor& t : artifact.tensors()) {
    if (t.name() == "psi1.layer0.weight") {
      found_psi1 = true;
      // Input rows: the encoded configuration, then phi (K = 4).
      EXPECT_THAT(t.shape(),
                  ::testing::Contains(joint.encoder().dimension() + 4));
    }
  }
  EXPECT_TRUE(found_psi1);
}

// Artifacts written before the joint psi1 carry no "joint_psi1" option and
// hold two towers: they still load as two-tower models.
TEST(GrosiModelTest, ArtifactsWithoutTheLayoutOptionAreTwoTowerModels) {
  const GrosiModel towers = SmallModel(3, false);
  v1::ModelArtifact artifact;
  towers.ToArtifact(&artifact);
  artifact.mutable_int_options()->erase("joint_psi1");
  absl::StatusOr<GrosiModel> read = GrosiModel::FromArtifact(artifact);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_FALSE(read->architecture().joint_psi1);
  EXPECT_EQ(read->parameters(), towers.parameters());

  const GrosiModel joint = SmallModel(3, true);
  joint.ToArtifact(&artifact);
  artifact.mutable_int_options()->erase("joint_psi1");
  EXPECT_THAT(GrosiModel::FromArtifact(artifact).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("phi_tower")));
}

TEST(GrosiModelTest, CreateRejectsBadInputs) {
  const v1::SearchSpace space = metaopt::testing::PipelineSpec().search_space();
  EXPECT_THAT(
      GrosiModel::Create(space, {}, {}, 0).status(),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("meta-feature")));
  EXPECT_THAT(
      GrosiModel::Create(space, {"b", "a"}, {}, 0).status(),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("sorted")));
  GrosiArchitecture bad;
  bad.embedding = 0;
  EXPECT_THAT(
      GrosiModel::Create(space, {"a"}, bad, 0).status(),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("embedding")));
}

}  // namespace
}  // namespace metaopt::surrogate
