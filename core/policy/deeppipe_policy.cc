#include "core/policy/deeppipe_policy.h"

#include <algorithm>
#include <cmath>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/common/logging.h"
#include "core/common/status_macros.h"
#include "core/space/space_mapping.h"

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
  METAOPT_ASSIGN_OR_RETURN(Eigen::MatrixXd embedded, model.Embed(catalogue->X));
  return acquisition::WithInputs(*catalogue, std::move(embedded));
}

// Partial binding: one configuration per new algorithm (`new_algorithms`,
// "stage/algorithm"), so that its encoder sees data from the initial design
// on (as the authors' Experiment 4 adds one pipeline of the new estimator):
// a catalogue entry choosing it, uniformly drawn, or without a catalogue a
// sample of the space with that algorithm. Deterministic given `seed`.
std::vector<v1::Configuration> NewAlgorithmProbes(
    const v1::StudySpec& spec, const space::SearchSpace& space,
    const std::vector<std::string>& new_algorithms, uint64_t seed) {
  std::vector<v1::Configuration> probes;
  space::Rng rng(seed);
  for (const std::string& name : new_algorithms) {
    const size_t slash = name.find('/');
    const std::string stage = name.substr(0, slash);
    const std::string algorithm = name.substr(slash + 1);
    int s = 0;
    while (s < spec.search_space().stages_size() &&
           spec.search_space().stages(s).name() != stage) {
      ++s;
    }
    if (s == spec.search_space().stages_size()) continue;
    if (spec.candidates_size() > 0) {
      std::vector<int> rows;
      for (int i = 0; i < spec.candidates_size(); ++i) {
        if (spec.candidates(i).assignments(s).algorithm() == algorithm) {
          rows.push_back(i);
        }
      }
      if (rows.empty()) continue;
      probes.push_back(
          spec.candidates(rows[space::UniformIndex(rng, rows.size())]));
      continue;
    }
    v1::Configuration c = space.Sample(rng);
    v1::Assignment* assignment = c.mutable_assignments(s);
    assignment->set_algorithm(algorithm);
    assignment->clear_parameters();
    for (const v1::Algorithm& a : spec.search_space().stages(s).algorithms()) {
      if (a.name() != algorithm) continue;
      for (const v1::Parameter& p : a.parameters()) {
        (*assignment->mutable_parameters())[p.name()] =
            space::SampleParameterValue(p, rng);
      }
    }
    absl::StatusOr<v1::Configuration> canonical =
        space.Canonicalize(c, "probe");
    if (canonical.ok()) probes.push_back(*std::move(canonical));
  }
  return probes;
}

absl::Status ValidateOptions(const DeepPipePolicyOptions& o) {
  auto positive_rate = [](double rate) {
    return rate > 0.0 && std::isfinite(rate);
  };
  if (o.initial_trials < 0 || o.new_algorithm_covering_design < 0 ||
      o.suggest_steps < 0 || o.scratch_steps < 0 || o.fine_tune_steps < 0 ||
      o.suggest_fit_points < 0 || o.new_encoder_steps < 0 ||
      !positive_rate(o.new_encoder_learning_rate) ||
      !positive_rate(o.kernel_learning_rate) ||
      !positive_rate(o.network_learning_rate) || o.ranking.samples < 1 ||
      !(o.ranking.dilution_quantile >= 0.0 &&
        o.ranking.dilution_quantile <= 1.0) ||
      !(o.kernel_fine_tune_growth >= 0.0) ||
      !std::isfinite(o.kernel_fine_tune_growth) ||
      o.kernel_fine_tune_from < 1 ||
      (o.suggest_scope != surrogate::FineTuneScope::kKernel &&
       o.suggest_scope != surrogate::FineTuneScope::kFull) ||
      !(o.suggest_budget > absl::ZeroDuration()) ||
      !(o.scratch_budget > absl::ZeroDuration())) {
    return absl::InvalidArgumentError(
        "DeepPipe policy options: need non-negative trial, step and "
        "fit-point counts, positive finite learning rates, ranking samples "
        ">= 1 with a dilution quantile in [0, 1], a finite non-negative "
        "kernel_fine_tune_growth, kernel_fine_tune_from >= 1, a KERNEL or "
        "FULL suggest_scope and positive budgets");
  }
  return ValidateGpPolicyOptions(o.plain_gp);
}

}  // namespace

std::vector<v1::Configuration> PairCoveringPicks(
    const v1::StudySpec& spec, const space::SearchSpace& space,
    const std::vector<v1::Configuration>& design, int count, uint64_t seed) {
  constexpr int kSpacePool = 256;
  space::Rng rng(seed);
  std::vector<v1::Configuration> pool;
  if (spec.candidates_size() > 0) {
    pool.assign(spec.candidates().begin(), spec.candidates().end());
  } else {
    for (int i = 0; i < kSpacePool; ++i) pool.push_back(space.Sample(rng));
  }
  const int stages = spec.search_space().stages_size();
  // A pair: (stage s, its algorithm, stage t > s, its algorithm).
  auto pairs = [stages](const v1::Configuration& c) {
    std::vector<std::string> out;
    for (int s = 0; s < stages; ++s) {
      for (int t = s + 1; t < stages; ++t) {
        out.push_back(absl::StrCat(s, "/", c.assignments(s).algorithm(), "/", t,
                                   "/", c.assignments(t).algorithm()));
      }
    }
    return out;
  };
  absl::flat_hash_set<std::string> covered;
  for (const v1::Configuration& c : design) {
    for (std::string& pair : pairs(c)) covered.insert(std::move(pair));
  }
  std::vector<v1::Configuration> picks;
  for (int i = 0; i < count && !pool.empty(); ++i) {
    int best = -1;
    uint64_t ties = 0;
    size_t pick = 0;
    for (size_t r = 0; r < pool.size(); ++r) {
      int added = 0;
      for (const std::string& pair : pairs(pool[r])) {
        added += !covered.contains(pair);
      }
      if (added > best) {
        best = added;
        ties = 1;
        pick = r;
      } else if (added == best && space::UniformIndex(rng, ++ties) == 0) {
        pick = r;  // reservoir sampling: uniform among the ties
      }
    }
    for (std::string& pair : pairs(pool[pick])) covered.insert(std::move(pair));
    picks.push_back(pool[pick]);
  }
  return picks;
}

DeepPipePolicyOptions FsboPolicyOptions() {
  DeepPipePolicyOptions options;
  options.initial_trials = 5;  // The paper's I = 5 warm-start settings.
  options.suggest_scope = surrogate::FineTuneScope::kFull;
  options.kernel_fine_tune_growth = 0.0;  // Every iteration.
  options.suggest_steps = 100;
  options.kernel_learning_rate = 1e-3;
  options.plain_gp_ensemble = DeepPipePolicyOptions::PlainGpEnsemble::kNever;
  options.explore_untried_algorithms = false;
  options.name = "fsbo";
  return options;
}

int64_t KernelFineTuneCount(int64_t n, double growth, int64_t from) {
  if (n < 1) return 0;
  if (n <= from) return n;
  int64_t count = std::max<int64_t>(from, 1);
  for (;;) {
    const int64_t next =
        count + std::max<int64_t>(1, static_cast<int64_t>(
                                         growth * static_cast<double>(count)));
    if (next > n) return count;
    count = next;
  }
}

absl::StatusOr<gp::Prediction> DeepKernelLooPredictions(
    const surrogate::DeepPipeModel& model, const TrainingData& data) {
  METAOPT_ASSIGN_OR_RETURN(Eigen::MatrixXd Z, model.Embed(data.X));
  const Eigen::VectorXd head = model.MeanOfEmbeddings(Z);
  const Eigen::VectorXd residual =
      model.TargetStandardization(data.y).Apply(data.y) - head;
  METAOPT_ASSIGN_OR_RETURN(
      gp::Prediction loo,
      surrogate::LeaveOneOutPredictions(model.gp(), Z, residual));
  loo.mean += head;
  return loo;
}

absl::StatusOr<PlainGpEnsembleFit> EnsembleWithPlainGp(
    const surrogate::DeepPipeModel& model,
    std::shared_ptr<const surrogate::Surrogate> deep,
    const TrainingData& sample, const TrainingData& data,
    const v1::GpPolicyState& plain_state,
    const DeepPipePolicyOptions& options) {
  METAOPT_ASSIGN_OR_RETURN(
      gp::GaussianProcess prior,
      gp::GaussianProcess::Create(options.plain_gp.kernel,
                                  static_cast<int>(data.X.cols())));
  // A state of another shape (none yet) starts from the defaults.
  if (plain_state.hyperparameters_size() == prior.num_hyperparameters()) {
    METAOPT_RETURN_IF_ERROR(
        prior.set_hyperparameters(ToVector(plain_state.hyperparameters())));
  }
  const uint64_t n = static_cast<uint64_t>(data.y.size());
  space::Rng fit_rng(n);
  METAOPT_ASSIGN_OR_RETURN(
      ScheduledGpFit plain,
      FitGpOnSchedule(prior, plain_state, data, options.plain_gp, fit_rng));
  METAOPT_ASSIGN_OR_RETURN(gp::Prediction deep_loo,
                           DeepKernelLooPredictions(model, sample));
  METAOPT_ASSIGN_OR_RETURN(
      gp::Prediction plain_loo,
      surrogate::LeaveOneOutPredictions(
          plain.posterior.model(), sample.X,
          gp::Standardization::FromTargets(sample.y).Apply(sample.y)));
  surrogate::RankingWeightOptions ranking = options.ranking;
  ranking.seed = n;
  METAOPT_ASSIGN_OR_RETURN(
      Eigen::VectorXd weights,
      surrogate::RankingWeights({deep_loo, plain_loo}, sample.y, ranking));
  if (options.explore_untried_algorithms) {
    const double scale = gp::Standardization::FromTargets(data.y).scale;
    const double prior_variance =
        model.gp().kernel().output_scale() * scale * scale;
    METAOPT_ASSIGN_OR_RETURN(
        deep, surrogate::UntriedAlgorithmSurrogate::Create(
                  std::move(deep), model.encoder().layout().stages,
                  prior_variance, data.X));
  }
  PlainGpEnsembleFit out;
  out.plain_gp_weight = weights[1];
  out.refitted = std::move(plain.refitted);
  METAOPT_ASSIGN_OR_RETURN(
      out.surrogate,
      surrogate::RankingEnsembleSurrogate::Create(
          {std::move(deep), std::make_shared<const surrogate::GpSurrogate>(
                                std::move(plain.posterior))},
          std::move(weights)));
  return out;
}

absl::StatusOr<std::shared_ptr<const DeepPipePolicy>> DeepPipePolicy::Create(
    const v1::StudySpec& spec, std::optional<v1::DeepPipePolicyState> state,
    std::shared_ptr<const registry::LoadedModel> model,
    DeepPipePolicyOptions options) {
  METAOPT_RETURN_IF_ERROR(ValidateOptions(options));
  options.search = WithStudySearchBudget(std::move(options.search), spec);
  METAOPT_ASSIGN_OR_RETURN(space::SearchSpace space,
                           space::SearchSpace::Create(spec.search_space()));
  const bool meta_learned =
      model != nullptr && (model->artifact.kind() == v1::MODEL_KIND_DEEPPIPE ||
                           model->artifact.kind() == v1::MODEL_KIND_FSBO);
  if (meta_learned && model->servable.deeppipe == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "model ", model->reference(), " carries no decoded DeepPipe network"));
  }
  // The study's network: a copy of the registry's decoded one (the study
  // changes it below), or one built from scratch, sized by the study's space.
  absl::StatusOr<surrogate::DeepPipeModel> network =
      meta_learned
          ? absl::StatusOr<surrogate::DeepPipeModel>(*model->servable.deeppipe)
          : surrogate::DeepPipeModel::Create(
                spec.search_space(), options.scratch_architecture, spec.seed());
  if (!network.ok()) {
    return absl::Status(
        network.status().code(),
        absl::StrCat("spec.search_space: building the DeepPipe network: ",
                     network.status().message()));
  }
  if (meta_learned) {
    // Partial binding: the study's new algorithms get fresh encoders.
    absl::StatusOr<surrogate::DeepPipeModel> extended =
        network->ForStudySpace(spec.search_space(), spec.seed());
    // INVALID_ARGUMENT (an incompatible space) only for a study stored
    // before partial binding checked ranges, bound to a model over narrower
    // ones: it keeps reading its values in the model's space, as then.
    if (!extended.ok() && !absl::IsInvalidArgument(extended.status())) {
      return absl::Status(
          extended.status().code(),
          absl::StrCat("spec.search_space: model ", model->reference(), ": ",
                       extended.status().message()));
    }
    if (extended.ok()) network = *std::move(extended);
    // A task-conditioned model reads the study's dataset meta-features (the
    // training means where they are missing: Study.metadata names those).
    network->SetTaskFeatures(spec.dataset_features());
  }
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
  if (meta_learned && network->num_new_encoders() > 0) {
    // The new algorithms' probes end the initial design.
    absl::StatusOr<space::SpaceMapping> mapping =
        space::MapStudySpace(model->space.proto(), spec.search_space());
    std::vector<v1::Configuration> probes =
        mapping.ok() ? NewAlgorithmProbes(spec, space, mapping->new_algorithms,
                                          spec.seed())
                     : std::vector<v1::Configuration>();
    // Before them, `new_algorithm_covering_design` entries covering pairs of
    // algorithms the rest of the design does not; the portfolio fills the
    // design's start.
    std::vector<v1::Configuration>& design = portfolio.configurations;
    const int cover = std::clamp<int>(
        options.new_algorithm_covering_design, 0,
        std::max(0, initial_trials - static_cast<int>(probes.size())));
    const int at = std::clamp<int>(
        initial_trials - cover - static_cast<int>(probes.size()), 0,
        static_cast<int>(design.size()));
    int picked = 0;
    if (cover > 0) {
      design.resize(at);
      std::vector<v1::Configuration> kept = design;
      kept.insert(kept.end(), probes.begin(), probes.end());
      // Seed + 7: a stream apart from the probes' (the study's seed).
      const std::vector<v1::Configuration> picks =
          PairCoveringPicks(spec, space, kept, cover, spec.seed() + 7);
      design.insert(design.end(), picks.begin(), picks.end());
      picked = static_cast<int>(picks.size());
    }
    design.insert(design.begin() + at + picked, probes.begin(), probes.end());
  }
  // The network encodes with its own encoder (the model's space, extended
  // by the study's new algorithms): a study's value is scaled by the model's
  // range and log flag, never the study's.
  auto shared =
      std::make_shared<const surrogate::DeepPipeModel>(*std::move(network));
  std::shared_ptr<const acquisition::EncodedCatalogue> catalogue =
      acquisition::EncodeCatalogue(spec, shared->encoder());
  std::shared_ptr<const acquisition::EncodedCatalogue> embedded;
  // New encoders and a network fine-tuned at every Suggest change with every
  // fit: their catalogue is embedded per Suggest.
  if (meta_learned && shared->num_new_encoders() == 0 &&
      options.suggest_scope == surrogate::FineTuneScope::kKernel) {
    METAOPT_ASSIGN_OR_RETURN(embedded, EmbedCatalogue(*shared, catalogue));
  }
  std::vector<surrogate::OutputHead> heads;
  if (meta_learned) {
    absl::StatusOr<std::vector<surrogate::OutputHead>> read =
        surrogate::ReadOutputHeads(model->artifact, shared->embedding_dim());
    if (!read.ok()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "model ", model->reference(), ": ", read.status().message()));
    }
    heads = *std::move(read);
  }
  auto policy = std::shared_ptr<DeepPipePolicy>(new DeepPipePolicy(
      spec.objective().goal(), meta_learned, initial_trials,
      std::move(portfolio), std::move(shared), std::move(catalogue),
      std::move(embedded), *std::move(state), std::move(options)));
  policy->output_heads_ = std::move(heads);
  return std::shared_ptr<const DeepPipePolicy>(std::move(policy));
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

PolicyUpdate DeepPipePolicy::WithModel(
    const surrogate::DeepPipeModel& model, int64_t observations,
    const v1::GpPolicyState* plain_gp) const {
  v1::DeepPipePolicyState state;
  *state.mutable_plain_gp() =
      plain_gp != nullptr ? *plain_gp : state_.plain_gp();
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
  auto next = std::shared_ptr<DeepPipePolicy>(new DeepPipePolicy(
      goal_, meta_learned_, initial_trials_, portfolio_,
      std::make_shared<const surrogate::DeepPipeModel>(model), catalogue_,
      std::move(embedded), std::move(state), options_));
  next->output_heads_ = output_heads_;
  update.policy = std::move(next);
  update.state = wrapper.SerializeAsString();
  return update;
}

std::shared_ptr<const surrogate::DeepPipeModel>
DeepPipePolicy::ScheduledKernelModel(
    const TrainingData& data, std::optional<PolicyUpdate>* update) const {
  const int64_t count =
      KernelFineTuneCount(data.y.size(), options_.kernel_fine_tune_growth,
                          options_.kernel_fine_tune_from);
  const ScheduledKernel* kept = scheduled_.get();
  if (kept != nullptr && kept->observations == count &&
      kept->X.cols() == data.X.cols() && data.X.topRows(count) == kept->X &&
      data.y.head(count) == kept->y) {
    return kept->model;
  }
  TrainingData prefix;
  prefix.X = data.X.topRows(count);
  prefix.y = data.y.head(count);
  const TrainingData sample = FitSample(prefix, options_.suggest_fit_points);
  surrogate::DeepPipeFineTuneOptions fit;
  fit.scope = options_.suggest_scope;
  fit.max_steps = options_.suggest_steps;
  fit.learning_rate = options_.kernel_learning_rate;
  fit.time_budget = options_.suggest_budget;
  absl::StatusOr<surrogate::DeepPipeFineTuneResult> tuned =
      model_->FineTune(sample.X, sample.y, fit);
  if (!tuned.ok()) {
    LogWarning(absl::StrCat("DeepPipe fine-tune failed (",
                            tuned.status().ToString(),
                            "); using the base parameters"));
    return model_;
  }
  auto scheduled = std::make_shared<ScheduledKernel>();
  scheduled->observations = count;
  scheduled->X = std::move(prefix.X);
  scheduled->y = std::move(prefix.y);
  scheduled->model =
      std::make_shared<const surrogate::DeepPipeModel>(tuned->model);
  // The same policy (and stored state) keeping this fit.
  auto policy = std::shared_ptr<DeepPipePolicy>(new DeepPipePolicy(
      goal_, meta_learned_, initial_trials_, portfolio_, model_, catalogue_,
      embedded_catalogue_, state_, options_));
  policy->scheduled_ = scheduled;
  policy->output_heads_ = output_heads_;
  v1::PolicyState wrapper;
  *wrapper.mutable_deeppipe() = state_;
  PolicyUpdate kept_fit;
  kept_fit.policy = std::move(policy);
  kept_fit.state = wrapper.SerializeAsString();
  *update = std::move(kept_fit);
  return scheduled->model;
}

absl::StatusOr<SuggestResult> DeepPipePolicy::Suggest(const StudyView& study,
                                                      int count,
                                                      space::Rng& rng) const {
  return SuggestWithSurrogate(study, count, rng, Steps());
}

absl::StatusOr<std::shared_ptr<const PreparedFit>> DeepPipePolicy::PrepareFit(
    const StudyView& study, const space::Rng& rng) const {
  return PrepareSurrogate(study, rng, Steps());
}

absl::StatusOr<SuggestResult> DeepPipePolicy::SuggestPrepared(
    const StudyView& study, int count, space::Rng& rng,
    const std::shared_ptr<const PreparedFit>& prepared) const {
  return SuggestWithSurrogate(study, count, rng, Steps(), prepared);
}

SurrogateSuggestSteps DeepPipePolicy::Steps() const {
  static const std::vector<v1::Configuration> kNoPortfolio;
  SurrogateSuggestSteps steps;
  steps.name = options_.name;
  steps.producer = instance_id_;
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
    // Trained on the study and persisted: a scratch network, or a
    // meta-learned one's new encoders.
    const bool persisted = !meta_learned_ || model_->num_new_encoders() > 0;
    if (meta_learned_ && persisted) {
      fit.scope = surrogate::FineTuneScope::kNewEncoders;
      fit.max_steps = options_.new_encoder_steps;
      fit.learning_rate = options_.new_encoder_learning_rate;
      fit.time_budget = options_.suggest_budget;
    } else if (meta_learned_) {
      fit.scope = options_.suggest_scope;
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
    const TrainingData sample = FitSample(data, options_.suggest_fit_points);
    bool tuned_persisted = false;
    if (!persisted) {
      // The meta-learned kernel, fine-tuned on its schedule.
      if (fit.max_steps > 0) fitted = ScheduledKernelModel(data, update);
    } else if (fit.max_steps > 0 && n > state_.fitted_observations()) {
      auto tuned = model_->FineTune(sample.X, sample.y, fit);
      if (tuned.ok()) {
        fitted = std::make_shared<const surrogate::DeepPipeModel>(tuned->model);
        if (persisted) {
          *update = WithModel(tuned->model, n);
          tuned_persisted = true;
        }
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
    using Ensemble = DeepPipePolicyOptions::PlainGpEnsemble;
    const bool ensemble =
        meta_learned_ && sample.y.size() >= 2 &&
        (options_.plain_gp_ensemble == Ensemble::kAlways ||
         (options_.plain_gp_ensemble == Ensemble::kNewAlgorithms &&
          model_->num_new_encoders() > 0));
    if (ensemble) {
      // A study whose observations the meta-learned kernel ranks worse than
      // an unlearned one contradicts its prior: EI moves to the plain GP.
      absl::StatusOr<PlainGpEnsembleFit> weighed = EnsembleWithPlainGp(
          *fitted, posterior, sample, data, state_.plain_gp(), options_);
      if (weighed.ok()) {
        if (weighed->refitted.has_value()) {
          *update = tuned_persisted
                        ? WithModel(*fitted, n, &*weighed->refitted)
                        : WithModel(*model_, state_.fitted_observations(),
                                    &*weighed->refitted);
        }
        out.model = std::move(weighed->surrogate);
        out.catalogue = catalogue_.get();
        out.output_priors = OutputPriors(fitted);
        return out;
      }
      LogWarning(absl::StrCat("DeepPipe plain-GP ensemble failed (",
                              weighed.status().ToString(),
                              "); using the deep kernel"));
    }
    if (embedded_catalogue_ != nullptr) {
      // Catalogue rows are already embedded.
      out.model = std::make_shared<const surrogate::DeepPipeEmbeddedSurrogate>(
          std::move(posterior));
      out.catalogue = embedded_catalogue_.get();
      out.inputs = [fitted](const Eigen::MatrixXd& X) {
        return fitted->Embed(X);
      };
      out.output_priors = OutputPriors(nullptr);
    } else {
      out.model = std::move(posterior);
      out.catalogue = catalogue_.get();
      out.output_priors = OutputPriors(fitted);
    }
    return out;
  };
  return steps;
}

std::vector<OutputPrior> DeepPipePolicy::OutputPriors(
    std::shared_ptr<const surrogate::DeepPipeModel> embed) const {
  std::vector<OutputPrior> priors;
  for (const surrogate::OutputHead& head : output_heads_) {
    OutputPrior prior;
    prior.metric = head.metric;
    prior.log_mean =
        [head,
         embed](const Eigen::MatrixXd& X) -> absl::StatusOr<Eigen::VectorXd> {
      if (embed == nullptr) return head.LogMean(X);
      METAOPT_ASSIGN_OR_RETURN(Eigen::MatrixXd Z, embed->Embed(X));
      return head.LogMean(Z);
    };
    priors.push_back(std::move(prior));
  }
  return priors;
}

absl::StatusOr<FineTuneResult> DeepPipePolicy::FineTune(
    const StudyView& study, const FineTuneOptions& options) const {
  TrainingData data = CollectTrainingData(study, model_->encoder());
  if (data.y.size() < 1) {
    return absl::FailedPreconditionError(
        "FineTune needs at least 1 completed trial; the study has none");
  }
  surrogate::DeepPipeFineTuneOptions fit;
  // FULL trains the whole network, or with new algorithms only their
  // encoders (and the kernel), the meta-learned part frozen.
  fit.scope = options.scope != v1::FINE_TUNE_SCOPE_FULL
                  ? surrogate::FineTuneScope::kKernel
              : model_->num_new_encoders() > 0
                  ? surrogate::FineTuneScope::kNewEncoders
                  : surrogate::FineTuneScope::kFull;
  fit.max_steps = options.steps > 0 ? options.steps : options_.fine_tune_steps;
  fit.learning_rate = fit.scope == surrogate::FineTuneScope::kFull
                          ? options_.network_learning_rate
                      : fit.scope == surrogate::FineTuneScope::kNewEncoders
                          ? options_.new_encoder_learning_rate
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
