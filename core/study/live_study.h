// A study as the engine holds it in memory, how it is read from storage, and
// how it is described to clients.
#ifndef METAOPT_CORE_STUDY_LIVE_STUDY_H_
#define METAOPT_CORE_STUDY_LIVE_STUDY_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/common/mutex.h"
#include "core/early_stopping/pareto_rule.h"
#include "core/early_stopping/rule.h"
#include "core/objective/study_objectives.h"
#include "core/policy/policy.h"
#include "core/registry/model_manager.h"
#include "core/space/search_space.h"
#include "core/storage/storage.h"
#include "core/study/study_trials.h"
#include "metaopt/v1/study.pb.h"

namespace metaopt::study {

// The policy fit a study keeps for its next Suggests (policy::PreparedFit),
// computed in the background after an Observe (FitPreparer) or by the last
// Suggest, and the background prepare in progress.
struct PreparedFitSlot {
  // The latest fit, its policy (kept alive with it) and the study version of
  // the snapshot it was computed on. A Suggest offers it to its policy, which
  // uses it only if it is exactly what it would fit.
  std::shared_ptr<const policy::Policy> policy;
  std::shared_ptr<const policy::PreparedFit> fit;
  int64_t version = -1;
  // A background prepare is queued (a Suggest that computes the fit itself
  // clears it, and the queued prepare is then skipped).
  bool queued = false;
  // A background prepare is running on the snapshot of `running_version` with
  // `running_policy`; a Suggest on that version and policy waits for it.
  bool running = false;
  int64_t running_version = -1;
  const policy::Policy* running_policy = nullptr;
  // Counted by FitPreparer's global limit on kept fits.
  bool kept = false;
};

// The Pareto front of a study: its trials' ids, increasing, and summary.
struct ParetoFrontOf {
  std::vector<int64_t> ids;
  v1::ParetoFrontSummary summary;
};

// One loaded study. Thread-safe: the fields above `mu` never change after
// load; `mu` guards the rest and serializes the study's changes.
struct LiveStudy : std::enable_shared_from_this<LiveStudy> {
  storage::StudyKey key;  // (owner, study_id)
  // The stored record (id, canonical spec, create_time, bound_model,
  // metadata) without its FineTune runs, which change: see fine_tune_runs.
  v1::Study stored;
  std::unique_ptr<const space::SearchSpace> space;
  absl::flat_hash_set<std::string> candidate_keys;
  // The same keys in catalogue order (policy::StudyView::candidate_keys).
  std::vector<std::string> candidate_key_list;
  // What the study optimizes (its objectives and constraints).
  std::unique_ptr<const objective::StudyObjectives> objectives;
  // The spec's early-stopping rule; null: trials are never stopped. A study
  // with several objectives has pareto_stopping_rule instead.
  std::unique_ptr<const early_stopping::Rule> stopping_rule;
  std::unique_ptr<const early_stopping::ParetoRule> pareto_stopping_rule;

  // Set (once) with `deleted`, readable without `mu`: the engine then loads
  // the study afresh instead of using this copy (it may have been created
  // again, by another process).
  std::atomic<bool> dropped{false};
  // When a call last found the study (StudyCache's use counter), for
  // dropping the least recently used idle studies from memory.
  std::atomic<int64_t> last_use{0};

  Mutex mu;
  StudyTrials trials ABSL_GUARDED_BY(mu);
  std::shared_ptr<const policy::Policy> policy ABSL_GUARDED_BY(mu);
  // Bumped by every change of `trials` or `policy` (not by lease
  // extensions, which policies do not see).
  int64_t version ABSL_GUARDED_BY(mu) = 0;
  // The storage version (storage::Storage::GetStudyVersion) that `trials` and
  // `policy` reflect. Every write of the engine is conditional on it, so that
  // a process whose copy is stale (another process sharing the database
  // changed the study) stores nothing and refreshes instead.
  int64_t stored_version ABSL_GUARDED_BY(mu) = 0;
  // The stored record's FineTune runs (v1::Study::fine_tune_runs).
  google::protobuf::RepeatedPtrField<v1::FineTuneRun> fine_tune_runs
      ABSL_GUARDED_BY(mu);
  bool deleted ABSL_GUARDED_BY(mu) = false;
  // DescribeParetoFront's last result and the `version` it was computed at
  // (GetStudy, ListStudies and the dashboard's polling read it until the
  // trials change).
  mutable ParetoFrontOf pareto_front ABSL_GUARDED_BY(mu);
  mutable int64_t pareto_front_version ABSL_GUARDED_BY(mu) = -1;
  // The last write of the study this process started that may still be
  // pending (storage::Storage::StartWriteStudy); null once it was seen
  // stored. `trials`, `policy` and `stored_version` already include it: a
  // call that reads them answers only once it is stored, and if it fails the
  // study is read again (StudyAccess::Refresh). Writes of one study form a
  // chain: each names the previous pending one, and fails if that one did.
  std::shared_ptr<storage::PendingWrite> last_write ABSL_GUARDED_BY(mu);
  // Recent wall time of one policy Suggest (see NextSuggestCost), once one
  // was measured.
  absl::Duration suggest_cost ABSL_GUARDED_BY(mu) = absl::ZeroDuration();
  bool suggest_cost_measured ABSL_GUARDED_BY(mu) = false;

  // Guards `prepared`. Taken alone or after `mu`, never before it.
  Mutex prepare_mu ABSL_ACQUIRED_AFTER(mu);
  PreparedFitSlot prepared ABSL_GUARDED_BY(prepare_mu);
};

// The Pareto front of a study: its trials' ids, increasing, and summary
// (objective::StudyObjectives::ParetoFront and Summarize). O(trials) when the
// trials changed since the last call, a copy otherwise.
ParetoFrontOf DescribeParetoFront(const LiveStudy& live)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(live.mu);

// NOT_FOUND `study "<id>" does not exist`: also what a caller gets for a study
// of another owner.
absl::Status StudyNotFound(const std::string& study_id);

// The study's Study.incarnation: the stored one, or for a study created before
// incarnations existed its creation time in microseconds (never 0).
uint64_t StudyIncarnation(const v1::Study& stored);

// OK if `claimed` (a request's study_incarnation) is 0 (not given) or `live`'s
// incarnation; NOT_FOUND naming `field` otherwise: the caller's trial belongs
// to a deleted study that had the same study_id.
absl::Status CheckIncarnation(const LiveStudy& live, uint64_t claimed,
                              const std::string& field);

// Reads study `key` from storage: its spec, trials and policy state, and the
// registry model it is bound to (`models` may be null: no registry). NOT_FOUND
// if absent; FAILED_PRECONDITION if its bound model can no longer be loaded.
absl::StatusOr<std::shared_ptr<LiveStudy>> LoadStudy(
    storage::Storage& storage, registry::ModelManager* models,
    const storage::StudyKey& key);

// Makes `live`'s trials and policy those in storage if the study's storage
// version is not live.stored_version (another process sharing the database
// changed it), bumping live.version; one cheap version read otherwise.
// NOT_FOUND, with live.deleted and live.dropped set, if the study is gone or
// was deleted and created again with another record (the caller may load it
// afresh).
absl::Status RefreshStudy(storage::Storage& storage,
                          registry::ModelManager* models, LiveStudy& live)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(live.mu);

// Reads `live`'s trials, policy and record from storage afresh (the copy
// holds changes that were not stored), bumping live.version. NOT_FOUND, with
// live.deleted and live.dropped set, as RefreshStudy.
absl::Status ReloadStudy(storage::Storage& storage,
                         registry::ModelManager* models, LiveStudy& live)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(live.mu);

// The study's stored record as WriteStudy should store it: `stored` with its
// FineTune runs.
v1::Study StudyRecord(const LiveStudy& live)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(live.mu);

// The study with its FineTune runs and derived fields: incarnation, trial
// count, best trial, state (EXHAUSTED once every catalogue entry is held), update time
// (the latest of its create time, its trials' create and complete times and
// its FineTune runs' times).
v1::Study DescribeStudy(const LiveStudy& live)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(live.mu);

}  // namespace metaopt::study

#endif  // METAOPT_CORE_STUDY_LIVE_STUDY_H_
