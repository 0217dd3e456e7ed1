#include "core/surrogate/output_head.h"

#include <cmath>
#include <random>
#include <vector>

#include "core/registry/artifact.h"
#include "core/surrogate/deeppipe_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/deeppipe_fixtures.h"
#include "tests/testutil/status_matchers.h"

namespace metaopt::surrogate {
namespace {

using ::metaopt::testing::IsOk;
using ::metaopt::testing::StatusIs;
using ::testing::HasSubstr;

TEST(OutputHeadTest, RidgeRecoversALogLinearRelation) {
  std::mt19937_64 rng(4);
  std::normal_distribution<double> normal;
  Eigen::MatrixXd Z(300, 4);
  for (Eigen::Index i = 0; i < Z.size(); ++i) Z.data()[i] = normal(rng);
  Eigen::Vector4d w(0.5, -1.0, 2.0, 0.0);
  const Eigen::VectorXd seconds = ((Z * w).array() + 0.7).exp().matrix();
  absl::StatusOr<OutputHead> head = FitOutputHead("runtime_s", Z, seconds, 0);
  ASSERT_THAT(head, IsOk());
  EXPECT_NEAR((head->weight - w).norm(), 0, 1e-8);
  EXPECT_NEAR(head->bias, 0.7, 1e-8);
  absl::StatusOr<Eigen::VectorXd> log_mean = head->LogMean(Z.topRows(3));
  ASSERT_THAT(log_mean, IsOk());
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR((*log_mean)[i], std::log(seconds[i]), 1e-8);
  }
  // A penalty shrinks the weights, not the bias's fit of the mean.
  absl::StatusOr<OutputHead> ridge =
      FitOutputHead("runtime_s", Z, seconds, 1e4);
  ASSERT_THAT(ridge, IsOk());
  EXPECT_LT(ridge->weight.norm(), 0.2 * w.norm());
  EXPECT_THAT(head->LogMean(Eigen::MatrixXd(2, 3)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("embeddings of width 3, the head reads 4")));
}

TEST(OutputHeadTest, GroupsLevelsDoNotBiasTheWeights) {
  // Three tasks whose times differ by a factor of 100 each, and whose
  // configurations with larger z are slower on every task.
  std::mt19937_64 rng(5);
  std::normal_distribution<double> normal;
  Eigen::MatrixXd Z(90, 2);
  Eigen::VectorXd seconds(90);
  std::vector<int> groups(90);
  for (int i = 0; i < 90; ++i) {
    groups[i] = i / 30;
    // The tasks' embeddings drift with their level: a pooled fit would
    // credit the drift with the level.
    Z(i, 0) = normal(rng) + 3.0 * groups[i];
    Z(i, 1) = normal(rng);
    seconds[i] = std::exp(0.5 * Z(i, 1) - 0.25 * Z(i, 0) + 4.6 * groups[i]);
  }
  absl::StatusOr<OutputHead> head =
      FitOutputHead("fit_seconds", Z, seconds, 0, groups);
  ASSERT_THAT(head, IsOk());
  EXPECT_NEAR(head->weight[0], -0.25, 1e-8);
  EXPECT_NEAR(head->weight[1], 0.5, 1e-8);
  // Within the tasks it explains everything; a constant per task does not.
  absl::StatusOr<double> rmse = WithinGroupLogRmse(&*head, Z, seconds, groups);
  absl::StatusOr<double> spread = WithinGroupLogRmse(nullptr, Z, seconds, groups);
  ASSERT_THAT(rmse, IsOk());
  ASSERT_THAT(spread, IsOk());
  EXPECT_NEAR(*rmse, 0, 1e-8);
  EXPECT_GT(*spread, 0.3);
}

TEST(OutputHeadTest, BadInputsAreRefused) {
  Eigen::MatrixXd Z = Eigen::MatrixXd::Ones(3, 2);
  Eigen::VectorXd values(3);
  values << 1.0, 0.0, 2.0;
  EXPECT_THAT(FitOutputHead("t", Z, values, 0),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("value 0 at row 1 is not positive")));
  EXPECT_THAT(FitOutputHead("t", Z, Eigen::VectorXd::Ones(2), 0),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("3 embeddings, 2 values and 0 groups")));
  EXPECT_THAT(FitOutputHead("t", Z, Eigen::VectorXd::Ones(3), -1),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("lambda -1 is negative")));
}

TEST(OutputHeadTest, HeadsRideAlongInADeepPipeArtifact) {
  DeepPipeArchitecture arch;
  absl::StatusOr<DeepPipeModel> model =
      DeepPipeModel::Create(deeppipe_testing::TestSpace(), arch, 3);
  ASSERT_THAT(model, IsOk());
  v1::ModelArtifact artifact;
  artifact.set_format_version(registry::kCurrentFormatVersion);
  artifact.mutable_objective()->set_name("accuracy");
  artifact.mutable_objective()->set_goal(v1::GOAL_MAXIMIZE);
  model->ToArtifact(&artifact);
  OutputHead head;
  head.metric = "fit_seconds";
  head.weight = Eigen::VectorXd::LinSpaced(model->embedding_dim(), -1, 1);
  head.bias = -2.5;
  for (v1::Tensor& t : OutputHeadTensors(head)) {
    *artifact.add_tensors() = std::move(t);
  }
  EXPECT_THAT(DeepPipeModel::FromArtifact(artifact), IsOk());
  absl::StatusOr<std::vector<OutputHead>> heads =
      ReadOutputHeads(artifact, model->embedding_dim());
  ASSERT_THAT(heads, IsOk());
  ASSERT_EQ(heads->size(), 1u);
  EXPECT_EQ((*heads)[0].metric, "fit_seconds");
  EXPECT_EQ((*heads)[0].weight, head.weight);
  EXPECT_EQ((*heads)[0].bias, -2.5);
  // A misshapen head, and a weight without its bias, are refused.
  EXPECT_THAT(ReadOutputHeads(artifact, model->embedding_dim() + 1),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("output_head/fit_seconds/weight")));
  v1::ModelArtifact lonely = artifact;
  lonely.mutable_tensors()->RemoveLast();
  EXPECT_THAT(ReadOutputHeads(lonely, model->embedding_dim()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("output_head/fit_seconds/bias")));
  // Other unknown tensors are still refused.
  v1::ModelArtifact stray = artifact;
  stray.mutable_tensors(0)->set_name("stray");
  EXPECT_THAT(DeepPipeModel::FromArtifact(stray),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unexpected tensor \"stray\"")));
}

}  // namespace
}  // namespace metaopt::surrogate
