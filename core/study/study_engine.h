// The study engine: per-study state, locking, and Suggest / Observe / FineTune
// orchestration. The gRPC service and metaopt-bench drive studies through this
// one class.
#ifndef METAOPT_CORE_STUDY_STUDY_ENGINE_H_
#define METAOPT_CORE_STUDY_STUDY_ENGINE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/common/mutex.h"
#include "core/policy/policy.h"
#include "core/registry/model_manager.h"
#include "core/space/search_space.h"
#include "core/storage/storage.h"
#include "core/study/call_context.h"
#include "metaopt/v1/optimizer_service.pb.h"

namespace metaopt::study {

// Defaults are the hard limits of core/space; CheckEngineOptions rejects
// values beyond them.
struct EngineOptions {
  // Largest `count` a Suggest may ask for.
  int max_suggest_count = 1000;
  // Largest page a List call returns; a page_size of 0 means
  // `default_page_size`.
  int max_page_size = 1000;
  int default_page_size = 100;
  // Size limits of a study spec at CreateStudy (INVALID_ARGUMENT beyond them).
  int max_stages = space::kMaxStages;
  int max_algorithms_per_stage = space::kMaxAlgorithmsPerStage;
  int max_parameters_per_algorithm = space::kMaxParametersPerAlgorithm;
  int max_candidates = space::kMaxCandidates;
  // How long an ACTIVE trial stays leased to its client after Suggest handed it
  // out, Heartbeat or the same client_id's next Suggest; then it turns STALE.
  absl::Duration trial_lease = absl::Hours(1);
  // Time a Suggest keeps in hand before its deadline for storing and sending
  // the answer. When less than this margin plus the study's recent policy
  // latency remains, Suggest answers with random (untried) configurations
  // instead of running the policy.
  absl::Duration deadline_margin = absl::Milliseconds(50);
  // Studies one owner may hold; CreateStudy of one more is RESOURCE_EXHAUSTED.
  // 0: no limit.
  int max_studies_per_owner = 0;
  // Policy computations that saw the study change meanwhile are retried this
  // many times before the last attempt runs under the study lock.
  int optimistic_attempts = 2;
  // A study whose policy's recent Suggest took less than this (random search,
  // initial designs) runs the policy under the study lock, on the live
  // trials: copying a snapshot of a large study would cost more. 0: always on
  // a snapshot first.
  absl::Duration max_locked_policy_cost = absl::Milliseconds(1);
  // Source of "now" for timestamps (tests inject a fake).
  std::function<absl::Time()> clock = [] { return absl::Now(); };
};

// Lists what the model registry holds (implemented by the registry; may be
// null).
class ModelLister {
 public:
  virtual ~ModelLister() = default;
  virtual std::vector<v1::Model> ListModels() const = 0;
};

// Thread-safe. One mutex guards the map of loaded studies (held only for
// lookups and inserts, never across I/O); one mutex per study serializes that
// study's changes. Lock order: map, then one study. Slow policy computations
// run outside the study lock on a snapshot and are committed only if the study
// did not change meanwhile; cheap ones run under it (see
// EngineOptions::max_locked_policy_cost). Every change is written to storage
// before it becomes visible or is acknowledged.
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
  absl::StatusOr<v1::ListModelsResponse> ListModels(
      const v1::ListModelsRequest& request, const CallContext& context = {});
  // Extends the leases of ACTIVE trials to now + trial_lease. All or nothing:
  // INVALID_ARGUMENT for a bad id list, NOT_FOUND for an unknown trial,
  // FAILED_PRECONDITION for a trial that is not ACTIVE.
  absl::StatusOr<v1::HeartbeatResponse> Heartbeat(
      const v1::HeartbeatRequest& request, const CallContext& context = {});

  // What the engine holds in memory now, for monitoring. Never does I/O.
  struct LoadedStats {
    int64_t studies = 0;
    // Trials of the loaded studies, indexed by v1::TrialState.
    std::vector<int64_t> trials_by_state;
  };
  LoadedStats Stats() ABSL_LOCKS_EXCLUDED(map_mu_);
  // The algorithm kind of the caller's study `study_id` if it is loaded, else
  // ALGORITHM_KIND_UNSPECIFIED. Never does I/O.
  v1::AlgorithmKind LoadedAlgorithmKind(const std::string& study_id,
                                        const CallContext& context = {})
      ABSL_LOCKS_EXCLUDED(map_mu_);

 private:
  struct Entry;

  // The loaded study `key` (the caller's owner and a study id), reading it from
  // storage on first use. NOT_FOUND if absent, also when the id exists under
  // another owner.
  absl::StatusOr<std::shared_ptr<Entry>> FindStudy(const storage::StudyKey& key)
      ABSL_LOCKS_EXCLUDED(map_mu_);
  v1::Study DescribeStudy(const Entry& entry) const;
  // Turns the ACTIVE trials of `entry` whose lease ended by `now` STALE and
  // stores them. Called under the study lock by every RPC that reads or
  // changes the study, before it looks at the trials: leases are enforced
  // lazily, on access, with no background sweep.
  absl::Status ExpireLeases(Entry& entry, absl::Time now);
  // The registry model a new study binds to: the one `spec.algorithm.model`
  // names (which must match the study's space), else the served model whose
  // space matches, else none (nullptr).
  absl::StatusOr<std::shared_ptr<const registry::LoadedModel>> BindModel(
      const v1::StudySpec& spec);

  storage::Storage* const storage_;
  registry::ModelManager* const models_;
  const EngineOptions options_;

  // Serializes the quota check and insert of CreateStudy (when a quota is set)
  // so concurrent creates cannot overshoot it. Taken before no other lock.
  Mutex create_mu_;
  Mutex map_mu_;
  absl::flat_hash_map<storage::StudyKey, std::shared_ptr<Entry>> studies_
      ABSL_GUARDED_BY(map_mu_);
};

// INVALID_ARGUMENT naming the option, its value and its allowed range for
// options outside their limits (non-positive sizes, limits above the hard ones
// of core/space, a non-positive lease, a negative margin).
absl::Status CheckEngineOptions(const EngineOptions& options);

// INVALID_ARGUMENT unless `study_id` is 1..128 characters of [A-Za-z0-9._-]
// starting with a letter or digit. `field` names the request field in the
// message.
absl::Status ValidateStudyId(const std::string& study_id,
                             const char* field = "study_id");

}  // namespace metaopt::study

#endif  // METAOPT_CORE_STUDY_STUDY_ENGINE_H_
