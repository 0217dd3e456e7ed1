// DeepPipe: BO with a meta-learned deep-kernel GP ("Deep Pipeline Embeddings
// for AutoML", Pineda Arango & Grabocka, KDD 2023, Algorithm 2).
#ifndef METAOPT_CORE_POLICY_DEEPPIPE_POLICY_H_
#define METAOPT_CORE_POLICY_DEEPPIPE_POLICY_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/acquisition/acquisition_search.h"
#include "core/gp/gaussian_process.h"
#include "core/policy/gp_policy.h"
#include "core/policy/model_based.h"
#include "core/policy/policy.h"
#include "core/registry/artifact.h"
#include "core/surrogate/deeppipe_model.h"
#include "core/surrogate/output_head.h"
#include "core/surrogate/ranking_ensemble.h"
#include "metaopt/v1/policy_state.pb.h"

namespace metaopt::policy {

struct DeepPipePolicyOptions {
  // Initial design: with a meta-learned model, this many portfolio entries
  // (zero-shot); without one, this many random configurations.
  int initial_trials = 5;
  // In a study bound partially with new algorithms, this many trials of the
  // initial design (before the probes) are not portfolio entries but a
  // pairwise covering design: each the catalogue entry that adds the most
  // pairs of algorithms across two stages not yet in the design (ties drawn
  // by the study's seed). The portfolio was chosen under the model's prior,
  // which a contradicting task breaks at combinations it rates badly; these
  // trials give the ensemble's plain GP such combinations. 0: the portfolio
  // and the probes only.
  int new_algorithm_covering_design = 2;
  // Suggest-time fine-tuning of a meta-learned model: the kernel parameters,
  // restarted from the study's base values, Adam for up to `suggest_steps`
  // with early stopping (the authors' 100 steps, patience 16, tolerance 1e-4,
  // best-loss parameters; lr 1e-3 as their meta_test.py).
  int suggest_steps = 100;
  double kernel_learning_rate = 1e-3;
  // What that Suggest-time fine-tune trains: the kernel parameters
  // (kKernel, DeepPipe's) or the whole deep kernel, network included (kFull,
  // FSBO's), at `kernel_learning_rate` either way. With kFull the catalogue
  // is embedded by the fine-tuned network at every Suggest.
  surrogate::FineTuneScope suggest_scope = surrogate::FineTuneScope::kKernel;
  // The fine-tune runs on a schedule of observation counts
  // (KernelFineTuneCount), not at every Suggest (the paper) once a study has
  // `kernel_fine_tune_from` observations: at n observations the kernel is
  // the one fine-tuned on the first KernelFineTuneCount(n, ...) of them, and
  // the posterior conditions on all n. Growth 0: every count (the paper).
  double kernel_fine_tune_growth = 0.1;  // >= 0
  int64_t kernel_fine_tune_from = 64;    // >= 1
  // Suggest-time fits (kernel fine-tune and scratch training) read a
  // systematic sample of at most this many observations (FitSample; 0: all),
  // so a step costs O(min(n, suggest_fit_points)^3) and a fit is bounded
  // whatever the study's size; the posterior conditions on all observations.
  int suggest_fit_points = 128;
  // Suggest-time fits stop on step counts, so equal histories give equal
  // suggestions on any machine. A finite budget is a latency safety net only:
  // when it is hit, the result depends on the machine's speed and load.
  absl::Duration suggest_budget = absl::InfiniteDuration();
  // Without a model (the paper's Experiment 1) the whole network is trained
  // on the study's data: warm-started from the previous Suggest's parameters
  // (persisted), `scratch_steps` Adam steps per Suggest.
  int scratch_steps = 100;
  double network_learning_rate = 1e-3;
  absl::Duration scratch_budget = absl::InfiniteDuration();  // as above
  surrogate::DeepPipeArchitecture scratch_architecture;
  // A study that adds algorithms to its model's space (partial binding,
  // DeepPipeModel::ForStudySpace): every Suggest with new observations trains
  // the new encoders and the kernel (FineTuneScope::kNewEncoders) for
  // `new_encoder_steps` Adam steps at `new_encoder_learning_rate`,
  // continuing from the previous fit (persisted, as scratch training).
  int new_encoder_steps = 100;
  double new_encoder_learning_rate = 1e-2;
  // Ranking-weighted ensemble with an unlearned GP (RGPE, "Scalable
  // Meta-Learning for Bayesian Optimization using Ranking-Weighted Gaussian
  // Process Ensembles"; DeepPipePolicy::Suggest): in the studies
  // `plain_gp_ensemble` names, a plain GP (Matérn-5/2 ARD on the encoded
  // configuration, the GP policy's MAP fit on its refit schedule, persisted)
  // is kept beside the deep kernel, and EI runs under their ensemble weighted
  // by how well each ranks the study's observations leave-one-out (`ranking`:
  // draws and the weight-dilution guard), so a study whose task contradicts
  // the meta-learned prior moves its weight to the plain GP.
  enum class PlainGpEnsemble {
    kNever,  // the deep kernel always (the paper)
    // Studies bound partially with new algorithms (fresh encoders, so a
    // partly unlearned kernel); exact bindings use the deep kernel always.
    kNewAlgorithms,
    kAlways,  // every study with a meta-learned model
  };
  PlainGpEnsemble plain_gp_ensemble = PlainGpEnsemble::kNewAlgorithms;
  GpPolicyOptions plain_gp;  // kernel, fit schedule and fit options
  surrogate::RankingWeightOptions ranking;  // seed: set per Suggest
  // In those studies, the deep kernel's variance at a configuration choosing
  // an algorithm the study has not tried is at least its prior variance
  // (surrogate::UntriedAlgorithmSurrogate), so EI explores it.
  bool explore_untried_algorithms = true;
  // FineTune RPC defaults (steps = 0).
  int fine_tune_steps = 100;
  acquisition::SearchOptions search;
  // Policy::name() and the suggestions' producer.
  std::string name = "deeppipe";
};

// ALGORITHM_KIND_FSBO ("Few-Shot Bayesian Optimization with Deep Kernel
// Surrogates", Wistuba & Grabocka, ICLR 2021) as a DeepPipePolicy over a
// MODEL_KIND_FSBO model: the model's portfolio (its evolutionary warm start)
// for the first `initial_trials` = 5 trials, then EI under the deep kernel
// with the whole network and kernel fine-tuned on the study's observations at
// every Suggest (suggest_scope kFull, kernel_fine_tune_growth 0), restarted
// from the meta-learned parameters each time (100 Adam steps at lr 1e-3,
// patience 16, best-loss parameters: the paper's "few epochs" made concrete),
// the deep kernel alone (no plain-GP ensemble, no untried-algorithm bonus).
DeepPipePolicyOptions FsboPolicyOptions();

// The deep kernel's leave-one-out predictions at `data`'s rows (n >= 1) of
// its targets standardised as DeepPipeModel::Posterior does, the mean head
// included (RankingWeights' input). INVALID_ARGUMENT for misshapen data,
// INTERNAL if the Cholesky factorisation fails.
absl::StatusOr<gp::Prediction> DeepKernelLooPredictions(
    const surrogate::DeepPipeModel& model, const TrainingData& data);

// The ranking-weighted ensemble of a deep-kernel posterior (`deep`, of the
// fitted network `model`) and a plain GP (DeepPipePolicyOptions::
// plain_gp_ensemble): the GP's hyperparameters from `plain_state` refitted on
// the GP policy's schedule over `data`; both scored leave-one-out on `sample`
// (a FitSample of `data`, n >= 2); the plain GP is RankingWeights' target
// model; with options.explore_untried_algorithms the deep member is wrapped
// in a surrogate::UntriedAlgorithmSurrogate (its prior variance: the deep
// kernel's, in objective units). Pure: the draws are seeded by the number of
// observations.
struct PlainGpEnsembleFit {
  std::shared_ptr<const surrogate::Surrogate> surrogate;
  double plain_gp_weight = 0.0;
  std::optional<v1::GpPolicyState> refitted;  // after a refit
};
absl::StatusOr<PlainGpEnsembleFit> EnsembleWithPlainGp(
    const surrogate::DeepPipeModel& model,
    std::shared_ptr<const surrogate::Surrogate> deep,
    const TrainingData& sample, const TrainingData& data,
    const v1::GpPolicyState& plain_state, const DeepPipePolicyOptions& options);

// The observation count whose prefix the kernel fine-tune reads at n >= 1
// observations: the largest schedule point <= n, the schedule being every
// count below `from`, then s_{k+1} = s_k + max(1, floor(growth * s_k))
// (geometric: about log(n / from) / log(1 + growth) fine-tunes beyond
// `from`). 0 for n < 1; n itself for growth 0. A function of n alone, so a
// study reloaded from storage refits exactly what a study that stayed loaded
// has.
int64_t KernelFineTuneCount(int64_t n, double growth, int64_t from);

// The initial design's pairwise covering part in a study with new algorithms
// (DeepPipePolicyOptions::new_algorithm_covering_design): `count`
// configurations, each the one of the pool (spec.candidates, or without a
// catalogue 256 samples of `space`) that adds the most pairs of algorithms
// across two stages that neither `design` nor an earlier pick chose
// together, ties drawn uniformly. Deterministic given `seed`.
std::vector<v1::Configuration> PairCoveringPicks(
    const v1::StudySpec& spec, const space::SearchSpace& space,
    const std::vector<v1::Configuration>& design, int count, uint64_t seed);

// With a bound DeepPipe registry model the policy starts from its portfolio
// and then maximises EI under the meta-learned deep kernel, fine-tuning the
// kernel parameters on the study's observations on a schedule
// (KernelFineTuneCount; pure: the fine-tune restarts from the base parameters
// on a prefix of the observations that their number alone determines, so
// equal histories give equal suggestions; the last fit is kept in the policy
// instance that a Suggest's update returns, the stored state unchanged).
// FineTune (KERNEL or FULL) moves the base parameters; they are persisted as
// the policy state. Without a DeepPipe model (none bound, or only a portfolio
// model) the network starts from a seeded random initialisation and is trained
// on the study's data (warm-started across Suggests, persisted). A study whose
// space adds algorithms to the model's gets a fresh encoder per new algorithm
// (seeded by the study's seed) that its own observations train, the
// meta-learned encoders and aggregator frozen; FineTune FULL then trains only
// those encoders and the kernel. Immutable and thread-safe.
class DeepPipePolicy final : public Policy {
 public:
  // INVALID_ARGUMENT for invalid options.
  static absl::StatusOr<std::shared_ptr<const DeepPipePolicy>> Create(
      const v1::StudySpec& spec, std::optional<v1::DeepPipePolicyState> state,
      std::shared_ptr<const registry::LoadedModel> model,
      DeepPipePolicyOptions options = {});

  absl::StatusOr<SuggestResult> Suggest(const StudyView& study, int count,
                                        space::Rng& rng) const override;
  absl::StatusOr<std::shared_ptr<const PreparedFit>> PrepareFit(
      const StudyView& study, const space::Rng& rng) const override;
  bool PreparesFits() const override { return true; }
  absl::StatusOr<SuggestResult> SuggestPrepared(
      const StudyView& study, int count, space::Rng& rng,
      const std::shared_ptr<const PreparedFit>& prepared) const override;
  absl::StatusOr<FineTuneResult> FineTune(
      const StudyView& study, const FineTuneOptions& options) const override;
  std::string name() const override { return options_.name; }

  bool meta_learned() const { return meta_learned_; }
  // The network the policy fits (the bound model's, extended by the study's
  // new algorithms, with the study's persisted parameters).
  const surrogate::DeepPipeModel& model() const { return *model_; }
  // The model of the last Suggest-time fine-tune this instance keeps (a
  // Suggest's update carries it), and the observation count it read; null
  // and 0 before one.
  std::shared_ptr<const surrogate::DeepPipeModel> fitted_model() const {
    return scheduled_ == nullptr ? nullptr : scheduled_->model;
  }
  int64_t fitted_observations() const {
    return scheduled_ == nullptr ? 0 : scheduled_->observations;
  }

 private:
  // Suggest's steps, the EI step's fit included (SuggestWithSurrogate).
  SurrogateSuggestSteps Steps() const;
  DeepPipePolicy(
      v1::Goal goal, bool meta_learned, int initial_trials,
      ZeroShotDesign portfolio,
      std::shared_ptr<const surrogate::DeepPipeModel> model,
      std::shared_ptr<const acquisition::EncodedCatalogue> catalogue,
      std::shared_ptr<const acquisition::EncodedCatalogue> embedded_catalogue,
      v1::DeepPipePolicyState state, DeepPipePolicyOptions options);

  // The last scheduled kernel fine-tune: the base model fine-tuned on the
  // first `observations` rows (X, y) of a study's training data.
  struct ScheduledKernel {
    int64_t observations = 0;
    Eigen::MatrixXd X;
    Eigen::VectorXd y;
    std::shared_ptr<const surrogate::DeepPipeModel> model;
  };

  // This policy with `model`'s parameters as the new base (and `plain_gp`
  // as the plain GP's state; null: unchanged).
  // The output heads as priors of the Pareto step at the model's inputs:
  // embeddings when `embed` is null, else encodings that `embed` embeds.
  std::vector<OutputPrior> OutputPriors(
      std::shared_ptr<const surrogate::DeepPipeModel> embed) const;
  PolicyUpdate WithModel(const surrogate::DeepPipeModel& model,
                         int64_t observations,
                         const v1::GpPolicyState* plain_gp = nullptr) const;
  // The meta-learned kernel for `data` (KernelFineTuneCount): the kept fit
  // when it read the same prefix, else a fine-tune of the base on that
  // prefix, kept in `*update`'s policy (the base when the fine-tune fails).
  std::shared_ptr<const surrogate::DeepPipeModel> ScheduledKernelModel(
      const TrainingData& data, std::optional<PolicyUpdate>* update) const;

  const v1::Goal goal_;
  const bool meta_learned_;
  const int initial_trials_;
  const ZeroShotDesign portfolio_;
  // The base model (meta-learned or trained so far), with the study's
  // persisted parameters applied.
  const std::shared_ptr<const surrogate::DeepPipeModel> model_;
  const std::shared_ptr<const acquisition::EncodedCatalogue> catalogue_;
  // With a meta-learned network (fixed between FULL fine-tunes): the
  // catalogue's embeddings, computed once, so a Suggest only runs the GP.
  const std::shared_ptr<const acquisition::EncodedCatalogue>
      embedded_catalogue_;
  const v1::DeepPipePolicyState state_;
  const DeepPipePolicyOptions options_;
  // The last scheduled kernel fine-tune; null until a Suggest's update
  // carries one.
  std::shared_ptr<const ScheduledKernel> scheduled_;
  // What a PreparedSurrogate of this instance is matched by.
  const uint64_t instance_id_ = NewPolicyInstanceId();
  // The model's output heads (cost-aware transfer), set once after
  // construction.
  std::vector<surrogate::OutputHead> output_heads_;
};

}  // namespace metaopt::policy

#endif  // METAOPT_CORE_POLICY_DEEPPIPE_POLICY_H_
