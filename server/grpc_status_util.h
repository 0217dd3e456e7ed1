#ifndef METAOPT_SERVER_GRPC_STATUS_UTIL_H_
#define METAOPT_SERVER_GRPC_STATUS_UTIL_H_

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace metaopt::server {

// The one place where absl::Status becomes grpc::Status. Codes map one to one
// (they are defined to agree); messages are truncated to 1 KiB; an INTERNAL
// status always has a message.
grpc::Status ToGrpcStatus(const absl::Status& status);

}  // namespace metaopt::server

#endif  // METAOPT_SERVER_GRPC_STATUS_UTIL_H_
