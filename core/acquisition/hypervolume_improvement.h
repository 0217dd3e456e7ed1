// Expected hypervolume improvement (EHVI) of a candidate whose objectives
// (all minimised) have independent Gaussian posteriors, computed exactly for
// one to three objectives from a box decomposition of the region the current
// front does not dominate ("Hypervolume-based expected improvement:
// monotonicity properties and exact computation", Emmerich, Deutz and
// Klinkenberg 2011). With one objective it is expected improvement.
//
// The region below the reference point that no front point weakly dominates
// is cut into boxes [lower, upper) (lower may be -infinity): a grid over the
// first D-1 coordinates of the front points, and in each grid cell the last
// coordinate up to the lowest last coordinate of the points that dominate the
// cell's lower corner (else the reference). The improvement of a point y is
// the volume of those boxes' parts above y, so with independent marginals
//   EHVI = sum over boxes of prod_d [Psi_d(upper_d) - Psi_d(lower_d)],
//   Psi_d(c) = E[(c - Y_d)+] = (c - mu_d) Phi(z) + sigma_d phi(z), z = (c - mu_d) / sigma_d,
// exactly. (k+1)^(D-1) boxes for the k non-dominated points. Psi_d is
// evaluated once per grid line and per distinct box top for a candidate
// (the boxes share them), not twice per box.
//
// Thread-safe: immutable after construction.
#ifndef METAOPT_CORE_ACQUISITION_HYPERVOLUME_IMPROVEMENT_H_
#define METAOPT_CORE_ACQUISITION_HYPERVOLUME_IMPROVEMENT_H_

#include <vector>

#include "absl/types/span.h"

namespace metaopt::acquisition {

class NonDominatedBoxes {
 public:
  // `front`: minimised points (any set: dominated points and points not
  // strictly below `reference` are ignored), each of reference.size() (1 to
  // 3) coordinates.
  NonDominatedBoxes(absl::Span<const std::vector<double>> front,
                    std::vector<double> reference);

  int dimension() const { return static_cast<int>(reference_.size()); }
  int size() const { return static_cast<int>(lower_.size()); }

  // EHVI at a candidate with posterior means `mean` and standard deviations
  // `sd` (>= 0), one per objective.
  double Expected(absl::Span<const double> mean,
                  absl::Span<const double> sd) const;

  // The improvement of the point `y` itself (the hypervolume it adds): for
  // tests and Monte-Carlo checks.
  double Improvement(absl::Span<const double> y) const;

 private:
  std::vector<double> reference_;
  // Box b is [lower_[b][d], upper_[b][d]) for each coordinate d.
  std::vector<std::vector<double>> lower_;
  std::vector<std::vector<double>> upper_;
  // The same boxes by index, for Expected: the grid lines of the first D-1
  // coordinates (-infinity first), box b's cell (its lower line's index in
  // each), the distinct box tops of the last coordinate and box b's top's
  // index among them (its lower bound there is -infinity).
  std::vector<std::vector<double>> lines_;
  std::vector<std::vector<int>> cell_;
  std::vector<double> tops_;
  std::vector<int> top_;
};

// E[(c - Y)+] for Y ~ N(mean, sd^2): 0 at c = -infinity.
double ExpectedShortfall(double c, double mean, double sd);

}  // namespace metaopt::acquisition

#endif  // METAOPT_CORE_ACQUISITION_HYPERVOLUME_IMPROVEMENT_H_
