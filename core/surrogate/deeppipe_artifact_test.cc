// DeepPipe artifact I/O: round trips and rejected artifacts.
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "Eigen/Core"
#include "core/registry/artifact.h"
#include "core/surrogate/deeppipe_model.h"
#include "tests/testutil/deeppipe_fixtures.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"

namespace metaopt::surrogate {
namespace {

using deeppipe_testing::Data;
using deeppipe_testing::Sample;
using deeppipe_testing::TestSpace;
using deeppipe_testing::TwoFeatures;
using ::metaopt::testing::StatusIs;
using ::testing::HasSubstr;

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
