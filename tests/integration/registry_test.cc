// The model registry seen through the service: ListModels, study <-> model
// binding, zero-shot portfolios and hot reload of new versions.
#include <fstream>
#include <map>
#include <string>

#include "core/registry/artifact.h"
#include "core/surrogate/dataset2vec.h"
#include "core/surrogate/dida.h"
#include "tests/testutil/test_artifacts.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"
#include "tests/testutil/temp_dir.h"
#include "tests/testutil/test_server.h"

namespace metaopt::testing {
namespace {

using ::testing::HasSubstr;

// CreateStudy of a GP study `id` over TestArtifact's space that names
// `model` (empty: none).
v1::CreateStudyRequest GpStudyRequest(const std::string& id,
                                      const std::string& model) {
  v1::CreateStudyRequest request;
  request.set_study_id(id);
  *request.mutable_spec()->mutable_search_space() =
      registry::testing::TestSearchSpace();
  request.mutable_spec()->mutable_objective()->set_goal(v1::GOAL_MAXIMIZE);
  request.mutable_spec()->mutable_algorithm()->set_kind(v1::ALGORITHM_KIND_GP);
  request.mutable_spec()->mutable_algorithm()->set_model(model);
  return request;
}

class RegistryServiceTest : public ::testing::Test {
 protected:
  RegistryServiceTest()
      : server_([this] {
          server::ServerOptions options;
          options.db_path = dir_.File("metaopt.db");
          options.models_dir = dir_.File("models");
          options.models_poll_interval =
              absl::ZeroDuration();  // polled by hand
          return options;
        }()) {}

  v1::ListModelsResponse ListModels() {
    v1::ListModelsResponse response;
    grpc::Status status = server_.stub().ListModels(
        ContextWithDeadline().get(), v1::ListModelsRequest(), &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return response;
  }

  int64_t Publish(double marker) {
    auto version =
        registry::WriteModelVersion(dir_.File("models"), "pipelines",
                                    registry::testing::TestArtifact(marker));
    EXPECT_TRUE(version.ok()) << version.status();
    EXPECT_TRUE(server_.server().models().PollOnce().ok());
    return version.ok() ? *version : 0;
  }

  grpc::Status CreateGpStudy(
      const std::string& id, const std::string& model,
      v1::CreateStudyResponse* response,
      const std::map<std::string, double>& dataset_features = {}) {
    v1::CreateStudyRequest request = GpStudyRequest(id, model);
    for (const auto& [name, value] : dataset_features) {
      (*request.mutable_spec()->mutable_dataset_features())[name] = value;
    }
    return server_.stub().CreateStudy(ContextWithDeadline().get(), request,
                                      response);
  }

  ScopedTempDir dir_;
  TestServer server_;
};

// A task design over TestArtifact's space: feature "f" (mean 0, sd 1) mapped
// as is; archived task "a" at 0 whose best configuration is portfolio entry 0,
// task "b" at 10 with entry 1; one neighbour.
v1::ModelArtifact ArtifactWithTaskDesign() {
  v1::ModelArtifact artifact = registry::testing::TestArtifact(3.0);
  v1::TaskDesign& design = *artifact.mutable_task_design();
  design.set_method("metabu");
  design.add_feature_names("f");
  design.add_feature_means(0);
  design.add_feature_stds(1);
  design.mutable_projection()->add_shape(1);
  design.mutable_projection()->add_shape(1);
  design.mutable_projection()->add_values(1);
  design.set_neighbours(1);
  for (int t = 0; t < 2; ++t) {
    v1::DesignTask& task = *design.add_tasks();
    task.set_task_id(t == 0 ? "a" : "b");
    task.add_embedding(10.0 * t);
    *task.add_top() = artifact.portfolio(t);
  }
  return artifact;
}

TEST_F(RegistryServiceTest, ListsPublishedModelsAndSkipsBrokenVersions) {
  EXPECT_EQ(ListModels().models_size(), 0);
  EXPECT_EQ(Publish(1.0), 1);
  v1::ListModelsResponse listed = ListModels();
  ASSERT_EQ(listed.models_size(), 1);
  const v1::Model& model = listed.models(0);
  EXPECT_EQ(model.name(), "pipelines");
  EXPECT_EQ(model.version(), 1);
  EXPECT_EQ(model.kind(), v1::MODEL_KIND_PORTFOLIO);
  EXPECT_THAT(model.search_space_summary(), HasSubstr("2 stages"));
  EXPECT_THAT(model.training_data(), HasSubstr("oboe"));
  EXPECT_EQ(model.portfolio_size(), 2);
  // A broken newer version is reported and skipped: version 1 stays served.
  ASSERT_TRUE(registry::testing::WriteRawVersion(
      dir_.File("models/pipelines/2"), std::string("not a model")));
  EXPECT_TRUE(server_.server().models().PollOnce().ok());
  listed = ListModels();
  ASSERT_EQ(listed.models_size(), 1);
  EXPECT_EQ(listed.models(0).version(), 1);
}

TEST_F(RegistryServiceTest,
       StudiesBindToTheMatchingModelAndStartFromItsPortfolio) {
  Publish(1.0);
  v1::CreateStudyResponse created;
  ASSERT_TRUE(CreateGpStudy("auto", "", &created).ok());
  EXPECT_EQ(created.study().bound_model(), "pipelines@1");
  // The first suggestions are the portfolio's, in order.
  const v1::ModelArtifact artifact = registry::testing::TestArtifact(1.0);
  v1::SuggestRequest suggest;
  suggest.set_study_id("auto");
  suggest.set_count(3);
  v1::SuggestResponse suggested;
  ASSERT_TRUE(server_.stub()
                  .Suggest(ContextWithDeadline().get(), suggest, &suggested)
                  .ok());
  ASSERT_EQ(suggested.trials_size(), 3);
  for (int i = 0; i < artifact.portfolio_size(); ++i) {
    EXPECT_EQ(suggested.trials(i).metadata().at("policy"),
              "gp/portfolio+initial-design");
    EXPECT_EQ(suggested.trials(i).configuration().assignments(1).algorithm(),
              artifact.portfolio(i).assignments(1).algorithm());
  }

  // A new version: the old study stays on @1, a new study gets @2.
  EXPECT_EQ(Publish(2.0), 2);
  v1::CreateStudyResponse newer;
  ASSERT_TRUE(CreateGpStudy("newer", "", &newer).ok());
  EXPECT_EQ(newer.study().bound_model(), "pipelines@2");
  server_.Restart();
  v1::GetStudyRequest get;
  get.set_study_id("auto");
  v1::GetStudyResponse got;
  ASSERT_TRUE(
      server_.stub().GetStudy(ContextWithDeadline().get(), get, &got).ok());
  EXPECT_EQ(got.study().bound_model(), "pipelines@1");
  v1::CreateStudyResponse pinned;
  ASSERT_TRUE(CreateGpStudy("pinned", "pipelines@1", &pinned).ok());
  EXPECT_EQ(pinned.study().bound_model(), "pipelines@1");
}

TEST_F(RegistryServiceTest, NamedModelsMustExistAndMatch) {
  Publish(1.0);
  v1::CreateStudyResponse created;
  grpc::Status status = CreateGpStudy("missing", "nope", &created);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(status.error_message(), HasSubstr("spec.algorithm.model"));
  status = CreateGpStudy("bad", "pipelines@x", &created);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  v1::CreateStudyRequest request;
  request.set_study_id("mismatch");
  v1::SearchSpace space = registry::testing::TestSearchSpace();
  // A wider range than the model's: not compatible.
  space.mutable_stages(1)
      ->mutable_algorithms(0)
      ->mutable_parameters(0)
      ->mutable_int_domain()
      ->set_high(5000);
  *request.mutable_spec()->mutable_search_space() = space;
  request.mutable_spec()->mutable_objective()->set_goal(v1::GOAL_MAXIMIZE);
  request.mutable_spec()->mutable_algorithm()->set_kind(v1::ALGORITHM_KIND_GP);
  request.mutable_spec()->mutable_algorithm()->set_model("pipelines");
  status = server_.stub().CreateStudy(ContextWithDeadline().get(), request,
                                      &created);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(),
              HasSubstr("\"n_estimators\": the study's range [10, 5000] is "
                        "not within the model's [10, 500]"));
  // Without naming a model, a non-matching space binds to none.
  request.mutable_spec()->mutable_algorithm()->clear_model();
  ASSERT_TRUE(server_.stub()
                  .CreateStudy(ContextWithDeadline().get(), request, &created)
                  .ok());
  EXPECT_EQ(created.study().bound_model(), "");
}

TEST_F(RegistryServiceTest, PartialBindingRecordsTheMapping) {
  Publish(1.0);
  v1::CreateStudyRequest request;
  request.set_study_id("partial");
  v1::SearchSpace space = registry::testing::TestSearchSpace();
  // RF replaced by ExtraTrees (new; RF masked), fewer PCA components.
  space.mutable_stages(1)->mutable_algorithms(0)->set_name("ExtraTrees");
  space.mutable_stages(0)
      ->mutable_algorithms(1)
      ->mutable_parameters(0)
      ->mutable_int_domain()
      ->set_high(4);
  *request.mutable_spec()->mutable_search_space() = space;
  request.mutable_spec()->mutable_objective()->set_goal(v1::GOAL_MAXIMIZE);
  request.mutable_spec()->mutable_algorithm()->set_kind(v1::ALGORITHM_KIND_GP);
  v1::CreateStudyResponse created;
  ASSERT_TRUE(server_.stub()
                  .CreateStudy(ContextWithDeadline().get(), request, &created)
                  .ok());
  EXPECT_EQ(created.study().bound_model(), "pipelines@1");
  const auto& metadata = created.study().metadata();
  EXPECT_EQ(metadata.at("binding"), "partial");
  EXPECT_EQ(metadata.at("binding_new_algorithms"), "estimator/ExtraTrees");
  EXPECT_EQ(metadata.at("binding_masked_algorithms"), "estimator/RF");
  EXPECT_EQ(metadata.at("binding_narrowed_parameters"),
            "preprocessor/pca/n_components [1, 4] within [1, 10]");
  // The portfolio's entries outside the study's space are skipped: the RF
  // entry goes, the GBT one (3 components) stays.
  v1::SuggestRequest suggest;
  suggest.set_study_id("partial");
  v1::SuggestResponse suggested;
  ASSERT_TRUE(server_.stub()
                  .Suggest(ContextWithDeadline().get(), suggest, &suggested)
                  .ok());
  EXPECT_EQ(suggested.trials(0).metadata().at("policy"), "gp/portfolio");
  EXPECT_EQ(suggested.trials(0).configuration().assignments(1).algorithm(),
            "GBT");
}

// A model learned from history in the open namespace (no tokens) belongs to
// it: after a restart with tokens on the same database and registry no owner
// is listed it, binds to it by default or by name; back in open mode it
// serves again, and the open study bound to it loads.
TEST(RegistryOwnerScopeTest, ModelLearnedInOpenModeNeverServesTokenOwners) {
  ScopedTempDir dir;
  v1::ModelArtifact learned = registry::testing::TestArtifact(1.0);
  learned.mutable_provenance()->set_from_history(true);
  learned.mutable_provenance()->set_owner("");
  ASSERT_TRUE(
      registry::WriteModelVersion(dir.File("models"), "history-open", learned)
          .ok());
  server::ServerOptions options;
  options.db_path = dir.File("metaopt.db");
  options.models_dir = dir.File("models");
  options.models_poll_interval = absl::ZeroDuration();
  const auto create = [](TestServer& server, const std::string& token,
                         const std::string& id, const std::string& model,
                         v1::CreateStudyResponse* response) {
    auto context = ContextWithDeadline();
    if (!token.empty()) {
      context->AddMetadata("authorization", "Bearer " + token);
    }
    return server.stub().CreateStudy(context.get(), GpStudyRequest(id, model),
                                     response);
  };
  const auto listed = [](TestServer& server, const std::string& token) {
    auto context = ContextWithDeadline();
    if (!token.empty()) {
      context->AddMetadata("authorization", "Bearer " + token);
    }
    v1::ListModelsResponse response;
    EXPECT_TRUE(
        server.stub().ListModels(context.get(), {}, &response).ok());
    return response.models_size();
  };
  {
    TestServer open(options);
    EXPECT_EQ(listed(open, ""), 1);
    v1::CreateStudyResponse created;
    ASSERT_TRUE(create(open, "", "open-study", "", &created).ok());
    EXPECT_EQ(created.study().bound_model(), "history-open@1");
  }
  const std::string token = "alice-token-0123456789abcdef";
  options.tokens_file = dir.File("tokens");
  std::ofstream(options.tokens_file) << "alice:" << token << "\n";
  {
    TestServer tokens(options);
    EXPECT_EQ(listed(tokens, token), 0);
    v1::CreateStudyResponse created;
    ASSERT_TRUE(create(tokens, token, "alice-study", "", &created).ok());
    EXPECT_EQ(created.study().bound_model(), "");
    grpc::Status named =
        create(tokens, token, "alice-named", "history-open", &created);
    EXPECT_EQ(named.error_code(), grpc::StatusCode::NOT_FOUND);
    EXPECT_THAT(named.error_message(), HasSubstr("serves only theirs"));
  }
  options.tokens_file.clear();
  {
    TestServer open(options);
    EXPECT_EQ(listed(open, ""), 1);
    v1::GetStudyRequest get;
    get.set_study_id("open-study");
    v1::GetStudyResponse got;
    ASSERT_TRUE(
        open.stub().GetStudy(ContextWithDeadline().get(), get, &got).ok());
    EXPECT_EQ(got.study().bound_model(), "history-open@1");
    v1::SuggestRequest suggest;
    suggest.set_study_id("open-study");
    v1::SuggestResponse suggested;
    EXPECT_TRUE(open.stub()
                    .Suggest(ContextWithDeadline().get(), suggest, &suggested)
                    .ok());
  }
}

}  // namespace
}  // namespace metaopt::testing

namespace metaopt::testing {
namespace {

TEST_F(RegistryServiceTest, DatasetFeaturesChooseTheTaskAwareDesign) {
  ASSERT_TRUE(registry::WriteModelVersion(dir_.File("models"), "pipelines",
                                          ArtifactWithTaskDesign())
                  .ok());
  ASSERT_TRUE(server_.server().models().PollOnce().ok());
  v1::ListModelsResponse listed = ListModels();
  ASSERT_EQ(listed.models_size(), 1);
  EXPECT_THAT(listed.models(0).task_design(),
              HasSubstr("metabu, 1 dimensions, 1 meta-features, 2 archived"));
  const v1::ModelArtifact artifact = ArtifactWithTaskDesign();
  auto first_suggestion = [&](const std::string& id,
                              const std::map<std::string, double>& features,
                              v1::CreateStudyResponse* created) {
    EXPECT_TRUE(CreateGpStudy(id, "", created, features).ok());
    v1::SuggestRequest suggest;
    suggest.set_study_id(id);
    v1::SuggestResponse suggested;
    EXPECT_TRUE(server_.stub()
                    .Suggest(ContextWithDeadline().get(), suggest, &suggested)
                    .ok());
    return suggested.trials(0);
  };

  // Near task "b": its best configuration comes first.
  v1::CreateStudyResponse near_b;
  v1::Trial trial = first_suggestion("near-b", {{"f", 9.0}, {"g", 1}}, &near_b);
  EXPECT_EQ(trial.metadata().at("policy"), "gp/metabu");
  EXPECT_EQ(trial.configuration().assignments(1).algorithm(),
            artifact.portfolio(1).assignments(1).algorithm());
  EXPECT_EQ(near_b.study().metadata().at("zero_shot_design"), "metabu");
  EXPECT_EQ(near_b.study().metadata().at("design_neighbours"), "b");
  EXPECT_EQ(near_b.study().metadata().at("imputed_features"), "none");

  // "f" missing: imputed with its training mean (0), which is task "a".
  v1::CreateStudyResponse imputed;
  trial = first_suggestion("imputed", {{"g", 1}}, &imputed);
  EXPECT_EQ(trial.configuration().assignments(1).algorithm(),
            artifact.portfolio(0).assignments(1).algorithm());
  EXPECT_EQ(imputed.study().metadata().at("imputed_features"), "f");
  EXPECT_EQ(imputed.study().metadata().at("design_neighbours"), "a");

  // No features at all: the fixed portfolio, as before.
  v1::CreateStudyResponse fixed;
  trial = first_suggestion("fixed", {}, &fixed);
  EXPECT_EQ(trial.metadata().at("policy"), "gp/portfolio");
  EXPECT_EQ(fixed.study().metadata().at("zero_shot_design"), "portfolio");
  EXPECT_FALSE(fixed.study().metadata().contains("imputed_features"));
}

// A design over Dida meta-features: the study's features come from its
// dataset sample through the artifact's extractor, and a study without a
// sample is refused.
TEST_F(RegistryServiceTest, DidaDesignReadsTheDatasetSample) {
  v1::ModelArtifact artifact = ArtifactWithTaskDesign();
  surrogate::DidaArchitecture architecture;
  architecture.pair_width = 3;
  architecture.interaction = 4;
  architecture.second_layer = 0;
  architecture.hidden = 4;
  architecture.output = 1;
  space::Rng rng(2);
  absl::StatusOr<surrogate::Dida> dida =
      surrogate::Dida::Create(architecture, rng);
  ASSERT_TRUE(dida.ok());
  dida->Write(surrogate::kDidaPrefix, &artifact);
  v1::DatasetSample sample;
  for (int k = 0; k < 2; ++k) sample.add_column_kinds(v1::COLUMN_KIND_NUMERIC);
  for (int i = 0; i < 8; ++i) sample.add_values(0.4 * i - 1.4);
  sample.set_num_targets(1);
  for (int i = 0; i < 4; ++i) sample.add_targets(i % 2);
  const double f =
      dida->Forward(*surrogate::RawSampleFromProto(sample))(0);
  v1::TaskDesign& design = *artifact.mutable_task_design();
  design.set_feature_source("dida");
  design.set_feature_names(0, "dida_0");
  // Task "b" sits at the sample's features, "a" far from them.
  design.mutable_tasks(0)->set_embedding(0, f + 10);
  design.mutable_tasks(1)->set_embedding(0, f);
  ASSERT_TRUE(
      registry::WriteModelVersion(dir_.File("models"), "pipelines", artifact)
          .ok());
  ASSERT_TRUE(server_.server().models().PollOnce().ok());

  v1::CreateStudyResponse created;
  grpc::Status status = CreateGpStudy("no-sample", "", &created, {{"f", 0}});
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(),
              HasSubstr("spec.dataset_sample: absent"));

  v1::CreateStudyRequest request = GpStudyRequest("with-sample", "");
  *request.mutable_spec()->mutable_dataset_sample() = sample;
  status = server_.stub().CreateStudy(ContextWithDeadline().get(), request,
                                      &created);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(created.study().metadata().at("design_neighbours"), "b");
  EXPECT_EQ(created.study().metadata().at("imputed_features"), "none");
  v1::SuggestRequest suggest;
  suggest.set_study_id("with-sample");
  v1::SuggestResponse suggested;
  ASSERT_TRUE(server_.stub()
                  .Suggest(ContextWithDeadline().get(), suggest, &suggested)
                  .ok());
  EXPECT_EQ(suggested.trials(0).configuration().assignments(1).algorithm(),
            artifact.portfolio(1).assignments(1).algorithm());
}

// A design over Dataset2Vec meta-features (feature_source "d2v"): as with
// Dida, CreateStudy computes them from the sample with the artifact's
// extractor, and refuses a study without one.
TEST_F(RegistryServiceTest, D2vDesignReadsTheDatasetSample) {
  v1::ModelArtifact artifact = ArtifactWithTaskDesign();
  surrogate::Dataset2VecArchitecture architecture;
  architecture.f_width = architecture.g_width = architecture.h_width = 4;
  architecture.output = 1;
  space::Rng rng(2);
  absl::StatusOr<surrogate::Dataset2Vec> d2v =
      surrogate::Dataset2Vec::Create(architecture, rng);
  ASSERT_TRUE(d2v.ok());
  d2v->Write(surrogate::kDesignD2vPrefix, &artifact);
  v1::DatasetSample sample;
  for (int k = 0; k < 2; ++k) sample.add_column_kinds(v1::COLUMN_KIND_NUMERIC);
  for (int i = 0; i < 8; ++i) sample.add_values(0.4 * i - 1.4);
  sample.set_num_targets(1);
  for (int i = 0; i < 4; ++i) sample.add_targets(i % 2);
  const double f = d2v->Forward(*surrogate::RawSampleFromProto(sample))(0);
  v1::TaskDesign& design = *artifact.mutable_task_design();
  design.set_feature_source("d2v");
  design.set_feature_names(0, "d2v_0");
  design.mutable_tasks(0)->set_embedding(0, f + 10);
  design.mutable_tasks(1)->set_embedding(0, f);
  ASSERT_TRUE(
      registry::WriteModelVersion(dir_.File("models"), "pipelines", artifact)
          .ok());
  ASSERT_TRUE(server_.server().models().PollOnce().ok());

  v1::CreateStudyResponse created;
  grpc::Status status = CreateGpStudy("no-sample", "", &created, {{"f", 0}});
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(),
              HasSubstr("spec.dataset_sample: absent"));

  v1::CreateStudyRequest request = GpStudyRequest("with-sample", "");
  *request.mutable_spec()->mutable_dataset_sample() = sample;
  status = server_.stub().CreateStudy(ContextWithDeadline().get(), request,
                                      &created);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(created.study().metadata().at("design_neighbours"), "b");
  EXPECT_EQ(created.study().metadata().at("imputed_features"), "none");
}

}  // namespace
}  // namespace metaopt::testing
