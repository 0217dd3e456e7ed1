#include "core/study/study_trials.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/space/search_space.h"

namespace metaopt::study {

absl::StatusOr<StudyTrials> StudyTrials::Load(std::vector<v1::Trial> trials,
                                              const std::string& study_id) {
  StudyTrials loaded;
  loaded.trials_.reserve(trials.size());
  for (size_t i = 0; i < trials.size(); ++i) {
    if (trials[i].id() != static_cast<int64_t>(i) + 1) {
      return absl::DataLossError(
          absl::StrCat("study \"", study_id, "\": stored trial ids are not 1..",
                       trials.size(), " (found id ", trials[i].id(), ")"));
    }
    loaded.Put(std::move(trials[i]));
  }
  return loaded;
}

void StudyTrials::Put(v1::Trial trial) {
  const int64_t id = trial.id();
  const bool append = id == size() + 1;
  const v1::TrialState before =
      append ? v1::TRIAL_STATE_UNSPECIFIED : Get(id).state();
  const bool held_before = policy::HoldsConfiguration(before);
  const bool held_after = policy::HoldsConfiguration(trial.state());
  if (held_before != held_after) {
    std::string key = space::ConfigurationKey(trial.configuration());
    if (held_after) {
      ++held_keys_[std::move(key)];
    } else {
      auto it = held_keys_.find(key);
      if (--it->second == 0) held_keys_.erase(it);
    }
  }
  if (before == v1::TRIAL_STATE_ACTIVE) active_ids_.erase(id);
  if (trial.state() == v1::TRIAL_STATE_ACTIVE) active_ids_.insert(id);
  if (append) {
    trials_.push_back(std::move(trial));
  } else {
    trials_[id - 1] = std::move(trial);
  }
}

}  // namespace metaopt::study
