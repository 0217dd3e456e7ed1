#include "core/policy/gp_policy.h"

#include <algorithm>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
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
    std::shared_ptr<const registry::LoadedModel> model,
    GpPolicyOptions options) {
  METAOPT_ASSIGN_OR_RETURN(space::SearchSpace space,
                           space::SearchSpace::Create(spec.search_space()));
  std::vector<v1::Configuration> portfolio = PortfolioForStudy(
      model == nullptr ? nullptr : &model->artifact, spec, space);
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
  std::shared_ptr<const EncodedCatalogue> catalogue =
      EncodeCatalogue(spec, encoder);
  return std::shared_ptr<const GpPolicy>(new GpPolicy(
      spec.objective().goal(), initial_trials, std::move(portfolio),
      std::move(encoder), std::move(catalogue), std::move(prior),
      *std::move(state), std::move(options)));
}

GpPolicy::GpPolicy(v1::Goal goal, int initial_trials,
                   std::vector<v1::Configuration> portfolio,
                   space::Encoder encoder,
                   std::shared_ptr<const EncodedCatalogue> catalogue,
                   gp::GaussianProcess prior, v1::GpPolicyState state,
                   GpPolicyOptions options)
    : goal_(goal),
      initial_trials_(initial_trials),
      portfolio_(std::move(portfolio)),
      encoder_(std::move(encoder)),
      catalogue_(std::move(catalogue)),
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
      new GpPolicy(goal_, initial_trials_, portfolio_, encoder_, catalogue_,
                   fitted, state, options_));
  update.state = wrapper.SerializeAsString();
  return update;
}

namespace {

void Append(std::vector<v1::Configuration> more,
            std::vector<v1::Configuration>& out) {
  for (v1::Configuration& c : more) out.push_back(std::move(c));
}

}  // namespace

absl::StatusOr<SuggestResult> GpPolicy::Suggest(const StudyView& study,
                                                int count,
                                                space::Rng& rng) const {
  SuggestResult result;
  std::vector<std::string> sources;
  // Zero-shot start: the bound model's portfolio comes first.
  result.configurations = NextPortfolioEntries(study, portfolio_, count);
  if (!result.configurations.empty()) sources.push_back("portfolio");
  auto finish = [&] {
    result.source = "gp/" + absl::StrJoin(sources, "+");
    return result;
  };
  int remaining = count - static_cast<int>(result.configurations.size());
  if (remaining == 0) return finish();

  // Initial design: without a portfolio, random until `initial_trials_`
  // trials have been handed out (failed and infeasible ones count; abandoned
  // and stale ones do not); and random whenever fewer than two observations
  // exist.
  int64_t started = 0;
  for (const v1::Trial& trial : *study.trials) {
    if (HoldsConfiguration(trial.state())) ++started;
  }
  TrainingData data = CollectTrainingData(study, encoder_);
  const int64_t n = data.y.size();
  int design = 0;
  if (n < 2) {
    design = remaining;
  } else if (portfolio_.empty()) {
    design = std::clamp<int>(initial_trials_ - started, 0, remaining);
  }
  if (design > 0) {
    AugmentedView augmented(study, result.configurations);
    Append(RandomPolicy::Sample(augmented.view, design, rng),
           result.configurations);
    sources.push_back("initial-design");
    remaining = count - static_cast<int>(result.configurations.size());
  }
  // (A catalogue that ran out leaves `remaining` > 0 with nothing to add.)
  if (remaining == 0 || n < 2) return finish();

  // Hyperparameters: refit on the schedule described in the class comment.
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
    posterior = gp::Fit(prior_, data.X, data.y, fit);
    if (posterior.ok()) result.update = WithFit(posterior->model(), n, full);
  } else {
    posterior = gp::Condition(prior_, data.X, data.y);
  }
  AugmentedView augmented(study, result.configurations);
  if (!posterior.ok()) {
    // A numerically hopeless model must not stall the study: fall back to
    // random search for this call and say so in the trials' metadata.
    LogWarning(absl::StrCat("GP fit failed (", posterior.status().ToString(),
                            "); suggesting at random"));
    Append(RandomPolicy::Sample(augmented.view, remaining, rng),
           result.configurations);
    sources.push_back("random-fallback");
    return finish();
  }

  // Pending trials and this call's earlier picks enter as fantasies.
  surrogate::GpSurrogate base(*std::move(posterior));
  METAOPT_ASSIGN_OR_RETURN(
      std::unique_ptr<const surrogate::Surrogate> model_now,
      base.WithFantasies(PendingInputs(augmented.view, encoder_)));
  METAOPT_ASSIGN_OR_RETURN(
      std::vector<v1::Configuration> picks,
      ProposeByExpectedImprovement(
          augmented.view, encoder_, catalogue_.get(), *model_now,
          data.y.minCoeff(), data.best_first, remaining, options_.search, rng));
  Append(std::move(picks), result.configurations);
  sources.push_back("ei");
  return finish();
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
