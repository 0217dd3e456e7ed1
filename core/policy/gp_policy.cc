#include "core/policy/gp_policy.h"

#include <algorithm>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "core/common/logging.h"
#include "core/common/status_macros.h"
#include "core/policy/random_policy.h"
#include "core/surrogate/surrogate.h"

namespace metaopt::policy {

TrainingData CollectTrainingData(const StudyView& study,
                                 const space::Encoder& encoder) {
  const bool maximize = study.spec->objective().goal() == v1::GOAL_MAXIMIZE;
  std::vector<const v1::Trial*> completed;
  for (const v1::Trial& trial : *study.trials) {
    if (trial.state() == v1::TRIAL_STATE_COMPLETED && trial.has_value()) {
      completed.push_back(&trial);
    }
  }
  TrainingData data;
  data.X.resize(static_cast<Eigen::Index>(completed.size()),
                encoder.dimension());
  data.y.resize(static_cast<Eigen::Index>(completed.size()));
  for (size_t i = 0; i < completed.size(); ++i) {
    data.X.row(i) = encoder.Encode(completed[i]->configuration()).transpose();
    data.y[i] = maximize ? -completed[i]->value() : completed[i]->value();
  }
  std::vector<int> order(completed.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return data.y[a] < data.y[b]; });
  for (int i : order) data.best_first.push_back(completed[i]->configuration());
  return data;
}

Eigen::MatrixXd PendingInputs(const StudyView& study,
                              const space::Encoder& encoder) {
  std::vector<v1::Configuration> pending;
  for (const v1::Trial& trial : *study.trials) {
    if (trial.state() == v1::TRIAL_STATE_ACTIVE) {
      pending.push_back(trial.configuration());
    }
  }
  if (pending.empty()) return Eigen::MatrixXd(0, encoder.dimension());
  return encoder.EncodeBatch(pending);
}

absl::StatusOr<std::shared_ptr<const GpPolicy>> GpPolicy::Create(
    const v1::StudySpec& spec, std::optional<v1::GpPolicyState> state,
    GpPolicyOptions options) {
  METAOPT_ASSIGN_OR_RETURN(space::SearchSpace space,
                           space::SearchSpace::Create(spec.search_space()));
  space::Encoder encoder(space);
  const std::string kernel = state.has_value() && !state->kernel().empty()
                                 ? state->kernel()
                                 : options.kernel;
  METAOPT_ASSIGN_OR_RETURN(
      gp::GaussianProcess prior,
      gp::GaussianProcess::Create(kernel, encoder.dimension()));
  if (state.has_value() && state->hyperparameters_size() > 0) {
    const Eigen::Map<const Eigen::VectorXd> stored(
        state->hyperparameters().data(), state->hyperparameters_size());
    absl::Status set = prior.set_hyperparameters(stored);
    if (!set.ok()) {
      return absl::DataLossError(absl::StrCat(
          "stored GP policy state does not fit the study's space: ",
          set.message()));
    }
  } else {
    state = v1::GpPolicyState();
  }
  state->set_kernel(kernel);
  const int initial_trials = spec.algorithm().initial_trials() > 0
                                 ? spec.algorithm().initial_trials()
                                 : options.initial_trials;
  return std::shared_ptr<const GpPolicy>(
      new GpPolicy(spec.objective().goal(), initial_trials, std::move(encoder),
                   std::move(prior), *std::move(state), std::move(options)));
}

GpPolicy::GpPolicy(v1::Goal goal, int initial_trials, space::Encoder encoder,
                   gp::GaussianProcess prior, v1::GpPolicyState state,
                   GpPolicyOptions options)
    : goal_(goal),
      initial_trials_(initial_trials),
      encoder_(std::move(encoder)),
      prior_(std::move(prior)),
      state_(std::move(state)),
      options_(std::move(options)) {}

PolicyUpdate GpPolicy::WithFit(const gp::GaussianProcess& fitted, int64_t n,
                               bool full) const {
  v1::GpPolicyState state = state_;
  const Eigen::VectorXd h = fitted.hyperparameters();
  state.mutable_hyperparameters()->Assign(h.data(), h.data() + h.size());
  state.set_fitted_observations(n);
  if (full) state.set_full_fit_observations(n);
  v1::PolicyState wrapper;
  *wrapper.mutable_gp() = state;
  PolicyUpdate update;
  update.policy = std::shared_ptr<const GpPolicy>(
      new GpPolicy(goal_, initial_trials_, encoder_, fitted, state, options_));
  update.state = wrapper.SerializeAsString();
  return update;
}

absl::StatusOr<SuggestResult> GpPolicy::Suggest(const StudyView& study,
                                                int count,
                                                space::Rng& rng) const {
  SuggestResult result;
  // Initial design: random until `initial_trials_` trials have been handed
  // out (failed and infeasible ones count; abandoned and stale ones do not),
  // and whenever fewer than two observations exist.
  int64_t started = 0;
  for (const v1::Trial& trial : *study.trials) {
    if (HoldsConfiguration(trial.state())) ++started;
  }
  TrainingData data = CollectTrainingData(study, encoder_);
  const int64_t n = data.y.size();
  const int design =
      n < 2 ? count : std::clamp<int>(initial_trials_ - started, 0, count);
  if (design > 0) {
    result.configurations = RandomPolicy::Sample(study, design, rng);
    result.source = "gp/initial-design";
    if (design == count) return result;
  }

  // Hyperparameters: refit on the schedule described in the class comment.
  gp::GaussianProcess model = prior_;
  const bool full = state_.full_fit_observations() == 0 ||
                    n >= 2 * state_.full_fit_observations();
  const bool quick =
      !full && n > state_.fitted_observations() &&
      n - state_.fitted_observations() >=
          std::max<int64_t>(
              1, static_cast<int64_t>(
                     options_.refit_growth *
                     static_cast<double>(state_.fitted_observations())));
  absl::StatusOr<gp::GpPosterior> posterior = absl::UnknownError("unset");
  if (full || quick) {
    gp::FitOptions fit = full ? options_.full_fit : options_.quick_fit;
    fit.seed = rng();
    posterior = gp::Fit(model, data.X, data.y, fit);
    if (posterior.ok()) {
      result.update = WithFit(posterior->model(), n, full);
    }
  } else {
    posterior = gp::Condition(model, data.X, data.y);
  }
  if (!posterior.ok()) {
    // A numerically hopeless model must not stall the study: fall back to
    // random search for this call and say so in the trials' metadata.
    LogWarning(absl::StrCat("GP fit failed (", posterior.status().ToString(),
                            "); suggesting at random"));
    std::vector<v1::Configuration> more =
        RandomPolicy::Sample(study, count - design, rng);
    for (auto& c : more) result.configurations.push_back(std::move(c));
    result.source = "gp/random-fallback";
    return result;
  }

  // Pending trials (and this call's design points) as fantasies.
  surrogate::GpSurrogate base(*std::move(posterior));
  Eigen::MatrixXd pending = PendingInputs(study, encoder_);
  if (!result.configurations.empty()) {
    Eigen::MatrixXd design_x = encoder_.EncodeBatch(result.configurations);
    Eigen::MatrixXd all(pending.rows() + design_x.rows(), encoder_.dimension());
    all << pending, design_x;
    pending = std::move(all);
  }
  METAOPT_ASSIGN_OR_RETURN(
      std::unique_ptr<const surrogate::Surrogate> model_now,
      base.WithFantasies(pending));
  // The study view for the search also excludes this call's design points.
  std::vector<v1::Trial> trials = *study.trials;
  for (const v1::Configuration& c : result.configurations) {
    v1::Trial t;
    *t.mutable_configuration() = c;
    t.set_state(v1::TRIAL_STATE_ACTIVE);
    trials.push_back(std::move(t));
  }
  StudyView view = study;
  view.trials = &trials;
  METAOPT_ASSIGN_OR_RETURN(
      std::vector<v1::Configuration> picks,
      ProposeByExpectedImprovement(view, encoder_, *model_now,
                                   data.y.minCoeff(), data.best_first,
                                   count - design, options_.search, rng));
  for (auto& c : picks) result.configurations.push_back(std::move(c));
  result.source = design > 0 ? "gp/initial-design+ei" : "gp/ei";
  return result;
}

absl::StatusOr<FineTuneResult> GpPolicy::FineTune(
    const StudyView& study, const FineTuneOptions& options) const {
  TrainingData data = CollectTrainingData(study, encoder_);
  if (data.y.size() < 2) {
    return absl::FailedPreconditionError(absl::StrCat(
        "FineTune needs at least 2 completed trials; the study has ",
        data.y.size()));
  }
  gp::FitOptions fit = options_.full_fit;
  if (options.steps > 0) fit.max_iterations = options.steps;
  fit.time_budget = options.time_budget;
  fit.seed = static_cast<uint64_t>(data.y.size());
  gp::FitReport report;
  METAOPT_ASSIGN_OR_RETURN(gp::GpPosterior posterior,
                           gp::Fit(prior_, data.X, data.y, fit, &report));
  FineTuneResult result;
  result.loss_before = report.initial_objective;
  result.loss_after = report.final_objective;
  result.steps_run = report.iterations;
  result.update = WithFit(posterior.model(), data.y.size(), /*full=*/true);
  return result;
}

}  // namespace metaopt::policy
