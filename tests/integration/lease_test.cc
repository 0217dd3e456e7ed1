// Trial leases, the Heartbeat RPC, configurable limits and the Suggest deadline
// fallback through gRPC: the real server on 127.0.0.1 port 0.
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/time.h"
#include "core/common/proto_time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/temp_dir.h"
#include "tests/testutil/test_server.h"
#include "tests/testutil/test_specs.h"

namespace metaopt::testing {
namespace {

using ::testing::HasSubstr;

absl::Time FromProto(const google::protobuf::Timestamp& t) {
  return absl::FromUnixSeconds(t.seconds()) + absl::Nanoseconds(t.nanos());
}

class LeaseServiceTest : public ::testing::Test {
 protected:
  // A server with `configure` applied to its options (leases of 1 hour by
  // default).
  void Start(void (*configure)(server::ServerOptions&) = nullptr) {
    server::ServerOptions options;
    options.db_path = dir_.File("metaopt.db");
    options.models_dir = dir_.File("models");
    if (configure != nullptr) configure(options);
    server_ = std::make_unique<TestServer>(options);
  }

  grpc::Status Create(const std::string& id, const v1::StudySpec& spec) {
    v1::CreateStudyRequest request;
    request.set_study_id(id);
    *request.mutable_spec() = spec;
    v1::CreateStudyResponse response;
    return server_->stub().CreateStudy(ContextWithDeadline().get(), request,
                                       &response);
  }

  grpc::Status Suggest(
      const std::string& id, int count, const std::string& client,
      v1::SuggestResponse* response,
      std::chrono::milliseconds timeout = std::chrono::milliseconds(30000)) {
    v1::SuggestRequest request;
    request.set_study_id(id);
    request.set_count(count);
    request.set_client_id(client);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + timeout);
    return server_->stub().Suggest(&context, request, response);
  }

  grpc::Status Heartbeat(const std::string& id, std::vector<int64_t> ids,
                         v1::HeartbeatResponse* response) {
    v1::HeartbeatRequest request;
    request.set_study_id(id);
    for (int64_t t : ids) request.add_trial_ids(t);
    return server_->stub().Heartbeat(ContextWithDeadline().get(), request,
                                     response);
  }

  v1::Trial GetTrial(const std::string& id, int64_t trial_id) {
    v1::GetTrialRequest request;
    request.set_study_id(id);
    request.set_trial_id(trial_id);
    v1::GetTrialResponse response;
    grpc::Status status = server_->stub().GetTrial(ContextWithDeadline().get(),
                                                   request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return response.trial();
  }

  ScopedTempDir dir_;
  std::unique_ptr<TestServer> server_;
};

TEST_F(LeaseServiceTest, HeartbeatExtendsLeasesAndSurvivesRestart) {
  Start();
  ASSERT_TRUE(Create("s", PipelineSpec()).ok());
  v1::SuggestResponse suggested;
  ASSERT_TRUE(Suggest("s", 2, "w1", &suggested).ok());
  ASSERT_EQ(suggested.trials_size(), 2);
  const absl::Time first_lease =
      FromProto(suggested.trials(0).lease_expire_time());
  EXPECT_GE(first_lease, absl::Now() + absl::Minutes(59));

  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  v1::HeartbeatResponse beat;
  grpc::Status status = Heartbeat("s", {1, 2}, &beat);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(beat.trials_size(), 2);
  EXPECT_GT(FromProto(beat.trials(0).lease_expire_time()), first_lease);
  EXPECT_EQ(beat.trials(0).state(), v1::TRIAL_STATE_ACTIVE);

  server_->Restart();
  EXPECT_EQ(GetTrial("s", 1).lease_expire_time(),
            beat.trials(0).lease_expire_time());
  EXPECT_EQ(GetTrial("s", 1).state(), v1::TRIAL_STATE_ACTIVE);
}

TEST_F(LeaseServiceTest, HeartbeatErrorsMapToStatusCodes) {
  Start();
  ASSERT_TRUE(Create("s", PipelineSpec()).ok());
  v1::SuggestResponse suggested;
  ASSERT_TRUE(Suggest("s", 1, "w1", &suggested).ok());
  v1::ObserveRequest observe;
  observe.set_study_id("s");
  observe.set_trial_id(1);
  observe.set_value(0.5);
  v1::ObserveResponse observed;
  ASSERT_TRUE(server_->stub()
                  .Observe(ContextWithDeadline().get(), observe, &observed)
                  .ok());

  v1::HeartbeatResponse beat;
  grpc::Status status = Heartbeat("s", {}, &beat);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("trial_ids: 0 ids"));
  status = Heartbeat("s", {7}, &beat);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  status = Heartbeat("absent", {1}, &beat);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  status = Heartbeat("s", {1}, &beat);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(status.error_message(), HasSubstr("TRIAL_STATE_COMPLETED"));
}

TEST_F(LeaseServiceTest, ExpiredLeaseMakesTrialStale) {
  Start([](server::ServerOptions& options) {
    options.engine.trial_lease = absl::Milliseconds(300);
  });
  ASSERT_TRUE(Create("cat", CatalogueSpec(2)).ok());
  v1::SuggestResponse suggested;
  ASSERT_TRUE(Suggest("cat", 2, "w1", &suggested).ok());
  ASSERT_EQ(suggested.trials_size(), 2);
  std::this_thread::sleep_for(std::chrono::milliseconds(400));

  EXPECT_EQ(GetTrial("cat", 1).state(), v1::TRIAL_STATE_STALE);
  v1::HeartbeatResponse beat;
  grpc::Status status = Heartbeat("cat", {1}, &beat);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(status.error_message(), HasSubstr("TRIAL_STATE_STALE"));
  // The stale entries are handed out again, to another worker.
  v1::SuggestResponse again;
  ASSERT_TRUE(Suggest("cat", 2, "w2", &again).ok());
  EXPECT_EQ(again.trials_size(), 2);
}

TEST_F(LeaseServiceTest, SuggestWithTinyDeadlineFallsBackToRandom) {
  Start([](server::ServerOptions& options) {
    options.engine.deadline_margin = absl::Seconds(5);
  });
  ASSERT_TRUE(Create("gp", PipelineSpec(v1::ALGORITHM_KIND_GP)).ok());
  v1::SuggestResponse hurried;
  grpc::Status status =
      Suggest("gp", 2, "w1", &hurried, std::chrono::milliseconds(1000));
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(hurried.trials_size(), 2);
  for (const v1::Trial& trial : hurried.trials()) {
    EXPECT_EQ(trial.metadata().at("source"), "deadline-fallback");
    EXPECT_THAT(trial.metadata().at("reason"),
                HasSubstr("left before the deadline"));
  }
  v1::SuggestResponse relaxed;
  ASSERT_TRUE(Suggest("gp", 1, "w2", &relaxed).ok());
  ASSERT_EQ(relaxed.trials_size(), 1);
  EXPECT_EQ(relaxed.trials(0).metadata().count("source"), 0u);
}

TEST_F(LeaseServiceTest, ConfiguredSpecLimitsAreInvalidArgument) {
  Start([](server::ServerOptions& options) {
    options.engine.max_stages = 1;
    options.engine.max_suggest_count = 4;
  });
  grpc::Status status = Create("s", PipelineSpec());
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(),
              HasSubstr("spec.search_space.stages: 2 stages exceed this "
                        "server's limit of 1"));
  ASSERT_TRUE(Create("cat", CatalogueSpec(8)).ok());
  v1::SuggestResponse response;
  status = Suggest("cat", 5, "", &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("count: 5 is outside [0, 4]"));
}

TEST(LeaseServerOptionsTest, BadEngineOptionsStopTheServerFromStarting) {
  ScopedTempDir dir;
  server::ServerOptions options;
  options.listen = "127.0.0.1:0";
  options.db_path = dir.File("metaopt.db");
  options.models_dir = dir.File("models");
  options.engine.trial_lease = absl::ZeroDuration();
  auto server = server::Server::BuildAndStart(options);
  EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(server.status().message()), HasSubstr("trial_lease"));
}

}  // namespace
}  // namespace metaopt::testing
