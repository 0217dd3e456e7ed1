#include "core/policy/mosaic_policy.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/common/logging.h"
#include "core/common/status_macros.h"
#include "core/policy/parego_step.h"
#include "core/policy/pareto_step.h"
#include "core/policy/random_policy.h"
#include "core/space/space_mapping.h"
#include "core/surrogate/pipeline_forest.h"

namespace metaopt::policy {

MosaicSurrogateFitter RandomForestFitter(
    const space::EncodingLayout& layout,
    surrogate::RandomForestOptions options) {
  auto shared_layout = std::make_shared<const space::EncodingLayout>(layout);
  return [shared_layout, options](const Eigen::MatrixXd& X,
                                  const Eigen::VectorXd& y, uint64_t seed)
             -> absl::StatusOr<std::shared_ptr<const surrogate::Surrogate>> {
    surrogate::RandomForestOptions o = options;
    o.seed = seed;
    return surrogate::PipelineForest::Fit(shared_layout, X, y, o);
  };
}

MosaicSurrogateFitter DeepPipeFitter(surrogate::DeepPipeModel model,
                                     int fine_tune_steps) {
  auto shared =
      std::make_shared<const surrogate::DeepPipeModel>(std::move(model));
  return [shared, fine_tune_steps](const Eigen::MatrixXd& X,
                                   const Eigen::VectorXd& y, uint64_t)
             -> absl::StatusOr<std::shared_ptr<const surrogate::Surrogate>> {
    if (fine_tune_steps > 0) {
      surrogate::DeepPipeFineTuneOptions options;
      options.scope = surrogate::FineTuneScope::kKernel;
      options.max_steps = fine_tune_steps;
      absl::StatusOr<surrogate::DeepPipeFineTuneResult> tuned =
          shared->FineTune(X, y, options);
      if (tuned.ok()) return tuned->model.Posterior(X, y);
      LogWarning(absl::StrCat("Mosaic: DeepPipe fine-tuning failed (",
                              tuned.status().ToString(),
                              "); using the model's GP hyperparameters"));
    }
    return shared->Posterior(X, y);
  };
}

absl::StatusOr<std::shared_ptr<const MosaicPolicy>> MosaicPolicy::Create(
    const v1::StudySpec& spec, std::optional<v1::MosaicPolicyState> state,
    std::shared_ptr<const registry::LoadedModel> model,
    std::optional<MosaicPolicyOptions> options, MosaicSurrogateFitter fitter) {
  METAOPT_ASSIGN_OR_RETURN(space::SearchSpace space,
                           space::SearchSpace::Create(spec.search_space()));
  METAOPT_ASSIGN_OR_RETURN(
      MosaicPolicyOptions resolved,
      MosaicOptionsFromSpec(spec, options.value_or(MosaicPolicyOptions())));
  METAOPT_ASSIGN_OR_RETURN(std::vector<int> levels, MosaicLevels(spec));
  ZeroShotDesign portfolio = ZeroShotDesignForStudy(
      model == nullptr ? nullptr : &model->artifact, spec, space);
  std::shared_ptr<const space::Encoder> model_encoder;
  if (fitter == nullptr &&
      spec.algorithm().mosaic().surrogate() == v1::MOSAIC_SURROGATE_DEEPPIPE) {
    const bool bound =
        model != nullptr && model->artifact.kind() == v1::MODEL_KIND_DEEPPIPE;
    if (bound && model->servable.deeppipe == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat("model ", model->reference(),
                       " carries no decoded DeepPipe network"));
    }
    // A copy of the registry's decoded network (the study conditions it on
    // its meta-features), or one built from scratch.
    absl::StatusOr<surrogate::DeepPipeModel> network =
        bound ? absl::StatusOr<surrogate::DeepPipeModel>(
                    *model->servable.deeppipe)
              : surrogate::DeepPipeModel::Create(
                    spec.search_space(), surrogate::DeepPipeArchitecture(),
                    spec.seed());
    if (!network.ok()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "spec.algorithm.mosaic.surrogate: MOSAIC_SURROGATE_DEEPPIPE: the "
          "DeepPipe model cannot be built: ",
          network.status().message()));
    }
    if (bound) {
      // The network reads rows in the model's own encoding (partial binding:
      // the study may mask algorithms, narrow ranges, change log flags or
      // reorder categorical values), never the study's.
      absl::StatusOr<space::SpaceMapping> mapping =
          space::MapStudySpace(network->search_space(), spec.search_space());
      // A study stored before partial binding checked ranges may be wider
      // than its model: it is read in the model's space too, as long as it
      // has the model's structure (as was required then).
      const bool other_structure =
          !mapping.ok() &&
          network->input_dim() != space::Encoder(space).dimension();
      if (other_structure ||
          (mapping.ok() && !mapping->new_algorithms.empty())) {
        return absl::FailedPreconditionError(absl::StrCat(
            "spec.algorithm.mosaic.surrogate: MOSAIC_SURROGATE_DEEPPIPE: the "
            "bound model ",
            model->reference(), " cannot serve the study's space: ",
            mapping.ok() ? absl::StrCat("it adds algorithm ",
                                        mapping->new_algorithms.front())
                         : std::string(mapping.status().message())));
      }
      model_encoder =
          std::make_shared<const space::Encoder>(network->encoder());
    }
    // A task-conditioned model reads the study's dataset meta-features.
    network->SetTaskFeatures(spec.dataset_features());
    fitter =
        DeepPipeFitter(*std::move(network), resolved.deeppipe_fine_tune_steps);
  }
  if (fitter == nullptr) {
    fitter =
        RandomForestFitter(space::Encoder(space).layout(), resolved.forest);
  }
  auto shared = std::make_shared<const MosaicShared>(
      spec, std::move(space), std::move(levels), std::move(resolved),
      std::move(fitter), std::move(portfolio), std::move(model_encoder));
  MctsTree tree(static_cast<int>(shared->levels.size()));
  if (!state.has_value()) state = v1::MosaicPolicyState();
  for (const v1::MosaicNode& node : state->nodes()) {
    MctsPath path(node.algorithms().begin(), node.algorithms().end());
    bool fits = path.size() >= 2 && path.size() <= shared->levels.size();
    for (size_t k = 0; fits && k < path.size(); ++k) {
      fits = path[k] >= 0 && path[k] < shared->Actions(static_cast<int>(k));
    }
    if (!fits || !tree.Add(path).ok()) {
      return absl::DataLossError(
          absl::StrCat("stored Mosaic tree node [", absl::StrJoin(path, ","),
                       "] does not fit the study's space"));
    }
  }
  return std::shared_ptr<const MosaicPolicy>(
      new MosaicPolicy(std::move(shared), std::move(tree), *std::move(state)));
}

MosaicPolicy::MosaicPolicy(std::shared_ptr<const MosaicShared> shared,
                           MctsTree tree, v1::MosaicPolicyState state)
    : shared_(std::move(shared)),
      tree_(std::move(tree)),
      state_(std::move(state)) {}

const std::vector<int>& MosaicPolicy::levels() const { return shared_->levels; }

absl::StatusOr<SuggestResult> MosaicPolicy::Suggest(const StudyView& study,
                                                    int count,
                                                    space::Rng& rng) const {
  const MosaicShared& shared = *shared_;
  SuggestResult result;
  std::vector<std::string> sources;
  auto finish = [&] {
    result.source = "mosaic/" + absl::StrJoin(sources, "+");
    return result;
  };
  auto remaining = [&] {
    return count - static_cast<int>(result.configurations.size());
  };
  // 1. Zero-shot start.
  result.configurations =
      NextPortfolioEntries(study, shared.zero_shot.configurations, count);
  if (!result.configurations.empty())
    sources.push_back(shared.zero_shot.source);
  if (remaining() <= 0) return finish();

  // Several objectives: ParEGO's scalarisation (a weight vector drawn at
  // every Suggest) is the value the tree and the playouts minimise.
  std::optional<ParegoTargets> parego;
  if (UsesParego(*study.spec)) parego = DrawParegoTargets(study, rng);
  MosaicSearch search(shared, study, rng,
                      parego.has_value() ? &parego->values : nullptr);
  auto pick = [&](v1::Configuration c) {
    search.AddPick(c);
    result.configurations.push_back(std::move(c));
  };
  for (const v1::Configuration& c : result.configurations) search.AddPick(c);
  // 2. Initial design (Mosaic.Vanilla), then random while the surrogate has
  // fewer than two observations.
  int64_t started = 0;
  for (const v1::Trial& trial : *study.trials) {
    if (HoldsConfiguration(trial.state())) ++started;
  }
  bool designed = false;
  for (int64_t i = started; i < shared.design_size && remaining() > 0; ++i) {
    std::optional<v1::Configuration> item =
        search.DesignItem(static_cast<int>(i));
    if (!item.has_value()) continue;
    pick(*std::move(item));
    designed = true;
  }
  if (designed) sources.push_back("initial-design");
  if (remaining() > 0 && search.completed() < 2) {
    for (v1::Configuration& c :
         RandomPolicy::Sample(study, search.held(), remaining(), rng)) {
      pick(std::move(c));
    }
    sources.push_back("random");
  }
  if (remaining() <= 0 || search.completed() < 2) return finish();

  // 3. Tree walks and playouts.
  if (absl::Status fitted = search.FitSurrogate(); !fitted.ok()) {
    LogWarning(absl::StrCat("Mosaic surrogate fit failed (", fitted.ToString(),
                            "); suggesting at random"));
    for (v1::Configuration& c :
         RandomPolicy::Sample(study, search.held(), remaining(), rng)) {
      pick(std::move(c));
    }
    sources.push_back("random-fallback");
    return finish();
  }
  if (study.spec->constraints_size() > 0) {
    // One GP per constrained metric on the surrogate's inputs (as the other
    // kinds' Pareto step), the study's pending trials as fantasies.
    const space::Encoder& encoder = shared.surrogate_encoder();
    const InputsOf inputs_of = [&](const std::vector<v1::Configuration>& c)
        -> absl::StatusOr<Eigen::MatrixXd> { return encoder.EncodeBatch(c); };
    std::vector<v1::Configuration> pending;
    for (const v1::Trial& trial : *study.trials) {
      if (trial.state() == v1::TRIAL_STATE_ACTIVE) {
        pending.push_back(trial.configuration());
      }
    }
    METAOPT_ASSIGN_OR_RETURN(
        std::vector<acquisition::ModeledConstraint> constraints,
        FitConstraintModels(study, inputs_of, encoder.EncodeBatch(pending),
                            rng));
    search.SetConstraints(std::move(constraints));
  }
  MctsTree tree = tree_;
  bool walked = false;
  while (remaining() > 0) {
    absl::StatusOr<MctsWalk> walk = tree.Walk(search, shared.options.mcts);
    if (absl::IsNotFound(walk.status())) break;  // the catalogue ran out
    METAOPT_RETURN_IF_ERROR(walk.status());
    METAOPT_ASSIGN_OR_RETURN(std::optional<v1::Configuration> found,
                             search.Playout(walk->path));
    if (!found.has_value()) {
      // Everything the playout found below the node is held (a small
      // discrete space): a random configuration anywhere instead.
      std::vector<v1::Configuration> fallback =
          RandomPolicy::Sample(study, search.held(), 1, rng);
      if (fallback.empty()) break;
      found = std::move(fallback[0]);
    }
    pick(*std::move(found));
    walked = true;
  }
  if (walked) sources.push_back(parego.has_value() ? "mcts-parego" : "mcts");
  if (tree.added().size() > tree_.added().size()) {
    v1::MosaicPolicyState state;
    for (const MctsPath& path : tree.added()) {
      state.add_nodes()->mutable_algorithms()->Assign(path.begin(), path.end());
    }
    v1::PolicyState wrapper;
    *wrapper.mutable_mosaic() = state;
    PolicyUpdate update;
    update.policy = std::shared_ptr<const MosaicPolicy>(
        new MosaicPolicy(shared_, std::move(tree), state));
    update.state = wrapper.SerializeAsString();
    result.update = std::move(update);
  }
  return finish();
}

}  // namespace metaopt::policy
