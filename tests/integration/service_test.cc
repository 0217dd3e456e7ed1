// End-to-end tests of the gRPC service: the real server on 127.0.0.1 port 0,
// real stubs.
#include <atomic>
#include <cmath>
#include <limits>
#include <set>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/temp_dir.h"
#include "tests/testutil/test_server.h"
#include "tests/testutil/test_specs.h"

namespace metaopt::testing {
namespace {

using ::testing::HasSubstr;

class ServiceTest : public ::testing::Test {
 protected:
  ServiceTest() : server_(Options()) {}

  server::ServerOptions Options() {
    server::ServerOptions options;
    options.db_path = dir_.File("metaopt.db");
    options.models_dir = dir_.File("models");
    return options;
  }

  grpc::Status Create(const std::string& id, const v1::StudySpec& spec,
                      v1::CreateStudyResponse* response = nullptr) {
    v1::CreateStudyRequest request;
    request.set_study_id(id);
    *request.mutable_spec() = spec;
    v1::CreateStudyResponse ignored;
    return server_.stub().CreateStudy(ContextWithDeadline().get(), request,
                                      response ? response : &ignored);
  }

  std::vector<v1::Trial> Suggest(const std::string& id, int count,
                                 const std::string& client = "") {
    v1::SuggestRequest request;
    request.set_study_id(id);
    request.set_count(count);
    request.set_client_id(client);
    v1::SuggestResponse response;
    grpc::Status status =
        server_.stub().Suggest(ContextWithDeadline().get(), request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return {response.trials().begin(), response.trials().end()};
  }

  grpc::Status Observe(const std::string& id, int64_t trial_id, double value,
                       v1::ObserveResponse* response = nullptr) {
    v1::ObserveRequest request;
    request.set_study_id(id);
    request.set_trial_id(trial_id);
    request.set_value(value);
    v1::ObserveResponse ignored;
    return server_.stub().Observe(ContextWithDeadline().get(), request,
                                  response ? response : &ignored);
  }

  v1::Study Get(const std::string& id) {
    v1::GetStudyRequest request;
    request.set_study_id(id);
    v1::GetStudyResponse response;
    grpc::Status status = server_.stub().GetStudy(ContextWithDeadline().get(),
                                                  request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return response.study();
  }

  ScopedTempDir dir_;
  TestServer server_;
};

void ExpectCode(const grpc::Status& status, grpc::StatusCode code,
                const std::string& substring) {
  EXPECT_EQ(status.error_code(), code) << status.error_message();
  EXPECT_THAT(status.error_message(), HasSubstr(substring));
}

TEST_F(ServiceTest, AskTellLoopTracksTheBestTrial) {
  v1::CreateStudyResponse created;
  ASSERT_TRUE(Create("loop", PipelineSpec(), &created).ok());
  EXPECT_TRUE(created.created());
  double best = -1;
  int64_t last_id = 0;
  for (int round = 0; round < 10; ++round) {
    std::vector<v1::Trial> trials = Suggest("loop", 3);
    ASSERT_EQ(trials.size(), 3u);
    for (const v1::Trial& trial : trials) {
      EXPECT_EQ(trial.state(), v1::TRIAL_STATE_ACTIVE);
      EXPECT_GT(trial.id(), last_id);  // monotonic ids
      last_id = trial.id();
      ASSERT_EQ(trial.configuration().assignments_size(), 2);
      const double value = PipelineAccuracy(trial.configuration());
      best = std::max(best, value);
      v1::ObserveResponse observed;
      ASSERT_TRUE(Observe("loop", trial.id(), value, &observed).ok());
      EXPECT_EQ(observed.trial().state(), v1::TRIAL_STATE_COMPLETED);
      EXPECT_DOUBLE_EQ(observed.trial().value(), value);
    }
  }
  v1::Study study = Get("loop");
  EXPECT_EQ(study.trial_count(), 30);
  EXPECT_DOUBLE_EQ(study.best_trial().value(), best);
  EXPECT_EQ(study.state(), v1::STUDY_STATE_ACTIVE);
}

TEST_F(ServiceTest, CreateStudyIsCreateOrGet) {
  v1::CreateStudyResponse first, second;
  ASSERT_TRUE(Create("same", PipelineSpec(), &first).ok());
  ASSERT_TRUE(Create("same", PipelineSpec(), &second).ok());
  EXPECT_TRUE(first.created());
  EXPECT_FALSE(second.created());
  EXPECT_EQ(second.study().study_id(), "same");
  ExpectCode(
      Create("same", PipelineSpec(v1::ALGORITHM_KIND_RANDOM, /*seed=*/99)),
      grpc::StatusCode::ALREADY_EXISTS, "different spec");
}

TEST_F(ServiceTest, CreateStudyRejectsInvalidInput) {
  ExpectCode(Create("", PipelineSpec()), grpc::StatusCode::INVALID_ARGUMENT,
             "study_id");
  ExpectCode(Create("bad id!", PipelineSpec()),
             grpc::StatusCode::INVALID_ARGUMENT, "study_id");
  v1::StudySpec bad = PipelineSpec();
  auto* c = bad.mutable_search_space()
                ->mutable_stages(1)
                ->mutable_algorithms(0)
                ->mutable_parameters(0);
  c->mutable_float_domain()->set_low(5);
  c->mutable_float_domain()->set_high(1);
  ExpectCode(Create("bad", bad), grpc::StatusCode::INVALID_ARGUMENT,
             "spec.search_space.stages[1].algorithms[0].parameters[0]");
  v1::StudySpec nan = PipelineSpec();
  nan.mutable_search_space()
      ->mutable_stages(1)
      ->mutable_algorithms(0)
      ->mutable_parameters(0)
      ->mutable_float_domain()
      ->set_high(std::numeric_limits<double>::quiet_NaN());
  ExpectCode(Create("nan", nan), grpc::StatusCode::INVALID_ARGUMENT,
             "spec.search_space");
  v1::StudySpec unset = PipelineSpec();
  unset.clear_algorithm();
  ExpectCode(Create("unset", unset), grpc::StatusCode::INVALID_ARGUMENT,
             "spec.algorithm");
  v1::StudySpec off_catalogue = CatalogueSpec(3);
  (*off_catalogue.mutable_candidates(1)
        ->mutable_assignments(0)
        ->mutable_parameters())["x"]
      .set_number(2.0);
  ExpectCode(Create("cat", off_catalogue), grpc::StatusCode::INVALID_ARGUMENT,
             "spec.candidates[1]");
  // Nothing was stored.
  v1::ListStudiesResponse listed;
  ASSERT_TRUE(server_.stub()
                  .ListStudies(ContextWithDeadline().get(),
                               v1::ListStudiesRequest(), &listed)
                  .ok());
  EXPECT_EQ(listed.studies_size(), 0);
}

TEST_F(ServiceTest, KindsThatCannotServeASpecSayWhy) {
  for (v1::AlgorithmKind kind :
       {v1::ALGORITHM_KIND_DEEPPIPE, v1::ALGORITHM_KIND_PMF,
        v1::ALGORITHM_KIND_MOSAIC}) {
    grpc::Status status =
        Create(absl::StrCat("k", static_cast<int>(kind)), PipelineSpec(kind));
    if (status.ok()) continue;
    if (kind == v1::ALGORITHM_KIND_PMF) {
      // PMF works over a trained catalogue: without a registry model over
      // this space there is nothing to serve.
      ExpectCode(status, grpc::StatusCode::FAILED_PRECONDITION,
                 "registry model");
    } else {
      ExpectCode(status, grpc::StatusCode::UNIMPLEMENTED,
                 v1::AlgorithmKind_Name(kind));
    }
  }
}

TEST_F(ServiceTest, GetAndDeleteUnknownStudiesAreNotFound) {
  v1::GetStudyRequest get;
  get.set_study_id("nope");
  v1::GetStudyResponse got;
  ExpectCode(server_.stub().GetStudy(ContextWithDeadline().get(), get, &got),
             grpc::StatusCode::NOT_FOUND, "nope");
  v1::DeleteStudyRequest del;
  del.set_study_id("nope");
  v1::DeleteStudyResponse deleted;
  ExpectCode(
      server_.stub().DeleteStudy(ContextWithDeadline().get(), del, &deleted),
      grpc::StatusCode::NOT_FOUND, "nope");
  v1::SuggestRequest suggest;
  suggest.set_study_id("nope");
  v1::SuggestResponse suggested;
  ExpectCode(
      server_.stub().Suggest(ContextWithDeadline().get(), suggest, &suggested),
      grpc::StatusCode::NOT_FOUND, "nope");
  ExpectCode(Observe("nope", 1, 0.5), grpc::StatusCode::NOT_FOUND, "nope");
}

TEST_F(ServiceTest, DeleteStudyRemovesTrials) {
  ASSERT_TRUE(Create("gone", PipelineSpec()).ok());
  std::vector<v1::Trial> trials = Suggest("gone", 2);
  ASSERT_TRUE(Observe("gone", trials[0].id(), 0.5).ok());
  v1::DeleteStudyRequest del;
  del.set_study_id("gone");
  v1::DeleteStudyResponse deleted;
  ASSERT_TRUE(server_.stub()
                  .DeleteStudy(ContextWithDeadline().get(), del, &deleted)
                  .ok());
  v1::ListTrialsRequest list;
  list.set_study_id("gone");
  v1::ListTrialsResponse listed;
  ExpectCode(
      server_.stub().ListTrials(ContextWithDeadline().get(), list, &listed),
      grpc::StatusCode::NOT_FOUND, "gone");
  // The id can be reused with a fresh history.
  ASSERT_TRUE(Create("gone", PipelineSpec()).ok());
  EXPECT_EQ(Get("gone").trial_count(), 0);
  server_.Restart();
  EXPECT_EQ(Get("gone").trial_count(), 0);
}

TEST_F(ServiceTest, SuggestValidatesCountAndClientId) {
  ASSERT_TRUE(Create("s", PipelineSpec()).ok());
  for (int count : {-1, 1001}) {
    v1::SuggestRequest request;
    request.set_study_id("s");
    request.set_count(count);
    v1::SuggestResponse response;
    ExpectCode(
        server_.stub().Suggest(ContextWithDeadline().get(), request, &response),
        grpc::StatusCode::INVALID_ARGUMENT, absl::StrCat("count: ", count));
  }
  v1::SuggestRequest request;
  request.set_study_id("s");
  request.set_client_id(std::string(200, 'c'));
  v1::SuggestResponse response;
  ExpectCode(
      server_.stub().Suggest(ContextWithDeadline().get(), request, &response),
      grpc::StatusCode::INVALID_ARGUMENT, "client_id");
  EXPECT_EQ(Suggest("s", 0).size(), 1u);  // 0 means 1
}

TEST_F(ServiceTest, SuggestReturnsAClientsActiveTrialsFirst) {
  ASSERT_TRUE(Create("idem", PipelineSpec()).ok());
  std::vector<v1::Trial> first = Suggest("idem", 2, "worker-1");
  std::vector<v1::Trial> retry = Suggest("idem", 2, "worker-1");
  ASSERT_EQ(retry.size(), 2u);
  EXPECT_EQ(retry[0].id(), first[0].id());
  EXPECT_EQ(retry[1].id(), first[1].id());
  // Asking for more returns the held ones plus new ones.
  std::vector<v1::Trial> more = Suggest("idem", 3, "worker-1");
  ASSERT_EQ(more.size(), 3u);
  EXPECT_EQ(more[0].id(), first[0].id());
  EXPECT_GT(more[2].id(), first[1].id());
  // Another client gets new trials.
  std::vector<v1::Trial> other = Suggest("idem", 1, "worker-2");
  EXPECT_GT(other[0].id(), more[2].id());
  // Once observed, a trial is no longer handed back.
  ASSERT_TRUE(Observe("idem", first[0].id(), 0.3).ok());
  std::vector<v1::Trial> after = Suggest("idem", 1, "worker-1");
  EXPECT_EQ(after[0].id(), first[1].id());
}

TEST_F(ServiceTest, CatalogueStudiesNeverRepeatAndRunOut) {
  ASSERT_TRUE(Create("cat", CatalogueSpec(10)).ok());
  std::set<double> seen;
  std::vector<v1::Trial> batch = Suggest("cat", 4);
  ASSERT_EQ(batch.size(), 4u);
  for (const v1::Trial& t : batch) {
    seen.insert(t.configuration().assignments(0).parameters().at("x").number());
    ASSERT_TRUE(Observe("cat", t.id(), 1.0).ok());
  }
  std::vector<v1::Trial> pending = Suggest("cat", 3);  // left ACTIVE
  for (const v1::Trial& t : pending) {
    seen.insert(t.configuration().assignments(0).parameters().at("x").number());
  }
  std::vector<v1::Trial> rest = Suggest("cat", 10);
  EXPECT_EQ(rest.size(), 3u);  // only 3 untried entries remain
  for (const v1::Trial& t : rest) {
    seen.insert(t.configuration().assignments(0).parameters().at("x").number());
  }
  EXPECT_EQ(seen.size(), 10u);
  EXPECT_TRUE(Suggest("cat", 1).empty());
  EXPECT_EQ(Get("cat").state(), v1::STUDY_STATE_EXHAUSTED);
}

TEST_F(ServiceTest, ObserveValidatesAndCompletesOnce) {
  ASSERT_TRUE(Create("obs", PipelineSpec()).ok());
  std::vector<v1::Trial> trials = Suggest("obs", 3);
  ExpectCode(
      Observe("obs", trials[0].id(), std::numeric_limits<double>::quiet_NaN()),
      grpc::StatusCode::INVALID_ARGUMENT, "value");
  ExpectCode(
      Observe("obs", trials[0].id(), std::numeric_limits<double>::infinity()),
      grpc::StatusCode::INVALID_ARGUMENT, "value");
  ExpectCode(Observe("obs", 99, 0.5), grpc::StatusCode::NOT_FOUND,
             "no trial 99");
  ExpectCode(Observe("obs", 0, 0.5), grpc::StatusCode::INVALID_ARGUMENT,
             "trial_id");
  {
    v1::ObserveRequest request;
    request.set_study_id("obs");
    request.set_trial_id(trials[0].id());
    v1::ObserveResponse response;
    ExpectCode(
        server_.stub().Observe(ContextWithDeadline().get(), request, &response),
        grpc::StatusCode::INVALID_ARGUMENT, "value or failure");
    request.mutable_failure()->set_state(v1::TRIAL_STATE_COMPLETED);
    ExpectCode(
        server_.stub().Observe(ContextWithDeadline().get(), request, &response),
        grpc::StatusCode::INVALID_ARGUMENT, "failure.state");
    (*request.mutable_metrics())["loss"] =
        std::numeric_limits<double>::infinity();
    request.mutable_failure()->set_state(v1::TRIAL_STATE_FAILED);
    ExpectCode(
        server_.stub().Observe(ContextWithDeadline().get(), request, &response),
        grpc::StatusCode::INVALID_ARGUMENT, "metrics[\"loss\"]");
  }
  ASSERT_TRUE(Observe("obs", trials[0].id(), 0.5).ok());
  ExpectCode(Observe("obs", trials[0].id(), 0.6),
             grpc::StatusCode::FAILED_PRECONDITION,
             "already TRIAL_STATE_COMPLETED");
  // Failures with reasons.
  v1::ObserveRequest failed;
  failed.set_study_id("obs");
  failed.set_trial_id(trials[1].id());
  failed.mutable_failure()->set_state(v1::TRIAL_STATE_INFEASIBLE);
  failed.mutable_failure()->set_reason("out of memory");
  (*failed.mutable_metrics())["seconds"] = 12.5;
  v1::ObserveResponse response;
  ASSERT_TRUE(server_.stub()
                  .Observe(ContextWithDeadline().get(), failed, &response)
                  .ok());
  EXPECT_EQ(response.trial().state(), v1::TRIAL_STATE_INFEASIBLE);
  EXPECT_EQ(response.trial().failure_reason(), "out of memory");
  EXPECT_FALSE(response.trial().has_value());
  EXPECT_DOUBLE_EQ(response.trial().metrics().at("seconds"), 12.5);
  // The best trial ignores failures.
  EXPECT_EQ(Get("obs").best_trial().id(), trials[0].id());
}

TEST_F(ServiceTest, ObserveRecordsExternalConfigurations) {
  ASSERT_TRUE(Create("ext", PipelineSpec()).ok());
  v1::ObserveRequest request;
  request.set_study_id("ext");
  v1::Configuration* config = request.mutable_configuration();
  v1::Assignment* scaler = config->add_assignments();
  scaler->set_stage("scaler");
  scaler->set_algorithm("standard");
  v1::Assignment* estimator = config->add_assignments();
  estimator->set_stage("estimator");
  estimator->set_algorithm("knn");
  (*estimator->mutable_parameters())["n_neighbors"].set_number(7);
  request.set_value(0.91);
  v1::ObserveResponse response;
  ASSERT_TRUE(server_.stub()
                  .Observe(ContextWithDeadline().get(), request, &response)
                  .ok());
  EXPECT_EQ(response.trial().id(), 1);
  EXPECT_EQ(response.trial().state(), v1::TRIAL_STATE_COMPLETED);
  EXPECT_EQ(Get("ext").best_trial().id(), 1);
  // Out of domain / unknown parameter: rejected, nothing stored.
  (*estimator->mutable_parameters())["n_neighbors"].set_number(500);
  ExpectCode(
      server_.stub().Observe(ContextWithDeadline().get(), request, &response),
      grpc::StatusCode::INVALID_ARGUMENT, "configuration.assignments[1]");
  (*estimator->mutable_parameters())["n_neighbors"].set_number(5);
  (*estimator->mutable_parameters())["weights"].set_category("uniform");
  ExpectCode(
      server_.stub().Observe(ContextWithDeadline().get(), request, &response),
      grpc::StatusCode::INVALID_ARGUMENT, "weights");
  EXPECT_EQ(Get("ext").trial_count(), 1);
}

TEST_F(ServiceTest, ObserveOutsideTheCatalogueIsRejected) {
  ASSERT_TRUE(Create("cat", CatalogueSpec(5)).ok());
  v1::ObserveRequest request;
  request.set_study_id("cat");
  v1::Assignment* a = request.mutable_configuration()->add_assignments();
  a->set_stage("model");
  (*a->mutable_parameters())["x"].set_number(0.3);
  request.set_value(1.0);
  v1::ObserveResponse response;
  ExpectCode(
      server_.stub().Observe(ContextWithDeadline().get(), request, &response),
      grpc::StatusCode::INVALID_ARGUMENT, "catalogue");
  (*a->mutable_parameters())["x"].set_number(0.25);
  EXPECT_TRUE(server_.stub()
                  .Observe(ContextWithDeadline().get(), request, &response)
                  .ok());
}

TEST_F(ServiceTest, FineTuneOnRandomIsFailedPrecondition) {
  ASSERT_TRUE(Create("ft", PipelineSpec()).ok());
  v1::FineTuneRequest request;
  request.set_study_id("ft");
  request.set_steps(10);
  v1::FineTuneResponse response;
  ExpectCode(
      server_.stub().FineTune(ContextWithDeadline().get(), request, &response),
      grpc::StatusCode::FAILED_PRECONDITION, "ALGORITHM_KIND_RANDOM");
  request.set_steps(-3);
  ExpectCode(
      server_.stub().FineTune(ContextWithDeadline().get(), request, &response),
      grpc::StatusCode::INVALID_ARGUMENT, "steps: -3");
}

TEST_F(ServiceTest, GpStudySuggestsFineTunesAndResumesAfterRestart) {
  // Two identical studies get identical histories; one is asked before a
  // restart, the other after: a correctly persisted GP state gives the same
  // suggestion.
  for (const char* id : {"gp", "twin"}) {
    ASSERT_TRUE(Create(id, PipelineSpec(v1::ALGORITHM_KIND_GP)).ok());
  }
  v1::FineTuneRequest fine_tune;
  fine_tune.set_study_id("gp");
  fine_tune.set_steps(50);
  v1::FineTuneResponse tuned;
  ExpectCode(
      server_.stub().FineTune(ContextWithDeadline().get(), fine_tune, &tuned),
      grpc::StatusCode::FAILED_PRECONDITION, "at least 2");
  for (int round = 0; round < 8; ++round) {
    std::vector<v1::Trial> a = Suggest("gp", 2);
    std::vector<v1::Trial> b = Suggest("twin", 2);
    ASSERT_EQ(a.size(), 2u);
    ASSERT_EQ(b.size(), 2u);
    for (int i = 0; i < 2; ++i) {
      EXPECT_EQ(a[i].metadata().at("policy").substr(0, 2), "gp");
      EXPECT_EQ(a[i].configuration().DebugString(),
                b[i].configuration().DebugString());
      ASSERT_TRUE(
          Observe("gp", a[i].id(), PipelineAccuracy(a[i].configuration()))
              .ok());
      ASSERT_TRUE(
          Observe("twin", b[i].id(), PipelineAccuracy(b[i].configuration()))
              .ok());
    }
  }
  for (const char* id : {"gp", "twin"}) {
    fine_tune.set_study_id(id);
    ASSERT_TRUE(server_.stub()
                    .FineTune(ContextWithDeadline().get(), fine_tune, &tuned)
                    .ok());
    EXPECT_LE(tuned.loss_after(), tuned.loss_before());
    EXPECT_GT(tuned.steps_run(), 0);
  }
  const v1::Trial before_restart = Suggest("twin", 1)[0];
  EXPECT_EQ(before_restart.metadata().at("policy"), "gp/ei");
  server_.Restart();
  const v1::Trial after_restart = Suggest("gp", 1)[0];
  EXPECT_EQ(after_restart.configuration().DebugString(),
            before_restart.configuration().DebugString());
}

TEST_F(ServiceTest, GetTrialAndListTrialsPageAndFilter) {
  ASSERT_TRUE(Create("list", PipelineSpec()).ok());
  std::vector<v1::Trial> trials = Suggest("list", 7);
  for (int i = 0; i < 7; i += 2)
    ASSERT_TRUE(Observe("list", trials[i].id(), i).ok());
  v1::GetTrialRequest get;
  get.set_study_id("list");
  get.set_trial_id(3);
  v1::GetTrialResponse got;
  ASSERT_TRUE(
      server_.stub().GetTrial(ContextWithDeadline().get(), get, &got).ok());
  EXPECT_EQ(got.trial().id(), 3);
  EXPECT_EQ(got.trial().state(), v1::TRIAL_STATE_COMPLETED);
  get.set_trial_id(8);
  ExpectCode(server_.stub().GetTrial(ContextWithDeadline().get(), get, &got),
             grpc::StatusCode::NOT_FOUND, "no trial 8");

  std::vector<int64_t> ids;
  v1::ListTrialsRequest list;
  list.set_study_id("list");
  list.set_page_size(2);
  list.set_state(v1::TRIAL_STATE_COMPLETED);
  do {
    v1::ListTrialsResponse page;
    ASSERT_TRUE(server_.stub()
                    .ListTrials(ContextWithDeadline().get(), list, &page)
                    .ok());
    EXPECT_LE(page.trials_size(), 2);
    for (const v1::Trial& t : page.trials()) ids.push_back(t.id());
    list.set_page_token(page.next_page_token());
  } while (!list.page_token().empty());
  EXPECT_EQ(ids, (std::vector<int64_t>{1, 3, 5, 7}));

  list.set_page_token("garbage");
  v1::ListTrialsResponse page;
  ExpectCode(
      server_.stub().ListTrials(ContextWithDeadline().get(), list, &page),
      grpc::StatusCode::INVALID_ARGUMENT, "page_token");
  list.clear_page_token();
  list.set_page_size(5000);
  ExpectCode(
      server_.stub().ListTrials(ContextWithDeadline().get(), list, &page),
      grpc::StatusCode::INVALID_ARGUMENT, "page_size");
}

TEST_F(ServiceTest, ListStudiesIsStableAndPaged) {
  for (const char* id : {"c", "a", "e", "b", "d"})
    ASSERT_TRUE(Create(id, PipelineSpec()).ok());
  std::vector<std::string> ids;
  v1::ListStudiesRequest request;
  request.set_page_size(2);
  int pages = 0;
  do {
    v1::ListStudiesResponse response;
    ASSERT_TRUE(
        server_.stub()
            .ListStudies(ContextWithDeadline().get(), request, &response)
            .ok());
    for (const v1::Study& s : response.studies()) ids.push_back(s.study_id());
    request.set_page_token(response.next_page_token());
    ++pages;
  } while (!request.page_token().empty());
  EXPECT_EQ(ids, (std::vector<std::string>{"a", "b", "c", "d", "e"}));
  EXPECT_EQ(pages, 3);
}

// Pages are bounded by bytes too: four studies of about 290 KB under a 1 MiB
// message limit (was RESOURCE_EXHAUSTED for the first page).
TEST(ListStudiesSizeTest, PagesFitTheMessageLimit) {
  ScopedTempDir dir;
  server::ServerOptions options;
  options.db_path = dir.File("metaopt.db");
  options.models_dir = dir.File("models");
  options.max_message_bytes = 1 << 20;
  TestServer server(options);
  const v1::StudySpec spec = CatalogueSpec(9600);
  ASSERT_GT(spec.ByteSizeLong(), 280'000u);
  for (const char* id : {"a", "b", "c", "d"}) {
    v1::CreateStudyRequest create;
    create.set_study_id(id);
    *create.mutable_spec() = spec;
    v1::CreateStudyResponse created;
    ASSERT_TRUE(server.stub()
                    .CreateStudy(ContextWithDeadline().get(), create, &created)
                    .ok());
  }
  std::vector<std::string> ids;
  v1::ListStudiesRequest request;
  int pages = 0;
  do {
    v1::ListStudiesResponse response;
    const grpc::Status status = server.stub().ListStudies(
        ContextWithDeadline().get(), request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_LE(response.ByteSizeLong(), 1u << 20);
    for (const v1::Study& s : response.studies()) ids.push_back(s.study_id());
    request.set_page_token(response.next_page_token());
    ++pages;
  } while (!request.page_token().empty());
  EXPECT_EQ(ids, (std::vector<std::string>{"a", "b", "c", "d"}));
  EXPECT_GE(pages, 2);
}

TEST_F(ServiceTest, ListModelsAnswers) {
  v1::ListModelsResponse response;
  ASSERT_TRUE(server_.stub()
                  .ListModels(ContextWithDeadline().get(),
                              v1::ListModelsRequest(), &response)
                  .ok());
}

TEST_F(ServiceTest, RestartKeepsStudiesAndTrials) {
  ASSERT_TRUE(Create("durable", PipelineSpec()).ok());
  std::vector<v1::Trial> trials = Suggest("durable", 4, "w");
  ASSERT_TRUE(Observe("durable", trials[0].id(), 0.7).ok());
  ASSERT_TRUE(Observe("durable", trials[1].id(), 0.9).ok());
  const v1::Study before = Get("durable");
  server_.Restart();
  const v1::Study after = Get("durable");
  EXPECT_EQ(after.trial_count(), 4);
  EXPECT_EQ(after.best_trial().id(), trials[1].id());
  EXPECT_EQ(after.DebugString(), before.DebugString());
  // Held ACTIVE trials come back to their client; ids continue.
  std::vector<v1::Trial> again = Suggest("durable", 3, "w");
  ASSERT_EQ(again.size(), 3u);
  EXPECT_EQ(again[0].id(), trials[2].id());
  EXPECT_EQ(again[1].id(), trials[3].id());
  EXPECT_EQ(again[2].id(), 5);
}

TEST_F(ServiceTest, SameSeedAndHistoryGiveTheSameSuggestions) {
  ASSERT_TRUE(Create("r1", PipelineSpec(v1::ALGORITHM_KIND_RANDOM, 42)).ok());
  ASSERT_TRUE(Create("r2", PipelineSpec(v1::ALGORITHM_KIND_RANDOM, 42)).ok());
  for (int i = 0; i < 3; ++i) {
    v1::Trial a = Suggest("r1", 1)[0];
    v1::Trial b = Suggest("r2", 1)[0];
    EXPECT_EQ(a.configuration().DebugString(), b.configuration().DebugString());
    ASSERT_TRUE(Observe("r1", a.id(), 0.1 * i).ok());
    ASSERT_TRUE(Observe("r2", b.id(), 0.1 * i).ok());
  }
}

TEST_F(ServiceTest, SixteenClientsOnOneStudyLoseNothing) {
  ASSERT_TRUE(Create("busy", PipelineSpec()).ok());
  constexpr int kThreads = 16;
  constexpr int kRounds = 20;
  std::vector<std::vector<int64_t>> observed(kThreads);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto stub = v1::OptimizerService::NewStub(server_.channel());
      for (int r = 0; r < kRounds; ++r) {
        v1::SuggestRequest request;
        request.set_study_id("busy");
        request.set_count(1 + r % 3);
        request.set_client_id(absl::StrCat("worker-", t));
        v1::SuggestResponse response;
        if (!stub->Suggest(ContextWithDeadline().get(), request, &response)
                 .ok()) {
          ++failures;
          continue;
        }
        for (const v1::Trial& trial : response.trials()) {
          v1::ObserveRequest observe;
          observe.set_study_id("busy");
          observe.set_trial_id(trial.id());
          observe.set_value(PipelineAccuracy(trial.configuration()));
          v1::ObserveResponse done;
          if (stub->Observe(ContextWithDeadline().get(), observe, &done).ok()) {
            observed[t].push_back(trial.id());
          } else {
            ++failures;
          }
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  absl::flat_hash_set<int64_t> ids;
  size_t total = 0;
  for (const auto& list : observed) {
    for (int64_t id : list) {
      EXPECT_TRUE(ids.insert(id).second) << "trial " << id << " observed twice";
      ++total;
    }
  }
  // Every acknowledged observation is there, after a restart too.
  server_.Restart();
  v1::ListTrialsRequest list;
  list.set_study_id("busy");
  list.set_page_size(1000);
  list.set_state(v1::TRIAL_STATE_COMPLETED);
  v1::ListTrialsResponse page;
  ASSERT_TRUE(
      server_.stub().ListTrials(ContextWithDeadline().get(), list, &page).ok());
  EXPECT_EQ(static_cast<size_t>(page.trials_size()), total);
  for (const v1::Trial& trial : page.trials())
    EXPECT_TRUE(ids.contains(trial.id()));
  EXPECT_EQ(Get("busy").trial_count(), static_cast<int64_t>(total));
}

// Far more concurrent calls than workers: the extra calls wait in the work
// pool's queue, and every one of them succeeds (the synchronous server
// answered RESOURCE_EXHAUSTED once its thread quota was used up).
TEST(OverloadTest, CallsBeyondTheWorkersWaitInsteadOfFailing) {
  constexpr int kClients = 128;
  constexpr int kLoops = 4;
  constexpr int kStudies = 4;
  ScopedTempDir dir;
  server::ServerOptions options;
  options.db_path = dir.File("metaopt.db");
  options.models_dir = dir.File("models");
  options.max_threads = 2;
  TestServer server(options);
  for (int s = 0; s < kStudies; ++s) {
    v1::CreateStudyRequest request;
    request.set_study_id(absl::StrCat("load-", s));
    *request.mutable_spec() = PipelineSpec();
    v1::CreateStudyResponse response;
    ASSERT_TRUE(
        server.stub()
            .CreateStudy(ContextWithDeadline().get(), request, &response)
            .ok());
  }
  std::atomic<int> observed = 0;
  std::vector<std::string> errors(kClients);
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      for (int i = 0; i < kLoops && errors[c].empty(); ++i) {
        const std::string study = absl::StrCat("load-", (c + i) % kStudies);
        v1::SuggestRequest suggest;
        suggest.set_study_id(study);
        suggest.set_count(1);
        suggest.set_client_id(absl::StrCat("client-", c));
        v1::SuggestResponse suggested;
        grpc::Status status = server.stub().Suggest(ContextWithDeadline().get(),
                                                    suggest, &suggested);
        if (!status.ok() || suggested.trials_size() != 1) {
          errors[c] = absl::StrCat("Suggest: ", status.error_code(), " ",
                                   status.error_message());
          break;
        }
        v1::ObserveRequest observe;
        observe.set_study_id(study);
        observe.set_trial_id(suggested.trials(0).id());
        observe.set_value(0.5);
        v1::ObserveResponse response;
        status = server.stub().Observe(ContextWithDeadline().get(), observe,
                                       &response);
        if (!status.ok()) {
          errors[c] = absl::StrCat("Observe: ", status.error_code(), " ",
                                   status.error_message());
          break;
        }
        ++observed;
      }
    });
  }
  for (std::thread& client : clients) client.join();
  for (int c = 0; c < kClients; ++c) EXPECT_EQ(errors[c], "") << "client " << c;
  EXPECT_EQ(observed.load(), kClients * kLoops);
  int64_t trials = 0;
  for (int s = 0; s < kStudies; ++s) {
    v1::GetStudyRequest request;
    request.set_study_id(absl::StrCat("load-", s));
    v1::GetStudyResponse response;
    ASSERT_TRUE(server.stub()
                    .GetStudy(ContextWithDeadline().get(), request, &response)
                    .ok());
    trials += response.study().trial_count();
  }
  EXPECT_EQ(trials, kClients * kLoops);
}

}  // namespace
}  // namespace metaopt::testing
