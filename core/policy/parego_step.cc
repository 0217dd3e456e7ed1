#include "core/policy/parego_step.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "core/acquisition/pareto_acquisition.h"
#include "core/common/status_macros.h"
#include "core/objective/parego.h"
#include "core/objective/study_objectives.h"

namespace metaopt::policy {

v1::MultiObjectiveAcquisition MultiObjectiveAcquisitionOf(
    const v1::AlgorithmSpec& algorithm) {
  if (algorithm.multi_objective_acquisition() !=
      v1::MULTI_OBJECTIVE_ACQUISITION_UNSPECIFIED) {
    return algorithm.multi_objective_acquisition();
  }
  return algorithm.kind() == v1::ALGORITHM_KIND_MOSAIC
             ? v1::MULTI_OBJECTIVE_ACQUISITION_PAREGO
             : v1::MULTI_OBJECTIVE_ACQUISITION_EHVI;
}

bool UsesParego(const v1::StudySpec& spec) {
  return spec.objectives_size() > 1 &&
         MultiObjectiveAcquisitionOf(spec.algorithm()) ==
             v1::MULTI_OBJECTIVE_ACQUISITION_PAREGO;
}

std::vector<objective::Point> ObservedTargets(const StudyView& study,
                                              std::vector<int>* index) {
  const objective::StudyObjectives objectives(*study.spec);
  std::vector<objective::Point> points;
  const std::vector<v1::Trial>& trials = *study.trials;
  for (size_t i = 0; i < trials.size(); ++i) {
    if (!IsObservation(trials[i])) continue;
    std::optional<objective::Point> targets = objectives.Targets(trials[i]);
    if (!targets.has_value()) continue;
    if (index != nullptr) index->push_back(static_cast<int>(i));
    points.push_back(*std::move(targets));
  }
  return points;
}

ParegoTargets DrawParegoTargets(const StudyView& study, space::Rng& rng) {
  const objective::StudyObjectives objectives(*study.spec);
  const std::vector<objective::Point> lattice = objective::SimplexLattice(
      objectives.size(), objective::ParegoDivisions(objectives.size()));
  ParegoTargets out;
  out.weights = lattice[space::UniformIndex(rng, lattice.size())];
  std::vector<int> index;
  const std::vector<objective::Point> points = ObservedTargets(study, &index);
  const std::vector<double> values =
      objective::ParegoScalarize(points, out.weights);
  const std::vector<v1::Trial>& trials = *study.trials;
  out.values.assign(trials.size(), std::nullopt);
  for (size_t k = 0; k < index.size(); ++k) out.values[index[k]] = values[k];
  return out;
}

absl::StatusOr<std::unique_ptr<const acquisition::AcquisitionFunction>>
ParegoStepAcquisition(const StudyView& study, const ParegoTargets& targets,
                      const InputsOf& inputs_of, const Eigen::MatrixXd& pending,
                      space::Rng& rng) {
  const objective::StudyObjectives objectives(*study.spec);
  // The incumbents: COMPLETED feasible trials (a STOPPED trial's constrained
  // metrics are unknown) with a scalarised value.
  std::vector<objective::Point> front;
  for (int i : objectives.FeasibleOf(*study.trials).index) {
    if (targets.values[i].has_value()) front.push_back({*targets.values[i]});
  }
  if (!objectives.constrained()) {
    double best = std::numeric_limits<double>::infinity();
    for (const objective::Point& p : front) best = std::min(best, p[0]);
    if (front.empty()) {
      for (const std::optional<double>& v : targets.values) {
        if (v.has_value()) best = std::min(best, *v);
      }
    }
    if (!std::isfinite(best)) {
      return absl::FailedPreconditionError(
          "ParEGO: no observation has every objective's value");
    }
    return std::unique_ptr<const acquisition::AcquisitionFunction>(
        new acquisition::LogExpectedImprovementFunction(best));
  }
  METAOPT_ASSIGN_OR_RETURN(
      std::vector<acquisition::ModeledConstraint> constraints,
      FitConstraintModels(study, inputs_of, pending, rng));
  return std::unique_ptr<const acquisition::AcquisitionFunction>(
      new acquisition::ParetoAcquisition(
          {}, std::move(constraints), std::move(front),
          {std::numeric_limits<double>::infinity()}));
}

}  // namespace metaopt::policy
