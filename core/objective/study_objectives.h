// What one study optimizes, read from its spec: one or several objectives
// (StudySpec.objective / objectives) and constraints on reported metrics
// (StudySpec.constraints). Turns an Observe's outcome into the trial's value,
// metrics and feasibility, and observed trials into minimisation targets,
// their Pareto front and its hypervolume.
//
// Thread-safe: immutable after construction.
#ifndef METAOPT_CORE_OBJECTIVE_STUDY_OBJECTIVES_H_
#define METAOPT_CORE_OBJECTIVE_STUDY_OBJECTIVES_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "core/objective/constraint.h"
#include "core/objective/pareto.h"
#include "metaopt/v1/study.pb.h"

namespace metaopt::objective {

// Largest magnitude of an objective's value (as ObserveRequest.value's).
inline constexpr double kMaxObjectiveMagnitude = 1e100;

class StudyObjectives {
 public:
  // The objectives of a validated spec (space::ValidateAndCanonicalizeStudySpec):
  // spec.objectives when it has several, else spec.objective.
  explicit StudyObjectives(const v1::StudySpec& spec);

  int size() const { return static_cast<int>(objectives_.size()); }
  bool multiple() const { return objectives_.size() > 1; }
  bool constrained() const { return !constraints_.empty(); }
  const v1::Objective& objective(int i) const { return objectives_[i]; }
  const std::vector<Constraint>& constraints() const { return constraints_; }

  // Fills a successful trial's outcome from an Observe: its value (the first
  // objective's: `value`, else metrics[its name]), its metrics (`metrics`, plus
  // the first objective's value under its name in a study with several) and,
  // with constraints, `feasible`. INVALID_ARGUMENT naming the metric when an
  // objective's value or a constrained metric is missing, or when `value` and
  // metrics[first objective] disagree.
  absl::Status CompleteOutcome(
      std::optional<double> value,
      const google::protobuf::Map<std::string, double>& metrics,
      v1::Trial* trial) const;

  // Whether a trial meets the constraints: its stored `feasible` when set,
  // true otherwise (a study without constraints, or a trial that is not
  // COMPLETED).
  static bool Feasible(const v1::Trial& trial) {
    return !trial.has_feasible() || trial.feasible();
  }

  // The minimisation targets of a trial with a value (one per objective,
  // Minimized by its goal); nullopt when the trial lacks one of them.
  std::optional<Point> Targets(const v1::Trial& trial) const;

  // The reference point, in minimised coordinates, for `points` (the feasible
  // observations' targets): each objective's reference when set, otherwise
  // the worst of the points moved a tenth of their range further (a tenth of
  // max(1, |worst|) when they do not differ); 0 for an objective without
  // either.
  Point ReferencePoint(absl::Span<const Point> points) const;

  // The COMPLETED feasible trials of `trials` that have every target: their
  // indices in `trials` (ascending) and their targets.
  struct FeasibleTargets {
    std::vector<int> index;
    std::vector<Point> targets;
  };
  FeasibleTargets FeasibleOf(absl::Span<const v1::Trial> trials) const;

  // The trials on the Pareto front: the indices of `trials` whose targets no
  // other feasible trial's dominate, among FeasibleOf(trials); ascending.
  std::vector<int> ParetoFront(absl::Span<const v1::Trial> trials) const;

  // The front's summary for trials[front] (ParetoFront's indices) given the
  // feasible observations' targets `points`; the reference point in the
  // objectives' own units.
  v1::ParetoFrontSummary Summarize(absl::Span<const Point> front,
                                   absl::Span<const Point> points) const;

  // The metric names a policy reads besides a trial's value: the other
  // objectives', then the constrained metrics (no repeats).
  std::vector<std::string> PolicyMetricNames() const;

 private:
  std::vector<v1::Objective> objectives_;
  std::vector<Constraint> constraints_;
};

// The hypervolume `points` (minimised, 1 to 3 coordinates) dominate up to
// `reference`: exact (for one objective, the distance of the best point below
// the reference).
double Hypervolume(absl::Span<const Point> points, const Point& reference);

}  // namespace metaopt::objective

#endif  // METAOPT_CORE_OBJECTIVE_STUDY_OBJECTIVES_H_
