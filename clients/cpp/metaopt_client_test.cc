// MetaoptClient against an in-process fake OptimizerService on 127.0.0.1:0:
// retries (only for calls safe to repeat, only on UNAVAILABLE and
// RESOURCE_EXHAUSTED), deadlines, and status conversion.

#include "clients/cpp/metaopt_client.h"

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"

namespace metaopt {
namespace {

using ::metaopt::testing::IsOk;
using ::metaopt::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

// Fails the first `unavailable_before_success` calls of each method with
// `failure` (UNAVAILABLE unless set), then answers.
class FakeOptimizerService final : public v1::OptimizerService::Service {
 public:
  std::atomic<int> unavailable_before_success{0};
  std::atomic<int> calls{0};
  std::atomic<grpc::StatusCode> failure{grpc::StatusCode::UNAVAILABLE};
  // GetStudy, after its failures: answers only when the call is cancelled (a
  // server stuck behind an unreachable database).
  std::atomic<bool> hang_after_failures{false};
  // Observe: the first attempt fails with `failure` as if its answer were
  // lost after the trial was stored as `observed`; later attempts find the
  // trial observed (FAILED_PRECONDITION), and GetTrial returns it. Unset
  // (id 0): every Observe fails with `failure`, GetTrial is NOT_FOUND.
  v1::Trial observed;

  grpc::Status GetStudy(grpc::ServerContext* context,
                        const v1::GetStudyRequest* request,
                        v1::GetStudyResponse* response) override {
    if (calls++ < unavailable_before_success) return Unavailable();
    while (hang_after_failures && !context->IsCancelled()) {
      absl::SleepFor(absl::Milliseconds(5));
    }
    response->mutable_study()->set_study_id(request->study_id());
    return grpc::Status::OK;
  }

  grpc::Status GetTrial(grpc::ServerContext*,
                        const v1::GetTrialRequest* request,
                        v1::GetTrialResponse* response) override {
    ++calls;
    if (observed.id() != 0 && request->trial_id() == observed.id()) {
      *response->mutable_trial() = observed;
      return grpc::Status::OK;
    }
    return grpc::Status(
        grpc::StatusCode::NOT_FOUND,
        "trial " + std::to_string(request->trial_id()) + " not found");
  }

  grpc::Status Suggest(grpc::ServerContext*, const v1::SuggestRequest* request,
                       v1::SuggestResponse* response) override {
    if (calls++ < unavailable_before_success) return Unavailable();
    response->add_trials()->set_client_id(request->client_id());
    return grpc::Status::OK;
  }

  grpc::Status Observe(grpc::ServerContext*, const v1::ObserveRequest*,
                       v1::ObserveResponse*) override {
    if (calls++ == 0 || observed.id() == 0) return Unavailable();
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        "trial is already COMPLETED; a trial is observed once");
  }

  grpc::Status DeleteStudy(grpc::ServerContext*,
                           const v1::DeleteStudyRequest* request,
                           v1::DeleteStudyResponse*) override {
    // As if the first, "unavailable" attempt had deleted it after all.
    if (calls++ == 0) return Unavailable();
    return grpc::Status(grpc::StatusCode::NOT_FOUND,
                        "study " + request->study_id());
  }

  grpc::Status ListModels(grpc::ServerContext* context,
                          const v1::ListModelsRequest*,
                          v1::ListModelsResponse*) override {
    ++calls;
    const absl::Time until = absl::Now() + absl::Seconds(5);
    while (!context->IsCancelled() && absl::Now() < until)
      absl::SleepFor(absl::Milliseconds(5));
    return grpc::Status::OK;
  }

 private:
  grpc::Status Unavailable() const {
    return grpc::Status(failure.load(), "try again");
  }
};

class MetaoptClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(port, 0);
    options_.address = "127.0.0.1:" + std::to_string(port);
    options_.initial_backoff = absl::Milliseconds(1);
    options_.max_backoff = absl::Milliseconds(4);
  }

  void TearDown() override {
    if (server_)
      server_->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(1)));
  }

  std::unique_ptr<MetaoptClient> NewClient() {
    absl::StatusOr<std::unique_ptr<MetaoptClient>> client =
        MetaoptClient::Create(options_);
    EXPECT_THAT(client, IsOk());
    return client.ok() ? std::move(*client) : nullptr;
  }

  FakeOptimizerService service_;
  std::unique_ptr<grpc::Server> server_;
  MetaoptClient::Options options_;
};

TEST(BackoffDelayTest, DoublesFromInitialToMaxWithEqualJitter) {
  const absl::Duration initial = absl::Milliseconds(100);
  const absl::Duration max = absl::Seconds(2);
  EXPECT_EQ(BackoffDelay(1, initial, max, 1.0), absl::Milliseconds(100));
  EXPECT_EQ(BackoffDelay(1, initial, max, 0.0), absl::Milliseconds(50));
  EXPECT_EQ(BackoffDelay(3, initial, max, 0.5), absl::Milliseconds(300));
  EXPECT_EQ(BackoffDelay(6, initial, max, 1.0), absl::Seconds(2));  // 3.2 s
  EXPECT_EQ(BackoffDelay(1 << 20, initial, max, 0.0), absl::Seconds(1));
}

TEST_F(MetaoptClientTest, RetriesIdempotentCallOnUnavailable) {
  service_.unavailable_before_success = 2;
  auto client = NewClient();
  v1::GetStudyRequest request;
  request.set_study_id("s1");
  absl::StatusOr<v1::GetStudyResponse> response = client->GetStudy(request);
  ASSERT_THAT(response, IsOk());
  EXPECT_EQ(response->study().study_id(), "s1");
  EXPECT_EQ(service_.calls, 3);
}

// A server (or proxy) that sheds load answers RESOURCE_EXHAUSTED: retried
// like UNAVAILABLE.
TEST_F(MetaoptClientTest, RetriesIdempotentCallOnResourceExhausted) {
  service_.unavailable_before_success = 3;
  service_.failure = grpc::StatusCode::RESOURCE_EXHAUSTED;
  auto client = NewClient();
  v1::GetStudyRequest request;
  request.set_study_id("s1");
  absl::StatusOr<v1::GetStudyResponse> response = client->GetStudy(request);
  ASSERT_THAT(response, IsOk());
  EXPECT_EQ(response->study().study_id(), "s1");
  EXPECT_EQ(service_.calls, 4);
}

// Retries stop at the call's deadline, however many attempts are left.
TEST_F(MetaoptClientTest, RetriesStopAtTheCallsDeadline) {
  service_.unavailable_before_success = 1000;
  service_.failure = grpc::StatusCode::RESOURCE_EXHAUSTED;
  options_.max_attempts = 1000;
  options_.initial_backoff = absl::Milliseconds(20);
  options_.max_backoff = absl::Milliseconds(40);
  options_.timeout = absl::Milliseconds(300);
  auto client = NewClient();
  const absl::Status status = client->GetStudy(v1::GetStudyRequest()).status();
  // The last attempt's error, or the deadline if it struck during a call.
  EXPECT_TRUE(absl::IsResourceExhausted(status) ||
              absl::IsDeadlineExceeded(status))
      << status;
  EXPECT_LT(service_.calls, 1000);
  EXPECT_GT(service_.calls, 1);
}

TEST_F(MetaoptClientTest, GivesUpAfterMaxAttempts) {
  service_.unavailable_before_success = 100;
  options_.max_attempts = 3;
  auto client = NewClient();
  EXPECT_THAT(client->GetStudy(v1::GetStudyRequest()),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("try again")));
  EXPECT_EQ(service_.calls, 3);
}

TEST_F(MetaoptClientTest, DoesNotRetryOtherCodes) {
  auto client = NewClient();
  v1::GetTrialRequest request;
  request.set_trial_id(42);
  EXPECT_THAT(
      client->GetTrial(request),
      StatusIs(absl::StatusCode::kNotFound, HasSubstr("trial 42 not found")));
  EXPECT_EQ(service_.calls, 1);
}

// Observe of a configuration records a new trial each time.
TEST_F(MetaoptClientTest, NeverRetriesObserveOfAConfiguration) {
  auto client = NewClient();
  v1::ObserveRequest request;
  request.set_study_id("s");
  request.mutable_configuration()->add_assignments()->set_stage("main");
  request.set_value(1.5);
  EXPECT_THAT(client->Observe(request),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("try again")));
  EXPECT_EQ(service_.calls, 1);
}

TEST_F(MetaoptClientTest, RetriesObserveOfATrialId) {
  service_.failure = grpc::StatusCode::RESOURCE_EXHAUSTED;
  options_.max_attempts = 3;
  auto client = NewClient();
  v1::ObserveRequest request;
  request.set_study_id("s");
  request.set_trial_id(7);
  request.set_value(1.5);
  EXPECT_THAT(client->Observe(request),
              StatusIs(absl::StatusCode::kResourceExhausted, "try again"));
  EXPECT_EQ(service_.calls, 3);
}

// The first attempt was stored but its answer lost: the retry finds the trial
// observed with this very outcome and succeeds with it.
TEST_F(MetaoptClientTest, RetriedObserveThatFindsItsOwnOutcomeSucceeds) {
  service_.observed.set_id(7);
  service_.observed.set_state(v1::TRIAL_STATE_COMPLETED);
  service_.observed.set_value(1.5);
  (*service_.observed.mutable_metrics())["loss"] = 0.25;
  auto client = NewClient();
  v1::ObserveRequest request;
  request.set_study_id("s");
  request.set_trial_id(7);
  request.set_value(1.5);
  (*request.mutable_metrics())["loss"] = 0.25;
  absl::StatusOr<v1::ObserveResponse> response = client->Observe(request);
  ASSERT_THAT(response, IsOk());
  EXPECT_EQ(response->trial().id(), 7);
  EXPECT_EQ(response->trial().value(), 1.5);
  EXPECT_EQ(service_.calls, 3);  // Observe, Observe, GetTrial

  // Another outcome stored for the trial: the retry's error stands.
  service_.calls = 0;
  request.set_value(2.5);
  EXPECT_THAT(client->Observe(request),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("observed once")));
}

TEST_F(MetaoptClientTest, RetriesSuggestOnlyWithClientId) {
  service_.unavailable_before_success = 1;
  auto client = NewClient();
  v1::SuggestRequest anonymous;
  EXPECT_THAT(client->Suggest(anonymous),
              StatusIs(absl::StatusCode::kUnavailable, "try again"));
  EXPECT_EQ(service_.calls, 1);

  service_.calls = 0;
  v1::SuggestRequest named;
  named.set_client_id("worker-1");
  absl::StatusOr<v1::SuggestResponse> response = client->Suggest(named);
  ASSERT_THAT(response, IsOk());
  ASSERT_EQ(response->trials_size(), 1);
  EXPECT_EQ(response->trials(0).client_id(), "worker-1");
  EXPECT_EQ(service_.calls, 2);
}

TEST_F(MetaoptClientTest, RetriedDeleteThatFindsNothingSucceeds) {
  auto client = NewClient();
  EXPECT_THAT(client->DeleteStudy(v1::DeleteStudyRequest()), IsOk());
  EXPECT_EQ(service_.calls, 2);
}

TEST_F(MetaoptClientTest, DeadlineApplies) {
  options_.timeout = absl::Milliseconds(200);
  auto client = NewClient();
  const absl::Time start = absl::Now();
  EXPECT_THAT(client->ListModels(v1::ListModelsRequest()),
              StatusIs(absl::StatusCode::kDeadlineExceeded, ::testing::_));
  EXPECT_LT(absl::Now() - start, absl::Seconds(4));
}

TEST(MetaoptClientCreateTest, RejectsBadOptions) {
  MetaoptClient::Options options;
  options.address = "";
  EXPECT_THAT(
      MetaoptClient::Create(options),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("address")));
  options.address = "localhost:1";
  options.timeout = absl::ZeroDuration();
  EXPECT_THAT(
      MetaoptClient::Create(options),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("timeout")));
  options.timeout = absl::Seconds(1);
  options.max_attempts = 0;
  EXPECT_THAT(
      MetaoptClient::Create(options),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("max_attempts")));
}

// When the deadline strikes during a retry, the caller gets the server's
// reason for the failures before it (say, that its database is unavailable),
// not only that time ran out.
TEST_F(MetaoptClientTest, ServerReasonOutlivesTheDeadline) {
  service_.unavailable_before_success = 1;
  service_.hang_after_failures = true;
  options_.timeout = absl::Milliseconds(500);
  auto client = NewClient();
  EXPECT_THAT(client->GetStudy(v1::GetStudyRequest()),
              StatusIs(absl::StatusCode::kUnavailable,
                       AllOf(HasSubstr("try again"), HasSubstr("deadline"))));
  EXPECT_EQ(service_.calls, 2);
}

// A server never reached fails the first call within the connect timeout,
// not the call's, naming the address and gRPC's reason.
TEST(MetaoptClientCreateTest, UnreachableServerFailsFastNamingTheAddress) {
  MetaoptClient::Options options;
  options.address = "127.0.0.1:1";  // nothing listens on port 1
  options.timeout = absl::Seconds(60);
  options.connect_timeout = absl::Seconds(1);
  absl::StatusOr<std::unique_ptr<MetaoptClient>> client =
      MetaoptClient::Create(options);
  ASSERT_THAT(client, IsOk());
  const absl::Time start = absl::Now();
  EXPECT_THAT((*client)->GetStudy(v1::GetStudyRequest()),
              StatusIs(absl::StatusCode::kUnavailable,
                       AllOf(HasSubstr("cannot connect to 127.0.0.1:1"),
                             HasSubstr("onnection refused"))));
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  EXPECT_THAT((*client)->CheckHealth(),
              StatusIs(absl::StatusCode::kUnavailable,
                       HasSubstr("cannot connect to 127.0.0.1:1")));
}

TEST(MetaoptClientCreateTest, UnreachableServerIsUnavailable) {
  MetaoptClient::Options options;
  options.address = "127.0.0.1:1";  // nothing listens on port 1
  options.max_attempts = 2;
  options.initial_backoff = absl::Milliseconds(1);
  options.timeout = absl::Seconds(10);
  absl::StatusOr<std::unique_ptr<MetaoptClient>> client =
      MetaoptClient::Create(options);
  ASSERT_THAT(client, IsOk());
  EXPECT_THAT((*client)->GetStudy(v1::GetStudyRequest()),
              StatusIs(absl::StatusCode::kUnavailable, ::testing::_));
}

}  // namespace
}  // namespace metaopt
