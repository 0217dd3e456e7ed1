// Several objectives, all minimised: Pareto dominance, the non-dominated set
// and the hypervolume a set dominates. Pure functions: safe from any thread.
// Points are given as minimisation targets (see Minimized in objective.h), one
// coordinate an objective; every point of a call has the same dimension.
#ifndef METAOPT_CORE_OBJECTIVE_PARETO_H_
#define METAOPT_CORE_OBJECTIVE_PARETO_H_

#include <vector>

#include "absl/types/span.h"

namespace metaopt::objective {

using Point = std::vector<double>;

// Whether `a` dominates `b`: no worse in every coordinate and strictly better
// in one. Equal points dominate neither.
bool Dominates(absl::Span<const double> a, absl::Span<const double> b);

// The indices, ascending, of the points no other point dominates (equal
// points are all kept).
std::vector<int> NonDominated(absl::Span<const Point> points);

// The area dominated by two-objective `points` and bounded by `reference`
// ("Hypervolume indicator", exact). Points not strictly better than the
// reference in both coordinates add nothing. O(n log n).
double Hypervolume2D(absl::Span<const Point> points, const Point& reference);

// The volume dominated by three-objective `points` and bounded by
// `reference`, exact: the 2-D area of each slice between successive third
// coordinates. O(n^2 log n).
double Hypervolume3D(absl::Span<const Point> points, const Point& reference);

}  // namespace metaopt::objective

#endif  // METAOPT_CORE_OBJECTIVE_PARETO_H_
