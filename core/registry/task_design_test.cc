#include "core/registry/task_design.h"

#include "core/registry/artifact.h"
#include "core/nn/tensor_io.h"
#include "core/surrogate/dataset2vec.h"
#include "core/surrogate/dida.h"
#include "tests/testutil/test_artifacts.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"

namespace metaopt::registry {
namespace {

using ::metaopt::testing::IsOk;
using ::metaopt::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

v1::Configuration Config(double x) {
  v1::Configuration c;
  v1::Assignment& a = *c.add_assignments();
  a.set_stage("model");
  a.set_algorithm("m");
  (*a.mutable_parameters())["x"].set_number(x);
  return c;
}

// Two features, a 1 x 2 projection that reads only the first; three tasks at
// embeddings 0, 1 and 5.
v1::TaskDesign Design() {
  v1::TaskDesign design;
  design.set_method("metabu");
  design.add_feature_names("a");
  design.add_feature_names("b");
  design.add_feature_means(10);
  design.add_feature_means(0);
  design.add_feature_stds(2);
  design.add_feature_stds(1);
  v1::Tensor& p = *design.mutable_projection();
  p.add_shape(1);
  p.add_shape(2);
  p.add_values(1);
  p.add_values(0);
  const double embeddings[] = {0, 1, 5};
  for (int t = 0; t < 3; ++t) {
    v1::DesignTask& task = *design.add_tasks();
    task.set_task_id("t" + std::to_string(t));
    task.add_embedding(embeddings[t]);
    *task.add_top() = Config(0.1 * t);
    *task.add_top() = Config(0.1 * t + 0.05);
  }
  design.set_neighbours(2);
  return design;
}

double X(const v1::Configuration* c) {
  return c->assignments(0).parameters().at("x").number();
}

TEST(QueryTaskDesignTest, RoundRobinOverTheNearestTasks) {
  google::protobuf::Map<std::string, double> features;
  features["a"] = 12;  // standardized 1: nearest t1, then t0
  features["b"] = 7;
  const v1::TaskDesign design = Design();  // the query points into it
  const DesignQuery query = QueryTaskDesign(design, features);
  EXPECT_THAT(query.neighbours, ElementsAre("t1", "t0"));
  ASSERT_EQ(query.configurations.size(), 4u);
  EXPECT_DOUBLE_EQ(X(query.configurations[0]), 0.1);
  EXPECT_DOUBLE_EQ(X(query.configurations[1]), 0.0);
  EXPECT_DOUBLE_EQ(X(query.configurations[2]), 0.15);
  EXPECT_DOUBLE_EQ(X(query.configurations[3]), 0.05);
  EXPECT_TRUE(query.imputed_features.empty());
}

TEST(QueryTaskDesignTest, MissingFeaturesTakeTheTrainingMeanAndAreNamed) {
  google::protobuf::Map<std::string, double> features;
  features["b"] = 3;
  features["unused"] = 1;
  const DesignQuery query = QueryTaskDesign(Design(), features);
  EXPECT_THAT(query.imputed_features, ElementsAre("a"));
  // a = its mean: embedding 0, nearest t0 then t1.
  EXPECT_THAT(query.neighbours, ElementsAre("t0", "t1"));
  features["a"] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THAT(QueryTaskDesign(Design(), features).imputed_features,
              ElementsAre("a"));
}

TEST(QueryTaskDesignTest, InterleavesWithThePortfolio) {
  v1::TaskDesign design = Design();
  design.set_blend("interleave");
  google::protobuf::RepeatedPtrField<v1::Configuration> portfolio;
  *portfolio.Add() = Config(0.9);
  google::protobuf::Map<std::string, double> features;
  features["a"] = 12;  // nearest t1, then t0
  const DesignQuery query = QueryTaskDesign(design, features, portfolio);
  ASSERT_EQ(query.configurations.size(), 5u);
  EXPECT_DOUBLE_EQ(X(query.configurations[0]), 0.1);  // t1's best
  EXPECT_DOUBLE_EQ(X(query.configurations[1]), 0.9);  // the portfolio's first
  EXPECT_DOUBLE_EQ(X(query.configurations[2]), 0.0);  // t0's best
  EXPECT_DOUBLE_EQ(X(query.configurations[3]), 0.15);
  EXPECT_DOUBLE_EQ(X(query.configurations[4]), 0.05);
  design.set_blend("mix");
  EXPECT_THAT(ValidateTaskDesign(design),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("task_design.blend: \"mix\"")));
}

TEST(QueryTaskDesignTest, AnEmptyProjectionIsTheIdentity) {
  v1::TaskDesign design = Design();
  design.clear_projection();
  for (v1::DesignTask& task : *design.mutable_tasks()) {
    task.add_embedding(0);  // d = 2 features
  }
  ASSERT_THAT(ValidateTaskDesign(design), IsOk());
  google::protobuf::Map<std::string, double> features;
  features["a"] = 14;  // standardized 2: nearest t1 (1), then t0 (0)
  features["b"] = 0;
  EXPECT_THAT(EmbedFeatures(design, features), ElementsAre(2.0, 0.0));
  EXPECT_THAT(QueryTaskDesign(design, features).neighbours,
              ElementsAre("t1", "t0"));
}

TEST(ValidateTaskDesignTest, AcceptsAConsistentDesignAndNamesEachBrokenField) {
  EXPECT_THAT(ValidateTaskDesign(Design()), IsOk());
  v1::TaskDesign d = Design();
  d.clear_method();
  EXPECT_THAT(ValidateTaskDesign(d),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("task_design.method")));
  d = Design();
  d.set_feature_stds(1, 0);
  EXPECT_THAT(ValidateTaskDesign(d),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("feature_stds[1] (b)")));
  d = Design();
  d.mutable_projection()->add_values(1);
  EXPECT_THAT(ValidateTaskDesign(d),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("task_design.projection")));
  d = Design();
  d.set_neighbours(0);
  EXPECT_THAT(ValidateTaskDesign(d),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("task_design.neighbours")));
  d = Design();
  d.mutable_tasks(2)->add_embedding(1);
  EXPECT_THAT(ValidateTaskDesign(d),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("task_design.tasks[2] \"t2\"")));
}

TEST(ValidateArtifactTest, ChecksTheDesignsConfigurationsAgainstTheSpace) {
  v1::ModelArtifact artifact = testing::TestArtifact();
  v1::TaskDesign design = Design();
  for (v1::DesignTask& task : *design.mutable_tasks()) {
    for (v1::Configuration& c : *task.mutable_top()) c = artifact.portfolio(0);
  }
  *artifact.mutable_task_design() = design;
  EXPECT_THAT(ValidateArtifact(artifact), IsOk());
  // Stage "model" is not in the artifact's space.
  *artifact.mutable_task_design()->mutable_tasks(1)->mutable_top(1) = Config(0);
  EXPECT_THAT(ValidateArtifact(artifact),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("artifact.task_design.tasks[1].top[1]")));
}

namespace dida_design {

// A design over the outputs of a small Dida extractor that the artifact
// carries (feature_source "dida").
v1::ModelArtifact DidaArtifact() {
  v1::ModelArtifact artifact;
  surrogate::DidaArchitecture a;
  a.pair_width = 3;
  a.interaction = 4;
  a.second_layer = 0;
  a.hidden = 4;
  a.output = 2;
  space::Rng rng(1);
  absl::StatusOr<surrogate::Dida> dida = surrogate::Dida::Create(a, rng);
  EXPECT_THAT(dida.status(), IsOk());
  dida->Write(surrogate::kDidaPrefix, &artifact);
  v1::TaskDesign& design = *artifact.mutable_task_design();
  design = Design();
  design.clear_projection();
  design.set_feature_names(0, "dida_0");
  design.set_feature_names(1, "dida_1");
  for (v1::DesignTask& task : *design.mutable_tasks()) task.add_embedding(0);
  design.set_feature_source("dida");
  return artifact;
}

v1::DatasetSample Sample() {
  v1::DatasetSample sample;
  for (int k = 0; k < 3; ++k) sample.add_column_kinds(v1::COLUMN_KIND_NUMERIC);
  for (int i = 0; i < 12; ++i) sample.add_values(0.3 * i - 1.5);
  sample.set_num_targets(1);
  for (int i = 0; i < 4; ++i) sample.add_targets(i % 2);
  return sample;
}

TEST(DesignFeaturesTest, DidaDesignComputesFeaturesFromTheSample) {
  const v1::ModelArtifact artifact = DidaArtifact();
  ASSERT_THAT(ValidateTaskDesign(artifact.task_design()), IsOk());
  ASSERT_THAT(ValidateDesignExtractor(artifact), IsOk());
  v1::StudySpec spec;
  (*spec.mutable_dataset_features())["a"] = 1;  // not read by this design
  EXPECT_THAT(DesignFeatures(artifact, spec),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("spec.dataset_sample: absent")));
  EXPECT_THAT(CheckDesignInput(artifact, spec),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("spec.dataset_sample: absent")));
  *spec.mutable_dataset_sample() = Sample();
  EXPECT_THAT(CheckDesignInput(artifact, spec), IsOk());
  METAOPT_ASSERT_OK_AND_ASSIGN(auto features, DesignFeatures(artifact, spec));
  ASSERT_EQ(features.size(), 2u);
  const Eigen::VectorXd expected =
      surrogate::Dida::Read("dida", artifact)
          ->Forward(*surrogate::RawSampleFromProto(spec.dataset_sample()));
  EXPECT_EQ(features.at("dida_0"), expected(0));
  EXPECT_EQ(features.at("dida_1"), expected(1));
  spec.mutable_dataset_sample()->add_targets(1);
  EXPECT_THAT(DesignFeatures(artifact, spec),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("spec.dataset_sample")));
}

TEST(DesignFeaturesTest, EngineeredDesignReadsTheSpecsFeatures) {
  v1::ModelArtifact artifact;
  *artifact.mutable_task_design() = Design();
  v1::StudySpec spec;
  (*spec.mutable_dataset_features())["a"] = 12;
  METAOPT_ASSERT_OK_AND_ASSIGN(auto features, DesignFeatures(artifact, spec));
  EXPECT_EQ(features.at("a"), 12);
  EXPECT_THAT(ValidateDesignExtractor(artifact), IsOk());
}

TEST(DesignFeaturesTest, RejectsAMissingExtractorOrUnknownSource) {
  v1::ModelArtifact artifact = DidaArtifact();
  artifact.mutable_task_design()->set_feature_names(1, "dida_7");
  EXPECT_THAT(ValidateDesignExtractor(artifact),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("feature_names[1]: \"dida_7\"")));
  artifact = DidaArtifact();
  artifact.clear_tensors();
  EXPECT_THAT(ValidateDesignExtractor(artifact),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("needs the artifact's Dida extractor")));
  artifact.mutable_task_design()->set_feature_source("dataset2vec");
  EXPECT_THAT(ValidateTaskDesign(artifact.task_design()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("feature_source: \"dataset2vec\"")));
  // "d2v" reads the design's Dataset2Vec extractor, which this one lacks
  // (GROSI's own, prefix "d2v", is not it).
  artifact = DidaArtifact();
  artifact.mutable_task_design()->set_feature_source("d2v");
  EXPECT_THAT(ValidateTaskDesign(artifact.task_design()), IsOk());
  surrogate::Dataset2VecArchitecture a;
  a.f_width = a.g_width = a.h_width = 3;
  a.output = 2;
  space::Rng rng(4);
  surrogate::Dataset2Vec::Create(a, rng)->Write("d2v", &artifact);
  EXPECT_THAT(ValidateDesignExtractor(artifact),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("needs the artifact's Dataset2Vec extractor")));
}

// A design over the outputs of a small Dataset2Vec extractor that the
// artifact carries (feature_source "d2v", prefix kDesignD2vPrefix).
v1::ModelArtifact D2vArtifact() {
  v1::ModelArtifact artifact;
  surrogate::Dataset2VecArchitecture a;
  a.f_width = 4;
  a.f_layers = 2;
  a.g_width = 3;
  a.g_layers = 1;
  a.h_width = 3;
  a.h_layers = 2;
  a.output = 2;
  space::Rng rng(3);
  absl::StatusOr<surrogate::Dataset2Vec> d2v =
      surrogate::Dataset2Vec::Create(a, rng);
  EXPECT_THAT(d2v.status(), IsOk());
  d2v->Write(surrogate::kDesignD2vPrefix, &artifact);
  v1::TaskDesign& design = *artifact.mutable_task_design();
  design = Design();
  design.clear_projection();
  design.set_feature_names(0, "d2v_0");
  design.set_feature_names(1, "d2v_1");
  for (v1::DesignTask& task : *design.mutable_tasks()) task.add_embedding(0);
  design.set_feature_source("d2v");
  return artifact;
}

TEST(DesignFeaturesTest, D2vDesignComputesFeaturesFromTheSample) {
  const v1::ModelArtifact artifact = D2vArtifact();
  ASSERT_THAT(ValidateTaskDesign(artifact.task_design()), IsOk());
  ASSERT_THAT(ValidateDesignExtractor(artifact), IsOk());
  v1::StudySpec spec;
  EXPECT_THAT(DesignFeatures(artifact, spec),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("spec.dataset_sample: absent")));
  EXPECT_THAT(CheckDesignInput(artifact, spec),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Dataset2Vec extractor")));
  *spec.mutable_dataset_sample() = Sample();
  METAOPT_ASSERT_OK_AND_ASSIGN(auto features, DesignFeatures(artifact, spec));
  ASSERT_EQ(features.size(), 2u);
  METAOPT_ASSERT_OK_AND_ASSIGN(const nn::TensorMap tensors,
                               nn::IndexTensors(artifact.tensors()));
  const Eigen::VectorXd expected =
      surrogate::Dataset2Vec::Read(surrogate::kDesignD2vPrefix, artifact,
                                   tensors)
          ->Forward(*surrogate::RawSampleFromProto(spec.dataset_sample()));
  EXPECT_EQ(features.at("d2v_0"), expected(0));
  EXPECT_EQ(features.at("d2v_1"), expected(1));
  v1::ModelArtifact renamed = artifact;
  renamed.mutable_task_design()->set_feature_names(1, "d2v_2");
  EXPECT_THAT(ValidateDesignExtractor(renamed),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("\"d2v_2\" is not an output of the "
                                 "Dataset2Vec extractor (d2v_0 .. d2v_1)")));
}

}  // namespace dida_design
}  // namespace
}  // namespace metaopt::registry
