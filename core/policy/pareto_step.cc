#include "core/policy/pareto_step.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/acquisition/pareto_acquisition.h"
#include "core/common/status_macros.h"
#include "core/gp/gaussian_process.h"
#include "core/objective/objective.h"
#include "core/objective/study_objectives.h"
#include "core/policy/model_based.h"
#include "core/policy/output_fit_cache.h"
#include "core/policy/parego_step.h"
#include "core/surrogate/surrogate.h"

namespace metaopt::policy {
namespace {

// The output warping of a study that leaves spec.algorithm.output_warping
// unset (docs/algorithms.md "Output warping").
constexpr v1::OutputWarping kDefaultOutputWarping = v1::OUTPUT_WARPING_NONE;

// The hyperparameter fit of each other output's GP (FitOutputModel).
constexpr int kOutputFitIterations = 30;
constexpr int kOutputFitPoints = 64;

// How many of an output's n observations its hyperparameters are fitted on:
// the largest of 1, 2, ..., p + max(1, floor(p / 10)), ... not above n. So
// they are refitted once the observations grew by a tenth, as the main GP's
// quick refits (GpPolicyOptions.refit_growth), and in between the fit's
// inputs are unchanged: OutputFitCache reads it instead of fitting again.
int64_t FittedPrefix(int64_t n) {
  int64_t p = 1;
  while (true) {
    const int64_t next = p + std::max<int64_t>(1, p / 10);
    if (next > n) return p;
    p = next;
  }
}

}  // namespace

v1::OutputWarping OutputWarpingOf(const v1::AlgorithmSpec& algorithm) {
  if (algorithm.output_warping() != v1::OUTPUT_WARPING_UNSPECIFIED) {
    return algorithm.output_warping();
  }
  return kDefaultOutputWarping;
}

absl::StatusOr<OutputModel> FitOutputModel(
    const StudyView& study, const InputsOf& inputs_of,
    const Eigen::MatrixXd& pending, const std::string& metric,
    std::optional<v1::Goal> goal, std::optional<double> also_warped,
    space::Rng& rng, const OutputPrior* prior, bool log_positive) {
  std::vector<v1::Configuration> configs;
  std::vector<double> values;
  for (const v1::Trial& trial : *study.trials) {
    if (!IsObservation(trial)) continue;
    const auto it = trial.metrics().find(metric);
    if (it == trial.metrics().end()) continue;
    configs.push_back(trial.configuration());
    values.push_back(goal.has_value() ? objective::Minimized(it->second, *goal)
                                      : it->second);
  }
  if (configs.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("no observation reports metric \"", metric, "\""));
  }
  OutputModel out;
  TrainingData data;
  METAOPT_ASSIGN_OR_RETURN(data.X, inputs_of(configs));
  bool positive = !also_warped.has_value() || *also_warped > 0;
  for (double v : values) positive = positive && v > 0;
  const bool with_prior = prior != nullptr && positive;
  if (with_prior) {
    // Cost-aware transfer: the GP models what the prior does not explain.
    METAOPT_ASSIGN_OR_RETURN(Eigen::VectorXd prior_mean,
                             prior->log_mean(data.X));
    out.warp = gp::PowerTransform::Log();
    for (size_t i = 0; i < values.size(); ++i) {
      values[i] = out.warp.Apply(values[i]) - prior_mean[i];
    }
  } else if (log_positive && positive && goal.has_value() &&
             study.spec->algorithm().output_warping() ==
                 v1::OUTPUT_WARPING_UNSPECIFIED) {
    // Run times and sizes span orders of magnitude: the front's fast end
    // is then not a sliver of the raw scale's hypervolume.
    out.warp = gp::PowerTransform::Log();
    for (double& v : values) v = out.warp.Apply(v);
  } else if (OutputWarpingOf(study.spec->algorithm()) ==
             v1::OUTPUT_WARPING_POWER) {
    const gp::PowerTransform warp = gp::PowerTransform::Fit(values);
    std::vector<double> warped = values;
    bool usable = !also_warped.has_value() || warp.InDomain(*also_warped);
    for (double& v : warped) {
      v = warp.Apply(v);
      usable = usable && std::isfinite(v);
    }
    if (usable) {
      out.warp = warp;
      values = std::move(warped);
    }
  }
  data.y = Eigen::Map<const Eigen::VectorXd>(values.data(), values.size());
  METAOPT_ASSIGN_OR_RETURN(
      gp::GaussianProcess defaults,
      gp::GaussianProcess::Create("matern52", data.X.cols()));
  // Fitted from the defaults on the first FittedPrefix(n) observations (at
  // most kOutputFitPoints of them), by one L-BFGS start of
  // kOutputFitIterations iterations (not the clock) seeded by that prefix's
  // size: a function of the history alone, so equal histories give equal
  // suggestions and the fit is kept across Suggests (OutputFitCache). Then
  // conditioned on all observations.
  (void)rng();  // the draw the fit's seed once was: later draws stay the same
  const int64_t prefix = FittedPrefix(data.y.size());
  TrainingData fitted_on;
  fitted_on.X = data.X.topRows(prefix);
  fitted_on.y = data.y.head(prefix);
  const TrainingData sample = FitSample(fitted_on, kOutputFitPoints);
  OutputFitKey key{std::string(defaults.kernel().name()), sample.X, sample.y,
                   static_cast<uint64_t>(prefix), kOutputFitIterations};
  std::optional<gp::GaussianProcess> fitted =
      OutputFitCache::Global().Find(key);
  if (!fitted.has_value()) {
    gp::FitOptions options;
    options.num_starts = 1;
    options.max_iterations = kOutputFitIterations;
    options.time_budget = absl::InfiniteDuration();
    options.seed = key.seed;
    METAOPT_ASSIGN_OR_RETURN(gp::GpPosterior on_sample,
                             gp::Fit(defaults, sample.X, sample.y, options));
    fitted = on_sample.model();
    OutputFitCache::Global().Insert(std::move(key), *fitted);
  }
  METAOPT_ASSIGN_OR_RETURN(gp::GpPosterior posterior,
                           gp::Condition(*fitted, data.X, data.y));
  out.model =
      std::make_shared<const surrogate::GpSurrogate>(std::move(posterior));
  if (with_prior) {
    out.model = std::make_shared<const surrogate::PriorMeanSurrogate>(
        std::move(out.model), prior->log_mean);
  }
  if (pending.rows() > 0) {
    METAOPT_ASSIGN_OR_RETURN(std::unique_ptr<const surrogate::Surrogate> with,
                             out.model->WithFantasies(pending));
    out.model = std::move(with);
  }
  return out;
}

absl::StatusOr<std::vector<acquisition::ModeledConstraint>>
FitConstraintModels(const StudyView& study, const InputsOf& inputs_of,
                    const Eigen::MatrixXd& pending, space::Rng& rng) {
  const objective::StudyObjectives objectives(*study.spec);
  std::vector<acquisition::ModeledConstraint> constraints;
  for (const objective::Constraint& constraint : objectives.constraints()) {
    acquisition::ModeledConstraint modeled;
    METAOPT_ASSIGN_OR_RETURN(
        OutputModel output,
        FitOutputModel(study, inputs_of, pending, constraint.metric,
                       std::nullopt, constraint.bound, rng));
    modeled.model = std::move(output.model);
    modeled.at_most = constraint.sense == objective::Constraint::Sense::kAtMost;
    modeled.bound = output.warp.Apply(constraint.bound);
    constraints.push_back(std::move(modeled));
  }
  return constraints;
}

bool SeveralOutputs(const v1::StudySpec& spec) {
  return spec.objectives_size() > 1 || spec.constraints_size() > 0;
}

std::string AcquisitionName(const v1::StudySpec& spec) {
  if (!SeveralOutputs(spec)) return "ei";
  if (UsesParego(spec)) return "parego";
  return spec.objectives_size() > 1 ? "ehvi" : "constrained-ei";
}

absl::StatusOr<std::unique_ptr<const acquisition::AcquisitionFunction>>
ParetoStepAcquisition(const StudyView& study, const InputsOf& inputs_of,
                      const Eigen::MatrixXd& pending, space::Rng& rng,
                      const std::vector<OutputPrior>& priors,
                      bool log_positive) {
  const objective::StudyObjectives objectives(*study.spec);
  // The incumbents: COMPLETED feasible trials only (a STOPPED trial's
  // constrained metrics are unknown).
  std::vector<objective::Point> feasible =
      objectives.FeasibleOf(*study.trials).targets;
  std::vector<double> reference =
      objectives.multiple()
          ? objectives.ReferencePoint(feasible)
          : std::vector<double>{std::numeric_limits<double>::infinity()};
  std::vector<std::shared_ptr<const surrogate::Surrogate>> others;
  for (int i = 1; i < objectives.size(); ++i) {
    const std::string& name = objectives.objective(i).name();
    const OutputPrior* prior = nullptr;
    for (const OutputPrior& p : priors) {
      // A prior models a time or size to minimise.
      if (p.metric == name &&
          objectives.objective(i).goal() == v1::GOAL_MINIMIZE) {
        prior = &p;
      }
    }
    METAOPT_ASSIGN_OR_RETURN(
        OutputModel output,
        FitOutputModel(study, inputs_of, pending, name,
                       objectives.objective(i).goal(), reference[i], rng, prior,
                       log_positive));
    // The front and the reference in the model's units (an increasing warp
    // keeps dominance).
    for (objective::Point& p : feasible) p[i] = output.warp.Apply(p[i]);
    reference[i] = output.warp.Apply(reference[i]);
    others.push_back(std::move(output.model));
  }
  METAOPT_ASSIGN_OR_RETURN(
      std::vector<acquisition::ModeledConstraint> constraints,
      FitConstraintModels(study, inputs_of, pending, rng));
  return std::unique_ptr<const acquisition::AcquisitionFunction>(
      new acquisition::ParetoAcquisition(std::move(others),
                                         std::move(constraints),
                                         std::move(feasible),
                                         std::move(reference)));
}

}  // namespace metaopt::policy
