#include "clients/cpp/metaopt_client.h"

#include <algorithm>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"

namespace metaopt {
namespace {

// Large enough for a full page of trials with big configurations.
constexpr int kMaxReceiveMessageBytes = 64 << 20;

// Uniform in [d / 2, d]: "equal jitter", so concurrent clients spread out but
// never retry at once.
absl::Duration Jitter(absl::Duration d) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::uniform_real_distribution<double> unit(0.5, 1.0);
  return d * unit(rng);
}

}  // namespace

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  // grpc::StatusCode and absl::StatusCode share the google.rpc.Code numbering.
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      status.error_message());
}

absl::StatusOr<std::unique_ptr<MetaoptClient>> MetaoptClient::Create(
    const Options& options) {
  if (options.address.empty()) {
    return absl::InvalidArgumentError("address: must not be empty");
  }
  if (options.timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("timeout: ", absl::FormatDuration(options.timeout),
                     " is not positive"));
  }
  if (options.max_attempts < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_attempts: ", options.max_attempts, " is less than 1"));
  }
  std::shared_ptr<grpc::ChannelCredentials> credentials =
      options.credentials ? options.credentials
                          : grpc::InsecureChannelCredentials();
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(kMaxReceiveMessageBytes);
  // Retries are done here, per method, with knowledge of idempotency.
  args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
  std::shared_ptr<grpc::Channel> channel =
      grpc::CreateCustomChannel(options.address, credentials, args);
  return std::make_unique<MetaoptClient>(v1::OptimizerService::NewStub(channel),
                                         options);
}

MetaoptClient::MetaoptClient(
    std::unique_ptr<v1::OptimizerService::StubInterface> stub,
    const Options& options)
    : stub_(std::move(stub)), options_(options) {}

template <typename Request, typename Response>
absl::StatusOr<Response> MetaoptClient::Call(Method<Request, Response> method,
                                             const Request& request,
                                             bool idempotent, bool* retried) {
  const absl::Time deadline = absl::Now() + options_.timeout;
  const int attempts = idempotent ? options_.max_attempts : 1;
  absl::Duration backoff = options_.initial_backoff;
  if (retried != nullptr) *retried = false;
  for (int attempt = 1;; ++attempt) {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(deadline));
    Response response;
    grpc::Status status = (stub_.get()->*method)(&context, request, &response);
    if (status.ok()) return response;
    if (status.error_code() != grpc::StatusCode::UNAVAILABLE ||
        attempt >= attempts) {
      return FromGrpcStatus(status);
    }
    const absl::Duration sleep = Jitter(backoff);
    if (absl::Now() + sleep >= deadline) return FromGrpcStatus(status);
    absl::SleepFor(sleep);
    backoff = std::min(backoff * 2, options_.max_backoff);
    if (retried != nullptr) *retried = true;
  }
}

absl::StatusOr<v1::CreateStudyResponse> MetaoptClient::CreateStudy(
    const v1::CreateStudyRequest& request) {
  // Create-or-get: repeating it with the same spec returns the same study.
  return Call(&v1::OptimizerService::StubInterface::CreateStudy, request,
              /*idempotent=*/true);
}

absl::StatusOr<v1::GetStudyResponse> MetaoptClient::GetStudy(
    const v1::GetStudyRequest& request) {
  return Call(&v1::OptimizerService::StubInterface::GetStudy, request,
              /*idempotent=*/true);
}

absl::StatusOr<v1::ListStudiesResponse> MetaoptClient::ListStudies(
    const v1::ListStudiesRequest& request) {
  return Call(&v1::OptimizerService::StubInterface::ListStudies, request,
              /*idempotent=*/true);
}

absl::StatusOr<v1::DeleteStudyResponse> MetaoptClient::DeleteStudy(
    const v1::DeleteStudyRequest& request) {
  bool retried = false;
  absl::StatusOr<v1::DeleteStudyResponse> response =
      Call(&v1::OptimizerService::StubInterface::DeleteStudy, request,
           /*idempotent=*/true, &retried);
  if (retried && absl::IsNotFound(response.status()))
    return v1::DeleteStudyResponse();
  return response;
}

absl::StatusOr<v1::GetTrialResponse> MetaoptClient::GetTrial(
    const v1::GetTrialRequest& request) {
  return Call(&v1::OptimizerService::StubInterface::GetTrial, request,
              /*idempotent=*/true);
}

absl::StatusOr<v1::ListTrialsResponse> MetaoptClient::ListTrials(
    const v1::ListTrialsRequest& request) {
  return Call(&v1::OptimizerService::StubInterface::ListTrials, request,
              /*idempotent=*/true);
}

absl::StatusOr<v1::ListModelsResponse> MetaoptClient::ListModels(
    const v1::ListModelsRequest& request) {
  return Call(&v1::OptimizerService::StubInterface::ListModels, request,
              /*idempotent=*/true);
}

absl::StatusOr<v1::HeartbeatResponse> MetaoptClient::Heartbeat(
    const v1::HeartbeatRequest& request) {
  return Call(&v1::OptimizerService::StubInterface::Heartbeat, request,
              /*idempotent=*/true);
}

absl::StatusOr<v1::SuggestResponse> MetaoptClient::Suggest(
    const v1::SuggestRequest& request) {
  return Call(&v1::OptimizerService::StubInterface::Suggest, request,
              /*idempotent=*/!request.client_id().empty());
}

absl::StatusOr<v1::ObserveResponse> MetaoptClient::Observe(
    const v1::ObserveRequest& request) {
  return Call(&v1::OptimizerService::StubInterface::Observe, request,
              /*idempotent=*/false);
}

absl::StatusOr<v1::FineTuneResponse> MetaoptClient::FineTune(
    const v1::FineTuneRequest& request) {
  return Call(&v1::OptimizerService::StubInterface::FineTune, request,
              /*idempotent=*/false);
}

}  // namespace metaopt
