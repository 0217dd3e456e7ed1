// Mosaic ("Automated Machine Learning with Monte-Carlo Tree Search",
// Rakotoarison, Schoenauer & Sebag, IJCAI 2019; H. Rakotoarison's thesis
// "Contributions to AutoML: hyper-parameter optimization and meta-learning",
// chapter 4): Monte-Carlo tree
// search over the pipeline structure, with Bayesian-optimization playouts for
// the hyperparameters, both driven by one shared surrogate.
#ifndef METAOPT_CORE_POLICY_MOSAIC_POLICY_H_
#define METAOPT_CORE_POLICY_MOSAIC_POLICY_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "Eigen/Core"
#include "absl/status/statusor.h"
#include "core/policy/mcts.h"
#include "core/policy/mosaic_options.h"
#include "core/policy/mosaic_search.h"
#include "core/policy/policy.h"
#include "core/registry/artifact.h"
#include "core/space/encoding.h"
#include "core/surrogate/deeppipe_model.h"
#include "core/surrogate/random_forest.h"
#include "core/surrogate/surrogate.h"
#include "metaopt/v1/policy_state.pb.h"

namespace metaopt::policy {

// The random-forest surrogate of Mosaic: RandomForest on the encoding with the
// parameters of inactive algorithms set to -1 instead of 0 (a 0 would collide
// with real values at the bottom of a range).
MosaicSurrogateFitter RandomForestFitter(
    const space::EncodingLayout& layout,
    surrogate::RandomForestOptions options);

// The study's DeepPipe network as Mosaic's surrogate: at each fit, the GP
// hyperparameters are fine-tuned from the model's values for `fine_tune_steps`
// steps (none if 0), then DeepPipeModel::Posterior on the data.
MosaicSurrogateFitter DeepPipeFitter(surrogate::DeepPipeModel model,
                                     int fine_tune_steps);

// The policy. One tree level per stage with several algorithms (stages with
// one algorithm have nothing to decide), in MosaicOptions.stage_order, by
// default from the last stage (the estimator) backwards; a node is a
// structure prefix, a leaf a full structure.
//
// Suggest:
//   1. A bound registry model's portfolio comes first (zero-shot start), and
//      replaces the initial design.
//   2. Initial design (Mosaic.Vanilla): for each first-level algorithm its
//      default pipeline, then kappa rounds of one random pipeline per
//      algorithm, cut as MosaicPolicyOptions::design_cap says (or at
//      AlgorithmSpec.initial_trials). The default pipeline: the first
//      declared algorithm of every stage not fixed, each parameter at the
//      middle of its encoded range (the geometric middle on log scales; ints
//      rounded), each categorical at its first value. In a catalogue: the
//      untried entry nearest to it.
//   3. Then, per suggestion, one tree walk (MctsTree::Walk) and a playout at
//      the node reached: EI (global incumbent, as the thesis) under the
//      surrogate over n_r random completions of the node plus a local search
//      from the best evaluated configuration compatible with the node (its
//      default completion if none). Catalogue studies score untried
//      compatible entries only.
//
// Rewards: objective values turned to "larger is better" and mapped to
// [0, 1] over the completed trials (by rank, or min-max: see
// MosaicPolicyOptions::rank_scale); FAILED and INFEASIBLE
// trials count as reward 0 in the tree (the public code's convention) and are
// left out of the surrogate. Node statistics are those of every trial
// compatible with the node, as Eq. 4.4 defines them ("the median of F(x) for
// all x in X(s.a)"): n(s) counts trials holding a configuration (pending ones
// too: virtual visits that spread batches and concurrent clients), Q(s) is the
// median reward of the evaluated ones. So a restart only needs the set of
// expanded nodes (MosaicPolicyState); the surrogate is refitted from the
// trials at each Suggest with a seed drawn from the call's RNG.
//
// Pending trials and this call's earlier picks: virtual visits in the tree,
// fantasies (Surrogate::WithFantasies; kriging believer for the forest) in the
// playout's surrogate. Immutable and thread-safe.
class MosaicPolicy final : public Policy {
 public:
  // `state` is the stored MosaicPolicyState (absent for a new study). `fitter`
  // null means the spec's MosaicOptions.surrogate: RandomForestFitter, or
  // DeepPipeFitter on the bound model when it is a DeepPipe model (without
  // one: a randomly initialised DeepPipe network seeded by the study's seed,
  // whose GP is fitted on the study's data; DESIGN §3). INVALID_ARGUMENT for a
  // bad spec (see MosaicOptionsFromSpec; unknown or repeated stage_order
  // names); FAILED_PRECONDITION for a bound DeepPipe model over an incompatible
  // space or one the study adds algorithms to (space::MapStudySpace); DATA_LOSS
  // for a state that does not fit the space.
  static absl::StatusOr<std::shared_ptr<const MosaicPolicy>> Create(
      const v1::StudySpec& spec, std::optional<v1::MosaicPolicyState> state,
      std::shared_ptr<const registry::LoadedModel> model = nullptr,
      std::optional<MosaicPolicyOptions> options = std::nullopt,
      MosaicSurrogateFitter fitter = nullptr);

  absl::StatusOr<SuggestResult> Suggest(const StudyView& study, int count,
                                        space::Rng& rng) const override;
  std::string name() const override { return "mosaic"; }

  // The stage index of each tree level, root first.
  const std::vector<int>& levels() const;
  const v1::MosaicPolicyState& state() const { return state_; }

 private:
  MosaicPolicy(std::shared_ptr<const MosaicShared> shared, MctsTree tree,
               v1::MosaicPolicyState state);

  const std::shared_ptr<const MosaicShared> shared_;
  const MctsTree tree_;
  const v1::MosaicPolicyState state_;
};

}  // namespace metaopt::policy

#endif  // METAOPT_CORE_POLICY_MOSAIC_POLICY_H_
