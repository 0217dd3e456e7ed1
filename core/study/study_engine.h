// The study engine: per-study state, locking, and Suggest / Observe / FineTune
// orchestration. The gRPC service and metaopt-bench drive studies through this
// one class.
#ifndef METAOPT_CORE_STUDY_STUDY_ENGINE_H_
#define METAOPT_CORE_STUDY_STUDY_ENGINE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/history/history_export.h"
#include "core/registry/model_manager.h"
#include "core/storage/storage.h"
#include "core/study/call_context.h"
#include "core/study/engine_options.h"
#include "core/study/fit_preparer.h"
#include "core/study/live_study.h"
#include "core/study/request_validation.h"
#include "core/study/study_access.h"
#include "core/study/study_cache.h"
#include "core/study/study_trials.h"
#include "core/study/suggester.h"
#include "metaopt/v1/optimizer_service.pb.h"

namespace metaopt::study {

// Thread-safe. The engine orchestrates the RPCs over the loaded studies
// (StudyCache), reading and changing each under its own lock with writes
// conditional on its storage version (StudyAccess), so that several processes
// may share one database (server replicas on PostgreSQL). Lock order: the
// cache's map, then one study. Slow policy computations run outside the study
// lock on a snapshot and are committed only if the study did not change
// meanwhile; cheap ones run under it (see
// EngineOptions::max_locked_policy_cost). Every change is written to storage
// before it becomes visible to another call or is acknowledged; a Suggest
// writes all of its changes at once (see StagedTrials).
class StudyEngine {
 public:
  // `storage` and `models` must outlive the engine; `models` may be null (no
  // registry: studies bind to no model).
  StudyEngine(storage::Storage* storage, registry::ModelManager* models,
              EngineOptions options = {});
  ~StudyEngine();

  StudyEngine(const StudyEngine&) = delete;
  StudyEngine& operator=(const StudyEngine&) = delete;

  absl::StatusOr<v1::CreateStudyResponse> CreateStudy(
      const v1::CreateStudyRequest& request, const CallContext& context = {});
  absl::StatusOr<v1::GetStudyResponse> GetStudy(
      const v1::GetStudyRequest& request, const CallContext& context = {});
  absl::StatusOr<v1::ListStudiesResponse> ListStudies(
      const v1::ListStudiesRequest& request, const CallContext& context = {});
  absl::StatusOr<v1::DeleteStudyResponse> DeleteStudy(
      const v1::DeleteStudyRequest& request, const CallContext& context = {});
  absl::StatusOr<v1::SuggestResponse> Suggest(const v1::SuggestRequest& request,
                                              const CallContext& context = {});
  absl::StatusOr<v1::ObserveResponse> Observe(const v1::ObserveRequest& request,
                                              const CallContext& context = {});
  absl::StatusOr<v1::FineTuneResponse> FineTune(
      const v1::FineTuneRequest& request, const CallContext& context = {});
  absl::StatusOr<v1::GetTrialResponse> GetTrial(
      const v1::GetTrialRequest& request, const CallContext& context = {});
  absl::StatusOr<v1::ListTrialsResponse> ListTrials(
      const v1::ListTrialsRequest& request, const CallContext& context = {});
  absl::StatusOr<v1::GetParetoFrontResponse> GetParetoFront(
      const v1::GetParetoFrontRequest& request,
      const CallContext& context = {});
  absl::StatusOr<v1::ListModelsResponse> ListModels(
      const v1::ListModelsRequest& request, const CallContext& context = {});
  // Extends the leases of ACTIVE trials to now + trial_lease. All or nothing:
  // INVALID_ARGUMENT for a bad id list, NOT_FOUND for an unknown trial,
  // FAILED_PRECONDITION for a trial that is not ACTIVE.
  absl::StatusOr<v1::HeartbeatResponse> Heartbeat(
      const v1::HeartbeatRequest& request, const CallContext& context = {});
  // Records an intermediate value of an ACTIVE trial, extends its lease like
  // Heartbeat, and answers whether the study's early-stopping rule wants it
  // stopped (docs/api.md, "Early stopping"). The rule is asked only when the
  // step is larger than every recorded one and the trial is not yet marked;
  // a stop marks the trial (metadata stop_step, stop_reason) and every later
  // report of a step >= the mark's answers should_stop too, so a retry gets
  // the same answer. INVALID_ARGUMENT for a bad request, NOT_FOUND for an
  // unknown trial, FAILED_PRECONDITION for a trial that is not ACTIVE or a
  // step recorded with another value, RESOURCE_EXHAUSTED (nothing stored)
  // past EngineOptions::max_intermediate_values, max_trial_intermediate_bytes
  // or max_study_intermediate_bytes.
  absl::StatusOr<v1::ReportIntermediateResponse> ReportIntermediate(
      const v1::ReportIntermediateRequest& request,
      const CallContext& context = {});
  // ExportMetaDataset: validates the request and returns the exporter whose
  // chunks are the stream (core/history/history_export.h), over the caller's
  // studies only. INVALID_ARGUMENT without a selection or for a bad
  // min_completed_trials; NOT_FOUND for an unknown space_of study;
  // FAILED_PRECONDITION when no study over its space is completed or its
  // space cannot be written in the format. With all_compatible and no
  // completed study the exporter yields nothing.
  absl::StatusOr<std::unique_ptr<history::HistoryExporter>> ExportMetaDataset(
      const v1::ExportMetaDatasetRequest& request,
      const CallContext& context = {});

  // What the engine holds in memory now, for monitoring. Never does I/O.
  using LoadedStats = StudyCache::Stats;
  LoadedStats Stats() { return studies_.stats(); }
  // Background fits and Suggests' use of prepared fits since the start.
  FitPreparer::Stats PrepareStats() const { return preparer_.stats(); }
  // The algorithm kind of the caller's study `study_id` if it is loaded, else
  // ALGORITHM_KIND_UNSPECIFIED. Never does I/O.
  v1::AlgorithmKind LoadedAlgorithmKind(const std::string& study_id,
                                        const CallContext& context = {});

 private:
  // CreateStudy of a study that exists already (create-or-get): the stored
  // study if its spec is `spec`, else ALREADY_EXISTS.
  absl::StatusOr<v1::CreateStudyResponse> ExistingStudy(
      const v1::CreateStudyRequest& request, const v1::StudySpec& spec,
      const CallContext& context);

  storage::Storage* const storage_;
  registry::ModelManager* const models_;
  const EngineOptions options_;

  StudyCache studies_;
  StudyAccess access_;
  // Destroyed (its threads joined) first but for suggester_, which uses it.
  FitPreparer preparer_;
  Suggester suggester_;
};

}  // namespace metaopt::study

#endif  // METAOPT_CORE_STUDY_STUDY_ENGINE_H_
