#include "core/study/study_trials.h"

#include <algorithm>
#include <cstdlib>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/common/logging.h"
#include "core/common/proto_time.h"
#include "core/objective/study_objectives.h"
#include "core/space/search_space.h"
#include "core/storage/stored_records.h"
#include "core/study/intermediate.h"

namespace metaopt::study {
namespace {

absl::Time FromProtoTimestamp(const google::protobuf::Timestamp& t) {
  return absl::FromUnixSeconds(t.seconds()) + absl::Nanoseconds(t.nanos());
}

// Timestamps compare as (seconds, nanos).
bool Later(const google::protobuf::Timestamp& a,
           const google::protobuf::Timestamp& b) {
  return a.seconds() > b.seconds() ||
         (a.seconds() == b.seconds() && a.nanos() > b.nanos());
}

TrialSummary SummaryOf(const v1::Trial& trial) {
  TrialSummary summary;
  summary.state = trial.state();
  summary.has_value = trial.has_value();
  summary.value = trial.value();
  summary.feasible = objective::StudyObjectives::Feasible(trial);
  const google::protobuf::Timestamp& latest =
      Later(trial.complete_time(), trial.create_time()) ? trial.complete_time()
                                                        : trial.create_time();
  summary.latest_seconds = latest.seconds();
  summary.latest_nanos = latest.nanos();
  return summary;
}

// The fields of `trial` that policies read (StudyTrials::PolicyTrials) but
// its configuration: id, state and value, and with `metrics` its metrics and
// feasibility.
v1::Trial PolicyScalars(const v1::Trial& trial, bool metrics) {
  v1::Trial scalars;
  scalars.set_id(trial.id());
  scalars.set_state(trial.state());
  if (trial.has_value()) scalars.set_value(trial.value());
  if (metrics) {
    *scalars.mutable_metrics() = trial.metrics();
    if (trial.has_feasible()) scalars.set_feasible(trial.feasible());
  }
  return scalars;
}

// Serializes `trial` into `*out` as its policy fields (id, configuration,
// state, value) followed by the rest of it: parsed whole, the two messages
// merge into `trial`; the first alone is what policies read. Returns the size
// of the first. `trial` is unchanged on return (its configuration is moved
// out and back, not copied).
uint32_t SerializePolicyFieldsFirst(v1::Trial& trial, bool metrics,
                                    std::string* out) {
  v1::Trial head = PolicyScalars(trial, metrics);
  if (trial.has_configuration()) {
    head.set_allocated_configuration(trial.release_configuration());
  }
  head.SerializeToString(out);
  const uint32_t head_size = static_cast<uint32_t>(out->size());
  trial.clear_id();
  trial.clear_state();
  trial.clear_value();
  google::protobuf::Map<std::string, double> moved_metrics;
  if (metrics) {
    moved_metrics.swap(*trial.mutable_metrics());
    trial.clear_feasible();
  }
  trial.AppendToString(out);
  trial.set_id(head.id());
  trial.set_state(head.state());
  if (head.has_value()) trial.set_value(head.value());
  if (metrics) {
    trial.mutable_metrics()->swap(moved_metrics);
    if (head.has_feasible()) trial.set_feasible(head.feasible());
  }
  if (head.has_configuration()) {
    trial.set_allocated_configuration(head.release_configuration());
  }
  return head_size;
}

}  // namespace

absl::Time LeaseEnd(const v1::Trial& trial, absl::Duration lease) {
  if (trial.has_lease_expire_time()) {
    return FromProtoTimestamp(trial.lease_expire_time());
  }
  return FromProtoTimestamp(trial.create_time()) + lease;
}

absl::StatusOr<StudyTrials> StudyTrials::Load(std::vector<v1::Trial> trials,
                                              const std::string& study_id,
                                              bool policies_read_metrics) {
  StudyTrials loaded;
  loaded.policies_read_metrics_ = policies_read_metrics;
  loaded.slots_.reserve(trials.size());
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

std::vector<v1::Trial> StudyTrials::PolicyTrials() const {
  std::vector<v1::Trial> trials(slots_.size());
  for (size_t i = 0; i < slots_.size(); ++i) {
    const Slot& slot = slots_[i];
    if (slot.active != nullptr) {
      trials[i] = PolicyScalars(*slot.active, policies_read_metrics_);
      if (slot.active->has_configuration()) {
        *trials[i].mutable_configuration() = slot.active->configuration();
      }
    } else if (!trials[i].ParseFromArray(slot.compact.data(),
                                         static_cast<int>(slot.policy_bytes))) {
      // The bytes are this process's own serialization of a valid message.
      LogError(absl::StrCat("trial ", i + 1, ": compact form does not parse"));
      std::abort();
    }
  }
  return trials;
}

const std::vector<v1::Trial>& StudyTrials::all() const {
  if (!parsed_valid_) {
    parsed_.clear();
    parsed_.reserve(slots_.size());
    for (int64_t id = 1; id <= size(); ++id) parsed_.push_back(Get(id));
    parsed_valid_ = true;
  }
  return parsed_;
}

void StudyTrials::ReleaseParsed() {
  std::vector<v1::Trial>().swap(parsed_);
  parsed_valid_ = false;
}

v1::Trial StudyTrials::Get(int64_t id) const {
  const Slot& slot = slots_[id - 1];
  if (slot.active != nullptr) return *slot.active;
  if (parsed_valid_) return parsed_[id - 1];
  v1::Trial trial;
  // The bytes are this process's own serialization of a valid message.
  if (!trial.ParseFromString(slot.compact)) {
    LogError(absl::StrCat("trial ", id, ": compact form does not parse"));
    std::abort();
  }
  return trial;
}

void StudyTrials::Put(v1::Trial trial,
                      std::optional<int64_t> intermediate_bytes) {
  const int64_t id = trial.id();
  const bool append = id == size() + 1;
  const v1::TrialState before =
      append ? v1::TRIAL_STATE_UNSPECIFIED : slots_[id - 1].summary.state;
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
  if (append) slots_.emplace_back();
  Slot& slot = slots_[id - 1];
  slot.summary = SummaryOf(trial);
  intermediate_bytes_ -= slot.intermediate_bytes;
  slot.intermediate_bytes = intermediate_bytes.has_value()
                                ? *intermediate_bytes
                                : IntermediateBytes(trial);
  intermediate_bytes_ += slot.intermediate_bytes;
  if (trial.state() == v1::TRIAL_STATE_ACTIVE) {
    std::string().swap(slot.compact);
    slot.policy_bytes = 0;
    if (parsed_valid_) {
      slot.active = std::make_unique<v1::Trial>(trial);
    } else {
      slot.active = std::make_unique<v1::Trial>(std::move(trial));
    }
  } else {
    slot.active.reset();
    slot.policy_bytes = SerializePolicyFieldsFirst(trial, policies_read_metrics_,
                                                   &slot.compact);
    slot.compact.shrink_to_fit();
  }
  if (parsed_valid_) {
    if (append) {
      parsed_.push_back(std::move(trial));
    } else {
      parsed_[id - 1] = std::move(trial);
    }
  }
}

v1::Trial StudyTrials::ActiveHead(int64_t id) const {
  v1::Trial& active = *slots_[id - 1].active;
  google::protobuf::RepeatedPtrField<v1::IntermediateValue> values;
  values.Swap(active.mutable_intermediate_values());
  v1::Trial head = active;
  values.Swap(active.mutable_intermediate_values());
  return head;
}

void StudyTrials::PutReport(v1::Trial head,
                            std::optional<v1::IntermediateValue> value,
                            int64_t intermediate_bytes) {
  Slot& slot = slots_[head.id() - 1];
  head.mutable_intermediate_values()->Swap(
      slot.active->mutable_intermediate_values());
  if (value.has_value()) storage::InsertByStep(*std::move(value), head);
  *slot.active = std::move(head);
  const v1::Trial& trial = *slot.active;
  if (trial.has_lease_expire_time()) {
    next_lease_end_ = std::min(next_lease_end_,
                               FromProtoTimestamp(trial.lease_expire_time()));
  }
  slot.summary = SummaryOf(trial);
  intermediate_bytes_ += intermediate_bytes - slot.intermediate_bytes;
  slot.intermediate_bytes = intermediate_bytes;
  if (parsed_valid_) parsed_[trial.id() - 1] = trial;
}

std::vector<v1::Trial> StudyTrials::ExpiredLeases(absl::Time now,
                                                  absl::Duration lease) {
  std::vector<v1::Trial> expired;
  if (now < next_lease_end_) return expired;
  absl::Time next = absl::InfiniteFuture();
  for (const int64_t id : active_ids_) {
    const v1::Trial& trial = GetActive(id);
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
