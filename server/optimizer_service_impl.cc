#include "server/optimizer_service_impl.h"

#include <grpc/support/time.h>

#include <cstdint>
#include <iterator>
#include <optional>

#include "absl/time/time.h"
#include "core/common/status_macros.h"
#include "core/study/call_context.h"
#include "server/grpc_status_util.h"

namespace metaopt::server {
namespace {

// What the engine needs to know about the call: its deadline and, with
// authentication (`auth` not null), its owner. UNAUTHENTICATED when `auth` is
// set and the call carries no valid token.
absl::StatusOr<study::CallContext> ContextOf(const grpc::ServerContext& context,
                                             const TokenAuthenticator* auth) {
  study::CallContext call;
  if (auth != nullptr) {
    const auto [first, last] =
        context.client_metadata().equal_range("authorization");
    std::optional<absl::string_view> authorization;
    if (first != last) {
      if (std::next(first) != last) {
        return absl::UnauthenticatedError(
            "more than one 'authorization' metadata entry");
      }
      authorization =
          absl::string_view(first->second.data(), first->second.size());
    }
    METAOPT_ASSIGN_OR_RETURN(call.owner, auth->Authenticate(authorization));
  }
  const gpr_timespec deadline =
      gpr_convert_clock_type(context.raw_deadline(), GPR_CLOCK_REALTIME);
  if (gpr_time_cmp(deadline, gpr_inf_future(GPR_CLOCK_REALTIME)) != 0) {
    call.deadline = absl::FromUnixNanos(
        static_cast<int64_t>(deadline.tv_sec) * 1000000000 + deadline.tv_nsec);
  }
  return call;
}

// Calls `method` on the engine and moves its result into `response`.
template <typename Request, typename Response, typename Method>
grpc::Status Forward(study::StudyEngine* engine, const TokenAuthenticator* auth,
                     Method method, const grpc::ServerContext& context,
                     const Request& request, Response* response) {
  absl::StatusOr<study::CallContext> call = ContextOf(context, auth);
  if (!call.ok()) return ToGrpcStatus(call.status());
  absl::StatusOr<Response> result = (engine->*method)(request, *call);
  if (!result.ok()) return ToGrpcStatus(result.status());
  *response = *std::move(result);
  return grpc::Status::OK;
}

}  // namespace

#define METAOPT_FORWARD_RPC(Name)                                           \
  grpc::Status OptimizerServiceImpl::Name(grpc::ServerContext* context,     \
                                          const v1::Name##Request* request, \
                                          v1::Name##Response* response) {   \
    return Forward(engine_, auth_, &study::StudyEngine::Name, *context,     \
                   *request, response);                                     \
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
METAOPT_FORWARD_RPC(Heartbeat)

#undef METAOPT_FORWARD_RPC

}  // namespace metaopt::server
