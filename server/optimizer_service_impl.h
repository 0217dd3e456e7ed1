#ifndef METAOPT_SERVER_OPTIMIZER_SERVICE_IMPL_H_
#define METAOPT_SERVER_OPTIMIZER_SERVICE_IMPL_H_

#include "core/study/study_engine.h"
#include "grpcpp/server_context.h"
#include "grpcpp/support/server_callback.h"
#include "metaopt/v1/optimizer_service.grpc.pb.h"
#include "server/rpc_record.h"
#include "server/token_auth.h"
#include "server/work_pool.h"

namespace metaopt::server {

// Declares the callback method of the unary RPC `Name` (Name##Request ->
// Name##Response); METAOPT_CALLBACK_RPC in the .cc file defines it.
#define METAOPT_DECLARE_CALLBACK_RPC(Name)                             \
  grpc::ServerUnaryReactor* Name(grpc::CallbackServerContext* context, \
                                 const v1::Name##Request* request,     \
                                 v1::Name##Response* response) override

// The gRPC adapter: authenticates each RPC (when `auth` is set), forwards it
// to the StudyEngine with the caller's owner and deadline, and maps the status.
// Uses gRPC's callback API: every RPC runs on `pool` (RunUnaryOnPool), so
// that gRPC's threads never block on the engine and calls beyond the pool's
// workers wait in its queue instead of failing. Holds no state of its own.
// Thread-safe (the engine, authenticator and pool are).
class OptimizerServiceImpl final
    : public v1::OptimizerService::CallbackService {
 public:
  // `engine`, `pool` and `auth` must outlive the service; `auth` null means
  // no authentication (every caller is the empty owner). Every RPC is logged
  // (LogRpc) and reported to `observer` (may be null; must outlive).
  OptimizerServiceImpl(study::StudyEngine* engine, WorkPool* pool,
                       const TokenAuthenticator* auth = nullptr,
                       RpcObserver* observer = nullptr)
      : engine_(engine), pool_(pool), auth_(auth), observer_(observer) {}

  METAOPT_DECLARE_CALLBACK_RPC(CreateStudy);
  METAOPT_DECLARE_CALLBACK_RPC(GetStudy);
  METAOPT_DECLARE_CALLBACK_RPC(ListStudies);
  METAOPT_DECLARE_CALLBACK_RPC(DeleteStudy);
  METAOPT_DECLARE_CALLBACK_RPC(Suggest);
  METAOPT_DECLARE_CALLBACK_RPC(Observe);
  METAOPT_DECLARE_CALLBACK_RPC(FineTune);
  METAOPT_DECLARE_CALLBACK_RPC(GetTrial);
  METAOPT_DECLARE_CALLBACK_RPC(ListTrials);
  METAOPT_DECLARE_CALLBACK_RPC(ListModels);
  METAOPT_DECLARE_CALLBACK_RPC(Heartbeat);
  METAOPT_DECLARE_CALLBACK_RPC(ReportIntermediate);
  METAOPT_DECLARE_CALLBACK_RPC(GetParetoFront);
  // Server streaming on the work pool (RunServerStreamOnPool): the engine's
  // exporter is pulled one chunk at a time (history::HistoryExporter::Next),
  // one message per chunk; the stream holds one worker while it lasts.
  grpc::ServerWriteReactor<v1::ExportMetaDatasetResponse>* ExportMetaDataset(
      grpc::CallbackServerContext* context,
      const v1::ExportMetaDatasetRequest* request) override;

 private:
  grpc::Status ExportOnPool(
      const grpc::ServerContextBase& context,
      const v1::ExportMetaDatasetRequest& request,
      grpc::ServerWriterInterface<v1::ExportMetaDatasetResponse>* writer);

  study::StudyEngine* const engine_;
  WorkPool* const pool_;
  const TokenAuthenticator* const auth_;
  RpcObserver* const observer_;
};

}  // namespace metaopt::server

#endif  // METAOPT_SERVER_OPTIMIZER_SERVICE_IMPL_H_
