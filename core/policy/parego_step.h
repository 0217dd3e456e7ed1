// ParEGO in a study with several objectives (objective/parego.h): each
// Suggest draws a weight vector, scalarises the observations' objectives and
// hands the policy's own single-objective model the scalarised values; the
// acquisition is log EI over them, times the probability of feasibility of
// each constrained metric's GP (pareto_step.h's).
#ifndef METAOPT_CORE_POLICY_PAREGO_STEP_H_
#define METAOPT_CORE_POLICY_PAREGO_STEP_H_

#include <memory>
#include <optional>
#include <vector>

#include "Eigen/Core"
#include "absl/status/statusor.h"
#include "core/acquisition/acquisition_function.h"
#include "core/objective/pareto.h"
#include "core/policy/pareto_step.h"
#include "core/policy/policy.h"
#include "core/space/random.h"

namespace metaopt::policy {

// The acquisition a study with several objectives uses:
// algorithm.multi_objective_acquisition when set, else the kind's default
// (ParEGO for Mosaic, EHVI for the others).
v1::MultiObjectiveAcquisition MultiObjectiveAcquisitionOf(
    const v1::AlgorithmSpec& algorithm);

// Whether the study has several objectives and scalarises them by ParEGO.
bool UsesParego(const v1::StudySpec& spec);

// The minimisation targets of the study's observations (IsObservation) that
// have every objective's, and their indices in study.trials.
std::vector<objective::Point> ObservedTargets(const StudyView& study,
                                              std::vector<int>* index);

// One Suggest's scalarisation.
struct ParegoTargets {
  // The weight vector, one of objective::SimplexLattice's for the study's
  // number of objectives.
  std::vector<double> weights;
  // Per entry of study.trials: the scalarised value (to minimise) of an
  // observation (IsObservation) that has every objective's target, the
  // normalisation's range being that of those observations; nullopt for any
  // other trial.
  std::vector<std::optional<double>> values;
};

// Draws the weight vector uniformly from the lattice (one draw from `rng`)
// and scalarises the study's observations. The spec must have several
// objectives.
ParegoTargets DrawParegoTargets(const StudyView& study, space::Rng& rng);

// The acquisition over `targets`' values, with the optimizer's surrogate
// modelling them: log EI below the best value of a COMPLETED feasible trial;
// with constraints, ParetoAcquisition's constrained EI (each constrained
// metric's GP from FitConstraintModels, conditioned on `pending`), which while no
// trial is feasible is the probability of feasibility alone.
absl::StatusOr<std::unique_ptr<const acquisition::AcquisitionFunction>>
ParegoStepAcquisition(const StudyView& study, const ParegoTargets& targets,
                      const InputsOf& inputs_of, const Eigen::MatrixXd& pending,
                      space::Rng& rng);

}  // namespace metaopt::policy

#endif  // METAOPT_CORE_POLICY_PAREGO_STEP_H_
