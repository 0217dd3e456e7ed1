// metaopt as a Kubeflow Katib algorithm service, without a cluster: the test
// plays Katib's controller against the real server (127.0.0.1, port 0) and
// replays the calls it makes over an experiment's life: validation, repeated
// GetSuggestions with the whole and growing trial list (retries, duplicates,
// out-of-order completions, failed and early-stopped trials, a trial metaopt
// did not suggest), a restart of the service in the middle, and the
// early-stopping rules.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/create_channel.h"
#include "gtest/gtest.h"
#include "katib/v1beta1/api.grpc.pb.h"
#include "tests/testutil/http_get.h"
#include "tests/testutil/temp_dir.h"
#include "tests/testutil/test_server.h"

namespace metaopt::testing {
namespace {

namespace kapi = ::api::v1::beta1;
using ::testing::HasSubstr;

constexpr char kExperiment[] = R"pb(
  name: "mnist"
  spec {
    parameter_specs {
      parameters {
        name: "lr"
        parameter_type: DOUBLE
        feasible_space { min: "0.0001" max: "0.1" distribution: LOG_UNIFORM }
      }
      parameters {
        name: "layers"
        parameter_type: INT
        feasible_space { min: "1" max: "9" step: "2" }
      }
      parameters {
        name: "batch"
        parameter_type: DISCRETE
        feasible_space { list: "16" list: "32" list: "64" }
      }
      parameters {
        name: "optimizer"
        parameter_type: CATEGORICAL
        feasible_space { list: "sgd" list: "adam" list: "ftrl" }
      }
    }
    objective {
      type: MAXIMIZE
      objective_metric_name: "accuracy"
      additional_metric_names: "loss"
    }
    algorithm {
      algorithm_name: "metaopt-gp"
      algorithm_settings { name: "initial_trials" value: "3" }
      algorithm_settings { name: "random_state" value: "7" }
    }
    early_stopping {
      algorithm_name: "metaopt-median"
      algorithm_settings { name: "min_trials_required" value: "2" }
      algorithm_settings { name: "start_step" value: "3" }
    }
    parallel_trial_count: 3
    max_trial_count: 12
  }
)pb";

kapi::Experiment MakeExperiment() {
  kapi::Experiment experiment;
  EXPECT_TRUE(
      google::protobuf::TextFormat::ParseFromString(kExperiment, &experiment));
  return experiment;
}

std::string ValueOf(const kapi::Trial& trial, const std::string& name) {
  for (const auto& assignment :
       trial.spec().parameter_assignments().assignments()) {
    if (assignment.name() == name) return assignment.value();
  }
  ADD_FAILURE() << "trial " << trial.name() << " has no " << name;
  return "";
}

// The trial's "accuracy": best at lr = 10^-2.5, 5 layers, adam.
double Accuracy(const kapi::Trial& trial) {
  const double lr = std::stod(ValueOf(trial, "lr"));
  const double layers = std::stod(ValueOf(trial, "layers"));
  const double penalty = std::pow(std::log10(lr) + 2.5, 2) / 10 +
                         std::pow(layers - 5, 2) / 100 +
                         (ValueOf(trial, "optimizer") == "adam" ? 0 : 0.05);
  return 1 - penalty;
}

// A configuration key of a Katib trial (its assignments as sent).
std::string KeyOf(const kapi::Trial& trial) {
  std::string key;
  for (const auto& assignment :
       trial.spec().parameter_assignments().assignments()) {
    absl::StrAppend(&key, assignment.name(), "=", assignment.value(), ";");
  }
  return key;
}

class KatibControllerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server::ServerOptions options;
    options.db_path = dir_.File("metaopt.db");
    options.models_dir = dir_.File("models");
    options.katib_listen = "127.0.0.1:0";
    options.katib_namespace = "team-a";
    server_ = std::make_unique<TestServer>(options);
    Connect();
  }

  void Connect() {
    channel_ = grpc::CreateChannel(
        absl::StrCat("127.0.0.1:", server_->server().katib_port()),
        grpc::InsecureChannelCredentials());
    suggestion_ = kapi::Suggestion::NewStub(channel_);
    early_stopping_ = kapi::EarlyStopping::NewStub(channel_);
  }

  // Katib's SyncAssignments: asks for `count` more assignments with every
  // trial so far and turns them into RUNNING trials. With `retry`, sends the
  // previous request again (same total_request_number) instead.
  std::vector<kapi::Trial> Request(int count, bool retry = false) {
    if (!retry) total_ += count;
    kapi::GetSuggestionsRequest request;
    *request.mutable_experiment() = experiment_;
    for (const kapi::Trial& trial : trials_) *request.add_trials() = trial;
    request.set_request_number(count);
    request.set_current_request_number(count);
    request.set_total_request_number(total_);
    kapi::GetSuggestionsReply reply;
    const grpc::Status status = suggestion_->GetSuggestions(
        ContextWithDeadline().get(), request, &reply);
    EXPECT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(reply.parameter_assignments_size(), count);
    std::vector<kapi::Trial> created;
    for (const auto& assignments : reply.parameter_assignments()) {
      kapi::Trial trial;
      trial.set_name(absl::StrCat("mnist-", next_name_++));
      *trial.mutable_spec()
           ->mutable_parameter_assignments()
           ->mutable_assignments() = assignments.assignments();
      trial.mutable_status()->set_condition(kapi::TrialStatus::RUNNING);
      created.push_back(trial);
    }
    if (!retry) trials_.insert(trials_.end(), created.begin(), created.end());
    return created;
  }

  // Katib's view of trial `index` once it ends in `condition`.
  void Finish(size_t index, kapi::TrialStatus::TrialConditionType condition) {
    kapi::Trial& trial = trials_[index];
    trial.mutable_status()->set_condition(condition);
    if (condition == kapi::TrialStatus::SUCCEEDED ||
        condition == kapi::TrialStatus::EARLYSTOPPED) {
      kapi::Metric* accuracy =
          trial.mutable_status()->mutable_observation()->add_metrics();
      accuracy->set_name("accuracy");
      accuracy->set_value(absl::StrFormat("%.17g", Accuracy(trial)));
      kapi::Metric* loss =
          trial.mutable_status()->mutable_observation()->add_metrics();
      loss->set_name("loss");
      loss->set_value("0.25");
    }
  }

  // The study's trials by state.
  std::map<v1::TrialState, int> StudyStates() {
    v1::ListTrialsRequest request;
    request.set_study_id("katib-team-a-mnist");
    request.set_page_size(1000);
    v1::ListTrialsResponse response;
    const grpc::Status status = server_->stub().ListTrials(
        ContextWithDeadline().get(), request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    std::map<v1::TrialState, int> states;
    for (const v1::Trial& trial : response.trials()) ++states[trial.state()];
    return states;
  }

  // Checks that `trial`'s assignments lie in the experiment's space.
  static void ExpectInSpace(const kapi::Trial& trial) {
    const double lr = std::stod(ValueOf(trial, "lr"));
    EXPECT_GE(lr, 0.0001);
    EXPECT_LE(lr, 0.1);
    const std::string layers = ValueOf(trial, "layers");
    EXPECT_THAT((std::set<std::string>{"1", "3", "5", "7", "9"}),
                ::testing::Contains(layers));
    EXPECT_THAT((std::set<std::string>{"16", "32", "64"}),
                ::testing::Contains(ValueOf(trial, "batch")));
    EXPECT_THAT((std::set<std::string>{"sgd", "adam", "ftrl"}),
                ::testing::Contains(ValueOf(trial, "optimizer")));
  }

  ScopedTempDir dir_;
  std::unique_ptr<TestServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<kapi::Suggestion::Stub> suggestion_;
  std::unique_ptr<kapi::EarlyStopping::Stub> early_stopping_;
  kapi::Experiment experiment_ = MakeExperiment();
  std::vector<kapi::Trial> trials_;
  int total_ = 0;
  int next_name_ = 0;
};

TEST_F(KatibControllerTest, ServesHealthForKatibProbes) {
  auto health = grpc::health::v1::Health::NewStub(channel_);
  for (const std::string service :
       {"", "manager.v1beta1.Suggestion", "api.v1.beta1.Suggestion",
        "api.v1.beta1.EarlyStopping"}) {
    grpc::health::v1::HealthCheckRequest request;
    request.set_service(service);
    grpc::health::v1::HealthCheckResponse response;
    const grpc::Status status =
        health->Check(ContextWithDeadline().get(), request, &response);
    ASSERT_TRUE(status.ok()) << service << ": " << status.error_message();
    EXPECT_EQ(response.status(), grpc::health::v1::HealthCheckResponse::SERVING)
        << service;
  }
}

TEST_F(KatibControllerTest, ValidatesAlgorithmSettingsNamingTheSetting) {
  kapi::ValidateAlgorithmSettingsRequest request;
  *request.mutable_experiment() = experiment_;
  kapi::ValidateAlgorithmSettingsReply reply;
  grpc::Status status = suggestion_->ValidateAlgorithmSettings(
      ContextWithDeadline().get(), request, &reply);
  EXPECT_TRUE(status.ok()) << status.error_message();

  request.mutable_experiment()
      ->mutable_spec()
      ->mutable_algorithm()
      ->mutable_algorithm_settings(0)
      ->set_value("three");
  status = suggestion_->ValidateAlgorithmSettings(ContextWithDeadline().get(),
                                                  request, &reply);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(),
              HasSubstr("\"initial_trials\": value \"three\" is not an "
                        "integer in [0, 10000]"));

  request.mutable_experiment()
      ->mutable_spec()
      ->mutable_algorithm()
      ->mutable_algorithm_settings(0)
      ->set_name("model");
  request.mutable_experiment()
      ->mutable_spec()
      ->mutable_algorithm()
      ->mutable_algorithm_settings(0)
      ->set_value("no-such-model");
  status = suggestion_->ValidateAlgorithmSettings(ContextWithDeadline().get(),
                                                  request, &reply);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(),
              HasSubstr("\"model\": value \"no-such-model\" is not a model "
                        "the registry serves (served: none)"));

  request.mutable_experiment()
      ->mutable_spec()
      ->mutable_algorithm()
      ->set_algorithm_name("bayesianoptimization");
  status = suggestion_->ValidateAlgorithmSettings(ContextWithDeadline().get(),
                                                  request, &reply);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(),
              HasSubstr("\"bayesianoptimization\" is not one of "
                        "metaopt-deeppipe"));

  kapi::ValidateEarlyStoppingSettingsRequest stopping;
  stopping.mutable_early_stopping()->set_algorithm_name("metaopt-asha");
  kapi::EarlyStoppingSetting* setting =
      stopping.mutable_early_stopping()->add_algorithm_settings();
  setting->set_name("reduction_factor");
  setting->set_value("2");
  kapi::ValidateEarlyStoppingSettingsReply stopping_reply;
  status = early_stopping_->ValidateEarlyStoppingSettings(
      ContextWithDeadline().get(), stopping, &stopping_reply);
  EXPECT_TRUE(status.ok()) << status.error_message();
  setting->set_value("1");
  status = early_stopping_->ValidateEarlyStoppingSettings(
      ContextWithDeadline().get(), stopping, &stopping_reply);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(),
              HasSubstr("\"reduction_factor\": value \"1\" is not an integer "
                        "in [2, 100]"));
}

TEST_F(KatibControllerTest, RejectsABadRequest) {
  kapi::GetSuggestionsRequest request;
  *request.mutable_experiment() = experiment_;
  kapi::GetSuggestionsReply reply;
  grpc::Status status =
      suggestion_->GetSuggestions(ContextWithDeadline().get(), request, &reply);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(),
              HasSubstr("current_request_number: 0 must be >= 1"));
  request.set_current_request_number(1);
  request.mutable_experiment()->mutable_spec()->mutable_objective()->set_type(
      kapi::UNKNOWN);
  status =
      suggestion_->GetSuggestions(ContextWithDeadline().get(), request, &reply);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(),
              HasSubstr("experiment.spec.objective.type: UNKNOWN"));
}

TEST_F(KatibControllerTest, ReplaysAnExperimentsLife) {
  // The first batch: parallel_trial_count distinct assignments in the space.
  std::vector<kapi::Trial> first = Request(3);
  std::set<std::string> keys;
  for (const kapi::Trial& trial : first) {
    ExpectInSpace(trial);
    keys.insert(KeyOf(trial));
  }
  EXPECT_EQ(keys.size(), 3u);
  v1::GetStudyRequest get;
  get.set_study_id("katib-team-a-mnist");
  v1::GetStudyResponse study;
  grpc::Status status =
      server_->stub().GetStudy(ContextWithDeadline().get(), get, &study);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(study.study().spec().algorithm().kind(), v1::ALGORITHM_KIND_GP);
  EXPECT_EQ(study.study().spec().objective().goal(), v1::GOAL_MAXIMIZE);
  EXPECT_EQ(study.study().spec().seed(), 7u);
  EXPECT_TRUE(study.study().spec().early_stopping().has_median());
  EXPECT_EQ(StudyStates()[v1::TRIAL_STATE_ACTIVE], 3);

  // Katib retries the same request (its reply was lost): the same trials.
  std::vector<kapi::Trial> again = Request(3, /*retry=*/true);
  std::set<std::string> again_keys;
  for (const kapi::Trial& trial : again) again_keys.insert(KeyOf(trial));
  EXPECT_EQ(again_keys, keys);
  EXPECT_EQ(StudyStates()[v1::TRIAL_STATE_ACTIVE], 3);

  // Out of order: the second trial succeeds, the first fails; two more.
  Finish(1, kapi::TrialStatus::SUCCEEDED);
  Finish(0, kapi::TrialStatus::FAILED);
  for (const kapi::Trial& trial : Request(2)) {
    ExpectInSpace(trial);
    EXPECT_TRUE(keys.insert(KeyOf(trial)).second) << KeyOf(trial);
  }
  std::map<v1::TrialState, int> states = StudyStates();
  EXPECT_EQ(states[v1::TRIAL_STATE_COMPLETED], 1);
  EXPECT_EQ(states[v1::TRIAL_STATE_FAILED], 1);
  EXPECT_EQ(states[v1::TRIAL_STATE_ACTIVE], 3);

  // A duplicate entry in Katib's list is recorded once.
  trials_.push_back(trials_[1]);
  Finish(2, kapi::TrialStatus::EARLYSTOPPED);
  Finish(3, kapi::TrialStatus::SUCCEEDED);
  Request(1);
  states = StudyStates();
  EXPECT_EQ(states[v1::TRIAL_STATE_COMPLETED], 3);
  EXPECT_EQ(states[v1::TRIAL_STATE_FAILED], 1);
  EXPECT_EQ(states[v1::TRIAL_STATE_ACTIVE], 2);

  // The suggestion service restarts; its state is the database's.
  server_->Restart();
  Connect();
  // A trial metaopt never suggested (created by hand in Katib).
  kapi::Trial external = trials_[1];
  external.set_name("mnist-by-hand");
  for (auto& assignment : *external.mutable_spec()
                               ->mutable_parameter_assignments()
                               ->mutable_assignments()) {
    if (assignment.name() == "lr") assignment.set_value("0.003");
    if (assignment.name() == "layers") assignment.set_value("5");
    if (assignment.name() == "optimizer") assignment.set_value("adam");
  }
  external.mutable_status()->clear_observation();
  trials_.push_back(external);
  Finish(trials_.size() - 1, kapi::TrialStatus::SUCCEEDED);
  Finish(4, kapi::TrialStatus::SUCCEEDED);
  for (const kapi::Trial& trial : Request(2)) {
    ExpectInSpace(trial);
    EXPECT_TRUE(keys.insert(KeyOf(trial)).second) << KeyOf(trial);
  }
  states = StudyStates();
  EXPECT_EQ(states[v1::TRIAL_STATE_COMPLETED], 5);
  EXPECT_EQ(states[v1::TRIAL_STATE_FAILED], 1);
  EXPECT_EQ(states[v1::TRIAL_STATE_ACTIVE], 3);

  // The best trial is Katib's best, with its additional metric.
  status = server_->stub().GetStudy(ContextWithDeadline().get(), get, &study);
  ASSERT_TRUE(status.ok()) << status.error_message();
  double best = -1;
  for (const kapi::Trial& trial : trials_) {
    if (trial.status().condition() == kapi::TrialStatus::SUCCEEDED ||
        trial.status().condition() == kapi::TrialStatus::EARLYSTOPPED) {
      best = std::max(best, Accuracy(trial));
    }
  }
  EXPECT_NEAR(study.study().best_trial().value(), best, 1e-12);
  EXPECT_EQ(study.study().best_trial().metrics().at("loss"), 0.25);

  // Early stopping: the objective below the median of the five finished
  // trials, from step 3.
  kapi::GetEarlyStoppingRulesRequest rules_request;
  *rules_request.mutable_experiment() = experiment_;
  for (const kapi::Trial& trial : trials_) *rules_request.add_trials() = trial;
  kapi::GetEarlyStoppingRulesReply rules;
  status = early_stopping_->GetEarlyStoppingRules(ContextWithDeadline().get(),
                                                  rules_request, &rules);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(rules.early_stopping_rules_size(), 1);
  const kapi::EarlyStoppingRule& rule = rules.early_stopping_rules(0);
  EXPECT_EQ(rule.name(), "accuracy");
  EXPECT_EQ(rule.comparison(), kapi::LESS);
  EXPECT_EQ(rule.start_step(), 3);
  std::vector<double> values;
  for (const kapi::Trial& trial : trials_) {
    if (trial.name() != trials_[1].name() || &trial == &trials_[1]) {
      if (trial.status().condition() == kapi::TrialStatus::SUCCEEDED ||
          trial.status().condition() == kapi::TrialStatus::EARLYSTOPPED) {
        values.push_back(Accuracy(trial));
      }
    }
  }
  ASSERT_EQ(values.size(), 5u);
  std::sort(values.begin(), values.end());
  EXPECT_NEAR(std::stod(rule.value()), values[2], 1e-12);
  // The rules call recorded nothing twice.
  EXPECT_EQ(StudyStates()[v1::TRIAL_STATE_COMPLETED], 5);

  kapi::SetTrialStatusRequest stop;
  stop.set_trial_name(trials_[5].name());
  kapi::SetTrialStatusReply stop_reply;
  status = early_stopping_->SetTrialStatus(ContextWithDeadline().get(), stop,
                                           &stop_reply);
  EXPECT_TRUE(status.ok()) << status.error_message();
}

TEST_F(KatibControllerTest, NamesTheStudyAfterTheNamespaceKatibDials) {
  // Katib's controller dials <experiment>-<algorithm>.<namespace>:6789.
  kapi::GetSuggestionsRequest request;
  *request.mutable_experiment() = experiment_;
  request.set_current_request_number(2);
  request.set_total_request_number(2);
  kapi::GetSuggestionsReply reply;
  std::unique_ptr<grpc::ClientContext> context = ContextWithDeadline();
  context->set_authority("mnist-metaopt-gp.team-b.svc:6789");
  const grpc::Status status =
      suggestion_->GetSuggestions(context.get(), request, &reply);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(reply.parameter_assignments_size(), 2);
  v1::GetStudyRequest get;
  get.set_study_id("katib-team-b-mnist");
  v1::GetStudyResponse study;
  const grpc::Status found =
      server_->stub().GetStudy(ContextWithDeadline().get(), get, &study);
  ASSERT_TRUE(found.ok()) << found.error_message();
  EXPECT_EQ(study.study().trial_count(), 2);
}

// The adapter loses nothing: one trial at a time, an Experiment driven through
// Katib's API suggests exactly what the same study driven directly suggests,
// so it reaches the same best value (the same regret) after every trial.
TEST_F(KatibControllerTest, KatibDrivenStudySuggestsWhatADirectStudySuggests) {
  experiment_.mutable_spec()->clear_early_stopping();
  // Without a step grid, Katib's trials evaluate exactly the suggested points.
  experiment_.mutable_spec()
      ->mutable_parameter_specs()
      ->mutable_parameters(1)
      ->mutable_feasible_space()
      ->clear_step();
  constexpr int kTrials = 10;
  for (int i = 0; i < kTrials; ++i) {
    if (i > 0) Finish(i - 1, kapi::TrialStatus::SUCCEEDED);
    Request(1);
  }
  Finish(kTrials - 1, kapi::TrialStatus::SUCCEEDED);

  // The same spec, driven directly: Suggest, evaluate, Observe.
  v1::GetStudyRequest get;
  get.set_study_id("katib-team-a-mnist");
  v1::GetStudyResponse katib_study;
  grpc::Status status =
      server_->stub().GetStudy(ContextWithDeadline().get(), get, &katib_study);
  ASSERT_TRUE(status.ok()) << status.error_message();
  v1::CreateStudyRequest create;
  create.set_study_id("direct");
  *create.mutable_spec() = katib_study.study().spec();
  v1::CreateStudyResponse created;
  status = server_->stub().CreateStudy(ContextWithDeadline().get(), create,
                                       &created);
  ASSERT_TRUE(status.ok()) << status.error_message();
  double katib_best = -1, direct_best = -1;
  for (int i = 0; i < kTrials; ++i) {
    v1::SuggestRequest suggest;
    suggest.set_study_id("direct");
    suggest.set_count(1);
    suggest.set_client_id(absl::StrCat("katib-", i + 1));
    v1::SuggestResponse suggested;
    status = server_->stub().Suggest(ContextWithDeadline().get(), suggest,
                                     &suggested);
    ASSERT_TRUE(status.ok()) << status.error_message();
    ASSERT_EQ(suggested.trials_size(), 1);
    const v1::Configuration& configuration =
        suggested.trials(0).configuration();
    // Katib's trial i was given the same configuration.
    kapi::Trial as_katib_sees_it;
    for (const auto& [name, value] :
         configuration.assignments(0).parameters()) {
      kapi::ParameterAssignment* assignment =
          as_katib_sees_it.mutable_spec()
              ->mutable_parameter_assignments()
              ->add_assignments();
      assignment->set_name(name);
      assignment->set_value(value.has_category()
                                ? value.category()
                                : absl::StrFormat("%.17g", value.number()));
    }
    const double direct_value = Accuracy(as_katib_sees_it);
    EXPECT_NEAR(direct_value, Accuracy(trials_[i]), 1e-12) << "trial " << i;
    EXPECT_EQ(ValueOf(as_katib_sees_it, "optimizer"),
              ValueOf(trials_[i], "optimizer"));
    EXPECT_EQ(ValueOf(as_katib_sees_it, "batch"), ValueOf(trials_[i], "batch"));
    v1::ObserveRequest observe;
    observe.set_study_id("direct");
    observe.set_trial_id(suggested.trials(0).id());
    observe.set_value(direct_value);
    v1::ObserveResponse observed;
    status = server_->stub().Observe(ContextWithDeadline().get(), observe,
                                     &observed);
    ASSERT_TRUE(status.ok()) << status.error_message();
    direct_best = std::max(direct_best, direct_value);
    katib_best = std::max(katib_best, Accuracy(trials_[i]));
    EXPECT_NEAR(katib_best, direct_best, 1e-12) << "after trial " << i;
  }
}

TEST_F(KatibControllerTest, RefusesAnExperimentWhoseSpaceChanged) {
  Request(1);
  experiment_.mutable_spec()
      ->mutable_parameter_specs()
      ->mutable_parameters(0)
      ->mutable_feasible_space()
      ->set_max("0.5");
  kapi::GetSuggestionsRequest request;
  *request.mutable_experiment() = experiment_;
  request.set_current_request_number(1);
  request.set_total_request_number(2);
  kapi::GetSuggestionsReply reply;
  const grpc::Status status =
      suggestion_->GetSuggestions(ContextWithDeadline().get(), request, &reply);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(status.error_message(),
              HasSubstr("study katib-team-a-mnist of Katib experiment mnist "
                        "exists with another spec"));
}

TEST_F(KatibControllerTest, ConcurrentCallsRecordEachTrialOnce) {
  // Katib's retries may overlap a slow call: every call sees the same
  // finished trial that metaopt never suggested; it is recorded once.
  kapi::Trial external;
  external.set_name("mnist-by-hand");
  for (const auto& [name, value] :
       std::vector<std::pair<std::string, std::string>>{{"lr", "0.01"},
                                                        {"layers", "3"},
                                                        {"batch", "64"},
                                                        {"optimizer", "sgd"}}) {
    kapi::ParameterAssignment* assignment =
        external.mutable_spec()
            ->mutable_parameter_assignments()
            ->add_assignments();
    assignment->set_name(name);
    assignment->set_value(value);
  }
  trials_.push_back(external);
  Finish(0, kapi::TrialStatus::SUCCEEDED);
  constexpr int kCalls = 8;
  std::vector<std::thread> threads;
  std::vector<grpc::Status> statuses(kCalls);
  for (int i = 0; i < kCalls; ++i) {
    threads.emplace_back([this, i, &statuses] {
      kapi::GetSuggestionsRequest request;
      *request.mutable_experiment() = experiment_;
      *request.add_trials() = trials_[0];
      request.set_current_request_number(1);
      request.set_total_request_number(1 + i);
      kapi::GetSuggestionsReply reply;
      statuses[i] = suggestion_->GetSuggestions(ContextWithDeadline().get(),
                                                request, &reply);
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const grpc::Status& status : statuses) {
    EXPECT_TRUE(status.ok()) << status.error_message();
  }
  std::map<v1::TrialState, int> states = StudyStates();
  EXPECT_EQ(states[v1::TRIAL_STATE_COMPLETED], 1);
  EXPECT_EQ(states[v1::TRIAL_STATE_ACTIVE], kCalls);
}

TEST(KatibServerTest, ANamespaceThatCannotNameAStudyFailsAtStart) {
  ScopedTempDir dir;
  server::ServerOptions options;
  options.db_path = dir.File("metaopt.db");
  options.models_dir = dir.File("models");
  options.katib_listen = "127.0.0.1:0";
  options.katib_namespace = "team a";
  absl::StatusOr<std::unique_ptr<server::Server>> server =
      server::Server::BuildAndStart(options);
  ASSERT_FALSE(server.ok());
  EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(server.status().message(),
              HasSubstr("--katib-namespace: the Katib namespace: \"team a\""));
}

TEST(KatibTokensTest, StudiesBelongToTheExperimentsNamespace) {
  ScopedTempDir dir;
  server::ServerOptions options;
  options.db_path = dir.File("metaopt.db");
  options.models_dir = dir.File("models");
  options.katib_listen = "127.0.0.1:0";
  options.tokens_file = dir.File("tokens");
  std::ofstream(options.tokens_file)
      << "team-a:team-a-token-0123456789abcdef\n"
      << "team-b:team-b-token-0123456789abcdef\n";
  TestServer server(options);
  // Katib's controller sends no token.
  auto suggestion = kapi::Suggestion::NewStub(grpc::CreateChannel(
      absl::StrCat("127.0.0.1:", server.server().katib_port()),
      grpc::InsecureChannelCredentials()));
  kapi::GetSuggestionsRequest request;
  *request.mutable_experiment() = MakeExperiment();
  request.set_current_request_number(1);
  request.set_total_request_number(1);
  kapi::GetSuggestionsReply reply;
  std::unique_ptr<grpc::ClientContext> context = ContextWithDeadline();
  context->set_authority("mnist-metaopt-gp.team-a:6789");
  grpc::Status status =
      suggestion->GetSuggestions(context.get(), request, &reply);
  ASSERT_TRUE(status.ok()) << status.error_message();

  v1::GetStudyRequest get;
  get.set_study_id("katib-team-a-mnist");
  for (const auto& [token, code] :
       std::vector<std::pair<std::string, grpc::StatusCode>>{
           {"team-a-token-0123456789abcdef", grpc::StatusCode::OK},
           {"team-b-token-0123456789abcdef", grpc::StatusCode::NOT_FOUND}}) {
    std::unique_ptr<grpc::ClientContext> call = ContextWithDeadline();
    call->AddMetadata("authorization", absl::StrCat("Bearer ", token));
    v1::GetStudyResponse study;
    status = server.stub().GetStudy(call.get(), get, &study);
    EXPECT_EQ(status.error_code(), code)
        << token << ": " << status.error_message();
  }
}

TEST(KatibMetricsTest, KatibCallsAreCountedByMethodAndAlgorithm) {
  ScopedTempDir dir;
  server::ServerOptions options;
  options.db_path = dir.File("metaopt.db");
  options.models_dir = dir.File("models");
  options.katib_listen = "127.0.0.1:0";
  options.metrics_listen = "127.0.0.1:0";
  TestServer server(options);
  auto suggestion = kapi::Suggestion::NewStub(grpc::CreateChannel(
      absl::StrCat("127.0.0.1:", server.server().katib_port()),
      grpc::InsecureChannelCredentials()));
  kapi::GetSuggestionsRequest request;
  *request.mutable_experiment() = MakeExperiment();
  request.set_current_request_number(1);
  request.set_total_request_number(1);
  kapi::GetSuggestionsReply reply;
  const grpc::Status status =
      suggestion->GetSuggestions(ContextWithDeadline().get(), request, &reply);
  ASSERT_TRUE(status.ok()) << status.error_message();
  const absl::StatusOr<HttpResponse> metrics =
      HttpGet(server.server().metrics_port(), "/metrics");
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_THAT(
      metrics->body,
      HasSubstr("metaopt_rpc_handled_total{algorithm=\"gp\",code=\"OK\","
                "method=\"katib.GetSuggestions\"} 1"));
}

// The parameters of the Experiment in deploy/katib/experiment.yaml, read line
// by line (the file's own layout: one key per line).
kapi::ExperimentSpec::ParameterSpecs ExampleParameters() {
  std::ifstream file(std::string(METAOPT_SOURCE_DIR) +
                     "/deploy/katib/experiment.yaml");
  EXPECT_TRUE(file.good());
  kapi::ExperimentSpec::ParameterSpecs specs;
  bool in_parameters = false;
  std::string line;
  while (std::getline(file, line)) {
    if (line == "  parameters:") {
      in_parameters = true;
      continue;
    }
    if (!in_parameters) continue;
    if (!absl::StartsWith(line, "    ")) break;
    absl::string_view text = absl::StripAsciiWhitespace(line);
    const auto unquote = [](absl::string_view value) {
      return std::string(
          absl::StripSuffix(absl::StripPrefix(value, "\""), "\""));
    };
    if (absl::ConsumePrefix(&text, "- name: ")) {
      specs.add_parameters()->set_name(std::string(text));
    } else if (absl::ConsumePrefix(&text, "parameterType: ")) {
      const std::map<absl::string_view, kapi::ParameterType> types = {
          {"double", kapi::DOUBLE},
          {"int", kapi::INT},
          {"discrete", kapi::DISCRETE},
          {"categorical", kapi::CATEGORICAL}};
      specs.mutable_parameters()->rbegin()->set_parameter_type(types.at(text));
    } else if (absl::ConsumePrefix(&text, "list: [")) {
      for (absl::string_view value :
           absl::StrSplit(absl::StripSuffix(text, "]"), ", ")) {
        specs.mutable_parameters()
            ->rbegin()
            ->mutable_feasible_space()
            ->add_list(std::string(value));
      }
    } else if (absl::ConsumePrefix(&text, "min: ")) {
      specs.mutable_parameters()->rbegin()->mutable_feasible_space()->set_min(
          unquote(text));
    } else if (absl::ConsumePrefix(&text, "max: ")) {
      specs.mutable_parameters()->rbegin()->mutable_feasible_space()->set_max(
          unquote(text));
    } else if (text == "distribution: logUniform") {
      specs.mutable_parameters()
          ->rbegin()
          ->mutable_feasible_space()
          ->set_distribution(kapi::LOG_UNIFORM);
    }
  }
  return specs;
}

TEST(KatibExampleTest, ExampleExperimentBindsTheBundledDeepPipeModel) {
  ScopedTempDir dir;
  const std::string registry = dir.File("models");
  std::filesystem::create_directories(registry);
  std::filesystem::create_directory_symlink(
      std::string(METAOPT_SOURCE_DIR) + "/models/sklearn-pipelines-deeppipe",
      registry + "/sklearn-pipelines-deeppipe");
  server::ServerOptions options;
  options.db_path = dir.File("metaopt.db");
  options.models_dir = registry;
  options.models_poll_interval = absl::ZeroDuration();
  options.katib_listen = "127.0.0.1:0";
  TestServer server(options);
  auto suggestion = kapi::Suggestion::NewStub(grpc::CreateChannel(
      absl::StrCat("127.0.0.1:", server.server().katib_port()),
      grpc::InsecureChannelCredentials()));

  kapi::GetSuggestionsRequest request;
  kapi::Experiment* experiment = request.mutable_experiment();
  experiment->set_name("sklearn-pipelines");
  *experiment->mutable_spec()->mutable_parameter_specs() = ExampleParameters();
  ASSERT_EQ(experiment->spec().parameter_specs().parameters_size(), 23);
  experiment->mutable_spec()->mutable_objective()->set_type(kapi::MAXIMIZE);
  experiment->mutable_spec()->mutable_objective()->set_objective_metric_name(
      "accuracy");
  kapi::AlgorithmSpec* algorithm =
      experiment->mutable_spec()->mutable_algorithm();
  algorithm->set_algorithm_name("metaopt-deeppipe");
  kapi::AlgorithmSetting* model = algorithm->add_algorithm_settings();
  model->set_name("model");
  model->set_value("sklearn-pipelines-deeppipe");
  kapi::ValidateAlgorithmSettingsRequest validate;
  *validate.mutable_experiment() = *experiment;
  kapi::ValidateAlgorithmSettingsReply validated;
  grpc::Status status = suggestion->ValidateAlgorithmSettings(
      ContextWithDeadline().get(), validate, &validated);
  ASSERT_TRUE(status.ok()) << status.error_message();
  request.set_current_request_number(3);
  request.set_total_request_number(3);
  kapi::GetSuggestionsReply reply;
  status =
      suggestion->GetSuggestions(ContextWithDeadline().get(), request, &reply);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(reply.parameter_assignments_size(), 3);
  for (const auto& assignments : reply.parameter_assignments()) {
    EXPECT_EQ(assignments.assignments_size(), 23);
  }

  v1::GetStudyRequest get;
  get.set_study_id("katib-default-sklearn-pipelines");
  v1::GetStudyResponse study;
  const grpc::Status found =
      server.stub().GetStudy(ContextWithDeadline().get(), get, &study);
  ASSERT_TRUE(found.ok()) << found.error_message();
  EXPECT_TRUE(absl::StartsWith(study.study().bound_model(),
                               "sklearn-pipelines-deeppipe@"))
      << study.study().bound_model();
  EXPECT_EQ(study.study().spec().search_space().stages_size(), 4);
}

}  // namespace
}  // namespace metaopt::testing
