// Early-stopping rules: whether a trial whose intermediate results (its
// learning curve) are known should stop, given the other trials' curves. The
// study engine asks its study's rule on each ReportIntermediate that extends a
// trial's curve (docs/api.md, "Early stopping").
#ifndef METAOPT_CORE_EARLY_STOPPING_RULE_H_
#define METAOPT_CORE_EARLY_STOPPING_RULE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "metaopt/v1/study.pb.h"

namespace metaopt::early_stopping {

// One intermediate result.
struct Point {
  int64_t step = 0;
  double value = 0;
};

// A trial's learning curve: points by strictly increasing step, finite values.
struct TrialCurve {
  int64_t trial_id = 0;
  v1::TrialState state = v1::TRIAL_STATE_UNSPECIFIED;
  std::vector<Point> points;
};

struct Decision {
  bool stop = false;
  // Why: the rule and the numbers it compared (also when continuing, for
  // logs); empty when the rule had nothing to decide on.
  std::string reason;
};

// Immutable after construction: ShouldStop is const and thread-safe.
class Rule {
 public:
  virtual ~Rule() = default;
  // Whether `trial` should stop now that it reported its last point (the
  // point of largest step; it must have at least one). `others` are the
  // study's other trials (any state, possibly with no points). `goal` says
  // which values are better (GOAL_UNSPECIFIED is minimization).
  virtual Decision ShouldStop(const TrialCurve& trial,
                              absl::Span<const TrialCurve> others,
                              v1::Goal goal) const = 0;
  // "median", "successive_halving", "asha", "threshold".
  virtual std::string name() const = 0;
};

// INVALID_ARGUMENT naming `field` (e.g. "spec.early_stopping"), the value and
// the rule for invalid settings; an EarlyStoppingSpec with no rule set is
// invalid too (leave the field unset for "never stop").
absl::Status ValidateEarlyStoppingSpec(const v1::EarlyStoppingSpec& spec,
                                       const std::string& field);

// The rule `spec` describes, its zero fields replaced by their defaults.
// INVALID_ARGUMENT as ValidateEarlyStoppingSpec (field "early_stopping").
absl::StatusOr<std::unique_ptr<Rule>> CreateRule(
    const v1::EarlyStoppingSpec& spec);

// The reduction factor of asha and successive_halving when it is 0.
inline constexpr int kDefaultReductionFactor = 3;

// The rungs of successive halving (asha, successive_halving) with zero
// settings replaced by their defaults. Immutable.
class Rungs {
 public:
  Rungs(int64_t min_resource, int32_t reduction_factor);

  int eta() const { return eta_; }
  int64_t step(int k) const { return steps_[k]; }

  // The index of the highest rung a report at `last_step` crossed, its
  // trial's previous largest step being `previous_step` (-1: none):
  // previous_step < rung <= last_step. -1 when it crossed none.
  int Crossed(int64_t previous_step, int64_t last_step) const;

  // How many trials of a cohort of `cohort_size` pass rung k in synchronous
  // successive halving: floor(cohort_size / eta^(k+1)), at least 1.
  int64_t Quota(int64_t cohort_size, int k) const;

 private:
  const int eta_;
  const std::vector<int64_t> steps_;
};

// The cohort of successive_halving a trial belongs to: trials 1..N are
// cohort 0, N+1..2N cohort 1, ... (N = `cohort_size`).
inline int64_t CohortOf(int64_t trial_id, int64_t cohort_size) {
  return (trial_id - 1) / cohort_size;
}

// The rungs of successive halving: min_resource * reduction_factor^k for
// k = 0, 1, ... while the product fits int64, increasing. Exposed for tests.
std::vector<int64_t> RungSteps(int64_t min_resource, int reduction_factor);

// The value of `curve` at rung `rung_step`: the value of its first point with
// step >= rung_step; nullopt-like false when it has none.
bool ValueAtRung(const std::vector<Point>& curve, int64_t rung_step,
                 double* value);

}  // namespace metaopt::early_stopping

#endif  // METAOPT_CORE_EARLY_STOPPING_RULE_H_
