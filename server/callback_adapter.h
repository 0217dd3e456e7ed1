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
// Porting a synchronous unary handler
//   grpc::Status Name(grpc::ServerContext*, const Req*, Resp*)
// means: derive from the service's CallbackService, keep the handler's body
// as a function of (const grpc::ServerContextBase&, const Req&, Resp*), and
// define the callback method as one line that passes it to RunUnaryOnPool
// (OptimizerServiceImpl's METAOPT_CALLBACK_RPC does this for every RPC).
// A synchronous server-streaming handler
//   grpc::Status Name(grpc::ServerContext*, const Req*,
//                     grpc::ServerWriter<Resp>*)
// keeps its body too, taking (const grpc::ServerContextBase&, const Req&,
// grpc::ServerWriterInterface<Resp>*) (the interface ServerWriter
// implements), and its callback method passes it to RunServerStreamOnPool.
#ifndef METAOPT_SERVER_CALLBACK_ADAPTER_H_
#define METAOPT_SERVER_CALLBACK_ADAPTER_H_

#include <utility>

#include "absl/base/thread_annotations.h"
#include "core/common/mutex.h"
#include "grpcpp/server_context.h"
#include "grpcpp/support/server_callback.h"
#include "grpcpp/support/status.h"
#include "grpcpp/support/sync_stream.h"
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

namespace callback_adapter_internal {

// The reactor of a server-streaming call whose handler runs on a pool worker
// and writes through the blocking ServerWriterInterface: each Write starts
// the write and waits for it to complete (one message in flight, so gRPC's
// flow control holds the worker back from a slow client). Deletes itself
// when the call is done.
template <typename Response>
class PooledWriter final : public grpc::ServerWriteReactor<Response>,
                           public grpc::ServerWriterInterface<Response> {
 public:
  template <typename Request, typename Handler>
  PooledWriter(WorkPool& pool, grpc::CallbackServerContext* context,
               const Request* request, Handler handler) {
    pool.Submit([this, context, request,
                 handler = std::move(handler)]() mutable {
      grpc::Status status = grpc::Status::CANCELLED;
      if (!context->IsCancelled()) {
        status =
            handler(*context, *request,
                    static_cast<grpc::ServerWriterInterface<Response>*>(this));
      }
      this->Finish(std::move(status));
    });
  }

  // ServerWriterInterface: sends `message` and returns once it is written;
  // false when the call has ended (cancelled, deadline, connection lost).
  bool Write(const Response& message, grpc::WriteOptions options) override
      ABSL_LOCKS_EXCLUDED(mu_) {
    {
      MutexLock lock(&mu_);
      if (cancelled_) return false;
      pending_ = true;
    }
    this->StartWrite(&message, options);  // Reacts in OnWriteDone.
    MutexLock lock(&mu_);
    mu_.Await(absl::Condition(
        +[](bool* pending) { return !*pending; }, &pending_));
    return write_ok_;
  }
  void SendInitialMetadata() override ABSL_LOCKS_EXCLUDED(mu_) {
    {
      MutexLock lock(&mu_);
      pending_ = true;
    }
    this->StartSendInitialMetadata();  // Reacts in OnSendInitialMetadataDone.
    MutexLock lock(&mu_);
    mu_.Await(absl::Condition(
        +[](bool* pending) { return !*pending; }, &pending_));
  }

  void OnWriteDone(bool ok) override ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(&mu_);
    write_ok_ = ok;
    pending_ = false;
  }
  void OnSendInitialMetadataDone(bool /*ok*/) override
      ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(&mu_);
    pending_ = false;
  }
  void OnCancel() override ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(&mu_);
    cancelled_ = true;
  }
  void OnDone() override { delete this; }

 private:
  Mutex mu_;
  bool pending_ ABSL_GUARDED_BY(mu_) = false;
  bool write_ok_ ABSL_GUARDED_BY(mu_) = false;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace callback_adapter_internal

// Returns the reactor of the server-streaming call `context` and queues
// `handler(*context, *request, writer)` (returning grpc::Status) on `pool`,
// where `writer` is a grpc::ServerWriterInterface<Response>* whose Write
// blocks until the message is written (false once the call has ended); the
// call finishes with the handler's status. As RunUnaryOnPool, a call that
// ended while it waited in the queue finishes CANCELLED without running the
// handler.
template <typename Response, typename Request, typename Handler>
grpc::ServerWriteReactor<Response>* RunServerStreamOnPool(
    WorkPool& pool, grpc::CallbackServerContext* context,
    const Request* request, Handler handler) {
  return new callback_adapter_internal::PooledWriter<Response>(
      pool, context, request, std::move(handler));
}

}  // namespace metaopt::server

#endif  // METAOPT_SERVER_CALLBACK_ADAPTER_H_
