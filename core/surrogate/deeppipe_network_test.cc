// The DeepPipe network: shapes, construction, embedding, parameters and the
// posterior it gives.
#include <cmath>
#include <map>
#include <memory>
#include <string>

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
using ::metaopt::testing::StatusIs;
using ::testing::HasSubstr;

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

}  // namespace
}  // namespace metaopt::surrogate
