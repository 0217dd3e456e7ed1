// A compact limited-memory BFGS minimiser with an Armijo backtracking line
// search and optional box constraints (handled by projection: iterates are
// clipped into the box and the direction components that would push a variable
// through an active bound are dropped).
//
// Used for GP marginal-likelihood fitting; general enough for any smooth
// objective of a few hundred variables.
//
// Not a packaged library: Debian's liblbfgs has no box constraints, and
// NLopt's L-BFGS leaves a non-finite objective value undefined, which this
// line search backtracks from (GP fits meet them at extreme hyperparameters).
#ifndef METAOPT_CORE_GP_LBFGS_H_
#define METAOPT_CORE_GP_LBFGS_H_

#include <functional>

#include "Eigen/Core"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace metaopt::gp {

// Returns f(x) and writes the gradient into *gradient (already sized like x). A
// non-finite return value marks x as infeasible; the line search then
// backtracks.
using ObjectiveFunction =
    std::function<double(const Eigen::VectorXd& x, Eigen::VectorXd* gradient)>;

struct LbfgsOptions {
  int max_iterations = 100;
  // Number of (s, y) correction pairs kept.
  int history = 8;
  // Stop when the projected gradient's infinity norm falls below this.
  double gradient_tolerance = 1e-6;
  // Stop when |f_k - f_{k+1}| <= tolerance * max(1, |f_k|).
  double relative_function_tolerance = 1e-10;
  int max_line_search_steps = 30;
  // Armijo sufficient-decrease constant.
  double armijo_c1 = 1e-4;
  // Stop (returning the best point so far) once this much wall time has passed.
  absl::Duration time_budget = absl::InfiniteDuration();
  // Optional box; empty means unbounded, otherwise the size of x.
  Eigen::VectorXd lower;
  Eigen::VectorXd upper;
};

enum class LbfgsTermination {
  kGradientTolerance,
  kFunctionTolerance,
  kMaxIterations,
  kTimeBudget,
  kLineSearchFailed,
};

struct LbfgsResult {
  Eigen::VectorXd x;
  double value = 0.0;
  int iterations = 0;
  int evaluations = 0;
  LbfgsTermination termination = LbfgsTermination::kMaxIterations;
};

// Minimises f from x0 (clipped into the box). INVALID_ARGUMENT if the options
// are inconsistent or f is not finite at the starting point. Thread-safe if f
// is.
absl::StatusOr<LbfgsResult> MinimizeLbfgs(const ObjectiveFunction& f,
                                          const Eigen::VectorXd& x0,
                                          const LbfgsOptions& options);

}  // namespace metaopt::gp

#endif  // METAOPT_CORE_GP_LBFGS_H_
