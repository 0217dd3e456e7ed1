// The acquisition function of a study with several objectives or with
// constraints: the optimizer's surrogate models the first objective, and this
// function holds models of the others and of each constrained metric.
//
//   score = log EHVI(objectives) + sum over constraints of log P(feasible)
//
// EHVI is exact for one to three objectives (hypervolume_improvement.h; with
// one objective it is expected improvement over the best feasible value, as
// log-EI); P(feasible) = Phi((bound - mean) / sd) for "at most" under the
// metric's Gaussian posterior ("Bayesian Optimization with Inequality
// Constraints", Gardner et al. 2014). While no observation is feasible the
// score is the log probability of feasibility alone. Batches: after a pick
// every model is conditioned on its mean there (kriging believer) and, if
// those means meet the constraints, the believed point joins the front.
//
// Thread-safe: immutable after construction.
#ifndef METAOPT_CORE_ACQUISITION_PARETO_ACQUISITION_H_
#define METAOPT_CORE_ACQUISITION_PARETO_ACQUISITION_H_

#include <memory>
#include <vector>

#include "core/acquisition/acquisition_function.h"
#include "core/acquisition/hypervolume_improvement.h"
#include "core/surrogate/surrogate.h"

namespace metaopt::acquisition {

// A model of a constrained metric (in its own units, not minimised) and the
// side of `bound` it must stay on.
struct ModeledConstraint {
  std::shared_ptr<const surrogate::Surrogate> model;
  bool at_most = true;
  double bound = 0;
};

class ParetoAcquisition final : public AcquisitionFunction {
 public:
  // `objectives`: models of the second and further objectives (minimised).
  // `front`: the minimised objective vectors of the feasible observations
  // (dominated ones are ignored); empty while none is feasible. `reference`:
  // the minimised reference point (one coordinate per objective; with one
  // objective +infinity, which makes the score log-EI over the front's best).
  ParetoAcquisition(
      std::vector<std::shared_ptr<const surrogate::Surrogate>> objectives,
      std::vector<ModeledConstraint> constraints,
      std::vector<std::vector<double>> front, std::vector<double> reference);

  absl::StatusOr<Eigen::VectorXd> Score(
      const gp::Prediction& prediction,
      const Eigen::MatrixXd& inputs) const override;
  // Score with the other outputs' screening predictions (exact means,
  // variances bounded above; Predict where a model has none): EHVI never
  // decreases as any objective's variance grows, and a constraint's
  // probability is bounded by 1 where its mean meets the bound and by the
  // probability at the larger variance where it does not.
  absl::StatusOr<Eigen::VectorXd> ScoreBound(
      const gp::Prediction& bound,
      const Eigen::MatrixXd& inputs) const override;
  // ScoreBound with the further outputs' screening predictions of the
  // catalogue rows through rows.caches (output k: objective k + 1, then the
  // constraints), which keep their kernels between Suggests.
  absl::StatusOr<Eigen::VectorXd> ScoreCatalogueBound(
      const gp::Prediction& bound, const Eigen::MatrixXd& inputs,
      const CatalogueRows& rows) const override;
  absl::StatusOr<std::unique_ptr<const AcquisitionFunction>> AfterPick(
      const Eigen::MatrixXd& input, double mean) const override;
  // EHVI never decreases as the first objective's variance grows, and the
  // probability of feasibility does not depend on it.
  bool GrowsWithVariance() const override { return true; }

  int objectives() const { return 1 + static_cast<int>(objectives_.size()); }

 private:
  std::vector<std::shared_ptr<const surrogate::Surrogate>> objectives_;
  std::vector<ModeledConstraint> constraints_;
  std::vector<std::vector<double>> front_;
  std::vector<double> reference_;
  // Score (bound false) or ScoreBound (true); with `rows` (and bound),
  // ScoreCatalogueBound.
  absl::StatusOr<Eigen::VectorXd> Scores(const gp::Prediction& prediction,
                                         const Eigen::MatrixXd& inputs,
                                         bool bound,
                                         const CatalogueRows* rows = nullptr) const;

  NonDominatedBoxes boxes_;
};

// log Phi(z), accurate far in the lower tail.
double LogNormalCdf(double z);

}  // namespace metaopt::acquisition

#endif  // METAOPT_CORE_ACQUISITION_PARETO_ACQUISITION_H_
