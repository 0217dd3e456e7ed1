// A Suggest on one loaded study: the client's held trials, the policy run
// under the study's lock or on a snapshot, the deadline fallback, the new
// trials and their commit.
#ifndef METAOPT_CORE_STUDY_SUGGESTER_H_
#define METAOPT_CORE_STUDY_SUGGESTER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/policy/policy.h"
#include "core/storage/storage.h"
#include "core/study/call_context.h"
#include "core/study/engine_options.h"
#include "core/study/fit_preparer.h"
#include "core/study/live_study.h"
#include "core/study/study_access.h"
#include "core/study/study_trials.h"
#include "metaopt/v1/optimizer_service.pb.h"

namespace metaopt::study {

// Thread-safe: what a Suggest changes is the study's, under its lock. A
// policy that recently ran faster than a snapshot of the study could be copied
// runs under the lock (EngineOptions::max_locked_policy_cost); a slower one
// runs on a snapshot without it, and its trials are committed only if the
// study did not change meanwhile. All of a Suggest's changes (expired and
// renewed leases, new trials, the policy's state) are stored in one write.
class Suggester {
 public:
  // All must outlive this.
  Suggester(StudyAccess* access, FitPreparer* preparer,
            const EngineOptions& options);

  Suggester(const Suggester&) = delete;
  Suggester& operator=(const Suggester&) = delete;

  // Suggest on the loaded study `entry`. Sets `pending` to the study's last
  // write as the call left it: the answer holds once that is stored.
  absl::StatusOr<v1::SuggestResponse> SuggestOn(
      const std::shared_ptr<LiveStudy>& entry,
      const v1::SuggestRequest& request, const CallContext& context,
      std::shared_ptr<storage::PendingWrite>& pending)
      ABSL_LOCKS_EXCLUDED(entry->mu);

 private:
  // SuggestOn's steps, for one attempt under the study's lock.
  struct SuggestAttempt;
  struct SuggestSnapshot;
  // Stages the attempt's lease changes in `staged` and works out what it
  // needs: the client's held trials, the new ones and the deadline fallback.
  SuggestAttempt StartAttempt(
      LiveStudy& study, const v1::SuggestRequest& request,
      const CallContext& context, int count, int number,
      std::shared_ptr<const policy::PreparedFit> prepared, StagedTrials& staged)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(study.mu);
  // The configurations of the attempt's new trials: none when the client's
  // trials are the answer, random ones for the deadline fallback, else the
  // policy's, under the lock or on a `snapshot` (ProposeOnSnapshot).
  // std::nullopt: the study changed while the policy ran; recompute.
  std::optional<absl::StatusOr<policy::SuggestResult>> Propose(
      LiveStudy& study, const v1::SuggestRequest& request,
      const SuggestAttempt& attempt, StagedTrials& staged,
      SuggestSnapshot& snapshot) ABSL_EXCLUSIVE_LOCKS_REQUIRED(study.mu);
  // Runs the policy without the study's lock on a copy of what it reads, with
  // the staged lease changes taken back meanwhile and staged again after;
  // std::nullopt if the study changed meanwhile.
  std::optional<absl::StatusOr<policy::SuggestResult>> ProposeOnSnapshot(
      LiveStudy& study, const v1::SuggestRequest& request,
      const SuggestAttempt& attempt, StagedTrials& staged,
      SuggestSnapshot& snapshot) ABSL_EXCLUSIVE_LOCKS_REQUIRED(study.mu);
  // Runs `policy` on `view` (the study at `version`, with `trial_count`
  // trials) with the attempt's prepared fit, and keeps the fit it used;
  // `*elapsed` is its wall time.
  absl::StatusOr<policy::SuggestResult> RunPolicy(
      LiveStudy& study, std::shared_ptr<const policy::Policy> policy,
      const policy::StudyView& view, int64_t version, int64_t trial_count,
      const SuggestAttempt& attempt, absl::Duration* elapsed);
  // The attempt's new trials for what the policy proposed (SuggestedTrials).
  std::vector<v1::Trial> NewSuggestedTrials(LiveStudy& study,
                                            const v1::SuggestRequest& request,
                                            const std::string& fallback_reason,
                                            policy::SuggestResult& proposed)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(study.mu);

  StudyAccess* const access_;
  FitPreparer* const preparer_;
  const EngineOptions& options_;
};

}  // namespace metaopt::study

#endif  // METAOPT_CORE_STUDY_SUGGESTER_H_
