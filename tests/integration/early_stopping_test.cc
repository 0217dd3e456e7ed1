// ReportIntermediate through gRPC with the real C++ client: the real server on
// 127.0.0.1 port 0 stops trials by the study's ASHA rule, stopped trials end
// STOPPED, errors map to status codes, and everything survives a restart.
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "clients/cpp/metaopt_client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/temp_dir.h"
#include "tests/testutil/test_server.h"
#include "tests/testutil/test_specs.h"

namespace metaopt::testing {
namespace {

using ::testing::HasSubstr;

class EarlyStoppingServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server::ServerOptions options;
    options.db_path = dir_.File("metaopt.db");
    options.models_dir = dir_.File("models");
    server_ = std::make_unique<TestServer>(options);
    Connect();
  }

  void Connect() {
    MetaoptClient::Options options;
    options.address = server_->address();
    auto client = MetaoptClient::Create(options);
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = *std::move(client);
  }

  absl::StatusOr<v1::ReportIntermediateResponse> Report(int64_t trial,
                                                        int64_t step,
                                                        double value) {
    v1::ReportIntermediateRequest request;
    request.set_study_id("asha");
    request.set_trial_id(trial);
    request.set_step(step);
    request.set_value(value);
    return client_->ReportIntermediate(request);
  }

  absl::StatusOr<v1::ObserveResponse> Observe(int64_t trial, double value) {
    v1::ObserveRequest request;
    request.set_study_id("asha");
    request.set_trial_id(trial);
    request.set_value(value);
    return client_->Observe(request);
  }

  ScopedTempDir dir_;
  std::unique_ptr<TestServer> server_;
  std::unique_ptr<MetaoptClient> client_;
};

TEST_F(EarlyStoppingServiceTest, AshaStopsWorseTrialsThroughTheClient) {
  v1::CreateStudyRequest create;
  create.set_study_id("asha");
  *create.mutable_spec() = PipelineSpec();  // maximizes accuracy
  v1::AshaRule* asha =
      create.mutable_spec()->mutable_early_stopping()->mutable_asha();
  asha->set_min_resource(1);
  asha->set_reduction_factor(2);
  ASSERT_TRUE(client_->CreateStudy(create).ok());
  v1::SuggestRequest suggest;
  suggest.set_study_id("asha");
  suggest.set_count(4);
  suggest.set_client_id("worker");
  auto suggested = client_->Suggest(suggest);
  ASSERT_TRUE(suggested.ok()) << suggested.status();
  ASSERT_EQ(suggested->trials_size(), 4);

  // Trial 1 reaches rung 1 (step 1) first and continues; trial 2 is worse
  // there (n = 2, keep 1) and stops; trial 3 is best and continues; trial 4
  // ranks 2 of 4 (keep 2) and continues.
  const double at_rung[] = {0.6, 0.5, 0.9, 0.7};
  const bool stops[] = {false, true, false, false};
  for (int i = 0; i < 4; ++i) {
    auto r = Report(i + 1, 1, at_rung[i]);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->should_stop(), stops[i])
        << "trial " << i + 1 << ": " << r->reason();
    if (stops[i]) EXPECT_THAT(r->reason(), HasSubstr("asha"));
  }
  // A retry of trial 2's report gets the same answer.
  auto retry = Report(2, 1, 0.5);
  ASSERT_TRUE(retry.ok()) << retry.status();
  EXPECT_TRUE(retry->should_stop());
  // Trial 2 is observed with its last value and ends STOPPED.
  auto stopped = Observe(2, 0.5);
  ASSERT_TRUE(stopped.ok()) << stopped.status();
  EXPECT_EQ(stopped->trial().state(), v1::TRIAL_STATE_STOPPED);
  EXPECT_EQ(stopped->trial().intermediate_values_size(), 1);

  // Errors map to their codes.
  EXPECT_EQ(Report(1, -1, 0.5).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(Report(1, -1, 0.5).status().message()),
              HasSubstr("step: -1"));
  EXPECT_EQ(Report(99, 1, 0.5).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(Report(2, 2, 0.5).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Report(1, 1, 0.65).status().code(),
            absl::StatusCode::kFailedPrecondition);

  // Durable across a restart: the values, the stop and the STOPPED state.
  server_->Restart();
  Connect();
  v1::ListTrialsRequest list;
  list.set_study_id("asha");
  list.set_state(v1::TRIAL_STATE_STOPPED);
  auto listed = client_->ListTrials(list);
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->trials_size(), 1);
  EXPECT_EQ(listed->trials(0).id(), 2);
  v1::GetTrialRequest get;
  get.set_study_id("asha");
  get.set_trial_id(3);
  auto trial = client_->GetTrial(get);
  ASSERT_TRUE(trial.ok()) << trial.status();
  ASSERT_EQ(trial->trial().intermediate_values_size(), 1);
  EXPECT_EQ(trial->trial().intermediate_values(0).value(), 0.9);
  // Trial 3 runs on to rung 2 (step 2) and is observed COMPLETED.
  auto going = Report(3, 2, 0.95);
  ASSERT_TRUE(going.ok()) << going.status();
  EXPECT_FALSE(going->should_stop()) << going->reason();
  auto completed = Observe(3, 0.95);
  ASSERT_TRUE(completed.ok()) << completed.status();
  EXPECT_EQ(completed->trial().state(), v1::TRIAL_STATE_COMPLETED);
}

// Reports with many long metric names on one trial, under a small
// --max-message-bytes: each is either stored and acknowledged, or refused
// RESOURCE_EXHAUSTED (naming the limit) and not stored; the trial, its study
// and their lists stay readable and the trial can still be observed.
TEST_F(EarlyStoppingServiceTest, OversizedReportsAreRefusedAndNeverStored) {
  server_.reset();
  server::ServerOptions options;
  options.db_path = dir_.File("small.db");
  options.models_dir = dir_.File("models");
  options.max_message_bytes = 1 << 16;
  server_ = std::make_unique<TestServer>(options);
  Connect();
  v1::CreateStudyRequest create;
  create.set_study_id("asha");
  *create.mutable_spec() = PipelineSpec();
  ASSERT_TRUE(client_->CreateStudy(create).ok());
  v1::SuggestRequest suggest;
  suggest.set_study_id("asha");
  suggest.set_count(1);
  ASSERT_TRUE(client_->Suggest(suggest).ok());

  int acknowledged = 0;
  absl::Status refused;
  for (int step = 0; step < 40 && refused.ok(); ++step) {
    v1::ReportIntermediateRequest request;
    request.set_study_id("asha");
    request.set_trial_id(1);
    request.set_step(step);
    request.set_value(0.5);
    for (int m = 0; m < 64; ++m) {
      (*request.mutable_metrics())[absl::StrCat(std::string(100, 'm'), m)] = m;
    }
    auto reported = client_->ReportIntermediate(request);
    if (reported.ok()) {
      ++acknowledged;
    } else {
      refused = reported.status();
    }
  }
  ASSERT_GT(acknowledged, 0);
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted) << refused;
  EXPECT_THAT(std::string(refused.message()),
              HasSubstr("--max-trial-intermediate-bytes"));
  EXPECT_THAT(std::string(refused.message()), HasSubstr("not recorded"));

  // Exactly the acknowledged reports are stored, also after a restart.
  for (int pass = 0; pass < 2; ++pass) {
    v1::GetTrialRequest get;
    get.set_study_id("asha");
    get.set_trial_id(1);
    auto trial = client_->GetTrial(get);
    ASSERT_TRUE(trial.ok()) << trial.status();
    EXPECT_EQ(trial->trial().intermediate_values_size(), acknowledged);
    v1::ListTrialsRequest list;
    list.set_study_id("asha");
    list.set_page_size(1);
    auto listed = client_->ListTrials(list);
    ASSERT_TRUE(listed.ok()) << listed.status();
    v1::GetStudyRequest get_study;
    get_study.set_study_id("asha");
    EXPECT_TRUE(client_->GetStudy(get_study).ok());
    EXPECT_TRUE(client_->ListStudies({}).ok());
    server_->Restart();
    Connect();
  }
  auto observed = Observe(1, 0.5);
  ASSERT_TRUE(observed.ok()) << observed.status();
  EXPECT_EQ(observed->trial().intermediate_values_size(), acknowledged);
}

}  // namespace
}  // namespace metaopt::testing
