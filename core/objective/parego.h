// ParEGO's scalarisation of several objectives ("ParEGO: a hybrid algorithm
// with on-line landscape approximation for expensive multiobjective
// optimization problems", Knowles 2006): at each step a weight vector from an
// evenly spaced lattice on the simplex, the objectives normalised to [0, 1] by
// their observed ranges, and the augmented Tchebycheff function
//
//   f_lambda(x) = max_j (lambda_j f_j(x)) + rho sum_j lambda_j f_j(x),
//
// which a single-objective model and expected improvement then minimise.
// Every point here is a vector of minimisation targets (objective.h).
//
// Thread-safe: free functions of their arguments.
#ifndef METAOPT_CORE_OBJECTIVE_PAREGO_H_
#define METAOPT_CORE_OBJECTIVE_PAREGO_H_

#include <vector>

#include "absl/types/span.h"
#include "core/objective/pareto.h"

namespace metaopt::objective {

// The augmentation rho of the paper.
inline constexpr double kParegoRho = 0.05;

// The lattice's divisions s for `objectives` objectives, as the paper's: 10
// for two (11 weight vectors), 4 for three (15); 1 for one.
int ParegoDivisions(int objectives);

// Every weight vector whose `objectives` components are multiples of
// 1/divisions summing to 1: C(divisions + objectives - 1, objectives - 1)
// vectors, in lexicographic order of their numerators, first component
// descending ((1, 0), (0.9, 0.1), ..., (0, 1)). Needs objectives >= 1 and
// divisions >= 1.
std::vector<Point> SimplexLattice(int objectives, int divisions);

// max_j (weights_j f_j) + rho sum_j weights_j f_j for `f` (normalised
// targets; as many as `weights`).
double AugmentedTchebycheff(absl::Span<const double> f,
                            absl::Span<const double> weights,
                            double rho = kParegoRho);

// Each coordinate of `points` min-max scaled to [0, 1] over `points` (0 where
// every point has the same value).
std::vector<Point> NormalizeByRange(absl::Span<const Point> points);

// The scalarised value of each of `points` (NormalizeByRange, then
// AugmentedTchebycheff with `weights`).
std::vector<double> ParegoScalarize(absl::Span<const Point> points,
                                    absl::Span<const double> weights,
                                    double rho = kParegoRho);

}  // namespace metaopt::objective

#endif  // METAOPT_CORE_OBJECTIVE_PAREGO_H_
