// GROSI: zero-shot and sequential search with a gray-box surrogate
// conditioned on the study's dataset ("Zero-shot Transfer Learning for
// Gray-box Hyper-parameter Optimization", Algorithms 2-4;
// core/surrogate/grosi_model.h).
#ifndef METAOPT_CORE_POLICY_GROSI_POLICY_H_
#define METAOPT_CORE_POLICY_GROSI_POLICY_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/acquisition/acquisition_search.h"
#include "core/policy/policy.h"
#include "core/registry/artifact.h"
#include "core/surrogate/grosi_model.h"

namespace metaopt::policy {

struct GrosiPolicyOptions {
  // Zero-shot suggestions (Algorithm 2's top K) before GROSI(+X) takes over
  // (AlgorithmSpec.initial_trials overrides it when positive). The paper
  // warm-starts its sequential runs with K = 20; 5 matches the other
  // policies' initial designs.
  int initial_trials = 5;
  // X of GROSI(+X): each suggestion is drawn uniformly from the top X untried
  // configurations of the refitted surrogate (the paper's Table 10 picks 10).
  int top_x = 10;
  // The refit (Eq. 3 on the study's observations): full-batch Adam from the
  // meta-learned parameters at every Suggest, at most `refit_steps` steps,
  // stopping once the mean squared error is below `refit_tolerance`; the
  // parameters of the lowest error are kept (as the authors' code for
  // "Hyperparameter Optimization with Differentiable Metafeatures" does).
  int refit_steps = 200;
  double refit_learning_rate = 1e-3;
  double refit_tolerance = 1e-3;
  acquisition::SearchOptions search;
};

// Needs a bound MODEL_KIND_GROSI registry model over the study's space and,
// for a model over engineered meta-features, spec.dataset_features. The
// dataset's meta-features are standardised with the model's training
// statistics (unknown names ignored; missing ones imputed with the training
// mean, listed by imputed_features()). A model with a Dataset2Vec extractor
// reads spec.dataset_sample; without one it takes the mean D2V output of its
// training tasks (GrosiStudyMetadata records which). The input is embedded
// once.
//
// Suggestions (never a configuration a trial holds, nor twice in one call):
//   1. "grosi/zero-shot" until `initial_trials` trials hold a configuration,
//      and while fewer than 2 distinct values have been observed: the
//      configurations with the lowest predicted normalised regret under the
//      meta-learned model, over the catalogue (ranked once) or, without one,
//      over the space (acquisition::MaximizeOverSpace, its incumbents the
//      model's portfolio);
//   2. "grosi/refit-top<X>": the model refitted on the study's completed
//      observations (their losses min-max scaled to [0, 1], the training
//      targets' scale), then a uniform draw from its X best untried
//      configurations (acquisition::MaximizeOverCatalogue or
//      MaximizeOverSpace with the refitted model as the mean and a constant
//      variance, so that their log-EI ranks by the mean).
// The refit restarts from the meta-learned parameters every Suggest, so the
// policy has no state to persist; FineTune is FAILED_PRECONDITION. A
// maximised objective is negated internally. Immutable and thread-safe.
class GrosiPolicy final : public Policy {
 public:
  // INVALID_ARGUMENT naming spec.dataset_features when it is empty or shares
  // no name with the model's meta-features; FAILED_PRECONDITION without a
  // model, with a model of another kind or an unreadable one.
  static absl::StatusOr<std::shared_ptr<const GrosiPolicy>> Create(
      const v1::StudySpec& spec,
      std::shared_ptr<const registry::LoadedModel> model,
      GrosiPolicyOptions options = {});

  absl::StatusOr<SuggestResult> Suggest(const StudyView& study, int count,
                                        space::Rng& rng) const override;
  std::string name() const override { return "grosi"; }

  // The model's meta-features missing from spec.dataset_features (imputed).
  const std::vector<std::string>& imputed_features() const;
  // Catalogue studies: candidate indices by increasing predicted normalised
  // regret (the zero-shot order); empty without a catalogue.
  const std::vector<int>& zero_shot_order() const;

 private:
  struct Shared;
  explicit GrosiPolicy(std::shared_ptr<const Shared> shared)
      : shared_(std::move(shared)) {}

  const std::shared_ptr<const Shared> shared_;
};

// What a GROSI study bound to the MODEL_KIND_GROSI artifact `model` records
// in v1::Study.metadata: "task_conditioning" ("meta-features", "dataset2vec"
// or "dataset2vec+meta-features"); "dataset_sample" ("used", "absent: the
// mean Dataset2Vec output of the training tasks stands in" or "ignored: the
// model has no Dataset2Vec extractor", when a sample was given); and for a
// model with engineered meta-features "conditioning_imputed_features"
// (comma-separated names that took their training mean, or "none").
std::map<std::string, std::string> GrosiStudyMetadata(
    const v1::ModelArtifact& model, const v1::StudySpec& spec);

}  // namespace metaopt::policy

#endif  // METAOPT_CORE_POLICY_GROSI_POLICY_H_
