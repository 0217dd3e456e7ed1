// How a call reads and changes one loaded study: under the study's lock, on a
// copy brought up to date with storage, with its leases expired, every change
// stored by a write conditional on the study's storage version, and the call
// redone when another process sharing the database changed the study first.
#ifndef METAOPT_CORE_STUDY_STUDY_ACCESS_H_
#define METAOPT_CORE_STUDY_STUDY_ACCESS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "core/policy/policy.h"
#include "core/registry/model_manager.h"
#include "core/storage/storage.h"
#include "core/study/engine_options.h"
#include "core/study/live_study.h"
#include "core/study/study_cache.h"
#include "core/study/study_trials.h"
#include "metaopt/v1/study.pb.h"

namespace metaopt::study {

// Writes of one call that found the study changed by another process (an
// ABORTED conditional write) are redone on the refreshed study at most this
// many times; then the call is UNAVAILABLE.
inline constexpr int kMaxWriteConflicts = 16;

// UNAVAILABLE: `study` changed under kMaxWriteConflicts attempts in a row;
// `last` is the last conflict.
absl::Status TooManyConflicts(const LiveStudy& study, const absl::Status& last);

// Sets `*last_write` to the study's last write when destroyed, with the
// study's lock held: what a call saw, to be stored before it answers.
class TakeLastWrite {
 public:
  TakeLastWrite(LiveStudy& study,
                std::shared_ptr<storage::PendingWrite>& last_write)
      : study_(study), last_write_(last_write) {}
  ~TakeLastWrite() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    study_.mu.AssertHeld();
    last_write_ = study_.last_write;
  }

 private:
  LiveStudy& study_;
  std::shared_ptr<storage::PendingWrite>& last_write_;
};

// Thread-safe. A study's lock serializes its calls in this process; every
// write is conditional on the study's storage version, so that of two
// processes changing one study, one stores its change and the other
// recomputes on the refreshed study. Every change is written to storage
// before it becomes visible to another call or is acknowledged.
class StudyAccess {
 public:
  // All must outlive this; `models` may be null (no registry).
  StudyAccess(storage::Storage* storage, registry::ModelManager* models,
              StudyCache* studies, const EngineOptions& options);

  StudyAccess(const StudyAccess&) = delete;
  StudyAccess& operator=(const StudyAccess&) = delete;

  // The preamble of the calls that read or change one study: finds it, takes
  // its lock, answers NOT_FOUND if it was deleted meanwhile, refreshes it
  // from storage if another process changed it, expires its leases, then runs
  // `fn` under the lock with the time used for expiry. When a write finds the
  // study changed by another process (ABORTED), the whole preamble and `fn`
  // run again on the refreshed study; `fn` must be repeatable. Answers once
  // the study's last write that `fn` saw is stored.
  absl::Status WithLiveStudy(
      const storage::StudyKey& key,
      absl::FunctionRef<absl::Status(LiveStudy& study, absl::Time now)> fn);
  // As above, for a study already found.
  absl::Status WithLiveStudy(
      LiveStudy& study,
      absl::FunctionRef<absl::Status(LiveStudy& study, absl::Time now)> fn)
      ABSL_LOCKS_EXCLUDED(study.mu);

  // Brings `study` up to date before a call reads or changes it: reads it
  // again if a write of this process failed, skips the check while writes of
  // this process are pending (if another process changed the study, they
  // fail), and otherwise refreshes it (RefreshStudy).
  absl::Status Refresh(LiveStudy& study)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(study.mu);
  // Stores `trials`, `policy_state` (if set), the study `record` (if not
  // null) and the new intermediate `values` with a write conditional on
  // study.stored_version, and advances it. The trials' own intermediate
  // values are not written again (each was stored by the report that
  // recorded it). ABORTED, with nothing stored, if another process changed
  // the study since it was last refreshed. The write may still be pending on
  // return (then it
  // is study.last_write, and the caller applies the change to the copy
  // anyway): callers answer only once the last write they saw is stored
  // (WithLiveStudy, StudyEngine::Suggest), and if it fails, the copy is read
  // again (Refresh).
  absl::Status Store(LiveStudy& study, absl::Span<const v1::Trial> trials,
                     std::optional<std::string_view> policy_state,
                     const v1::Study* record = nullptr,
                     absl::Span<const storage::TrialValue> values = {})
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(study.mu);

  // Turns the ACTIVE trials of `study` whose lease ended by `now` STALE and
  // stores them. Called under the study lock by every call that reads or
  // changes the study, before it looks at the trials (Suggest stores them
  // with its other changes instead).
  absl::Status ExpireLeases(LiveStudy& study, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(study.mu);
  // Suggest's lease changes, staged so that they are stored with its new
  // trials: the expired leases, and a fresh lease for every ACTIVE trial of
  // `client_id` (the client is alive). Returns the ids of those trials,
  // increasing (none for an empty client id).
  std::vector<int64_t> StageLeaseChanges(LiveStudy& study, absl::Time now,
                                         const std::string& client_id,
                                         StagedTrials& staged)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(study.mu);
  // Stores the staged lease changes, the `created` trials and the policy
  // `update` (if any) in one write, then makes them visible; on error
  // nothing changes.
  absl::Status CommitSuggest(LiveStudy& study, StagedTrials& staged,
                             const std::vector<v1::Trial>& created,
                             const std::optional<policy::PolicyUpdate>& update)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(study.mu);

 private:
  storage::Storage* const storage_;
  registry::ModelManager* const models_;
  StudyCache* const studies_;
  const EngineOptions& options_;
};

}  // namespace metaopt::study

#endif  // METAOPT_CORE_STUDY_STUDY_ACCESS_H_
