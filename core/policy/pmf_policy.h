// PMF: Bayesian optimisation over a registry model's pipeline catalogue with
// the GP latent-variable model of "Probabilistic Matrix Factorization for
// Automated Machine Learning" (Fusi, Sheth & Elibol, NeurIPS 2018;
// core/surrogate/pmf_model.h).
#ifndef METAOPT_CORE_POLICY_PMF_POLICY_H_
#define METAOPT_CORE_POLICY_PMF_POLICY_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/policy/policy.h"
#include "core/registry/artifact.h"
#include "core/surrogate/pmf_model.h"
#include "google/protobuf/map.h"
#include "metaopt/v1/policy_state.pb.h"

namespace metaopt::policy {

struct PmfPolicyOptions {
  // Warm-start suggestions before EI takes over (the paper's 5;
  // AlgorithmSpec.initial_trials overrides it when positive).
  int initial_trials = 5;
  // Nearest training datasets of the L1 warm start (the authors' 5).
  int warm_start_datasets = 5;
  // EI exploration margin xi (the PMF paper's §4.2: 0.01), in model units
  // (standardised losses): EI of improving on best - xi * y_std.
  double xi = 0.01;
  // FineTune: L-BFGS iterations (FineTuneOptions.steps overrides) and the
  // standard deviation of the Gaussian prior on each log kernel parameter,
  // centred on the trained value (a few observations must not wreck the
  // meta-learned kernel).
  int fine_tune_iterations = 100;
  double fine_tune_prior_log_std = 1.0;
};

// The L1 warm start (the PMF paper's §4.3, after auto-sklearn's: the L1
// distance of meta-features): the training datasets
// nearest to `features` by the mean absolute difference of standardised
// meta-features over the features both have (and whose training standard
// deviation is positive); datasets sharing no feature are not candidates.
// Returns the training-task indices of the nearest `k`, nearest first (ties by
// index); empty if no training dataset shares a feature.
std::vector<int> NearestTrainingDatasets(
    const v1::ModelArtifact& artifact,
    const google::protobuf::Map<std::string, double>& features, int k);

// Catalogue indices ordered by their mean position in the best-entry lists of
// `tasks` (rows of the model's ranks; an entry missing from a list counts as
// its length), ties by mean rank over all training tasks, then by index. With
// no tasks: the mean-rank order.
std::vector<int> RankOrder(const registry::PmfRanks& ranks,
                           const std::vector<int>& tasks);

// Needs a bound MODEL_KIND_PMF registry model over the study's space. The
// study runs over the model's catalogue: spec.candidates, when given, must be
// a subset of it (the policy keeps their order); when omitted, the whole
// catalogue is the candidate set.
//
// Suggestions, without replacement (never an entry a trial holds, nor twice in
// one call):
//   1. warm start, until `initial_trials` trials hold an entry, and whenever
//      nothing has been observed yet: with spec.dataset_features, the
//      catalogue by mean rank on the nearest training datasets
//      (NearestTrainingDatasets, "pmf/warm-start-l1"); otherwise the model's
//      portfolio, then the catalogue by mean rank over all training datasets
//      ("pmf/portfolio");
//   2. then EI ("pmf/ei") over the untried candidates under the GP posterior
//      of the study's completed observations on the frozen latents, with the
//      trained (or fine-tuned) kernel; pending trials and this call's earlier
//      picks enter as kriging-believer fantasies. Exhaustive scan of the
//      candidates' latent rows by acquisition::MaximizeOverCatalogue; ties to
//      the first candidate.
// FineTune refits the kernel parameters (not the latents) to the study's
// observations: MAP by L-BFGS in log space with a Gaussian prior around the
// trained values; the result is the policy state (v1::PmfPolicyState).
// A maximised objective is negated internally. Immutable and thread-safe.
class PmfPolicy final : public Policy {
 public:
  // FAILED_PRECONDITION without a model or with a model of another kind;
  // INVALID_ARGUMENT naming the first candidate outside the model's catalogue;
  // DATA_LOSS for a stored state that does not fit the model.
  static absl::StatusOr<std::shared_ptr<const PmfPolicy>> Create(
      const v1::StudySpec& spec, std::optional<v1::PmfPolicyState> state,
      std::shared_ptr<const registry::LoadedModel> model,
      PmfPolicyOptions options = {});

  absl::StatusOr<SuggestResult> Suggest(const StudyView& study, int count,
                                        space::Rng& rng) const override;
  absl::StatusOr<FineTuneResult> FineTune(
      const StudyView& study, const FineTuneOptions& options) const override;
  std::string name() const override { return "pmf"; }

  const v1::PmfPolicyState& state() const { return state_; }
  // Candidate catalogue indices, in the study's order.
  const std::vector<int>& candidates() const { return candidates_; }
  // The warm-start order (catalogue indices, candidates only) and its source
  // ("metabu" for a task-aware design, "warm-start-l1" or "portfolio").
  const std::vector<int>& warm_start() const { return warm_start_; }
  const std::string& warm_start_source() const { return warm_start_source_; }

 private:
  struct Shared;  // what every policy of one study shares (model, catalogue)

  PmfPolicy(std::shared_ptr<const Shared> shared,
            std::shared_ptr<const surrogate::PmfModel> pmf,
            v1::PmfPolicyState state);

  // The completed observations as catalogue indices and losses.
  void CollectObservations(const StudyView& study, std::vector<int>* entries,
                           Eigen::VectorXd* losses) const;

  const std::shared_ptr<const Shared> shared_;
  // The model with the current kernel parameters.
  const std::shared_ptr<const surrogate::PmfModel> pmf_;
  const v1::PmfPolicyState state_;
  const std::vector<int>& candidates_;
  const std::vector<int>& warm_start_;
  const std::string& warm_start_source_;
};

}  // namespace metaopt::policy

#endif  // METAOPT_CORE_POLICY_PMF_POLICY_H_
