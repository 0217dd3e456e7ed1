#include "server/metrics/server_metrics.h"

#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "core/common/status_macros.h"

namespace metaopt::server {
namespace {

// Seconds: from sub-millisecond lookups to minute-long Suggest or FineTune.
const std::vector<double> kRpcBuckets = {
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
    0.25,   0.5,   1,      2.5,   5,    10,    30,   60};
// Seconds: a WAL append plus fsync, from page cache to slow network disks.
const std::vector<double> kCommitBuckets = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
    0.025,  0.05,    0.1,    0.25,  0.5,    1};

// "deeppipe" for MODEL_KIND_DEEPPIPE.
std::string ModelKindLabel(v1::ModelKind kind) {
  constexpr char kPrefix[] = "MODEL_KIND_";
  return absl::AsciiStrToLower(
      v1::ModelKind_Name(kind).substr(sizeof(kPrefix) - 1));
}

// "completed" for TRIAL_STATE_COMPLETED.
std::string TrialStateLabel(int state) {
  constexpr char kPrefix[] = "TRIAL_STATE_";
  return absl::AsciiStrToLower(
      v1::TrialState_Name(static_cast<v1::TrialState>(state))
          .substr(sizeof(kPrefix) - 1));
}

}  // namespace

absl::StatusOr<std::unique_ptr<ServerMetrics>> ServerMetrics::Create() {
  std::unique_ptr<ServerMetrics> m(new ServerMetrics());
  metrics::Registry& r = m->registry_;
  METAOPT_ASSIGN_OR_RETURN(
      m->rpcs_, r.AddCounter("metaopt_rpc_handled_total",
                             "OptimizerService RPCs completed, by method, gRPC "
                             "status code and the study's algorithm kind.",
                             {"method", "code", "algorithm"}));
  METAOPT_ASSIGN_OR_RETURN(
      m->rpc_seconds_,
      r.AddHistogram("metaopt_rpc_duration_seconds",
                     "Time from receiving an OptimizerService RPC to its "
                     "answer, by method, gRPC status code and algorithm kind.",
                     {"method", "code", "algorithm"}, kRpcBuckets));
  METAOPT_ASSIGN_OR_RETURN(
      metrics::Family<metrics::Gauge> * studies,
      r.AddGauge("metaopt_studies_loaded",
                 "Studies held in memory (created or used since the server "
                 "started).",
                 {}));
  METAOPT_ASSIGN_OR_RETURN(m->studies_loaded_, studies->WithLabels({}));
  METAOPT_ASSIGN_OR_RETURN(
      m->trials_,
      r.AddGauge("metaopt_trials",
                 "Trials of the loaded studies by state (leases expire "
                 "lazily: an ACTIVE trial turns STALE when its study is next "
                 "used).",
                 {"state"}));
  METAOPT_ASSIGN_OR_RETURN(
      metrics::Family<metrics::Gauge> * models,
      r.AddGauge("metaopt_registry_models", "Models the registry serves.", {}));
  METAOPT_ASSIGN_OR_RETURN(m->models_served_, models->WithLabels({}));
  METAOPT_ASSIGN_OR_RETURN(
      m->model_versions_,
      r.AddGauge("metaopt_registry_model_version",
                 "The version the registry serves of each model.",
                 {"model", "kind"}));
  METAOPT_ASSIGN_OR_RETURN(
      metrics::Family<metrics::Histogram> * commits,
      r.AddHistogram("metaopt_sqlite_commit_duration_seconds",
                     "Time SQLite takes to COMMIT a write transaction (WAL "
                     "append and sync).",
                     {}, kCommitBuckets));
  METAOPT_ASSIGN_OR_RETURN(m->commit_seconds_, commits->WithLabels({}));
  return m;
}

void ServerMetrics::WatchSources(study::StudyEngine* engine,
                                 registry::ModelManager* models) {
  registry_.AddCollector([this, engine, models] {
    const study::StudyEngine::LoadedStats stats = engine->Stats();
    studies_loaded_->Set(static_cast<double>(stats.studies));
    for (size_t state = 0; state < stats.trials_by_state.size(); ++state) {
      if (state == v1::TRIAL_STATE_UNSPECIFIED ||
          !v1::TrialState_IsValid(static_cast<int>(state))) {
        continue;
      }
      auto gauge = trials_->WithLabels({TrialStateLabel(state)});
      if (gauge.ok()) (*gauge)->Set(stats.trials_by_state[state]);
    }
    model_versions_->Clear();
    const auto served =
        models != nullptr
            ? models->List()
            : std::vector<std::shared_ptr<const registry::LoadedModel>>();
    models_served_->Set(static_cast<double>(served.size()));
    for (const auto& model : served) {
      const v1::Model described = registry::Describe(*model);
      auto gauge = model_versions_->WithLabels(
          {described.name(), ModelKindLabel(described.kind())});
      if (gauge.ok()) (*gauge)->Set(static_cast<double>(described.version()));
    }
  });
}

void ServerMetrics::OnRpc(const RpcRecord& record) {
  const metrics::LabelValues labels = {record.method, GrpcCodeName(record.code),
                                       AlgorithmLabel(record.algorithm)};
  if (auto counter = rpcs_->WithLabels(labels); counter.ok()) {
    (*counter)->Increment();
  }
  if (auto histogram = rpc_seconds_->WithLabels(labels); histogram.ok()) {
    (*histogram)->Observe(absl::ToDoubleSeconds(record.latency));
  }
}

void ServerMetrics::OnCommit(absl::Duration latency) {
  commit_seconds_->Observe(absl::ToDoubleSeconds(latency));
}

}  // namespace metaopt::server
