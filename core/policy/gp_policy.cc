#include "core/policy/gp_policy.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/common/status_macros.h"
#include "core/surrogate/surrogate.h"

namespace metaopt::policy {
namespace {

absl::Status ValidateFitOptions(const gp::FitOptions& fit,
                                absl::string_view name) {
  if (fit.num_starts < 1 || fit.max_iterations < 0 ||
      !(fit.time_budget > absl::ZeroDuration())) {
    return absl::InvalidArgumentError(
        absl::StrCat("GP policy options: ", name,
                     " needs num_starts >= 1, max_iterations >= 0 and a "
                     "positive time_budget"));
  }
  return absl::OkStatus();
}

}  // namespace

AlgorithmBlockCentring::AlgorithmBlockCentring(
    const space::EncodingLayout& layout, const Eigen::MatrixXd& X)
    : layout_(layout) {
  for (const space::BlockLayout& block : layout_.blocks) {
    const int chosen = layout_.stages[block.stage].offset + block.algorithm;
    Eigen::VectorXd sum = Eigen::VectorXd::Zero(block.size);
    int rows = 0;
    for (Eigen::Index r = 0; r < X.rows(); ++r) {
      if (X(r, chosen) > 0.5) {
        sum += X.row(r).segment(block.offset, block.size).transpose();
        ++rows;
      }
    }
    means_.push_back(rows > 0 ? Eigen::VectorXd(sum / rows) : sum);
  }
}

Eigen::MatrixXd AlgorithmBlockCentring::Apply(Eigen::MatrixXd X) const {
  for (size_t b = 0; b < layout_.blocks.size(); ++b) {
    const space::BlockLayout& block = layout_.blocks[b];
    const int chosen = layout_.stages[block.stage].offset + block.algorithm;
    for (Eigen::Index r = 0; r < X.rows(); ++r) {
      if (X(r, chosen) > 0.5) {
        X.row(r).segment(block.offset, block.size) -= means_[b].transpose();
      }
    }
  }
  return X;
}

absl::Status ValidateGpPolicyOptions(const GpPolicyOptions& options) {
  METAOPT_RETURN_IF_ERROR(ValidateFitOptions(options.full_fit, "full_fit"));
  METAOPT_RETURN_IF_ERROR(ValidateFitOptions(options.quick_fit, "quick_fit"));
  if (options.initial_trials < 0 || !(options.refit_growth >= 0.0) ||
      !std::isfinite(options.refit_growth) || options.max_fit_points < 0 ||
      options.max_fit_points == 1) {
    return absl::InvalidArgumentError(
        "GP policy options: need initial_trials >= 0, a finite refit_growth "
        ">= 0 and max_fit_points 0 (all) or >= 2");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const GpPolicy>> GpPolicy::Create(
    const v1::StudySpec& spec, std::optional<v1::GpPolicyState> state,
    std::shared_ptr<const registry::LoadedModel> model,
    GpPolicyOptions options) {
  METAOPT_RETURN_IF_ERROR(ValidateGpPolicyOptions(options));
  options.search = WithStudySearchBudget(std::move(options.search), spec);
  METAOPT_ASSIGN_OR_RETURN(space::SearchSpace space,
                           space::SearchSpace::Create(spec.search_space()));
  ZeroShotDesign portfolio = ZeroShotDesignForStudy(
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
  std::shared_ptr<const acquisition::EncodedCatalogue> catalogue =
      acquisition::EncodeCatalogue(spec, encoder);
  // Several objectives over a catalogue (EHVI or ParEGO):
  // AlgorithmBlockCentring.
  std::shared_ptr<const AlgorithmBlockCentring> centring;
  if (spec.objectives_size() > 1 && catalogue != nullptr) {
    centring = std::make_shared<const AlgorithmBlockCentring>(encoder.layout(),
                                                              catalogue->X);
    catalogue =
        acquisition::WithInputs(*catalogue, centring->Apply(catalogue->X));
  }
  return std::shared_ptr<const GpPolicy>(new GpPolicy(
      spec.objective().goal(), initial_trials, std::move(portfolio),
      std::move(encoder), std::move(catalogue), std::move(centring),
      std::move(prior), *std::move(state), std::move(options)));
}

GpPolicy::GpPolicy(
    v1::Goal goal, int initial_trials, ZeroShotDesign portfolio,
    space::Encoder encoder,
    std::shared_ptr<const acquisition::EncodedCatalogue> catalogue,
    std::shared_ptr<const AlgorithmBlockCentring> centring,
    gp::GaussianProcess prior, v1::GpPolicyState state, GpPolicyOptions options)
    : goal_(goal),
      initial_trials_(initial_trials),
      portfolio_(std::move(portfolio)),
      encoder_(std::move(encoder)),
      catalogue_(std::move(catalogue)),
      centring_(std::move(centring)),
      prior_(std::move(prior)),
      state_(std::move(state)),
      options_(std::move(options)) {}

PolicyUpdate GpPolicy::WithFit(const gp::GaussianProcess& fitted,
                               v1::GpPolicyState state) const {
  v1::PolicyState wrapper;
  *wrapper.mutable_gp() = state;
  PolicyUpdate update;
  update.policy = std::shared_ptr<const GpPolicy>(
      new GpPolicy(goal_, initial_trials_, portfolio_, encoder_, catalogue_,
                   centring_, fitted, state, options_));
  update.state = wrapper.SerializeAsString();
  return update;
}

namespace {

// `state` after fitting `fitted` on n observations (a multi-start fit if
// `full`).
v1::GpPolicyState RecordFit(v1::GpPolicyState state,
                            const gp::GaussianProcess& fitted, int64_t n,
                            bool full) {
  const Eigen::VectorXd h = fitted.hyperparameters();
  state.mutable_hyperparameters()->Assign(h.data(), h.data() + h.size());
  state.set_fitted_observations(n);
  if (full) state.set_full_fit_observations(n);
  return state;
}

}  // namespace

absl::StatusOr<ScheduledGpFit> FitGpOnSchedule(
    const gp::GaussianProcess& prior, const v1::GpPolicyState& state,
    const TrainingData& data, const GpPolicyOptions& options, space::Rng& rng,
    const gp::GpPosterior* previous) {
  const int64_t n = data.y.size();
  const bool full = state.full_fit_observations() == 0 ||
                    n >= 2 * state.full_fit_observations();
  const bool quick =
      !full && n > state.fitted_observations() &&
      n - state.fitted_observations() >=
          std::max<int64_t>(
              1, static_cast<int64_t>(
                     options.refit_growth *
                     static_cast<double>(state.fitted_observations())));
  if (!full && !quick) {
    const bool extend =
        previous != nullptr &&
        previous->model().kernel().name() == prior.kernel().name() &&
        previous->model().noise_floor() == prior.noise_floor() &&
        previous->model().hyperparameters() == prior.hyperparameters();
    METAOPT_ASSIGN_OR_RETURN(gp::GpPosterior posterior,
                             extend ? previous->Recondition(data.X, data.y)
                                    : gp::Condition(prior, data.X, data.y));
    return ScheduledGpFit{std::move(posterior), std::nullopt};
  }
  gp::FitOptions fit = full ? options.full_fit : options.quick_fit;
  fit.seed = rng();
  const TrainingData sample = FitSample(data, options.max_fit_points);
  METAOPT_ASSIGN_OR_RETURN(gp::GpPosterior posterior,
                           gp::Fit(prior, sample.X, sample.y, fit));
  if (sample.y.size() < n) {
    METAOPT_ASSIGN_OR_RETURN(posterior,
                             gp::Condition(posterior.model(), data.X, data.y));
  }
  v1::GpPolicyState refitted = RecordFit(state, posterior.model(), n, full);
  return ScheduledGpFit{std::move(posterior), std::move(refitted)};
}

absl::StatusOr<SuggestResult> GpPolicy::Suggest(const StudyView& study,
                                                int count,
                                                space::Rng& rng) const {
  return SuggestWithSurrogate(study, count, rng, Steps());
}

absl::StatusOr<std::shared_ptr<const PreparedFit>> GpPolicy::PrepareFit(
    const StudyView& study, const space::Rng& rng) const {
  return PrepareSurrogate(study, rng, Steps());
}

absl::StatusOr<SuggestResult> GpPolicy::SuggestPrepared(
    const StudyView& study, int count, space::Rng& rng,
    const std::shared_ptr<const PreparedFit>& prepared) const {
  return SuggestWithSurrogate(study, count, rng, Steps(), prepared);
}

SurrogateSuggestSteps GpPolicy::Steps() const {
  SurrogateSuggestSteps steps;
  steps.name = "gp";
  steps.producer = instance_id_;
  steps.encoder = &encoder_;
  // The bound model's portfolio comes first and replaces the random design.
  steps.portfolio = &portfolio_.configurations;
  steps.portfolio_source = portfolio_.source;
  steps.random_design = portfolio_.configurations.empty();
  steps.initial_trials = initial_trials_;
  steps.min_observations = 2;
  steps.search = &options_.search;
  steps.untried_algorithms_first = centring_ != nullptr;
  steps.fit = [this](const TrainingData& encoded, space::Rng& rng,
                     std::optional<PolicyUpdate>* update)
      -> absl::StatusOr<FittedSurrogate> {
    TrainingData centred;
    if (centring_ != nullptr) {
      centred.X = centring_->Apply(encoded.X);
      centred.y = encoded.y;
    }
    const TrainingData& data = centring_ != nullptr ? centred : encoded;
    // Over a space, the fit extends the last one's Cholesky factor. (A
    // catalogue study refactors: its suggestions stay bit for bit those of
    // the benchmarks' recorded runs.)
    const bool extends = catalogue_ == nullptr;
    std::shared_ptr<const surrogate::GpSurrogate> previous;
    if (extends) {
      MutexLock lock(&last_fit_->mu);
      previous = last_fit_->surrogate.lock();
    }
    // Hyperparameters: refit on the schedule described in the class comment.
    METAOPT_ASSIGN_OR_RETURN(
        ScheduledGpFit scheduled,
        FitGpOnSchedule(
            prior_, state_, data, options_, rng,
            previous == nullptr ? nullptr : &previous->posterior()));
    if (scheduled.refitted.has_value()) {
      *update = WithFit(scheduled.posterior.model(), *scheduled.refitted);
    }
    auto model = std::make_shared<const surrogate::GpSurrogate>(
        std::move(scheduled.posterior));
    if (extends && !scheduled.refitted.has_value()) {
      MutexLock lock(&last_fit_->mu);
      last_fit_->surrogate = model;
    }
    FittedSurrogate fitted;
    fitted.catalogue = catalogue_.get();
    fitted.model = std::move(model);
    if (centring_ != nullptr) {
      fitted.inputs = [centring = centring_](const Eigen::MatrixXd& X)
          -> absl::StatusOr<Eigen::MatrixXd> { return centring->Apply(X); };
    }
    fitted.log_positive_objectives = centring_ != nullptr;
    return fitted;
  };
  return steps;
}

absl::StatusOr<FineTuneResult> GpPolicy::FineTune(
    const StudyView& study, const FineTuneOptions& options) const {
  TrainingData data = CollectTrainingData(study, encoder_);
  if (centring_ != nullptr) data.X = centring_->Apply(std::move(data.X));
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
  result.update = WithFit(
      posterior.model(),
      RecordFit(state_, posterior.model(), data.y.size(), /*full=*/true));
  return result;
}

}  // namespace metaopt::policy
