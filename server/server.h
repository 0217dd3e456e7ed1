#ifndef METAOPT_SERVER_SERVER_H_
#define METAOPT_SERVER_SERVER_H_

#include <memory>
#include <string>
#include <vector>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "core/common/mutex.h"
#include "core/history/history_learner.h"
#include "core/registry/model_manager.h"
#include "core/storage/storage.h"
#include "core/study/study_engine.h"
#include "grpcpp/server.h"
#include "server/http/http_listener.h"
#include "server/http/json_api.h"
#include "server/http/static_files.h"
#include "server/katib/katib_service.h"
#include "server/metrics/metrics_http_server.h"
#include "server/metrics/server_metrics.h"
#include "server/optimizer_service_impl.h"
#include "server/token_auth.h"
#include "server/work_pool.h"

namespace metaopt::server {

struct ServerOptions {
  // host:port to listen on; port 0 picks a free port (see Server::port()).
  std::string listen = "0.0.0.0:50051";
  // The database (storage::OpenStorage): a SQLite file (created if absent),
  // `sqlite:PATH`, or a PostgreSQL URI `postgresql://...` that several
  // servers may share.
  std::string db_path = "./metaopt.db";
  // PostgreSQL only: connections kept open, and how long a storage call keeps
  // retrying an unreachable database before the RPC fails with UNAVAILABLE.
  int db_pool_size = 4;
  absl::Duration db_retry_budget = absl::Seconds(15);
  // Model registry directory (may be absent: no models).
  std::string models_dir = "./models";
  // How often the registry is polled for new model versions; 0 disables
  // polling (models are then loaded once at start).
  absl::Duration models_poll_interval = absl::Seconds(30);
  // Largest request or response message accepted.
  int max_message_bytes = 64 << 20;
  // Workers that run OptimizerService RPCs (the engine's calls, which may
  // block on storage and model fits). More concurrent calls wait in a queue
  // (metrics metaopt_rpc_queue_depth and metaopt_rpc_queue_wait_seconds);
  // none is rejected.
  int max_threads = 64;
  // Study engine limits (spec sizes, Suggest count, page size), trial lease
  // and Suggest deadline margin; checked by study::CheckEngineOptions.
  study::EngineOptions engine;

  // Security (docs/security.md). TLS: PEM files of the server's certificate
  // chain and private key; both or neither. With `tls_client_ca_file` (PEM CA
  // certificates) clients must present a certificate signed by one of them
  // (mutual TLS). Empty: plaintext.
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string tls_client_ca_file;
  // `owner:token` lines (see TokenAuthenticator). Set: every OptimizerService
  // call needs a valid bearer token and studies are namespaced by its owner;
  // health and reflection stay open. Empty: no authentication.
  std::string tokens_file;
  // Studies one owner may hold (0: no limit).
  int max_studies_per_owner = 0;
  // Studies kept in memory (study::EngineOptions::max_loaded_studies).
  int max_loaded_studies = study::EngineOptions::kDefaultMaxLoadedStudies;

  // HOST:PORT of the Prometheus /metrics endpoint (port 0: any free port, see
  // Server::metrics_port()). Empty: no metrics.
  std::string metrics_listen;

  // HOST:PORT of the dashboard listener (docs/dashboard.md): the read-only
  // JSON API under /api/v1/ (with `tokens_file`, behind the same bearer
  // tokens) and the page's files from `dashboard_dir`. Port 0: any free port
  // (see Server::http_port()). Empty: no dashboard.
  std::string http_listen;
  // The built dashboard (index.html and its bundle); see StaticFiles.
  std::string dashboard_dir;
  // Bounds of the dashboard listener (http::HttpListenerOptions): worker
  // threads, read and write timeouts, largest response. Without `tokens_file`
  // the Host header must also name localhost, an IP address or one of
  // `http_allowed_hosts` ("*": any).
  int http_threads = 16;
  absl::Duration http_read_timeout = absl::Seconds(5);
  absl::Duration http_write_timeout = absl::Seconds(10);
  int64_t http_max_response_bytes = int64_t{64} << 20;
  std::vector<std::string> http_allowed_hosts;

  // Learning from the server's own history (docs/models.md): when on, a
  // background thread trains and publishes models into `models_dir` from
  // completed studies (history::HistoryLearner; `learner.registry_dir` is set
  // from `models_dir`).
  bool learn_from_history = false;
  history::LearnerOptions learner;

  // HOST:PORT where Kubeflow Katib's Suggestion and EarlyStopping services
  // (and gRPC health) are served, plaintext and without tokens, as Katib's
  // controller calls them (docs/katib.md). Port 0: any free port (see
  // Server::katib_port()). Empty: off.
  std::string katib_listen;
  // The Kubernetes namespace of a Katib experiment whose call does not name
  // one in its :authority (katib::KatibAdapter::NamespaceOf): part of its
  // study id (katib-<namespace>-<experiment>), its owner when `tokens_file`
  // is set.
  std::string katib_namespace = "default";
};

// The running service: storage, study engine, gRPC server with health and
// reflection. Thread-safe. Shutdown() may be called from any thread (e.g. a
// signal watcher).
class Server {
 public:
  // Opens the database, reads the TLS and tokens files, starts listening and
  // serving. Errors name what failed (database, file, address).
  static absl::StatusOr<std::unique_ptr<Server>> BuildAndStart(
      const ServerOptions& options);
  ~Server();

  // The port actually bound.
  int port() const { return port_; }
  // Stops accepting RPCs, lets in-flight ones finish until `deadline`, then
  // cancels the rest.
  void Shutdown(absl::Duration grace = absl::Seconds(10));
  // Blocks until the server has shut down.
  void Wait();

  // The port of the /metrics endpoint; 0 when metrics are off.
  int metrics_port() const {
    return metrics_http_ == nullptr ? 0 : metrics_http_->port();
  }

  // The port of the dashboard listener; 0 when it is off.
  int http_port() const {
    return http_listener_ == nullptr ? 0 : http_listener_->port();
  }

  // The port of the Katib services; 0 when they are off.
  int katib_port() const { return katib_port_; }

  // The model registry (for tests that drive polling by hand).
  registry::ModelManager& models() { return *models_; }
  // The history learner; null unless learn_from_history.
  history::HistoryLearner* learner() { return learner_.get(); }

 private:
  Server() = default;

  // Every `interval` until stopped: the health service reports
  // metaopt.v1.OptimizerService SERVING while the database is reachable
  // (storage::Storage::CheckReachable) and NOT_SERVING while it is not, so
  // that load balancers and Kubernetes readiness probes (which name that
  // service) send no calls to a replica cut off from a shared database.
  void WatchDatabase(absl::Duration interval);
  // Starts the Katib services on options_.katib_listen (after the engine and
  // the work pool exist).
  absl::Status StartKatib();

  ServerOptions options_;
  // Before storage_ and service_, which report to it; null when metrics are
  // off.
  std::unique_ptr<ServerMetrics> metrics_;
  std::unique_ptr<storage::Storage> storage_;
  std::unique_ptr<registry::ModelManager> models_;
  // Null unless learn_from_history; before engine_, which reports to it.
  std::unique_ptr<history::HistoryLearner> learner_;
  std::unique_ptr<study::StudyEngine> engine_;
  std::unique_ptr<TokenAuthenticator> auth_;
  // After the engine (its tasks call it), before the gRPC server (which waits
  // for every call, hence every task, to finish before it goes).
  std::unique_ptr<WorkPool> pool_;
  std::unique_ptr<OptimizerServiceImpl> service_;
  std::unique_ptr<grpc::Server> grpc_server_;
  int port_ = 0;
  // The Katib services and their own gRPC server (its own port, plaintext,
  // no tokens); null when off. The server goes before the services.
  std::unique_ptr<katib::KatibAdapter> katib_adapter_;
  std::unique_ptr<katib::KatibSuggestionService> katib_suggestion_;
  std::unique_ptr<katib::KatibEarlyStoppingService> katib_early_stopping_;
  std::unique_ptr<grpc::Server> katib_server_;
  int katib_port_ = 0;
  Mutex health_mu_;
  bool stopping_ ABSL_GUARDED_BY(health_mu_) = false;
  absl::Notification stop_watching_;
  std::thread database_watcher_;
  // Last: stops serving scrapes before the engine and registry go away.
  std::unique_ptr<metrics::MetricsHttpServer> metrics_http_;
  // Null when the dashboard listener is off; the listener goes first.
  std::unique_ptr<http::JsonApi> json_api_;
  std::unique_ptr<http::StaticFiles> static_files_;
  std::unique_ptr<http::HttpListener> http_listener_;
};

}  // namespace metaopt::server

#endif  // METAOPT_SERVER_SERVER_H_
