#include "server/malformed_request.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "absl/strings/str_replace.h"
#include "google/protobuf/descriptor.h"
#include "grpcpp/support/interceptor.h"
#include "grpcpp/support/status.h"

namespace metaopt::server {
namespace {

using grpc::experimental::InterceptionHookPoints;

class MalformedRequestInterceptor final
    : public grpc::experimental::Interceptor {
 public:
  // `info` outlives the interceptor (both belong to the call).
  explicit MalformedRequestInterceptor(
      const grpc::experimental::ServerRpcInfo* info)
      : info_(info) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) final {
    if (methods->QueryInterceptionHookPoint(
            InterceptionHookPoints::PRE_SEND_STATUS)) {
      const grpc::Status status = methods->GetSendStatus();
      // The synchronous API answers a request it cannot parse with INTERNAL,
      // the callback API (OptimizerService) with UNIMPLEMENTED, both with an
      // empty message. An UNIMPLEMENTED of any other method is real: e.g. a
      // client probing for a reflection version the server lacks falls back
      // on it.
      const bool callback_method = absl::StartsWith(
          info_->method(), "/metaopt.v1.OptimizerService/");
      if ((status.error_code() == grpc::StatusCode::INTERNAL ||
           (status.error_code() == grpc::StatusCode::UNIMPLEMENTED &&
            callback_method)) &&
          status.error_message().empty()) {
        methods->ModifySendStatus(
            grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                         MalformedRequestMessage(info_->method())));
      }
    }
    methods->Proceed();
  }

 private:
  const grpc::experimental::ServerRpcInfo* const info_;
};

class MalformedRequestInterceptorFactory final
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) final {
    return new MalformedRequestInterceptor(info);
  }
};

}  // namespace

std::string MalformedRequestMessage(const std::string& method) {
  // "/package.Service/Method" -> "package.Service.Method".
  std::string full_name =
      absl::StrReplaceAll(method.substr(method.empty() ? 0 : 1), {{"/", "."}});
  const google::protobuf::MethodDescriptor* descriptor =
      google::protobuf::DescriptorPool::generated_pool()->FindMethodByName(
          full_name);
  const std::string type = descriptor == nullptr
                               ? std::string("request message")
                               : descriptor->input_type()->full_name();
  return absl::StrCat("request: not a valid ", type,
                      " (malformed protobuf bytes, or a string field such as "
                      "study_id or client_id that is not valid UTF-8)");
}

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
MakeMalformedRequestInterceptorFactory() {
  return std::make_unique<MalformedRequestInterceptorFactory>();
}

}  // namespace metaopt::server
