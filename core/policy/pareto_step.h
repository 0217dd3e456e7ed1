// The acquisition step of a study with several objectives or constraints,
// shared by the surrogate-based policies: the policy's surrogate models the
// first objective and a GP on the same model inputs each other objective and
// each constrained metric (acquisition/pareto_acquisition.h).
#ifndef METAOPT_CORE_POLICY_PARETO_STEP_H_
#define METAOPT_CORE_POLICY_PARETO_STEP_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "Eigen/Core"
#include "absl/status/statusor.h"
#include "core/acquisition/acquisition_function.h"
#include "core/policy/policy.h"
#include "core/space/random.h"

namespace metaopt::policy {

// Whether the study has several objectives or constraints (then its
// acquisition is ParetoStepAcquisition's).
bool SeveralOutputs(const v1::StudySpec& spec);

// The name of the study's acquisition in a suggestion's source: "ei",
// "ehvi" (several objectives) or "constrained-ei".
std::string AcquisitionName(const v1::StudySpec& spec);

// The model inputs of configurations (canonical, in the study's space): the
// rows the acquisition optimizer scores.
using InputsOf = std::function<absl::StatusOr<Eigen::MatrixXd>(
    const std::vector<v1::Configuration>&)>;

// The Pareto acquisition of `study`: GPs (Matern 5/2, hyperparameters fitted
// by one L-BFGS start of 30 iterations on at most 64 of the first
// observations, refitted once the observations grew by a tenth and kept
// across calls in between; one draw from `rng`) of the other objectives (minimised)
// and the constrained metrics on the observations that report them, each
// conditioned on `pending` (model inputs) as fantasies; the front of the
// feasible observations; the study's reference point (docs/api.md). The
// optimizer's surrogate must model the first objective, minimised.
absl::StatusOr<std::unique_ptr<const acquisition::AcquisitionFunction>>
ParetoStepAcquisition(const StudyView& study, const InputsOf& inputs_of,
                      const Eigen::MatrixXd& pending, space::Rng& rng);

}  // namespace metaopt::policy

#endif  // METAOPT_CORE_POLICY_PARETO_STEP_H_
