#include "core/surrogate/dataset2vec.h"

#include <cmath>
#include <vector>

#include "Eigen/Core"
#include "core/surrogate/grosi_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"
#include "tests/testutil/test_specs.h"

namespace metaopt::surrogate {
namespace {

using ::metaopt::testing::StatusIs;
using ::testing::HasSubstr;

Dataset2VecArchitecture SmallD2v() {
  Dataset2VecArchitecture a;
  a.f_width = 5;
  a.f_layers = 2;
  a.g_width = 4;
  a.g_layers = 2;
  a.h_width = 4;
  a.h_layers = 2;
  a.output = 3;
  return a;
}

RawSample RandomSample(int n, int m, int c, uint64_t seed) {
  space::Rng rng(seed);
  RawSample s;
  s.x.resize(n, m);
  s.y = Eigen::MatrixXd::Zero(n, c);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < m; ++j) s.x(i, j) = space::StandardNormal(rng);
    s.y(i, static_cast<int>(space::UniformIndex(rng, c))) = 1.0;
  }
  return s;
}

// Moves every parameter off the ReLU kinks that zero biases create.
Eigen::VectorXd Jitter(const Eigen::VectorXd& theta, uint64_t seed) {
  space::Rng rng(seed);
  Eigen::VectorXd out = theta;
  for (Eigen::Index i = 0; i < out.size(); ++i) {
    out[i] += 0.1 * space::StandardNormal(rng);
  }
  return out;
}

TEST(Dataset2VecTest, InvariantToRowColumnAndTargetOrder) {
  space::Rng rng(1);
  METAOPT_ASSERT_OK_AND_ASSIGN(Dataset2Vec d2v,
                               Dataset2Vec::Create(SmallD2v(), rng));
  const RawSample s = RandomSample(9, 4, 3, 2);
  const Eigen::VectorXd phi = d2v.Forward(s);
  ASSERT_EQ(phi.size(), 3);
  RawSample permuted;
  const std::vector<int> rows = {8, 3, 0, 5, 1, 7, 2, 6, 4};
  const std::vector<int> cols = {2, 0, 3, 1};
  const std::vector<int> targets = {1, 2, 0};
  permuted.x = s.x(rows, cols);
  permuted.y = s.y(rows, targets);
  EXPECT_TRUE(d2v.Forward(permuted).isApprox(phi, 1e-12));
  // A different dataset maps elsewhere.
  EXPECT_GT((d2v.Forward(RandomSample(9, 4, 3, 3)) - phi).norm(), 1e-6);
}

TEST(Dataset2VecTest, GradientMatchesFiniteDifferences) {
  space::Rng rng(4);
  METAOPT_ASSERT_OK_AND_ASSIGN(Dataset2Vec d2v,
                               Dataset2Vec::Create(SmallD2v(), rng));
  Eigen::VectorXd theta(d2v.num_parameters());
  d2v.GetParameters(theta);
  theta = Jitter(theta, 5);
  d2v.SetParameters(theta);
  const RawSample s = RandomSample(6, 3, 2, 6);
  const Eigen::VectorXd weights = Eigen::VectorXd::LinSpaced(3, -1.0, 2.0);
  // L = weights . D2V(s)
  Dataset2Vec::Trace trace;
  const double value = weights.dot(d2v.Forward(s, &trace));
  Eigen::VectorXd grad = Eigen::VectorXd::Zero(theta.size());
  d2v.Backward(trace, weights, grad);
  EXPECT_TRUE(std::isfinite(value));
  constexpr double kStep = 1e-6;
  for (Eigen::Index i = 0; i < theta.size(); ++i) {
    Eigen::VectorXd plus = theta, minus = theta;
    plus[i] += kStep;
    minus[i] -= kStep;
    d2v.SetParameters(plus);
    const double f_plus = weights.dot(d2v.Forward(s));
    d2v.SetParameters(minus);
    const double f_minus = weights.dot(d2v.Forward(s));
    const double numeric = (f_plus - f_minus) / (2 * kStep);
    EXPECT_NEAR(grad[i], numeric, 1e-6 * std::max(1.0, std::abs(numeric)))
        << "parameter " << i << " of " << theta.size();
  }
}

TEST(Dataset2VecTest, SubSampleDrawsDistinctRowsAndColumns) {
  const RawSample s = RandomSample(20, 6, 2, 7);
  space::Rng rng(8);
  const RawSample sub = SubSample(s, 5, 4, rng);
  ASSERT_EQ(sub.x.rows(), 5);
  ASSERT_EQ(sub.x.cols(), 4);
  ASSERT_EQ(sub.y.cols(), 2);
  const RawSample all = SubSample(s, 100, 100, rng);
  EXPECT_TRUE(all.x.isApprox(s.x));  // everything, in order
}

TEST(Dataset2VecTest, RawSampleFromProtoIsRowMajor) {
  v1::DatasetSample proto;
  proto.add_column_kinds(v1::COLUMN_KIND_NUMERIC);
  proto.add_column_kinds(v1::COLUMN_KIND_CATEGORICAL);
  for (double v : {1.0, 2.0, 3.0, 4.0, 5.0, 50.0}) proto.add_values(v);
  proto.set_num_targets(1);
  for (double v : {0.0, 1.0, 0.0}) proto.add_targets(v);
  METAOPT_ASSERT_OK_AND_ASSIGN(RawSample s, RawSampleFromProto(proto));
  ASSERT_EQ(s.x.rows(), 3);
  EXPECT_EQ(s.x(1, 0), 3.0);
  EXPECT_EQ(s.x(0, 1), 2.0);
  EXPECT_EQ(s.x(2, 1), kSampleClip);  // clipped
  EXPECT_EQ(s.y(1, 0), 1.0);
  proto.add_targets(1.0);
  EXPECT_THAT(RawSampleFromProto(proto),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("dataset_sample")));
}

TEST(Dataset2VecTest, RejectsBadArchitecture) {
  Dataset2VecArchitecture a = SmallD2v();
  a.f_layers = 0;
  space::Rng rng(1);
  EXPECT_THAT(Dataset2Vec::Create(a, rng),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("layer counts (f 0")));
}

// GROSI with the extractor: the gradient of every loss reaches D2V's
// parameters, with and without engineered features.
GrosiModel D2vGrosi(std::vector<std::string> features, uint64_t seed) {
  GrosiArchitecture a;
  a.embedding = 4;
  a.feature_hidden = 5;
  a.tower_layers = 2;
  a.tower_width = 3;
  a.head_layers = 2;
  a.head_width = 4;
  a.dataset2vec = true;
  a.d2v = SmallD2v();
  absl::StatusOr<GrosiModel> model =
      GrosiModel::Create(metaopt::testing::PipelineSpec().search_space(),
                         std::move(features), a, seed);
  EXPECT_TRUE(model.ok()) << model.status();
  return *model;
}

void ExpectGrosiGradient(const std::vector<std::string>& features,
                         uint64_t seed) {
  GrosiModel model = D2vGrosi(features, seed);
  ASSERT_NE(model.dataset2vec(), nullptr);
  ASSERT_EQ(model.input_dim(), static_cast<int>(features.size()) + 3);
  METAOPT_ASSERT_OK_AND_ASSIGN(space::SearchSpace space,
                               space::SearchSpace::Create(model.space_proto()));
  space::Rng rng(seed + 1);
  std::vector<v1::Configuration> configs;
  for (int i = 0; i < 5; ++i) configs.push_back(space.Sample(rng));
  const RawSample t = RandomSample(6, 3, 2, seed + 2);
  const RawSample p = RandomSample(5, 2, 2, seed + 3);
  const RawSample q = RandomSample(7, 3, 3, seed + 4);
  GrosiStepBatch batch;
  batch.X = model.encoder().EncodeBatch(configs);
  batch.y = Eigen::VectorXd::LinSpaced(5, 0.0, 1.0);
  const int F = model.num_features();
  batch.features = Eigen::VectorXd::LinSpaced(F, -1.0, 1.0);
  batch.positive = 0.5 * batch.features;
  batch.negative = -batch.features;
  batch.sample = &t;
  batch.positive_sample = &p;
  batch.negative_sample = &q;
  GrosiLossWeights weights;  // O + 0.5 R + P
  const Eigen::VectorXd theta = Jitter(model.parameters(), seed + 5);
  ASSERT_TRUE(model.set_parameters(theta).ok());
  const GrosiLoss loss = model.Loss(batch, weights);
  ASSERT_EQ(loss.gradient.size(), theta.size());
  const int nd = model.dataset2vec()->num_parameters();
  EXPECT_GT(loss.gradient.tail(nd).norm(), 0.0);
  constexpr double kStep = 1e-6;
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
        << "parameter " << i << " of " << theta.size()
        << (i >= theta.size() - nd ? " (Dataset2Vec)" : "");
  }
}

TEST(GrosiDataset2VecTest, LossGradientWithoutEngineeredFeatures) {
  ExpectGrosiGradient({}, 10);
}

TEST(GrosiDataset2VecTest, LossGradientWithEngineeredFeatures) {
  ExpectGrosiGradient({"a", "b"}, 20);
}

TEST(GrosiDataset2VecTest, RegressionLossFreezesTheExtractor) {
  GrosiModel model = D2vGrosi({"a"}, 30);
  const RawSample t = RandomSample(6, 3, 2, 31);
  const Eigen::VectorXd z = model.Input(Eigen::VectorXd::Ones(1), &t);
  METAOPT_ASSERT_OK_AND_ASSIGN(space::SearchSpace space,
                               space::SearchSpace::Create(model.space_proto()));
  space::Rng rng(32);
  std::vector<v1::Configuration> configs;
  for (int i = 0; i < 4; ++i) configs.push_back(space.Sample(rng));
  const GrosiLoss loss = model.RegressionLoss(
      z, model.encoder().EncodeBatch(configs), Eigen::VectorXd::Ones(4));
  const int nd = model.dataset2vec()->num_parameters();
  EXPECT_EQ(loss.gradient.tail(nd).norm(), 0.0);
  EXPECT_GT(loss.gradient.head(loss.gradient.size() - nd).norm(), 0.0);
}

TEST(GrosiDataset2VecTest, ArtifactRoundTrip) {
  GrosiModel model = D2vGrosi({"a", "b"}, 40);
  ASSERT_TRUE(model.set_parameters(Jitter(model.parameters(), 41)).ok());
  ASSERT_TRUE(model.set_dataset2vec_mean(Eigen::Vector3d(0.1, -0.2, 0.3)).ok());
  EXPECT_THAT(model.set_dataset2vec_mean(Eigen::Vector2d(0.1, 0.2)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Dataset2Vec mean")));
  v1::ModelArtifact artifact;
  model.ToArtifact(&artifact);
  EXPECT_EQ(artifact.int_options().at("dataset2vec"), 1);
  METAOPT_ASSERT_OK_AND_ASSIGN(GrosiModel read,
                               GrosiModel::FromArtifact(artifact));
  ASSERT_NE(read.dataset2vec(), nullptr);
  EXPECT_TRUE(read.parameters().isApprox(model.parameters()));
  EXPECT_TRUE(read.dataset2vec_mean().isApprox(model.dataset2vec_mean()));
  const RawSample t = RandomSample(8, 4, 3, 42);
  const Eigen::VectorXd e = Eigen::Vector2d(0.5, -0.5);
  EXPECT_TRUE(read.Input(e, &t).isApprox(model.Input(e, &t)));
  // Without a sample, the training mean stands in.
  EXPECT_TRUE(
      read.Input(e, nullptr).tail(3).isApprox(Eigen::Vector3d(0.1, -0.2, 0.3)));
  // A missing extractor tensor is named.
  v1::ModelArtifact broken = artifact;
  for (int i = 0; i < broken.tensors_size(); ++i) {
    if (broken.tensors(i).name() == "d2v.f.layer0.weight") {
      broken.mutable_tensors()->DeleteSubrange(i, 1);
      break;
    }
  }
  EXPECT_THAT(GrosiModel::FromArtifact(broken),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("d2v.f.layer0.weight")));
}

}  // namespace
}  // namespace metaopt::surrogate
