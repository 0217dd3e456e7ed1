// The parts of a Suggest that are not locking or storage: its random number
// generator, the deadline fallback, the policy cost estimate and the
// construction of new trials. Thread-safe (functions of their arguments).
#ifndef METAOPT_CORE_STUDY_SUGGESTION_H_
#define METAOPT_CORE_STUDY_SUGGESTION_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "core/policy/policy.h"
#include "core/space/random.h"
#include "metaopt/v1/study.pb.h"

namespace metaopt::study {

// An RNG derived from the seed and the trial count, so that the same history
// gives the same suggestions (also after a restart).
space::Rng SuggestRng(const v1::StudySpec& spec, size_t trial_count);

// Why a Suggest answers with random (untried) configurations instead of
// running its policy: `left` before the deadline is less than `margin` plus
// the `cost` that `policy_name` recently took. Empty when enough time is left.
std::string DeadlineFallbackReason(absl::Duration left, absl::Duration cost,
                                   absl::Duration margin,
                                   const std::string& policy_name);

// The study's policy cost estimate after a Suggest that took `measured`:
// max(measured, 0.75 * previous), so that a slow run is remembered at once
// and forgotten over a few faster ones.
absl::Duration NextSuggestCost(absl::Duration previous,
                               absl::Duration measured);

// The engine's invariant over what any policy proposes: removes from
// `configurations` each one that repeats an earlier one and, in a catalogue
// study, each entry that a trial of `study` holds. Returns how many it
// removed.
int DropHeldAndRepeated(const policy::StudyView& study,
                        std::vector<v1::Configuration>& configurations);

// What new trials record besides their configuration.
struct NewTrialInfo {
  std::string client_id;
  absl::Time create_time;
  // The lease runs from create_time for this long.
  absl::Duration lease;
  // metadata["policy"]: what produced the configurations.
  std::string source;
  // Non-empty for a deadline fallback: metadata["source"] is
  // "deadline-fallback" and metadata["reason"] this.
  std::string fallback_reason;
  // Trial.study_incarnation.
  uint64_t study_incarnation = 0;
};

// ACTIVE trials for `configurations`, with ids first_id, first_id + 1, ...
std::vector<v1::Trial> NewTrials(std::vector<v1::Configuration> configurations,
                                 int64_t first_id, const NewTrialInfo& info);

// The new trials of a Suggest on `study` (a view that holds `trial_count`
// trials and reads its held keys only) for the `configurations` a policy
// proposed, ids from trial_count + 1. Whatever the policy proposed, no
// configuration is handed out twice in one Suggest, nor a catalogue entry a
// trial holds (DropHeldAndRepeated): random untried ones (metadata "policy"
// "random") take the place of those dropped, after the others. `*dropped` is
// how many were dropped.
std::vector<v1::Trial> SuggestedTrials(
    const policy::StudyView& study, int64_t trial_count,
    std::vector<v1::Configuration> configurations, const NewTrialInfo& info,
    int* dropped);

}  // namespace metaopt::study

#endif  // METAOPT_CORE_STUDY_SUGGESTION_H_
