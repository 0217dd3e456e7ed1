// The metaopt server's Prometheus metrics (docs/deploy.md lists them).
#ifndef METAOPT_SERVER_METRICS_SERVER_METRICS_H_
#define METAOPT_SERVER_METRICS_SERVER_METRICS_H_

#include <memory>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/registry/model_manager.h"
#include "core/study/study_engine.h"
#include "server/metrics/metrics_registry.h"
#include "server/rpc_record.h"

namespace metaopt::server {

// Counts RPCs and SQLite commits as they happen, and reads studies, trials and
// registry models from their sources at each scrape. Thread-safe.
class ServerMetrics final : public RpcObserver {
 public:
  // Registers every family in a fresh registry.
  static absl::StatusOr<std::unique_ptr<ServerMetrics>> Create();

  // Reads the loaded studies and their trials from `engine` and the served
  // models from `models` (may be null) at each scrape. Both must outlive this
  // object. Call once, before the first scrape.
  void WatchSources(study::StudyEngine* engine, registry::ModelManager* models);

  // metaopt_rpc_handled_total and metaopt_rpc_duration_seconds by method, code
  // and algorithm.
  void OnRpc(const RpcRecord& record) override;
  // metaopt_sqlite_commit_duration_seconds (storage::SqliteOptions::on_commit).
  void OnCommit(absl::Duration latency);

  metrics::Registry& registry() { return registry_; }

 private:
  ServerMetrics() = default;

  metrics::Registry registry_;
  metrics::Family<metrics::Counter>* rpcs_ = nullptr;
  metrics::Family<metrics::Histogram>* rpc_seconds_ = nullptr;
  metrics::Histogram* commit_seconds_ = nullptr;
  metrics::Gauge* studies_loaded_ = nullptr;
  metrics::Family<metrics::Gauge>* trials_ = nullptr;
  metrics::Gauge* models_served_ = nullptr;
  metrics::Family<metrics::Gauge>* model_versions_ = nullptr;
};

}  // namespace metaopt::server

#endif  // METAOPT_SERVER_METRICS_SERVER_METRICS_H_
