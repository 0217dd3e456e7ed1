// Mosaic's options: the defaults of the thesis and the study spec's
// overrides, and the tree levels a spec defines.
#ifndef METAOPT_CORE_POLICY_MOSAIC_OPTIONS_H_
#define METAOPT_CORE_POLICY_MOSAIC_OPTIONS_H_

#include <vector>

#include "absl/status/statusor.h"
#include "core/policy/mcts.h"
#include "core/surrogate/random_forest.h"
#include "metaopt/v1/study.pb.h"

namespace metaopt::policy {

// Defaults follow the thesis (§4.4.2, "Mosaic hyper-parameters") where it
// gives a value; v1::MosaicOptions overrides the main ones per study.
struct MosaicPolicyOptions {
  // C_ucb = 1.3, PW = 0.6, softmax temperature 1 (Eq. 4.3 on rewards in
  // [0, 1]).
  MctsOptions mcts;
  // n_s: completions averaged under the surrogate for Q_F̂ (Eq. 4.2).
  int prior_samples = 100;
  // n_r: random completions scored by EI in a playout (strategy C).
  int playout_samples = 1000;
  // kappa: random pipelines per first-level algorithm in the initial design,
  // after its default pipeline (§4.3.4, Mosaic.Vanilla).
  int random_per_algorithm = 3;
  // Without AlgorithmSpec.initial_trials the design (|A_1| * (1 + kappa)
  // pipelines in the thesis, 64 there) is cut to max(|A_1|, this), keeping
  // every default pipeline: the thesis budget was an hour, ours may be 50
  // trials.
  int design_cap = 10;
  // Local search in the playout (SMAC's, which Mosaic shares): one-exchange
  // neighbours (footnote 4), `neighbors_per_numeric` Gaussian steps of
  // standard deviation `local_search_step` (epsilon = 0.2) in the unit
  // coordinate of each numeric parameter, every other value of each
  // categorical, every other algorithm (with its default parameters) of each
  // stage below the node; best-improvement hill climbing on EI for at most
  // `local_search_steps` moves.
  double local_search_step = 0.2;
  int neighbors_per_numeric = 4;
  int local_search_steps = 10;
  // Catalogue studies whose node has more untried entries than n_r score n_r
  // random ones plus this many nearest (in the encoding) to the incumbent.
  int catalogue_neighbors = 50;
  // Rewards and surrogate targets by rank: the mid-rank quantile of each
  // value among the completed ones (tree reward 1 - quantile; the surrogate
  // models the quantile, EI against the best one's). Otherwise min-max
  // normalised rewards and raw targets. the
  // thesis's rewards are accuracies in [0, 1], which C_ucb = 1.3 and the
  // softmax assume; ranks give that scale to any objective and keep one
  // outlier from squashing every other reward (and from inflating the
  // forest's within-leaf variances). On the validation splits (oboe valid,
  // sklearn-pipelines train) ranks and min-max tie; on heavy-tailed
  // synthetic functions ranks win clearly.
  bool rank_scale = true;
  // MOSAIC_SURROGATE_RANDOM_FOREST (the default): SMAC's forest.
  surrogate::RandomForestOptions forest;
  // MOSAIC_SURROGATE_DEEPPIPE: Adam steps fine-tuning the GP hyperparameters
  // (kernel scope) on the study's data before each Suggest, from the model's
  // values (no time budget, so that suggestions stay deterministic).
  int deeppipe_fine_tune_steps = 50;
};

// The study spec's MosaicOptions applied over `base`. INVALID_ARGUMENT naming
// the field for negative counts, a non-positive or non-finite exploration, or
// a widening exponent outside (0, 1].
absl::StatusOr<MosaicPolicyOptions> MosaicOptionsFromSpec(
    const v1::StudySpec& spec, MosaicPolicyOptions base = {});

// The tree levels of `spec`: stage indices, MosaicOptions.stage_order first,
// then the other stages with several algorithms from the last declared one
// backwards. INVALID_ARGUMENT for a name that is not a stage or repeats.
absl::StatusOr<std::vector<int>> MosaicLevels(const v1::StudySpec& spec);

}  // namespace metaopt::policy

#endif  // METAOPT_CORE_POLICY_MOSAIC_OPTIONS_H_
