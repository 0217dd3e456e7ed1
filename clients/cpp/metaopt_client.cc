#include "clients/cpp/metaopt_client.h"

#include <algorithm>
#include <fstream>
#include <random>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/common/file_util.h"
#include "core/common/mutex.h"
#include "google/protobuf/wrappers.pb.h"
#include "grpcpp/generic/generic_stub.h"

namespace metaopt {
namespace {

// Large enough for a full page of trials with big configurations.
constexpr int kMaxReceiveMessageBytes = 64 << 20;

// A uniform draw in [0, 1) for BackoffDelay.
double UnitDraw() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
}

// The channel credentials `options` ask for: given ones, TLS, or plaintext.
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> Credentials(
    const MetaoptClient::Options& options) {
  const bool tls = options.tls || !options.tls_ca_file.empty() ||
                   !options.tls_cert_file.empty() ||
                   !options.tls_key_file.empty() ||
                   !options.tls_server_name.empty();
  if (options.credentials != nullptr) {
    if (tls) {
      return absl::InvalidArgumentError(
          "credentials: give either credentials or the tls options, not both");
    }
    return options.credentials;
  }
  if (!tls) return grpc::InsecureChannelCredentials();
  if (options.tls_cert_file.empty() != options.tls_key_file.empty()) {
    return absl::InvalidArgumentError(
        "tls_cert_file, tls_key_file: give both or neither");
  }
  grpc::SslCredentialsOptions ssl;
  if (!options.tls_ca_file.empty()) {
    auto ca = ReadPemFile(options.tls_ca_file, "tls_ca_file");
    if (!ca.ok()) return ca.status();
    ssl.pem_root_certs = *std::move(ca);
  }
  if (!options.tls_cert_file.empty()) {
    auto cert = ReadPemFile(options.tls_cert_file, "tls_cert_file");
    if (!cert.ok()) return cert.status();
    auto key = ReadPemFile(options.tls_key_file, "tls_key_file");
    if (!key.ok()) return key.status();
    ssl.pem_cert_chain = *std::move(cert);
    ssl.pem_private_key = *std::move(key);
  }
  return grpc::SslCredentials(ssl);
}

// UNAVAILABLE: the server cannot be reached or is restarting.
// RESOURCE_EXHAUSTED: a server (or a proxy in front of it) shed the call
// without running it.
bool IsRetryable(grpc::StatusCode code) {
  return code == grpc::StatusCode::UNAVAILABLE ||
         code == grpc::StatusCode::RESOURCE_EXHAUSTED;
}

// One grpc.health.v1.Health/Check of `service` ("" is the server as a whole)
// over `channel`, without waiting for a connection; `*serving_status` gets the
// answer's ServingStatus. grpc.health.v1 without its generated code:
// HealthCheckRequest {string service = 1} and HealthCheckResponse
// {ServingStatus status = 1} have the wire format of StringValue and
// Int32Value.
grpc::Status AskHealth(const std::shared_ptr<grpc::ChannelInterface>& channel,
                       const std::string& service, absl::Time deadline,
                       int* serving_status) {
  grpc::TemplatedGenericStub<google::protobuf::StringValue,
                             google::protobuf::Int32Value>
      stub(channel);
  google::protobuf::StringValue request;
  request.set_value(service);
  google::protobuf::Int32Value response;
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(deadline));
  grpc::Status status;
  Notification done;
  stub.UnaryCall(&context, "/grpc.health.v1.Health/Check", grpc::StubOptions(),
                 &request, &response, [&](grpc::Status result) {
                   status = std::move(result);
                   done.Notify();
                 });
  done.WaitForNotification();
  *serving_status = response.value();
  return status;
}

// Whether `trial` holds the outcome `request` reports (value and metrics, or
// failure state and reason). In a study with several objectives the server
// also stores the first objective's value among the metrics, so a metric the
// request did not carry matches when it equals the trial's value.
bool HoldsOutcome(const v1::Trial& trial, const v1::ObserveRequest& request) {
  if (request.outcome_case() == v1::ObserveRequest::kFailure) {
    return trial.state() == request.failure().state() &&
           trial.failure_reason() == request.failure().reason();
  }
  if (trial.state() != v1::TRIAL_STATE_COMPLETED || !trial.has_value()) {
    return false;
  }
  if (request.outcome_case() == v1::ObserveRequest::kValue &&
      trial.value() != request.value()) {
    return false;
  }
  for (const auto& [name, value] : request.metrics()) {
    const auto it = trial.metrics().find(name);
    if (it == trial.metrics().end() || it->second != value) return false;
  }
  for (const auto& [name, value] : trial.metrics()) {
    if (!request.metrics().contains(name) && value != trial.value()) {
      return false;
    }
  }
  return true;
}

}  // namespace

absl::Duration BackoffDelay(int retry, absl::Duration initial,
                            absl::Duration max, double unit) {
  absl::Duration delay = initial;
  for (int i = 1; i < retry && delay < max; ++i) delay *= 2;
  delay = std::min(delay, max);
  return delay / 2 + delay / 2 * std::clamp(unit, 0.0, 1.0);
}

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
  for (const char c : options.token) {
    if (c < 0x21 || c > 0x7e) {
      return absl::InvalidArgumentError(
          "token: must be printable ASCII without spaces");
    }
  }
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      Credentials(options);
  if (!credentials.ok()) return credentials.status();
  grpc::ChannelArguments args;
  if (!options.tls_server_name.empty()) {
    args.SetSslTargetNameOverride(options.tls_server_name);
  }
  args.SetMaxReceiveMessageSize(kMaxReceiveMessageBytes);
  // Retries are done here, per method, with knowledge of idempotency.
  args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
  if (options.own_connection) {
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  }
  std::shared_ptr<grpc::Channel> channel =
      grpc::CreateCustomChannel(options.address, *credentials, args);
  auto client = std::make_unique<MetaoptClient>(
      v1::OptimizerService::NewStub(channel), options);
  client->channel_ = channel;
  return client;
}

absl::Status MetaoptClient::CheckHealth(const std::string& service) {
  if (channel_ == nullptr) {
    return absl::FailedPreconditionError(
        "health check needs a client made by MetaoptClient::Create");
  }
  if (absl::Status connected =
          AwaitFirstConnection(absl::Now() + options_.timeout);
      !connected.ok()) {
    return connected;
  }
  int value = 0;
  const grpc::Status status = AskHealth(
      channel_, service, absl::Now() + options_.timeout, &value);
  if (!status.ok()) return FromGrpcStatus(status);
  constexpr int kServing = 1;
  if (value == kServing) return absl::OkStatus();
  const char* names[] = {"UNKNOWN", "SERVING", "NOT_SERVING",
                         "SERVICE_UNKNOWN"};
  return absl::UnavailableError(absl::StrCat(
      "health of \"", service,
      "\": ", value >= 0 && value < 4 ? names[value] : absl::StrCat(value)));
}

absl::Status MetaoptClient::ExportMetaDataset(
    const v1::ExportMetaDatasetRequest& request,
    const std::function<absl::Status(const v1::ExportMetaDatasetResponse&)>&
        on_chunk) {
  if (absl::Status connected =
          AwaitFirstConnection(absl::Now() + options_.timeout);
      !connected.ok()) {
    return connected;
  }
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + options_.timeout));
  if (!options_.token.empty()) {
    context.AddMetadata("authorization",
                        absl::StrCat("Bearer ", options_.token));
  }
  std::unique_ptr<grpc::ClientReaderInterface<v1::ExportMetaDatasetResponse>>
      reader = stub_->ExportMetaDataset(&context, request);
  v1::ExportMetaDatasetResponse chunk;
  absl::Status handled;
  while (handled.ok() && reader->Read(&chunk)) handled = on_chunk(chunk);
  if (!handled.ok()) context.TryCancel();
  const grpc::Status status = reader->Finish();
  if (!handled.ok()) return handled;
  return FromGrpcStatus(status);
}

MetaoptClient::MetaoptClient(
    std::unique_ptr<v1::OptimizerService::StubInterface> stub,
    const Options& options)
    : stub_(std::move(stub)), options_(options) {}

absl::Status MetaoptClient::AwaitFirstConnection(absl::Time deadline) {
  if (channel_ == nullptr || connected_.load(std::memory_order_acquire)) {
    return absl::OkStatus();
  }
  const absl::Time start = absl::Now();
  const absl::Time until = std::min(deadline, start + options_.connect_timeout);
  if (channel_->WaitForConnected(absl::ToChronoTime(until))) {
    connected_.store(true, std::memory_order_release);
    return absl::OkStatus();
  }
  // Why: a health check that does not wait for the connection fails at once
  // with gRPC's reason when the last attempt failed (a refused connection, a
  // name that does not resolve, a TLS handshake), and runs into its short
  // deadline while a connection attempt gets no answer at all.
  int value = 0;
  const grpc::Status status =
      AskHealth(channel_, "", absl::Now() + absl::Seconds(1), &value);
  if (status.ok() || status.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
    connected_.store(true, std::memory_order_release);  // Connected meanwhile.
    return absl::OkStatus();
  }
  const std::string reason =
      status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED
          ? "no answer (no route to the host, or a firewall drops the "
            "packets)"
          : status.error_message();
  return absl::UnavailableError(absl::StrCat("cannot connect to ",
                                             options_.address, " within ",
                                             absl::FormatDuration(until - start),
                                             ": ", reason));
}

template <typename Request, typename Response>
absl::StatusOr<Response> MetaoptClient::Call(Method<Request, Response> method,
                                             const Request& request,
                                             bool idempotent, bool* retried) {
  const absl::Time deadline = absl::Now() + options_.timeout;
  const int attempts = idempotent ? options_.max_attempts : 1;
  if (retried != nullptr) *retried = false;
  if (absl::Status connected = AwaitFirstConnection(deadline);
      !connected.ok()) {
    return connected;
  }
  // The last retryable error: when the deadline then ends a retry, the
  // caller learns the server's reason (for example that its database is
  // unavailable) rather than only that time ran out.
  grpc::Status retryable;
  for (int attempt = 1;; ++attempt) {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(deadline));
    if (!options_.token.empty()) {
      context.AddMetadata("authorization",
                          absl::StrCat("Bearer ", options_.token));
    }
    Response response;
    grpc::Status status = (stub_.get()->*method)(&context, request, &response);
    if (status.ok()) return response;
    if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED &&
        !retryable.ok()) {
      return absl::Status(
          static_cast<absl::StatusCode>(retryable.error_code()),
          absl::StrCat(retryable.error_message(), " (retried until the ",
                       absl::FormatDuration(options_.timeout),
                       " deadline ran out)"));
    }
    if (!IsRetryable(status.error_code()) || attempt >= attempts) {
      return FromGrpcStatus(status);
    }
    retryable = status;
    const absl::Duration sleep = BackoffDelay(attempt, options_.initial_backoff,
                                              options_.max_backoff, UnitDraw());
    if (absl::Now() + sleep >= deadline) return FromGrpcStatus(status);
    absl::SleepFor(sleep);
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

absl::StatusOr<v1::GetParetoFrontResponse> MetaoptClient::GetParetoFront(
    const v1::GetParetoFrontRequest& request) {
  return Call(&v1::OptimizerService::StubInterface::GetParetoFront, request,
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

absl::StatusOr<v1::ReportIntermediateResponse>
MetaoptClient::ReportIntermediate(
    const v1::ReportIntermediateRequest& request) {
  return Call(&v1::OptimizerService::StubInterface::ReportIntermediate, request,
              /*idempotent=*/true);
}

absl::StatusOr<v1::SuggestResponse> MetaoptClient::Suggest(
    const v1::SuggestRequest& request) {
  return Call(&v1::OptimizerService::StubInterface::Suggest, request,
              /*idempotent=*/!request.client_id().empty());
}

absl::StatusOr<v1::ObserveResponse> MetaoptClient::Observe(
    const v1::ObserveRequest& request) {
  const bool by_trial_id =
      request.target_case() == v1::ObserveRequest::kTrialId;
  bool retried = false;
  absl::StatusOr<v1::ObserveResponse> response =
      Call(&v1::OptimizerService::StubInterface::Observe, request,
           /*idempotent=*/by_trial_id, &retried);
  if (!retried || !absl::IsFailedPrecondition(response.status()))
    return response;
  // The trial is already observed: by an earlier attempt whose answer was
  // lost, if it holds this very outcome.
  v1::GetTrialRequest get;
  get.set_study_id(request.study_id());
  get.set_trial_id(request.trial_id());
  absl::StatusOr<v1::GetTrialResponse> stored = GetTrial(get);
  if (!stored.ok() || !HoldsOutcome(stored->trial(), request)) return response;
  v1::ObserveResponse recovered;
  *recovered.mutable_trial() = std::move(*stored->mutable_trial());
  return recovered;
}

absl::StatusOr<v1::FineTuneResponse> MetaoptClient::FineTune(
    const v1::FineTuneRequest& request) {
  return Call(&v1::OptimizerService::StubInterface::FineTune, request,
              /*idempotent=*/false);
}

}  // namespace metaopt
