#include "core/policy/deeppipe_policy.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/common/logging.h"
#include "core/common/status_macros.h"

namespace metaopt::policy {
namespace {

Eigen::VectorXd ToVector(const google::protobuf::RepeatedField<double>& v) {
  return Eigen::Map<const Eigen::VectorXd>(v.data(), v.size());
}

// The catalogue's rows mapped through the network (null without a catalogue).
absl::StatusOr<std::shared_ptr<const acquisition::EncodedCatalogue>>
EmbedCatalogue(
    const surrogate::DeepPipeModel& model,
    const std::shared_ptr<const acquisition::EncodedCatalogue>& catalogue) {
  if (catalogue == nullptr) return nullptr;
  auto embedded = std::make_shared<acquisition::EncodedCatalogue>();
  embedded->keys = catalogue->keys;
  METAOPT_ASSIGN_OR_RETURN(embedded->X, model.Embed(catalogue->X));
  return embedded;
}

absl::Status ValidateOptions(const DeepPipePolicyOptions& o) {
  auto positive_rate = [](double rate) {
    return rate > 0.0 && std::isfinite(rate);
  };
  if (o.initial_trials < 0 || o.suggest_steps < 0 || o.scratch_steps < 0 ||
      o.fine_tune_steps < 0 || o.suggest_fit_points < 0 ||
      !positive_rate(o.kernel_learning_rate) ||
      !positive_rate(o.network_learning_rate) ||
      !(o.suggest_budget > absl::ZeroDuration()) ||
      !(o.scratch_budget > absl::ZeroDuration())) {
    return absl::InvalidArgumentError(
        "DeepPipe policy options: need non-negative trial, step and "
        "fit-point counts, positive finite learning rates and positive "
        "budgets");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::shared_ptr<const DeepPipePolicy>> DeepPipePolicy::Create(
    const v1::StudySpec& spec, std::optional<v1::DeepPipePolicyState> state,
    std::shared_ptr<const registry::LoadedModel> model,
    DeepPipePolicyOptions options) {
  METAOPT_RETURN_IF_ERROR(ValidateOptions(options));
  METAOPT_ASSIGN_OR_RETURN(space::SearchSpace space,
                           space::SearchSpace::Create(spec.search_space()));
  const bool meta_learned =
      model != nullptr && model->artifact.kind() == v1::MODEL_KIND_DEEPPIPE;
  absl::StatusOr<surrogate::DeepPipeModel> network =
      meta_learned
          ? surrogate::DeepPipeModel::FromArtifact(model->artifact)
          : surrogate::DeepPipeModel::Create(
                spec.search_space(), options.scratch_architecture, spec.seed());
  if (!network.ok()) {
    // A network built from scratch is sized by the study's search space.
    return absl::Status(network.status().code(),
                        absl::StrCat(meta_learned ? "" : "spec.search_space: ",
                                     "building the DeepPipe network: ",
                                     network.status().message()));
  }
  // A task-conditioned model reads the study's dataset meta-features (the
  // training means where they are missing: Study.metadata names those).
  if (meta_learned) network->SetTaskFeatures(spec.dataset_features());
  if (!state.has_value()) state = v1::DeepPipePolicyState();
  // The study's own parameters, if FineTune or scratch training set them.
  if (state->kernel_parameters_size() > 0 ||
      state->network_parameters_size() > 0) {
    Eigen::VectorXd params = network->parameters();
    const int kernel = network->num_kernel_parameters();
    const int net = network->num_network_parameters();
    if ((state->kernel_parameters_size() > 0 &&
         state->kernel_parameters_size() != kernel) ||
        (state->network_parameters_size() > 0 &&
         state->network_parameters_size() != net)) {
      return absl::DataLossError(
          "stored DeepPipe policy state does not fit the study's network");
    }
    if (state->network_parameters_size() > 0) {
      params.head(net) = ToVector(state->network_parameters());
    }
    if (state->kernel_parameters_size() > 0) {
      params.tail(kernel) = ToVector(state->kernel_parameters());
    }
    METAOPT_RETURN_IF_ERROR(network->set_parameters(params));
  }
  ZeroShotDesign portfolio = ZeroShotDesignForStudy(
      model == nullptr ? nullptr : &model->artifact, spec, space);
  const int initial_trials = spec.algorithm().initial_trials() > 0
                                 ? spec.algorithm().initial_trials()
                                 : options.initial_trials;
  // The network encodes with its own encoder (the model's space: ranges may
  // differ from the study's, names and structure match).
  auto shared =
      std::make_shared<const surrogate::DeepPipeModel>(*std::move(network));
  std::shared_ptr<const acquisition::EncodedCatalogue> catalogue =
      acquisition::EncodeCatalogue(spec, shared->encoder());
  std::shared_ptr<const acquisition::EncodedCatalogue> embedded;
  if (meta_learned) {
    METAOPT_ASSIGN_OR_RETURN(embedded, EmbedCatalogue(*shared, catalogue));
  }
  return std::shared_ptr<const DeepPipePolicy>(new DeepPipePolicy(
      spec.objective().goal(), meta_learned, initial_trials,
      std::move(portfolio), std::move(shared), std::move(catalogue),
      std::move(embedded), *std::move(state), std::move(options)));
}

DeepPipePolicy::DeepPipePolicy(
    v1::Goal goal, bool meta_learned, int initial_trials,
    ZeroShotDesign portfolio,
    std::shared_ptr<const surrogate::DeepPipeModel> model,
    std::shared_ptr<const acquisition::EncodedCatalogue> catalogue,
    std::shared_ptr<const acquisition::EncodedCatalogue> embedded_catalogue,
    v1::DeepPipePolicyState state, DeepPipePolicyOptions options)
    : goal_(goal),
      meta_learned_(meta_learned),
      initial_trials_(initial_trials),
      portfolio_(std::move(portfolio)),
      model_(std::move(model)),
      catalogue_(std::move(catalogue)),
      embedded_catalogue_(std::move(embedded_catalogue)),
      state_(std::move(state)),
      options_(std::move(options)) {}

PolicyUpdate DeepPipePolicy::WithModel(const surrogate::DeepPipeModel& model,
                                       int64_t observations) const {
  v1::DeepPipePolicyState state;
  const Eigen::VectorXd params = model.parameters();
  const int kernel = model.num_kernel_parameters();
  const int net = model.num_network_parameters();
  state.mutable_kernel_parameters()->Assign(params.data() + net,
                                            params.data() + net + kernel);
  // The network is stored only when it differs from the meta-learned one.
  if (!meta_learned_ || model_->parameters().head(net) != params.head(net) ||
      state_.network_parameters_size() > 0) {
    state.mutable_network_parameters()->Assign(params.data(),
                                               params.data() + net);
  }
  state.set_fitted_observations(observations);
  v1::PolicyState wrapper;
  *wrapper.mutable_deeppipe() = state;
  // A kernel-only change keeps the network, hence the embeddings.
  std::shared_ptr<const acquisition::EncodedCatalogue> embedded =
      embedded_catalogue_;
  if (embedded != nullptr && state.network_parameters_size() > 0) {
    auto reembedded = EmbedCatalogue(model, catalogue_);
    embedded = reembedded.ok() ? *std::move(reembedded) : nullptr;
  }
  PolicyUpdate update;
  update.policy = std::shared_ptr<const DeepPipePolicy>(new DeepPipePolicy(
      goal_, meta_learned_, initial_trials_, portfolio_,
      std::make_shared<const surrogate::DeepPipeModel>(model), catalogue_,
      std::move(embedded), std::move(state), options_));
  update.state = wrapper.SerializeAsString();
  return update;
}

absl::StatusOr<SuggestResult> DeepPipePolicy::Suggest(const StudyView& study,
                                                      int count,
                                                      space::Rng& rng) const {
  static const std::vector<v1::Configuration> kNoPortfolio;
  SurrogateSuggestSteps steps;
  steps.name = "deeppipe";
  steps.encoder = &model_->encoder();
  // Initial design: the portfolio (zero-shot) with a meta-learned model,
  // random otherwise; either way `initial_trials_` handed-out trials.
  steps.portfolio = meta_learned_ ? &portfolio_.configurations : &kNoPortfolio;
  steps.portfolio_source = portfolio_.source;
  steps.portfolio_in_design = true;
  steps.random_design = !meta_learned_;
  steps.initial_trials = initial_trials_;
  // A meta-learned kernel is informative from the first observation; a
  // scratch network needs the initial design and at least two points.
  steps.min_observations = meta_learned_ ? 1 : 2;
  steps.search = &options_.search;
  steps.fit = [this](const TrainingData& data, space::Rng&,
                     std::optional<PolicyUpdate>* update)
      -> absl::StatusOr<FittedSurrogate> {
    // Kernel fine-tune from the base (meta-learned), or continued training of
    // the whole network (scratch).
    surrogate::DeepPipeFineTuneOptions fit;
    if (meta_learned_) {
      fit.scope = surrogate::FineTuneScope::kKernel;
      fit.max_steps = options_.suggest_steps;
      fit.learning_rate = options_.kernel_learning_rate;
      fit.time_budget = options_.suggest_budget;
    } else {
      fit.scope = surrogate::FineTuneScope::kFull;
      fit.max_steps = options_.scratch_steps;
      fit.learning_rate = options_.network_learning_rate;
      fit.time_budget = options_.scratch_budget;
    }
    const int64_t n = data.y.size();
    std::shared_ptr<const surrogate::DeepPipeModel> fitted = model_;
    if (fit.max_steps > 0 &&
        (meta_learned_ || n > state_.fitted_observations())) {
      const TrainingData sample = FitSample(data, options_.suggest_fit_points);
      auto tuned = model_->FineTune(sample.X, sample.y, fit);
      if (tuned.ok()) {
        fitted = std::make_shared<const surrogate::DeepPipeModel>(tuned->model);
        if (!meta_learned_) *update = WithModel(tuned->model, n);
      } else {
        LogWarning(absl::StrCat("DeepPipe fine-tune failed (",
                                tuned.status().ToString(),
                                "); using the base parameters"));
      }
    }
    METAOPT_ASSIGN_OR_RETURN(
        std::shared_ptr<const surrogate::DeepPipeSurrogate> posterior,
        fitted->Posterior(data.X, data.y));
    FittedSurrogate out;
    if (embedded_catalogue_ != nullptr) {
      // Catalogue rows are already embedded.
      out.model = std::make_shared<const surrogate::DeepPipeEmbeddedSurrogate>(
          std::move(posterior));
      out.catalogue = embedded_catalogue_.get();
      out.inputs = [fitted](const Eigen::MatrixXd& X) {
        return fitted->Embed(X);
      };
    } else {
      out.model = std::move(posterior);
      out.catalogue = catalogue_.get();
    }
    return out;
  };
  return SuggestWithSurrogate(study, count, rng, steps);
}

absl::StatusOr<FineTuneResult> DeepPipePolicy::FineTune(
    const StudyView& study, const FineTuneOptions& options) const {
  TrainingData data = CollectTrainingData(study, model_->encoder());
  if (data.y.size() < 1) {
    return absl::FailedPreconditionError(
        "FineTune needs at least 1 completed trial; the study has none");
  }
  surrogate::DeepPipeFineTuneOptions fit;
  fit.scope = options.scope == v1::FINE_TUNE_SCOPE_FULL
                  ? surrogate::FineTuneScope::kFull
                  : surrogate::FineTuneScope::kKernel;
  fit.max_steps = options.steps > 0 ? options.steps : options_.fine_tune_steps;
  fit.learning_rate = fit.scope == surrogate::FineTuneScope::kFull
                          ? options_.network_learning_rate
                          : options_.kernel_learning_rate;
  fit.time_budget = options.time_budget;
  METAOPT_ASSIGN_OR_RETURN(surrogate::DeepPipeFineTuneResult tuned,
                           model_->FineTune(data.X, data.y, fit));
  FineTuneResult result;
  result.loss_before = tuned.loss_before;
  result.loss_after = tuned.loss_after;
  result.steps_run = tuned.steps_run;
  result.update = WithModel(tuned.model, data.y.size());
  return result;
}

}  // namespace metaopt::policy
