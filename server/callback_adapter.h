// Runs synchronous-style RPC handlers under gRPC's callback API, on a bounded
// WorkPool.
//
// The synchronous gRPC server gives each RPC a thread from its quota and
// answers RESOURCE_EXHAUSTED when the quota is used up, so that many clients
// see errors. Under the callback API gRPC only calls a method to get the
// call's reactor; RunUnaryOnPool returns it at once and queues the handler on
// the pool, whose workers run it and finish the call. Clients beyond the
// workers wait in the queue (a metric and latency), never get an error.
//
// Porting a synchronous handler
//   grpc::Status Name(grpc::ServerContext*, const Req*, Resp*)
// means: derive from the service's CallbackService, keep the handler's body
// as a function of (const grpc::ServerContextBase&, const Req&, Resp*), and
// define the callback method as one line that passes it to RunUnaryOnPool
// (OptimizerServiceImpl's METAOPT_CALLBACK_RPC does this for every RPC).
#ifndef METAOPT_SERVER_CALLBACK_ADAPTER_H_
#define METAOPT_SERVER_CALLBACK_ADAPTER_H_

#include <utility>

#include "grpcpp/server_context.h"
#include "grpcpp/support/server_callback.h"
#include "grpcpp/support/status.h"
#include "server/work_pool.h"

namespace metaopt::server {

// Returns the reactor of the unary call `context` and queues
// `handler(*context, *request, response)` (returning grpc::Status) on `pool`;
// the call finishes with that status once the handler has run. A call that
// was cancelled, or whose deadline passed, while it waited in the queue
// finishes CANCELLED without running the handler: its client has gone.
// `request` and `response` belong to the call and live until it finishes.
template <typename Request, typename Response, typename Handler>
grpc::ServerUnaryReactor* RunUnaryOnPool(WorkPool& pool,
                                         grpc::CallbackServerContext* context,
                                         const Request* request,
                                         Response* response, Handler handler) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  pool.Submit([reactor, context, request, response,
               handler = std::move(handler)]() mutable {
    if (context->IsCancelled()) {
      reactor->Finish(grpc::Status::CANCELLED);
      return;
    }
    reactor->Finish(handler(*context, *request, response));
  });
  return reactor;
}

}  // namespace metaopt::server

#endif  // METAOPT_SERVER_CALLBACK_ADAPTER_H_
