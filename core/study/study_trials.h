// The in-memory trials of one study, with the lookups that Suggest needs kept
// up to date as trials change, so that a Suggest costs no pass over every
// trial.
#ifndef METAOPT_CORE_STUDY_STUDY_TRIALS_H_
#define METAOPT_CORE_STUDY_STUDY_TRIALS_H_

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/policy/policy.h"
#include "metaopt/v1/study.pb.h"

namespace metaopt::study {

// Trials by id (trial i has id i + 1: ids are dense and never reused), the
// configuration keys they hold (policy::HeldKeys: those of ACTIVE, COMPLETED,
// FAILED and INFEASIBLE trials, so a STALE trial's configuration may be
// suggested again) and the ids of the ACTIVE trials. Every change goes through
// Put, which keeps the three consistent; the indexes are exactly what
// Load would build from the same trials. Thread-compatible: the study engine
// guards it with the study's lock.
class StudyTrials {
 public:
  StudyTrials() = default;

  // The trials of study `study_id` as storage returned them. DATA_LOSS
  // unless their ids are 1..n in order.
  static absl::StatusOr<StudyTrials> Load(std::vector<v1::Trial> trials,
                                          const std::string& study_id);

  // Every trial, by increasing id.
  const std::vector<v1::Trial>& all() const { return trials_; }
  int64_t size() const { return static_cast<int64_t>(trials_.size()); }
  // REQUIRES: 1 <= id <= size().
  const v1::Trial& Get(int64_t id) const { return trials_[id - 1]; }
  // For policy::StudyView::held_keys.
  const policy::HeldKeys& held_keys() const { return held_keys_; }
  // Ids of the ACTIVE trials, increasing.
  const std::set<int64_t>& active_ids() const { return active_ids_; }

  // Replaces the trial with id trial.id(), or appends it when that id is
  // size() + 1. REQUIRES: 1 <= trial.id() <= size() + 1; a replaced trial keeps
  // its configuration (only its state, lease and outcome change).
  void Put(v1::Trial trial);

 private:
  std::vector<v1::Trial> trials_;
  policy::HeldKeys held_keys_;
  std::set<int64_t> active_ids_;
};

}  // namespace metaopt::study

#endif  // METAOPT_CORE_STUDY_STUDY_TRIALS_H_
