#include "server/server.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/common/file_util.h"
#include "core/common/logging.h"
#include "core/common/status_macros.h"
#include "core/common/strings.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/resource_quota.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_builder.h"
#include "server/katib/katib_space.h"
#include "server/malformed_request.h"
#include "server/tls_files.h"

namespace metaopt::server {
namespace {

// A server certificate that expires sooner than this is logged at start.
constexpr absl::Duration kCertificateExpiryWarning = absl::Hours(24 * 14);

// Plaintext without TLS files; TLS with them, requiring and verifying client
// certificates when a client CA is given.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> BuildCredentials(
    const ServerOptions& options) {
  if (options.tls_cert_file.empty() != options.tls_key_file.empty()) {
    return absl::InvalidArgumentError(
        "--tls-cert and --tls-key: give both or neither");
  }
  if (options.tls_cert_file.empty()) {
    if (!options.tls_client_ca_file.empty()) {
      return absl::InvalidArgumentError(
          "--tls-client-ca: needs --tls-cert and --tls-key (mutual TLS is "
          "TLS)");
    }
    return grpc::InsecureServerCredentials();
  }
  grpc::SslServerCredentialsOptions ssl;
  grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
  METAOPT_ASSIGN_OR_RETURN(pair.cert_chain,
                           ReadPemFile(options.tls_cert_file, "--tls-cert"));
  METAOPT_ASSIGN_OR_RETURN(pair.private_key,
                           ReadPemFile(options.tls_key_file, "--tls-key"));
  const absl::Time now = absl::Now();
  METAOPT_ASSIGN_OR_RETURN(
      const CertificateInfo certificate,
      CheckServerCertificate(pair.cert_chain, options.tls_cert_file,
                             pair.private_key, options.tls_key_file, now));
  if (certificate.not_after - now < kCertificateExpiryWarning) {
    LogWarning(absl::StrCat(
        "--tls-cert ", options.tls_cert_file, ": the certificate (",
        certificate.subject, ") expires in ",
        absl::FormatDuration(
            absl::Trunc(certificate.not_after - now, absl::Minutes(1)))));
  }
  if (certificate.not_before > now) {
    LogWarning(absl::StrCat("--tls-cert ", options.tls_cert_file,
                            ": the certificate (", certificate.subject,
                            ") is not valid before ",
                            absl::FormatTime(certificate.not_before)));
  }
  ssl.pem_key_cert_pairs.push_back(std::move(pair));
  if (!options.tls_client_ca_file.empty()) {
    METAOPT_ASSIGN_OR_RETURN(
        ssl.pem_root_certs,
        ReadPemFile(options.tls_client_ca_file, "--tls-client-ca"));
    METAOPT_RETURN_IF_ERROR(
        CheckCaCertificates(ssl.pem_root_certs, options.tls_client_ca_file));
    ssl.client_certificate_request =
        GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(ssl);
}

// The dashboard listener's bounds. Without tokens anyone who reaches the
// listener reads every study, so a page of another site must not reach it
// through DNS rebinding: the Host header is checked.
http::HttpListenerOptions DashboardListenerOptions(
    const ServerOptions& options) {
  http::HttpListenerOptions listener;
  listener.threads = options.http_threads;
  listener.read_timeout = options.http_read_timeout;
  listener.write_timeout = options.http_write_timeout;
  listener.max_response_bytes = options.http_max_response_bytes;
  if (options.tokens_file.empty()) {
    listener.allowed_hosts = options.http_allowed_hosts;
    listener.allowed_hosts.push_back("localhost");
  }
  return listener;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Server>> Server::BuildAndStart(
    const ServerOptions& options) {
  std::unique_ptr<Server> server(new Server());
  server->options_ = options;
  METAOPT_ASSIGN_OR_RETURN(std::shared_ptr<grpc::ServerCredentials> credentials,
                           BuildCredentials(options));
  if (!options.tokens_file.empty()) {
    METAOPT_ASSIGN_OR_RETURN(server->auth_,
                             TokenAuthenticator::FromFile(options.tokens_file));
  }
  storage::SqliteOptions sqlite_options;
  storage::PostgresOptions postgres_options;
  postgres_options.pool_size = options.db_pool_size;
  postgres_options.retry_budget = options.db_retry_budget;
  if (!options.metrics_listen.empty()) {
    METAOPT_ASSIGN_OR_RETURN(server->metrics_, ServerMetrics::Create());
    sqlite_options.on_commit =
        [metrics = server->metrics_.get()](absl::Duration latency) {
          metrics->OnCommit(latency);
        };
    postgres_options.on_commit = sqlite_options.on_commit;
  }
  METAOPT_ASSIGN_OR_RETURN(
      server->storage_,
      storage::OpenStorage(options.db_path, sqlite_options, postgres_options));
  auto models = registry::ModelManager::Create(
      {options.models_dir, options.models_poll_interval});
  if (!models.ok()) {
    return absl::Status(
        models.status().code(),
        absl::StrCat("opening model registry ", options.models_dir, ": ",
                     models.status().message()));
  }
  server->models_ = *std::move(models);
  study::EngineOptions engine_options = options.engine;
  if (options.learn_from_history) {
    history::LearnerOptions learner_options = options.learner;
    learner_options.registry_dir = options.models_dir;
    METAOPT_ASSIGN_OR_RETURN(server->learner_,
                             history::HistoryLearner::Create(
                                 server->storage_.get(), server->models_.get(),
                                 std::move(learner_options)));
    engine_options.on_observed = [learner = server->learner_.get()](
                                     const storage::StudyKey& key,
                                     int64_t completed_trials) {
      learner->OnObserved(key, completed_trials);
    };
  }
  engine_options.max_studies_per_owner = options.max_studies_per_owner;
  engine_options.max_loaded_studies = options.max_loaded_studies;
  // A ListStudies page fits in one response, with room for its other fields.
  engine_options.max_page_bytes =
      std::min<int64_t>(engine_options.max_page_bytes,
                        std::max(1, options.max_message_bytes / 8 * 7));
  // A trial's intermediate values take at most half a response page, so that
  // a smaller --max-message-bytes lowers them too.
  engine_options.max_trial_intermediate_bytes =
      std::min<int64_t>(engine_options.max_trial_intermediate_bytes,
                        engine_options.max_page_bytes / 2);
  METAOPT_RETURN_IF_ERROR(study::CheckEngineOptions(engine_options));
  server->engine_ = std::make_unique<study::StudyEngine>(
      server->storage_.get(), server->models_.get(), engine_options);
  std::function<void(absl::Duration)> on_wait;
  if (server->metrics_ != nullptr) {
    on_wait = [metrics = server->metrics_.get()](absl::Duration wait) {
      metrics->OnQueueWait(wait);
    };
  }
  server->pool_ =
      std::make_unique<WorkPool>(options.max_threads, std::move(on_wait));
  server->service_ = std::make_unique<OptimizerServiceImpl>(
      server->engine_.get(), server->pool_.get(), server->auth_.get(),
      server->metrics_.get());
  if (server->metrics_ != nullptr) {
    server->metrics_->WatchSources(server->engine_.get(), server->models_.get(),
                                   server->learner_.get());
    server->metrics_->WatchWorkPool(server->pool_.get());
    METAOPT_ASSIGN_OR_RETURN(
        server->metrics_http_,
        metrics::MetricsHttpServer::Start(
            options.metrics_listen,
            [metrics = server->metrics_.get()] {
              return metrics->TextExposition();
            }));
  }
  if (!options.http_listen.empty()) {
    server->json_api_ = std::make_unique<http::JsonApi>(server->engine_.get(),
                                                        server->auth_.get());
    server->static_files_ =
        std::make_unique<http::StaticFiles>(options.dashboard_dir);
    METAOPT_ASSIGN_OR_RETURN(server->http_listener_,
                             http::HttpListener::Start(
                                 options.http_listen, "--http-listen",
                                 [api = server->json_api_.get(),
                                  files = server->static_files_.get()](
                                     const http::HttpRequest& request) {
                                   return absl::StartsWith(request.path,
                                                           "/api/")
                                              ? api->Handle(request)
                                              : files->Serve(request);
                                 },
                                 DashboardListenerOptions(options)));
  }

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options.listen, credentials, &server->port_);
  builder.RegisterService(server->service_.get());
  std::vector<
      std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
      interceptors;
  interceptors.push_back(MakeMalformedRequestInterceptorFactory());
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
  builder.SetMaxReceiveMessageSize(options.max_message_bytes);
  builder.SetMaxSendMessageSize(options.max_message_bytes);
  // The thread quota bounds the synchronous services only (reflection);
  // OptimizerService runs on the work pool.
  grpc::ResourceQuota quota("metaopt");
  quota.SetMaxThreads(options.max_threads);
  builder.SetResourceQuota(quota);
  server->grpc_server_ = builder.BuildAndStart();
  if (server->grpc_server_ == nullptr || server->port_ == 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", options.listen));
  }
  server->grpc_server_->GetHealthCheckService()->SetServingStatus(true);
  server->grpc_server_->GetHealthCheckService()->SetServingStatus(
      v1::OptimizerService::service_full_name(), true);
  if (!options.katib_listen.empty()) {
    METAOPT_RETURN_IF_ERROR(server->StartKatib());
  }
  server->database_watcher_ = std::thread(
      [raw = server.get()] { raw->WatchDatabase(absl::Seconds(2)); });
  return server;
}

absl::Status Server::StartKatib() {
  katib::KatibOptions katib_options;
  katib_options.ns = options_.katib_namespace;
  katib_options.owner_from_namespace = auth_ != nullptr;
  if (katib_options.ns.empty()) {
    return absl::InvalidArgumentError("--katib-namespace: empty");
  }
  // A namespace that cannot name a study fails here, not at every call.
  METAOPT_RETURN_IF_ERROR(Annotate(
      katib::StudyIdOf(katib_options.ns, "experiment").status(),
      "--katib-namespace"));
  katib_adapter_ =
      std::make_unique<katib::KatibAdapter>(engine_.get(), katib_options);
  katib_suggestion_ = std::make_unique<katib::KatibSuggestionService>(
      katib_adapter_.get(), pool_.get(), metrics_.get());
  katib_early_stopping_ = std::make_unique<katib::KatibEarlyStoppingService>(
      katib_adapter_.get(), pool_.get(), metrics_.get());
  grpc::ServerBuilder builder;
  // Katib's controller dials its algorithm services without TLS.
  builder.AddListeningPort(options_.katib_listen,
                           grpc::InsecureServerCredentials(), &katib_port_);
  builder.RegisterService(katib_suggestion_.get());
  builder.RegisterService(katib_early_stopping_.get());
  builder.SetMaxReceiveMessageSize(options_.max_message_bytes);
  builder.SetMaxSendMessageSize(options_.max_message_bytes);
  katib_server_ = builder.BuildAndStart();
  if (katib_server_ == nullptr || katib_port_ == 0) {
    return absl::UnavailableError(absl::StrCat(
        "--katib-listen: cannot listen on ", options_.katib_listen));
  }
  // Katib's readiness probes ask for the overall status or for the service
  // name of Katib's own algorithm images.
  grpc::HealthCheckServiceInterface* health =
      katib_server_->GetHealthCheckService();
  health->SetServingStatus(true);
  for (const char* service :
       {"manager.v1beta1.Suggestion", "manager.v1beta1.EarlyStopping"}) {
    health->SetServingStatus(service, true);
  }
  health->SetServingStatus(katib::kapi::Suggestion::service_full_name(), true);
  health->SetServingStatus(katib::kapi::EarlyStopping::service_full_name(),
                           true);
  LogInfo(absl::StrCat("katib: Suggestion and EarlyStopping services on ",
                       options_.katib_listen, " (port ", katib_port_,
                       "), namespace ", options_.katib_namespace));
  return absl::OkStatus();
}

Server::~Server() {
  Shutdown(absl::ZeroDuration());
  Wait();
  stop_watching_.Notify();
  if (database_watcher_.joinable()) database_watcher_.join();
}

void Server::WatchDatabase(absl::Duration interval) {
  bool reachable = true;
  while (!stop_watching_.WaitForNotificationWithTimeout(interval)) {
    const absl::Status status = storage_->CheckReachable();
    if (status.ok() == reachable) continue;
    reachable = status.ok();
    MutexLock lock(&health_mu_);
    if (stopping_) return;
    // Only the service that needs the database: the server's overall status
    // ("") stays SERVING, so that a liveness probe does not restart a process
    // that only waits for its database.
    grpc_server_->GetHealthCheckService()->SetServingStatus(
        v1::OptimizerService::service_full_name(), reachable);
    if (reachable) {
      LogInfo(absl::StrCat("the database is reachable again: health of ",
                           v1::OptimizerService::service_full_name(),
                           " SERVING"));
    } else {
      LogWarning(absl::StrCat(
          "the database is unreachable (", status.message(), "): health of ",
          v1::OptimizerService::service_full_name(), " NOT_SERVING"));
    }
  }
}

void Server::Shutdown(absl::Duration grace) {
  if (grpc_server_ == nullptr) return;
  {
    MutexLock lock(&health_mu_);
    stopping_ = true;
  }
  grpc_server_->GetHealthCheckService()->SetServingStatus(false);
  const auto deadline =
      std::chrono::system_clock::now() +
      std::chrono::microseconds(absl::ToInt64Microseconds(grace));
  if (katib_server_ != nullptr) {
    katib_server_->GetHealthCheckService()->SetServingStatus(false);
    katib_server_->Shutdown(deadline);
  }
  grpc_server_->Shutdown(deadline);
}

void Server::Wait() {
  if (katib_server_ != nullptr) katib_server_->Wait();
  if (grpc_server_ != nullptr) grpc_server_->Wait();
}

}  // namespace metaopt::server
