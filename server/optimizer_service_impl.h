#ifndef METAOPT_SERVER_OPTIMIZER_SERVICE_IMPL_H_
#define METAOPT_SERVER_OPTIMIZER_SERVICE_IMPL_H_

#include "core/study/study_engine.h"
#include "metaopt/v1/optimizer_service.grpc.pb.h"
#include "server/rpc_record.h"
#include "server/token_auth.h"

namespace metaopt::server {

// The gRPC adapter: authenticates each RPC (when `auth` is set), forwards it
// to the StudyEngine with the caller's owner and deadline, and maps the status.
// Holds no state of its own. Thread-safe (the engine and authenticator are).
class OptimizerServiceImpl final : public v1::OptimizerService::Service {
 public:
  // `engine` and `auth` must outlive the service; `auth` null means no
  // authentication (every caller is the empty owner). Every RPC is logged
  // (LogRpc) and reported to `observer` (may be null; must outlive).
  explicit OptimizerServiceImpl(study::StudyEngine* engine,
                                const TokenAuthenticator* auth = nullptr,
                                RpcObserver* observer = nullptr)
      : engine_(engine), auth_(auth), observer_(observer) {}

  grpc::Status CreateStudy(grpc::ServerContext* context,
                           const v1::CreateStudyRequest* request,
                           v1::CreateStudyResponse* response) override;
  grpc::Status GetStudy(grpc::ServerContext* context,
                        const v1::GetStudyRequest* request,
                        v1::GetStudyResponse* response) override;
  grpc::Status ListStudies(grpc::ServerContext* context,
                           const v1::ListStudiesRequest* request,
                           v1::ListStudiesResponse* response) override;
  grpc::Status DeleteStudy(grpc::ServerContext* context,
                           const v1::DeleteStudyRequest* request,
                           v1::DeleteStudyResponse* response) override;
  grpc::Status Suggest(grpc::ServerContext* context,
                       const v1::SuggestRequest* request,
                       v1::SuggestResponse* response) override;
  grpc::Status Observe(grpc::ServerContext* context,
                       const v1::ObserveRequest* request,
                       v1::ObserveResponse* response) override;
  grpc::Status FineTune(grpc::ServerContext* context,
                        const v1::FineTuneRequest* request,
                        v1::FineTuneResponse* response) override;
  grpc::Status GetTrial(grpc::ServerContext* context,
                        const v1::GetTrialRequest* request,
                        v1::GetTrialResponse* response) override;
  grpc::Status ListTrials(grpc::ServerContext* context,
                          const v1::ListTrialsRequest* request,
                          v1::ListTrialsResponse* response) override;
  grpc::Status ListModels(grpc::ServerContext* context,
                          const v1::ListModelsRequest* request,
                          v1::ListModelsResponse* response) override;
  grpc::Status Heartbeat(grpc::ServerContext* context,
                         const v1::HeartbeatRequest* request,
                         v1::HeartbeatResponse* response) override;
  // Server streaming: the engine's exporter is pulled one chunk at a time
  // (history::HistoryExporter::Next), one message per chunk, so that a port
  // to the callback API drives the same exporter from OnWriteDone.
  grpc::Status ExportMetaDataset(
      grpc::ServerContext* context, const v1::ExportMetaDatasetRequest* request,
      grpc::ServerWriter<v1::ExportMetaDatasetResponse>* writer) override;

 private:
  study::StudyEngine* const engine_;
  const TokenAuthenticator* const auth_;
  RpcObserver* const observer_;
};

}  // namespace metaopt::server

#endif  // METAOPT_SERVER_OPTIMIZER_SERVICE_IMPL_H_
