// The in-memory trials of one study, with the lookups that Suggest needs kept
// up to date as trials change, so that a Suggest costs no pass over every
// trial, and their leases.
#ifndef METAOPT_CORE_STUDY_STUDY_TRIALS_H_
#define METAOPT_CORE_STUDY_STUDY_TRIALS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/policy/policy.h"
#include "metaopt/v1/study.pb.h"

namespace metaopt::study {

// When the lease of an ACTIVE trial ends. Trials stored before leases existed
// have none: their lease runs from their creation, for `lease`.
absl::Time LeaseEnd(const v1::Trial& trial, absl::Duration lease);

// What DescribeStudy reads of a trial, kept beside its compact form.
struct TrialSummary {
  double value = 0;  // meaningful when has_value
  // The later of the trial's create_time and complete_time.
  int64_t latest_seconds = 0;
  int32_t latest_nanos = 0;
  v1::TrialState state = v1::TRIAL_STATE_UNSPECIFIED;
  bool has_value = false;
  // Meets the study's constraints (true without constraints).
  bool feasible = true;
};

// Trials by id (trial i has id i + 1: ids are dense and never reused), the
// configuration keys they hold (policy::HeldKeys: those of ACTIVE, COMPLETED,
// FAILED and INFEASIBLE trials, so a STALE trial's configuration may be
// suggested again) and the ids of the ACTIVE trials. Every change goes through
// Put, which keeps the three consistent; the indexes are exactly what
// Load would build from the same trials.
//
// Memory: an ACTIVE trial is held as a message; every other trial only in its
// serialized form (about a tenth of the parsed message's size) with a
// TrialSummary, and is parsed again by Get. Policies read a list of their own,
// built for each call and freed after it (PolicyTrials: the few fields they
// read, parsed from the front of the serialized form), so that a study that a
// model-based policy works on holds no more than an idle one. all(), the
// whole trials parsed, is built on its first call (by early stopping, which
// reads the other trials' curves) and then kept up to date by Put until
// ReleaseParsed drops it.
//
// Thread-compatible, with one exception: all() is const but fills the parsed
// list, so even const calls need exclusive access (the study engine guards
// the trials with the study's lock, which is exclusive).
class StudyTrials {
 public:
  StudyTrials() = default;
  StudyTrials(StudyTrials&&) = default;
  StudyTrials& operator=(StudyTrials&&) = default;

  // The trials of study `study_id` as storage returned them. DATA_LOSS
  // unless their ids are 1..n in order. `policies_read_metrics`: the study's
  // policies read the trials' metrics and feasibility too (several objectives
  // or constraints).
  static absl::StatusOr<StudyTrials> Load(std::vector<v1::Trial> trials,
                                          const std::string& study_id,
                                          bool policies_read_metrics = false);

  // Every trial, by increasing id, with only the fields that policies read
  // (policy::StudyView::trials): id, configuration, state and value (and with
  // policies_read_metrics, metrics and feasible). A fresh list on every call;
  // all() is not built.
  std::vector<v1::Trial> PolicyTrials() const;
  // Every trial, by increasing id, parsed whole (see the class comment).
  const std::vector<v1::Trial>& all() const;
  // True while all() is built.
  bool parsed() const { return parsed_valid_; }
  // Drops the list all() built (the trials stay, in their compact form).
  void ReleaseParsed();

  int64_t size() const { return static_cast<int64_t>(slots_.size()); }
  // The trial with id `id`. REQUIRES: 1 <= id <= size().
  v1::Trial Get(int64_t id) const;
  // The ACTIVE trial with id `id`, without a copy. REQUIRES: it is ACTIVE.
  const v1::Trial& GetActive(int64_t id) const {
    return *slots_[id - 1].active;
  }
  // A copy of the ACTIVE trial `id` without its intermediate values, at a
  // cost that does not grow with them (they are moved aside and back, so
  // this needs exclusive access, like all()). REQUIRES: it is ACTIVE.
  v1::Trial ActiveHead(int64_t id) const;
  // REQUIRES: 1 <= id <= size().
  const TrialSummary& summary(int64_t id) const {
    return slots_[id - 1].summary;
  }
  // For policy::StudyView::held_keys.
  const policy::HeldKeys& held_keys() const { return held_keys_; }
  // Ids of the ACTIVE trials, increasing.
  const std::set<int64_t>& active_ids() const { return active_ids_; }
  // How many trials are COMPLETED.
  int64_t completed_count() const { return completed_; }

  // Replaces the trial with id trial.id(), or appends it when that id is
  // size() + 1. REQUIRES: 1 <= trial.id() <= size() + 1; a replaced trial keeps
  // its configuration (only its state, lease and outcome change).
  // `intermediate_bytes`, when the caller knows it, is
  // IntermediateBytes(trial) (saves a pass over its intermediate values).
  void Put(v1::Trial trial,
           std::optional<int64_t> intermediate_bytes = std::nullopt);

  // What a ReportIntermediate changes, without a copy of the trial's values:
  // replaces the ACTIVE trial head.id() by `head` (the trial without its
  // intermediate values, still ACTIVE: its lease and metadata may differ)
  // with the trial's values and `value`, if set, inserted by step; the values
  // then take `intermediate_bytes`. Constant time for a step past the last,
  // but while all() is built (which then gets a copy of the trial).
  void PutReport(v1::Trial head, std::optional<v1::IntermediateValue> value,
                 int64_t intermediate_bytes);

  // IntermediateBytes (core/study/intermediate.h) of trial `id`, and of all
  // trials together. REQUIRES: 1 <= id <= size().
  int64_t intermediate_bytes(int64_t id) const {
    return slots_[id - 1].intermediate_bytes;
  }
  int64_t total_intermediate_bytes() const { return intermediate_bytes_; }

  // The ACTIVE trials whose lease (see LeaseEnd) ended by `now`, as the STALE
  // trials they turn into, with lease_expire_time set to that end; by
  // increasing id. Nothing changes here: the caller stores them, then Puts
  // them. Leases are enforced lazily, on access, with no background sweep;
  // while `now` is before the earliest lease end this makes no pass over the
  // ACTIVE trials.
  std::vector<v1::Trial> ExpiredLeases(absl::Time now, absl::Duration lease);

 private:
  struct Slot {
    // The trial serialized when it is not ACTIVE, empty otherwise: its
    // PolicyTrials fields in the first `policy_bytes` bytes, then the rest
    // (two messages back to back, which parse as the whole trial).
    std::string compact;
    uint32_t policy_bytes = 0;
    // The trial when it is ACTIVE; null otherwise.
    std::unique_ptr<v1::Trial> active;
    TrialSummary summary;
    int64_t intermediate_bytes = 0;
  };

  std::vector<Slot> slots_;
  bool policies_read_metrics_ = false;
  // all(), when parsed_valid_.
  mutable std::vector<v1::Trial> parsed_;
  mutable bool parsed_valid_ = false;
  policy::HeldKeys held_keys_;
  std::set<int64_t> active_ids_;
  int64_t completed_ = 0;
  // The sum of the slots' intermediate_bytes.
  int64_t intermediate_bytes_ = 0;
  // No ACTIVE trial's lease ends before this (a lower bound, lowered by Put
  // and raised by a pass of ExpiredLeases that found nothing expired).
  absl::Time next_lease_end_ = absl::InfiniteFuture();
};

// Changes to a study's live trials that are made before they are stored, so
// that a policy running under the study lock sees them while they are written
// with the rest of its Suggest in one transaction. Put applies a change at
// once and remembers the trial it replaced; Undo (also on destruction) puts
// those back unless Commit was called. Declare it after the study lock, so
// that it is destroyed first. Thread-compatible, like the trials it changes.
class StagedTrials {
 public:
  explicit StagedTrials(StudyTrials* trials) : trials_(trials) {}
  ~StagedTrials() { Undo(); }
  StagedTrials(const StagedTrials&) = delete;
  StagedTrials& operator=(const StagedTrials&) = delete;

  // StudyTrials::Put of a change to an existing trial.
  // REQUIRES: 1 <= trial.id() <= trials->size().
  void Put(v1::Trial trial);
  // The trials put since the last Commit or Undo, in order: what to store.
  const std::vector<v1::Trial>& changed() const { return changed_; }
  // Keeps the changes (they were stored).
  void Commit();
  // Puts back the trials as they were before the first Put.
  void Undo();

 private:
  StudyTrials* const trials_;
  std::vector<v1::Trial> changed_;
  // The trials replaced, in the order of their first Put, and their ids.
  std::vector<v1::Trial> replaced_;
  absl::flat_hash_set<int64_t> replaced_ids_;
};

}  // namespace metaopt::study

#endif  // METAOPT_CORE_STUDY_STUDY_TRIALS_H_
