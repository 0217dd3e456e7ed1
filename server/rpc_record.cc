#include "server/rpc_record.h"

#include "absl/strings/ascii.h"
#include "absl/time/clock.h"
#include "core/common/logging.h"

namespace metaopt::server {

void FinishRpc(const grpc::Status& status, absl::Time start,
               RpcObserver* observer, RpcRecord& record) {
  record.code = status.error_code();
  record.error_message = status.error_message();
  record.latency = absl::Now() - start;
  LogRpc(record);
  if (observer != nullptr) observer->OnRpc(record);
}

void LogRpc(const RpcRecord& record) {
  const bool ok = record.code == grpc::StatusCode::OK;
  // Server faults (a bug or a damaged database) are errors; the caller's
  // mistakes and ordinary refusals are warnings.
  const bool server_fault = record.code == grpc::StatusCode::INTERNAL ||
                            record.code == grpc::StatusCode::DATA_LOSS ||
                            record.code == grpc::StatusCode::UNKNOWN;
  const LogSeverity severity = ok             ? LogSeverity::kDebug
                               : server_fault ? LogSeverity::kError
                                              : LogSeverity::kWarning;
  if (!LogEnabled(severity)) return;
  std::vector<LogField> fields = {{"method", record.method}};
  if (!record.study_id.empty()) fields.push_back({"study_id", record.study_id});
  if (!record.trial_ids.empty()) {
    fields.push_back({"trial_ids", record.trial_ids});
  }
  fields.push_back({"code", GrpcCodeName(record.code)});
  fields.push_back({"latency_ms", absl::ToDoubleMilliseconds(record.latency)});
  if (!ok) fields.push_back({"error", record.error_message});
  Log(severity, "rpc", fields);
}

std::string GrpcCodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return "OK";
    case grpc::StatusCode::CANCELLED:
      return "CANCELLED";
    case grpc::StatusCode::UNKNOWN:
      return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND:
      return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS:
      return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED:
      return "PERMISSION_DENIED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED:
      return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE:
      return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL:
      return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE:
      return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS:
      return "DATA_LOSS";
    case grpc::StatusCode::UNAUTHENTICATED:
      return "UNAUTHENTICATED";
    default:
      return "UNKNOWN";
  }
}

std::string AlgorithmLabel(v1::AlgorithmKind kind) {
  if (kind == v1::ALGORITHM_KIND_UNSPECIFIED ||
      !v1::AlgorithmKind_IsValid(kind)) {
    return "none";
  }
  constexpr char kPrefix[] = "ALGORITHM_KIND_";
  return absl::AsciiStrToLower(
      v1::AlgorithmKind_Name(kind).substr(sizeof(kPrefix) - 1));
}

}  // namespace metaopt::server
