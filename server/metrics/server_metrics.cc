#include "server/metrics/server_metrics.h"

#include <exception>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "prometheus/text_serializer.h"

namespace metaopt::server {
namespace {

// Seconds: from sub-millisecond lookups to minute-long Suggest or FineTune.
const prometheus::Histogram::BucketBoundaries kRpcBuckets = {
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
    0.25,   0.5,   1,      2.5,   5,    10,    30,   60};
// Seconds: a WAL append plus fsync, from page cache to slow network disks.
const prometheus::Histogram::BucketBoundaries kCommitBuckets = {
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
  prometheus::Registry& r = m->registry_;
  // prometheus-cpp throws std::invalid_argument for a malformed name.
  try {
    m->rpcs_ = &prometheus::BuildCounter()
                    .Name("metaopt_rpc_handled_total")
                    .Help("OptimizerService RPCs completed, by method, gRPC "
                          "status code and the study's algorithm kind.")
                    .Register(r);
    m->rpc_seconds_ =
        &prometheus::BuildHistogram()
             .Name("metaopt_rpc_duration_seconds")
             .Help("Time from receiving an OptimizerService RPC to its "
                   "answer, by method, gRPC status code and algorithm kind.")
             .Register(r);
    m->studies_loaded_ = &prometheus::BuildGauge()
                              .Name("metaopt_studies_loaded")
                              .Help(
                                  "Studies held in memory (created or used "
                                  "recently; see --max-loaded-studies).")
                              .Register(r)
                              .Add({});
    m->studies_unloaded_ =
        &prometheus::BuildCounter()
             .Name("metaopt_studies_unloaded_total")
             .Help(
                 "Idle studies dropped from memory as least recently used "
                 "(--max-loaded-studies); they load again when next used.")
             .Register(r)
             .Add({});
    m->prepared_fits_ =
        &prometheus::BuildGauge()
             .Name("metaopt_prepared_fits")
             .Help(
                 "Policy fits prepared in the background after Observe, "
                 "since the start, by result: prepared, skipped (stale or "
                 "gone), hit (a Suggest used one), miss (a Suggest fitted "
                 "inline), wait (a Suggest waited for a running one).")
             .Register(r);
    m->trials_ = &prometheus::BuildGauge()
                      .Name("metaopt_trials")
                      .Help("Trials of the loaded studies by state (leases "
                            "expire lazily: an ACTIVE trial turns STALE when "
                            "its study is next used).")
                      .Register(r);
    m->models_served_ = &prometheus::BuildGauge()
                             .Name("metaopt_registry_models")
                             .Help("Models the registry serves.")
                             .Register(r)
                             .Add({});
    m->model_versions_ =
        &prometheus::BuildGauge()
             .Name("metaopt_registry_model_version")
             .Help("The version the registry serves of each model.")
             .Register(r);
    m->commit_seconds_ = &prometheus::BuildHistogram()
                              .Name("metaopt_sqlite_commit_duration_seconds")
                              .Help("Time SQLite takes to COMMIT a write "
                                    "transaction (WAL append and sync).")
                              .Register(r)
                              .Add({}, kCommitBuckets);
    m->queue_wait_seconds_ =
        &prometheus::BuildHistogram()
             .Name("metaopt_rpc_queue_wait_seconds")
             .Help(
                 "Time an OptimizerService RPC waited for a free worker "
                 "(--max-threads) before it ran; overload shows here, "
                 "never as an error.")
             .Register(r)
             .Add({}, kRpcBuckets);
    m->queue_depth_ = &prometheus::BuildGauge()
                           .Name("metaopt_rpc_queue_depth")
                           .Help(
                               "OptimizerService RPCs waiting for a free "
                               "worker now.")
                           .Register(r)
                           .Add({});
    m->workers_busy_ = &prometheus::BuildGauge()
                            .Name("metaopt_rpc_workers_busy")
                            .Help(
                                "Workers running an OptimizerService RPC "
                                "now.")
                            .Register(r)
                            .Add({});
    m->workers_ = &prometheus::BuildGauge()
                       .Name("metaopt_rpc_workers")
                       .Help(
                           "Workers that run OptimizerService RPCs "
                           "(--max-threads).")
                       .Register(r)
                       .Add({});
    m->learning_ = &prometheus::BuildGauge()
                        .Name("metaopt_history_learning")
                        .Help(
                            "1 while the server trains a model from its "
                            "own studies (--learn-from-history), else 0.")
                        .Register(r)
                        .Add({});
    m->learn_trainings_ =
        &prometheus::BuildGauge()
             .Name("metaopt_history_trainings")
             .Help(
                 "Trainings from history since the server started, by "
                 "result (started, succeeded, failed).")
             .Register(r);
    m->learn_models_ = &prometheus::BuildGauge()
                            .Name("metaopt_history_models_published")
                            .Help(
                                "Model versions learned from history and "
                                "published since the server started.")
                            .Register(r)
                            .Add({});
    m->learn_seconds_ = &prometheus::BuildGauge()
                             .Name("metaopt_history_last_training_seconds")
                             .Help(
                                 "Wall time of the last training from "
                                 "history.")
                             .Register(r)
                             .Add({});
  } catch (const std::exception& e) {
    return absl::InternalError(
        absl::StrCat("registering the server metrics: ", e.what()));
  }
  return m;
}

void ServerMetrics::WatchSources(study::StudyEngine* engine,
                                 registry::ModelManager* models,
                                 const history::HistoryLearner* learner) {
  MutexLock lock(&scrape_mu_);
  engine_ = engine;
  models_ = models;
  learner_ = learner;
}

void ServerMetrics::WatchWorkPool(const WorkPool* pool) {
  MutexLock lock(&scrape_mu_);
  pool_ = pool;
}

void ServerMetrics::Collect() {
  if (pool_ != nullptr) {
    queue_depth_->Set(static_cast<double>(pool_->queued()));
    workers_busy_->Set(static_cast<double>(pool_->running()));
    workers_->Set(pool_->threads());
  }
  if (engine_ == nullptr) return;
  const study::StudyEngine::LoadedStats stats = engine_->Stats();
  studies_loaded_->Set(static_cast<double>(stats.studies));
  // The engine counts since its start; the counter moves by the difference.
  const double unloaded = static_cast<double>(stats.unloaded_studies);
  if (unloaded > studies_unloaded_->Value()) {
    studies_unloaded_->Increment(unloaded - studies_unloaded_->Value());
  }
  const study::FitPreparer::Stats fits = engine_->PrepareStats();
  for (const auto& [result, count] :
       {std::pair<const char*, int64_t>{"prepared", fits.prepared},
        {"skipped", fits.skipped},
        {"hit", fits.hits},
        {"miss", fits.misses},
        {"wait", fits.waits}}) {
    prepared_fits_->Add({{"result", result}}).Set(static_cast<double>(count));
  }
  for (size_t state = 0; state < stats.trials_by_state.size(); ++state) {
    if (state == v1::TRIAL_STATE_UNSPECIFIED ||
        !v1::TrialState_IsValid(static_cast<int>(state))) {
      continue;
    }
    trials_->Add({{"state", TrialStateLabel(state)}})
        .Set(stats.trials_by_state[state]);
  }
  for (prometheus::Gauge* gauge : model_version_gauges_) {
    model_versions_->Remove(gauge);
  }
  model_version_gauges_.clear();
  const auto served =
      models_ != nullptr
          ? models_->List()
          : std::vector<std::shared_ptr<const registry::LoadedModel>>();
  models_served_->Set(static_cast<double>(served.size()));
  for (const auto& model : served) {
    const v1::Model described = registry::Describe(*model);
    prometheus::Gauge& gauge = model_versions_->Add(
        {{"model", described.name()},
         {"kind", ModelKindLabel(described.kind())}});
    gauge.Set(static_cast<double>(described.version()));
    model_version_gauges_.push_back(&gauge);
  }
  if (learner_ != nullptr) {
    const history::LearnerStats learned = learner_->Stats();
    learning_->Set(learned.training ? 1 : 0);
    learn_trainings_->Add({{"result", "started"}})
        .Set(static_cast<double>(learned.trainings_started));
    learn_trainings_->Add({{"result", "succeeded"}})
        .Set(static_cast<double>(learned.trainings_succeeded));
    learn_trainings_->Add({{"result", "failed"}})
        .Set(static_cast<double>(learned.trainings_failed));
    learn_models_->Set(static_cast<double>(learned.models_published));
    learn_seconds_->Set(learned.last_training_seconds);
  }
}

std::string ServerMetrics::TextExposition() {
  MutexLock lock(&scrape_mu_);
  Collect();
  return prometheus::TextSerializer().Serialize(registry_.Collect());
}

void ServerMetrics::OnRpc(const RpcRecord& record) {
  const prometheus::Labels labels = {
      {"method", record.method},
      {"code", GrpcCodeName(record.code)},
      {"algorithm", AlgorithmLabel(record.algorithm)}};
  rpcs_->Add(labels).Increment();
  rpc_seconds_->Add(labels, kRpcBuckets)
      .Observe(absl::ToDoubleSeconds(record.latency));
}

void ServerMetrics::OnQueueWait(absl::Duration wait) {
  queue_wait_seconds_->Observe(absl::ToDoubleSeconds(wait));
}

void ServerMetrics::OnCommit(absl::Duration latency) {
  commit_seconds_->Observe(absl::ToDoubleSeconds(latency));
}

}  // namespace metaopt::server
