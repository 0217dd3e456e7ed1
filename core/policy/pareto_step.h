// The acquisition step of a study with several objectives or constraints,
// shared by the surrogate-based policies: the policy's surrogate models the
// first objective and a GP on the same model inputs each other objective and
// each constrained metric (acquisition/pareto_acquisition.h).
#ifndef METAOPT_CORE_POLICY_PARETO_STEP_H_
#define METAOPT_CORE_POLICY_PARETO_STEP_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "Eigen/Core"
#include "absl/status/statusor.h"
#include "core/acquisition/acquisition_function.h"
#include "core/acquisition/pareto_acquisition.h"
#include "core/gp/power_transform.h"
#include "core/policy/policy.h"
#include "core/space/random.h"
#include "core/surrogate/prior_mean_surrogate.h"
#include "core/surrogate/surrogate.h"

namespace metaopt::policy {

// Whether the study has several objectives or constraints (then its
// acquisition is ParetoStepAcquisition's).
bool SeveralOutputs(const v1::StudySpec& spec);

// The name of the study's acquisition in a suggestion's source: "ei",
// "ehvi" or "parego" (several objectives) or "constrained-ei".
std::string AcquisitionName(const v1::StudySpec& spec);

// The model inputs of configurations (canonical, in the study's space): the
// rows the acquisition optimizer scores.
using InputsOf = std::function<absl::StatusOr<Eigen::MatrixXd>(
    const std::vector<v1::Configuration>&)>;

// The study's output warping (spec.algorithm.output_warping, or the default
// when unset: docs/algorithms.md "Output warping").
v1::OutputWarping OutputWarpingOf(const v1::AlgorithmSpec& algorithm);

// A meta-learned model of a further output (cost-aware transfer): the prior
// mean of the natural logarithm of `metric`'s values at model inputs (e.g. a
// head on DeepPipe's pipeline embedding fitted on the meta-dataset's run
// times, docs/algorithms.md "Several objectives and constraints").
struct OutputPrior {
  std::string metric;
  surrogate::PriorMean log_mean;
};

// A GP of one more output and the warp of the values it models: the model
// predicts warp.Apply(value), so bounds and front coordinates compared with
// its predictions go through warp.Apply too.
struct OutputModel {
  std::shared_ptr<const surrogate::Surrogate> model;
  gp::PowerTransform warp;
};

// A GP of one more output (another objective, minimised when `goal` is set,
// or a constrained metric) on the model inputs: fitted as
// ParetoStepAcquisition's on the observations that report `metric` (warped
// as the study's output warping says; not warped when `also_warped`, a
// bound or reference coordinate, is outside the warp's domain),
// conditioned on `pending` as fantasies.
//
// With a `prior` for the metric (and every observed value and `also_warped`
// positive) the output is modelled on the log scale instead: the GP fits the
// residuals log(value) - prior.log_mean(inputs), the model adds the prior
// mean back, and the warp is the logarithm. Without a prior, `log_positive`
// models an objective (`goal` set) on the log scale when every observed
// (minimised) value and `also_warped` are positive and the study leaves
// algorithm.output_warping unset.
absl::StatusOr<OutputModel> FitOutputModel(
    const StudyView& study, const InputsOf& inputs_of,
    const Eigen::MatrixXd& pending, const std::string& metric,
    std::optional<v1::Goal> goal, std::optional<double> also_warped,
    space::Rng& rng, const OutputPrior* prior = nullptr,
    bool log_positive = false);

// A model of each of the study's constrained metrics (FitOutputModel), in
// the order of spec.constraints, each bound in its model's (warped) units.
absl::StatusOr<std::vector<acquisition::ModeledConstraint>>
FitConstraintModels(const StudyView& study, const InputsOf& inputs_of,
                    const Eigen::MatrixXd& pending, space::Rng& rng);

// The Pareto acquisition of `study`: GPs (Matern 5/2, hyperparameters fitted
// by one L-BFGS start of 30 iterations on at most 64 of the first
// observations, refitted once the observations grew by a tenth and kept
// across calls in between; one draw from `rng`) of the other objectives
// (minimised) and the constrained metrics on the observations that report them,
// each conditioned on `pending` (model inputs) as fantasies; the front of the
// feasible observations; the study's reference point (docs/api.md). Each
// further objective's coordinates of the front and the reference point are
// in its model's warped units. The optimizer's surrogate must model the
// first objective, minimised.
// A further objective named by one of `priors` is modelled with it
// (FitOutputModel); the others on the log scale where `log_positive` and
// FitOutputModel allow it.
absl::StatusOr<std::unique_ptr<const acquisition::AcquisitionFunction>>
ParetoStepAcquisition(const StudyView& study, const InputsOf& inputs_of,
                      const Eigen::MatrixXd& pending, space::Rng& rng,
                      const std::vector<OutputPrior>& priors = {},
                      bool log_positive = false);

}  // namespace metaopt::policy

#endif  // METAOPT_CORE_POLICY_PARETO_STEP_H_
