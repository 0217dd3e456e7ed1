// The metaopt server's Prometheus metrics (docs/deploy.md lists them), kept in
// a prometheus-cpp registry.
#ifndef METAOPT_SERVER_METRICS_SERVER_METRICS_H_
#define METAOPT_SERVER_METRICS_SERVER_METRICS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/common/mutex.h"
#include "core/history/history_learner.h"
#include "core/registry/model_manager.h"
#include "core/study/study_engine.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "server/rpc_record.h"
#include "server/work_pool.h"

namespace metaopt::server {

// Counts RPCs and SQLite commits as they happen, and reads studies, trials and
// registry models from their sources at each scrape. Thread-safe (one scrape
// at a time).
class ServerMetrics final : public RpcObserver {
 public:
  // Registers every family in a fresh registry.
  static absl::StatusOr<std::unique_ptr<ServerMetrics>> Create();

  // Reads the loaded studies and their trials from `engine`, the served
  // models from `models` (may be null) and the history learner's progress
  // from `learner` (may be null) at each scrape. They must outlive this
  // object. Call once, before the first scrape.
  void WatchSources(study::StudyEngine* engine, registry::ModelManager* models,
                    const history::HistoryLearner* learner = nullptr)
      ABSL_LOCKS_EXCLUDED(scrape_mu_);

  // Reads the RPC queue depth and busy workers from `pool` at each scrape
  // (must outlive this object). Call once, before the first scrape.
  void WatchWorkPool(const WorkPool* pool) ABSL_LOCKS_EXCLUDED(scrape_mu_);
  // metaopt_rpc_queue_wait_seconds (WorkPool's on_wait).
  void OnQueueWait(absl::Duration wait);

  // metaopt_rpc_handled_total and metaopt_rpc_duration_seconds by method, code
  // and algorithm.
  void OnRpc(const RpcRecord& record) override;
  // metaopt_sqlite_commit_duration_seconds (storage::SqliteOptions::on_commit).
  void OnCommit(absl::Duration latency);

  // Brings the gauges up to date from the watched sources, then renders every
  // metric in the Prometheus text format 0.0.4 (for MetricsHttpServer).
  std::string TextExposition() ABSL_LOCKS_EXCLUDED(scrape_mu_);

 private:
  ServerMetrics() = default;
  void Collect() ABSL_EXCLUSIVE_LOCKS_REQUIRED(scrape_mu_);

  prometheus::Registry registry_;
  prometheus::Family<prometheus::Counter>* rpcs_ = nullptr;
  prometheus::Family<prometheus::Histogram>* rpc_seconds_ = nullptr;
  prometheus::Histogram* commit_seconds_ = nullptr;
  prometheus::Histogram* queue_wait_seconds_ = nullptr;
  prometheus::Gauge* queue_depth_ = nullptr;
  prometheus::Gauge* workers_busy_ = nullptr;
  prometheus::Gauge* workers_ = nullptr;
  prometheus::Gauge* studies_loaded_ = nullptr;
  prometheus::Counter* studies_unloaded_ = nullptr;
  prometheus::Family<prometheus::Gauge>* trials_ = nullptr;
  prometheus::Family<prometheus::Gauge>* prepared_fits_ = nullptr;
  prometheus::Gauge* models_served_ = nullptr;
  prometheus::Family<prometheus::Gauge>* model_versions_ = nullptr;
  prometheus::Gauge* learning_ = nullptr;
  prometheus::Family<prometheus::Gauge>* learn_trainings_ = nullptr;
  prometheus::Gauge* learn_models_ = nullptr;
  prometheus::Gauge* learn_seconds_ = nullptr;

  Mutex scrape_mu_;
  study::StudyEngine* engine_ ABSL_GUARDED_BY(scrape_mu_) = nullptr;
  registry::ModelManager* models_ ABSL_GUARDED_BY(scrape_mu_) = nullptr;
  const WorkPool* pool_ ABSL_GUARDED_BY(scrape_mu_) = nullptr;
  const history::HistoryLearner* learner_ ABSL_GUARDED_BY(scrape_mu_) = nullptr;
  // The children of model_versions_ published by the last scrape (each scrape
  // republishes them, so a model no longer served disappears).
  std::vector<prometheus::Gauge*> model_version_gauges_
      ABSL_GUARDED_BY(scrape_mu_);
};

}  // namespace metaopt::server

#endif  // METAOPT_SERVER_METRICS_SERVER_METRICS_H_
