#include "server/optimizer_service_impl.h"

#include "server/grpc_status_util.h"

namespace metaopt::server {
namespace {

// Calls `method` on the engine and moves its result into `response`.
template <typename Request, typename Response, typename Method>
grpc::Status Forward(study::StudyEngine* engine, Method method,
                     const Request& request, Response* response) {
  absl::StatusOr<Response> result = (engine->*method)(request);
  if (!result.ok()) return ToGrpcStatus(result.status());
  *response = *std::move(result);
  return grpc::Status::OK;
}

}  // namespace

#define METAOPT_FORWARD_RPC(Name)                                           \
  grpc::Status OptimizerServiceImpl::Name(grpc::ServerContext*,             \
                                          const v1::Name##Request* request, \
                                          v1::Name##Response* response) {   \
    return Forward(engine_, &study::StudyEngine::Name, *request, response); \
  }

METAOPT_FORWARD_RPC(CreateStudy)
METAOPT_FORWARD_RPC(GetStudy)
METAOPT_FORWARD_RPC(ListStudies)
METAOPT_FORWARD_RPC(DeleteStudy)
METAOPT_FORWARD_RPC(Suggest)
METAOPT_FORWARD_RPC(Observe)
METAOPT_FORWARD_RPC(FineTune)
METAOPT_FORWARD_RPC(GetTrial)
METAOPT_FORWARD_RPC(ListTrials)
METAOPT_FORWARD_RPC(ListModels)

#undef METAOPT_FORWARD_RPC

}  // namespace metaopt::server
