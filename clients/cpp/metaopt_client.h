// A small C++ client for metaopt.v1.OptimizerService.
//
// MetaoptClient wraps the generated stub: every call carries a deadline,
// returns the response message or the server's status as an absl::Status (the
// codes agree with grpc::StatusCode), and calls that are safe to repeat are
// retried on UNAVAILABLE and RESOURCE_EXHAUSTED (a server or a proxy
// shedding load) with jittered exponential backoff, within the call's one
// deadline (Options::timeout) and Options::max_attempts.
//
//   metaopt::MetaoptClient::Options options;
//   options.address = "localhost:50051";
//   auto client = metaopt::MetaoptClient::Create(options);
//   if (!client.ok()) ...
//   absl::StatusOr<metaopt::v1::SuggestResponse> r =
//       (*client)->Suggest(request);
//
// Thread safety: a MetaoptClient is safe to use from several threads at once
// (the gRPC stub and channel are thread-safe; the client holds no other mutable
// state).
#ifndef METAOPT_CLIENTS_CPP_METAOPT_CLIENT_H_
#define METAOPT_CLIENTS_CPP_METAOPT_CLIENT_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "metaopt/v1/optimizer_service.grpc.pb.h"

namespace metaopt {

// The wait before retry number `retry` (>= 1) of exponential backoff with
// "equal jitter": initial * 2^(retry - 1), capped at `max`, times a factor in
// [1/2, 1] given by `unit`, a uniform draw in [0, 1). Concurrent clients thus
// spread out but never retry at once.
absl::Duration BackoffDelay(int retry, absl::Duration initial,
                            absl::Duration max, double unit);

class MetaoptClient {
 public:
  struct Options {
    // gRPC target, for example "localhost:50051" or
    // "dns:///metaopt.example:50051".
    std::string address = "localhost:50051";
    // Deadline of one call, retries included.
    absl::Duration timeout = absl::Seconds(30);
    // How long the first call waits for the channel's first connection
    // (within `timeout`). A server never reached by then fails the call with
    // UNAVAILABLE naming the address and why ("Connection refused", no
    // answer). Once connected, calls ride out restarts by retrying instead.
    absl::Duration connect_timeout = absl::Seconds(5);
    // Attempts of a call that is safe to repeat and keeps failing with
    // UNAVAILABLE or RESOURCE_EXHAUSTED (1: no retry).
    int max_attempts = 5;
    // Backoff before the second attempt; doubled for each further one, up to
    // max_backoff. The actual sleep is drawn uniformly from [backoff / 2,
    // backoff].
    absl::Duration initial_backoff = absl::Milliseconds(100);
    absl::Duration max_backoff = absl::Seconds(2);
    // Bearer token sent as `authorization: Bearer <token>` on every call, for
    // a server started with --tokens. Empty: none.
    std::string token;
    // TLS. `tls` (implied by any of the files) turns it on. `tls_ca_file`:
    // PEM CA certificates that signed the server's certificate (empty: the
    // system's roots). `tls_cert_file` and `tls_key_file`: PEM client
    // certificate chain and key for a server that requires client
    // certificates (mutual TLS); both or neither. `tls_server_name`: the name
    // to check the server's certificate against instead of the address's host.
    bool tls = false;
    std::string tls_ca_file;
    std::string tls_cert_file;
    std::string tls_key_file;
    std::string tls_server_name;
    // Channel credentials given directly (instead of the TLS options above);
    // null with no TLS option means plaintext.
    std::shared_ptr<grpc::ChannelCredentials> credentials;
    // Create: open a connection of the client's own instead of sharing one
    // with the process's other channels of equal options, as clients in
    // separate processes would (for load generators).
    bool own_connection = false;
  };

  // Creates a client for `options.address`. The channel connects lazily, so an
  // unreachable server (or a TLS handshake it refuses) shows up as UNAVAILABLE
  // on the first call (after at most options.connect_timeout), not here. INVALID_ARGUMENT for bad options, NOT_FOUND
  // for a TLS file that cannot be read.
  static absl::StatusOr<std::unique_ptr<MetaoptClient>> Create(
      const Options& options);

  // Wraps an existing stub (for example one on an in-process channel).
  MetaoptClient(std::unique_ptr<v1::OptimizerService::StubInterface> stub,
                const Options& options);

  MetaoptClient(const MetaoptClient&) = delete;
  MetaoptClient& operator=(const MetaoptClient&) = delete;

  // Idempotent calls, retried on UNAVAILABLE and RESOURCE_EXHAUSTED.
  absl::StatusOr<v1::CreateStudyResponse> CreateStudy(
      const v1::CreateStudyRequest& request);
  absl::StatusOr<v1::GetStudyResponse> GetStudy(
      const v1::GetStudyRequest& request);
  absl::StatusOr<v1::ListStudiesResponse> ListStudies(
      const v1::ListStudiesRequest& request);
  // A retry that finds the study already gone (NOT_FOUND after an UNAVAILABLE
  // attempt) is success.
  absl::StatusOr<v1::DeleteStudyResponse> DeleteStudy(
      const v1::DeleteStudyRequest& request);
  absl::StatusOr<v1::GetTrialResponse> GetTrial(
      const v1::GetTrialRequest& request);
  absl::StatusOr<v1::ListTrialsResponse> ListTrials(
      const v1::ListTrialsRequest& request);
  // A study's Pareto front (several objectives), a page at a time.
  absl::StatusOr<v1::GetParetoFrontResponse> GetParetoFront(
      const v1::GetParetoFrontRequest& request);
  absl::StatusOr<v1::ListModelsResponse> ListModels(
      const v1::ListModelsRequest& request);
  // Extending a lease twice is harmless, so Heartbeat is retried too.
  absl::StatusOr<v1::HeartbeatResponse> Heartbeat(
      const v1::HeartbeatRequest& request);
  // A repeated report of a step with the same value answers the recorded
  // decision, so ReportIntermediate is retried too. A stopped trial
  // (response.should_stop()) is then observed with its last value.
  absl::StatusOr<v1::ReportIntermediateResponse> ReportIntermediate(
      const v1::ReportIntermediateRequest& request);

  // Retried only when request.client_id() is set: the server then hands the
  // same ACTIVE trials back.
  absl::StatusOr<v1::SuggestResponse> Suggest(
      const v1::SuggestRequest& request);

  // Observe of a trial id is retried: a trial is observed once, so a retry
  // cannot record it twice; when a retry finds the trial already observed
  // (FAILED_PRECONDITION) with exactly this outcome (an earlier attempt was
  // stored but its answer lost), the call succeeds with that trial. Observe of
  // a configuration records a new trial each time and is never retried.
  absl::StatusOr<v1::ObserveResponse> Observe(
      const v1::ObserveRequest& request);
  // Not idempotent, never retried.
  absl::StatusOr<v1::FineTuneResponse> FineTune(
      const v1::FineTuneRequest& request);

  // Runs the ExportMetaDataset stream and hands each message to `on_chunk` in
  // order; an error from it cancels the stream and is returned. One attempt,
  // whose deadline (options.timeout) covers the whole stream.
  absl::Status ExportMetaDataset(
      const v1::ExportMetaDatasetRequest& request,
      const std::function<absl::Status(const v1::ExportMetaDatasetResponse&)>&
          on_chunk);

  // Asks the server's grpc.health.v1.Health/Check about `service` ("" is the
  // server as a whole): OK when SERVING, UNAVAILABLE naming the status
  // otherwise, the call's error (e.g. NOT_FOUND for an unknown service) if it
  // fails. One attempt (a probe wants the current answer). FAILED_PRECONDITION
  // for a client that wraps a stub instead of owning a channel.
  absl::Status CheckHealth(const std::string& service = "");

  const Options& options() const { return options_; }

 private:
  template <typename Request, typename Response>
  using Method = grpc::Status (v1::OptimizerService::StubInterface::*)(
      grpc::ClientContext*, const Request&, Response*);

  // Runs `method` with one deadline for all attempts; retries UNAVAILABLE and
  // RESOURCE_EXHAUSTED when `idempotent`. `retried` (may be null) tells
  // whether a failed attempt preceded the final one.
  template <typename Request, typename Response>
  absl::StatusOr<Response> Call(Method<Request, Response> method,
                                const Request& request, bool idempotent,
                                bool* retried = nullptr);

  // Until the channel has connected once: waits for it up to
  // options_.connect_timeout (and `deadline`); UNAVAILABLE naming the address
  // and the reason if it does not connect. OK at once afterwards, and for a
  // client that wraps a stub.
  absl::Status AwaitFirstConnection(absl::Time deadline);

  std::unique_ptr<v1::OptimizerService::StubInterface> stub_;
  const Options options_;
  // Set by Create(); null when the client wraps a stub.
  std::shared_ptr<grpc::ChannelInterface> channel_;
  std::atomic<bool> connected_{false};
};

// grpc::Status -> absl::Status with the same code and message.
absl::Status FromGrpcStatus(const grpc::Status& status);

}  // namespace metaopt

#endif  // METAOPT_CLIENTS_CPP_METAOPT_CLIENT_H_
