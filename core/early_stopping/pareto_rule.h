// Early stopping of studies with several objectives: successive halving by
// Pareto rank ("Multi-objective Asynchronous Successive Halving", Schmucker
// et al.). A trial's report is a point of minimisation targets (one per
// objective) and its constraint violation; trials at a rung are ordered by
// non-dominated sorting under constraint domination, ties within a front by
// the paper's epsilon-net selection (ParetoOrder). docs/api.md, "Early
// stopping", states the semantics.
#ifndef METAOPT_CORE_EARLY_STOPPING_PARETO_RULE_H_
#define METAOPT_CORE_EARLY_STOPPING_PARETO_RULE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/early_stopping/rule.h"
#include "core/objective/pareto.h"
#include "metaopt/v1/study.pb.h"

namespace metaopt::early_stopping {

// One intermediate report of a study with several objectives: every
// objective's value, minimised (objective::Minimized), in the objectives'
// order, and the summed violation of the study's constraints (0: feasible).
struct ParetoPoint {
  int64_t step = 0;
  objective::Point targets;
  double violation = 0;
};

// A trial's reports by strictly increasing step; every point has the same
// number of finite targets and a violation >= 0.
struct ParetoCurve {
  int64_t trial_id = 0;
  v1::TrialState state = v1::TRIAL_STATE_UNSPECIFIED;
  std::vector<ParetoPoint> points;
};

// Whether `a` constrained-dominates `b` ("A Fast and Elitist Multiobjective
// Genetic Algorithm: NSGA-II", Deb et al.): a smaller violation, or both
// feasible and `a` Pareto-dominates `b`.
bool ConstrainedDominates(const ParetoPoint& a, const ParetoPoint& b);

// The order in which successive halving by Pareto rank admits `points`
// (indices into `points`; the caller lists them by trial id): the fronts of
// non-dominated sorting under ConstrainedDominates (the feasible points'
// Pareto fronts, then the infeasible ones by increasing violation, equal
// violations forming one front), and within each front an epsilon-net
// (farthest-first traversal): first the point farthest from the points of
// the earlier fronts (when there are none, the front's point with the
// smallest first target), then repeatedly the point whose nearest admitted
// point is farthest. Distances are Euclidean over the targets, each scaled
// by its range over `points` (a zero range by 1); ties go to the smaller
// index. `front[i]`, when not null, receives point i's front (0 first).
std::vector<int> ParetoOrder(absl::Span<const ParetoPoint> points,
                             std::vector<int>* front = nullptr);

// Immutable after construction: ShouldStop is const and thread-safe.
class ParetoRule {
 public:
  virtual ~ParetoRule() = default;
  // As Rule::ShouldStop, over reports with several objectives (all targets
  // minimised, so no goal).
  virtual Decision ShouldStop(const ParetoCurve& trial,
                              absl::Span<const ParetoCurve> others) const = 0;
  // "asha" or "successive_halving".
  virtual std::string name() const = 0;
};

// OK when `spec` (valid by ValidateEarlyStoppingSpec) can stop trials of a
// study with several objectives: its rule is asha or successive_halving and
// it compares no metric; otherwise INVALID_ARGUMENT naming `field` (e.g.
// "spec.early_stopping"), the value and the rule.
absl::Status CheckParetoRule(const v1::EarlyStoppingSpec& spec,
                             const std::string& field);

// The rule `spec` describes for a study with several objectives.
// INVALID_ARGUMENT as ValidateEarlyStoppingSpec and CheckParetoRule (field
// "early_stopping").
absl::StatusOr<std::unique_ptr<ParetoRule>> CreateParetoRule(
    const v1::EarlyStoppingSpec& spec);

}  // namespace metaopt::early_stopping

#endif  // METAOPT_CORE_EARLY_STOPPING_PARETO_RULE_H_
