// Requests that gRPC cannot parse into their message type (bytes that are not
// protobuf, or a proto3 string such as study_id that is not valid UTF-8) never
// reach a handler: gRPC answers INTERNAL (synchronous API) or UNIMPLEMENTED
// (callback API) with an empty message. The interceptor
// made here turns that answer into INVALID_ARGUMENT naming the expected type.
#ifndef METAOPT_SERVER_MALFORMED_REQUEST_H_
#define METAOPT_SERVER_MALFORMED_REQUEST_H_

#include <memory>
#include <string>

#include "grpcpp/support/server_interceptor.h"

namespace metaopt::server {

// The INVALID_ARGUMENT message for an unparsable request to `method`, a gRPC
// path such as "/metaopt.v1.OptimizerService/Suggest" (the request type is
// looked up in the generated descriptor pool; a generic text when unknown).
std::string MalformedRequestMessage(const std::string& method);

// Rewrites INTERNAL or UNIMPLEMENTED with an empty message, which only gRPC's
// request parsing produces (ToGrpcStatus never sends an empty message), as
// INVALID_ARGUMENT.
// Thread-safe.
std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
MakeMalformedRequestInterceptorFactory();

}  // namespace metaopt::server

#endif  // METAOPT_SERVER_MALFORMED_REQUEST_H_
