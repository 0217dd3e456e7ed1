#include "core/study/study_trials.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/common/proto_time.h"
#include "core/space/search_space.h"

namespace metaopt::study {
namespace {

absl::Time FromProtoTimestamp(const google::protobuf::Timestamp& t) {
  return absl::FromUnixSeconds(t.seconds()) + absl::Nanoseconds(t.nanos());
}

}  // namespace

absl::Time LeaseEnd(const v1::Trial& trial, absl::Duration lease) {
  if (trial.has_lease_expire_time()) {
    return FromProtoTimestamp(trial.lease_expire_time());
  }
  return FromProtoTimestamp(trial.create_time()) + lease;
}

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
  completed_ += (trial.state() == v1::TRIAL_STATE_COMPLETED) -
                (before == v1::TRIAL_STATE_COMPLETED);
  if (trial.state() == v1::TRIAL_STATE_ACTIVE) {
    active_ids_.insert(id);
    // Without a lease time of its own the lease is not known here: the next
    // ExpiredLeases makes a pass.
    next_lease_end_ =
        trial.has_lease_expire_time()
            ? std::min(next_lease_end_,
                       FromProtoTimestamp(trial.lease_expire_time()))
            : absl::InfinitePast();
  }
  if (append) {
    trials_.push_back(std::move(trial));
  } else {
    trials_[id - 1] = std::move(trial);
  }
}

std::vector<v1::Trial> StudyTrials::ExpiredLeases(absl::Time now,
                                                  absl::Duration lease) {
  std::vector<v1::Trial> expired;
  if (now < next_lease_end_) return expired;
  absl::Time next = absl::InfiniteFuture();
  for (const int64_t id : active_ids_) {
    const v1::Trial& trial = Get(id);
    const absl::Time end = LeaseEnd(trial, lease);
    if (end > now) {
      next = std::min(next, end);
      continue;
    }
    v1::Trial stale = trial;
    stale.set_state(v1::TRIAL_STATE_STALE);
    *stale.mutable_lease_expire_time() = ToProtoTimestamp(end);
    expired.push_back(std::move(stale));
  }
  // Once the expired trials are Put, `next` bounds the rest; until then the
  // next call makes a pass again.
  if (expired.empty()) next_lease_end_ = next;
  return expired;
}

void StagedTrials::Put(v1::Trial trial) {
  const int64_t id = trial.id();
  if (replaced_ids_.insert(id).second) replaced_.push_back(trials_->Get(id));
  changed_.push_back(trial);
  trials_->Put(std::move(trial));
}

void StagedTrials::Commit() {
  changed_.clear();
  replaced_.clear();
  replaced_ids_.clear();
}

void StagedTrials::Undo() {
  // Latest first, so that each trial ends as it was before its first Put.
  for (auto it = replaced_.rbegin(); it != replaced_.rend(); ++it) {
    trials_->Put(std::move(*it));
  }
  Commit();
}

}  // namespace metaopt::study
