#include "core/policy/policy.h"

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

namespace metaopt::policy {

absl::StatusOr<FineTuneResult> Policy::FineTune(const StudyView& study,
                                                const FineTuneOptions&) const {
  return absl::FailedPreconditionError(absl::StrCat(
      "algorithm ", v1::AlgorithmKind_Name(study.spec->algorithm().kind()),
      " has no surrogate to fine-tune"));
}

bool HoldsConfiguration(v1::TrialState state) {
  switch (state) {
    case v1::TRIAL_STATE_ACTIVE:
    case v1::TRIAL_STATE_COMPLETED:
    case v1::TRIAL_STATE_FAILED:
    case v1::TRIAL_STATE_INFEASIBLE:
      return true;
    default:
      return false;
  }
}

std::vector<const v1::Configuration*> UntriedCandidates(
    const StudyView& study) {
  std::vector<const v1::Configuration*> untried;
  if (study.spec->candidates().empty()) return untried;
  absl::flat_hash_set<std::string> tried;
  for (const v1::Trial& trial : *study.trials) {
    if (HoldsConfiguration(trial.state())) {
      tried.insert(space::ConfigurationKey(trial.configuration()));
    }
  }
  untried.reserve(study.spec->candidates_size());
  for (const v1::Configuration& candidate : study.spec->candidates()) {
    if (!tried.contains(space::ConfigurationKey(candidate)))
      untried.push_back(&candidate);
  }
  return untried;
}

}  // namespace metaopt::policy
