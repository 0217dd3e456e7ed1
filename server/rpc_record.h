// What the service adapter records about each finished RPC: one log line and
// the RPC metrics.
#ifndef METAOPT_SERVER_RPC_RECORD_H_
#define METAOPT_SERVER_RPC_RECORD_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "grpcpp/support/status.h"
#include "metaopt/v1/study.pb.h"

namespace metaopt::server {

struct RpcRecord {
  std::string method;    // "Suggest"
  std::string study_id;  // empty for calls not about one study
  // Trials the call named or returned (Observe's trial_id, Suggest's trials).
  std::vector<int64_t> trial_ids;
  grpc::StatusCode code = grpc::StatusCode::OK;
  std::string error_message;  // empty when OK
  absl::Duration latency;
  // The study's algorithm; UNSPECIFIED when the call is not about a study or
  // the study is unknown.
  v1::AlgorithmKind algorithm = v1::ALGORITHM_KIND_UNSPECIFIED;
};

// Receives every finished OptimizerService RPC. Implementations are
// thread-safe (RPCs finish on many threads at once).
class RpcObserver {
 public:
  virtual ~RpcObserver() = default;
  virtual void OnRpc(const RpcRecord& record) = 0;
};

// Writes the RPC's one log line: "rpc" with fields method, study_id,
// trial_ids, code, latency_ms (and error for failures): at debug level when
// OK, at error level for server faults (INTERNAL, DATA_LOSS, UNKNOWN) and at
// warning level otherwise.
void LogRpc(const RpcRecord& record);

// Completes `record` with the call's outcome (code, message, latency since
// `start`), writes its log line (LogRpc) and hands it to `observer` (if not
// null): what every service adapter does when a call finishes.
void FinishRpc(const grpc::Status& status, absl::Time start,
               RpcObserver* observer, RpcRecord& record);

// "OK", "INVALID_ARGUMENT", ... as gRPC names its codes.
std::string GrpcCodeName(grpc::StatusCode code);

// "random", "gp", "deeppipe", "pmf", "mosaic"; "none" for UNSPECIFIED.
std::string AlgorithmLabel(v1::AlgorithmKind kind);

}  // namespace metaopt::server

#endif  // METAOPT_SERVER_RPC_RECORD_H_
