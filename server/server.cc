#include "server/server.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "core/common/logging.h"
#include "core/common/status_macros.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/resource_quota.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_builder.h"

namespace metaopt::server {

absl::StatusOr<std::unique_ptr<Server>> Server::BuildAndStart(
    const ServerOptions& options) {
  std::unique_ptr<Server> server(new Server());
  server->options_ = options;
  auto storage = storage::OpenSqliteStorage(options.db_path);
  if (!storage.ok()) {
    return absl::Status(storage.status().code(),
                        absl::StrCat("opening database ", options.db_path, ": ",
                                     storage.status().message()));
  }
  server->storage_ = *std::move(storage);
  auto models = registry::ModelManager::Create(
      {options.models_dir, options.models_poll_interval});
  if (!models.ok()) {
    return absl::Status(
        models.status().code(),
        absl::StrCat("opening model registry ", options.models_dir, ": ",
                     models.status().message()));
  }
  server->models_ = *std::move(models);
  METAOPT_RETURN_IF_ERROR(study::CheckEngineOptions(options.engine));
  server->engine_ = std::make_unique<study::StudyEngine>(
      server->storage_.get(), server->models_.get(), options.engine);
  server->service_ =
      std::make_unique<OptimizerServiceImpl>(server->engine_.get());

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options.listen, grpc::InsecureServerCredentials(),
                           &server->port_);
  builder.RegisterService(server->service_.get());
  builder.SetMaxReceiveMessageSize(options.max_message_bytes);
  builder.SetMaxSendMessageSize(options.max_message_bytes);
  grpc::ResourceQuota quota("metaopt");
  quota.SetMaxThreads(options.max_threads);
  builder.SetResourceQuota(quota);
  server->grpc_server_ = builder.BuildAndStart();
  if (server->grpc_server_ == nullptr || server->port_ == 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", options.listen));
  }
  server->grpc_server_->GetHealthCheckService()->SetServingStatus(true);
  return server;
}

Server::~Server() {
  Shutdown(absl::ZeroDuration());
  Wait();
}

void Server::Shutdown(absl::Duration grace) {
  if (grpc_server_ == nullptr) return;
  grpc_server_->GetHealthCheckService()->SetServingStatus(false);
  grpc_server_->Shutdown(
      std::chrono::system_clock::now() +
      std::chrono::microseconds(absl::ToInt64Microseconds(grace)));
}

void Server::Wait() {
  if (grpc_server_ != nullptr) grpc_server_->Wait();
}

}  // namespace metaopt::server
