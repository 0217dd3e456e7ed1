// The Suggest of the surrogate-based policies (GP, DeepPipe): zero-shot
// portfolio, initial design, then expected improvement under a surrogate the
// policy fits, through the shared acquisition optimizer.
#ifndef METAOPT_CORE_POLICY_MODEL_BASED_H_
#define METAOPT_CORE_POLICY_MODEL_BASED_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "Eigen/Core"
#include "absl/status/statusor.h"
#include "core/acquisition/acquisition_search.h"
#include "core/policy/pareto_step.h"
#include "core/policy/policy.h"
#include "core/space/encoding.h"
#include "core/surrogate/surrogate.h"

namespace metaopt::policy {

// The completed observations of a study as training data: encoded inputs and
// targets to MINIMISE (negated for GOAL_MAXIMIZE), plus the configurations
// sorted best first. With `targets` (one per study.trials entry), the
// observations that have one, with those targets instead (ParEGO's
// scalarised values, parego_step.h).
struct TrainingData {
  Eigen::MatrixXd X;
  Eigen::VectorXd y;
  std::vector<v1::Configuration> best_first;
};
TrainingData CollectTrainingData(
    const StudyView& study, const space::Encoder& encoder,
    const std::vector<std::optional<double>>* targets = nullptr);

// The observations a Suggest-time hyperparameter fit reads, so that its cost
// is bounded whatever the study's size: all of `data` when it has at most
// `max_points` rows (or max_points is 0), otherwise a systematic sample of
// max_points rows in observation order (rows floor(i n / max_points)), which
// keeps the early, spread-out observations and the later, concentrated ones
// in proportion. Deterministic; best_first is left empty.
TrainingData FitSample(const TrainingData& data, int max_points);

// Encoded configurations of the study's ACTIVE trials, then of `picks` (a
// call's earlier suggestions, pending too).
Eigen::MatrixXd PendingInputs(const StudyView& study,
                              const std::vector<v1::Configuration>& picks,
                              const space::Encoder& encoder);

// The rows of `catalogue` (from EncodeCatalogue) that are not `held` and
// have one (stage, algorithm) drawn uniformly from `rng` among those that
// unheld rows have and no held row has; empty, without a draw, when there is
// none.
std::vector<int> RowsOfAnUntriedAlgorithm(
    const acquisition::EncodedCatalogue& catalogue,
    acquisition::HeldPredicate held, space::Rng& rng);

// A surrogate fitted for one Suggest, with what the acquisition search needs.
struct FittedSurrogate {
  std::shared_ptr<const surrogate::Surrogate> model;
  // Row i: the model's input for spec.candidates(i); null without a
  // catalogue.
  const acquisition::EncodedCatalogue* catalogue = nullptr;
  // Maps encoded configurations (pending ones) to the model's inputs when
  // those are not the encodings themselves (null: the identity).
  std::function<absl::StatusOr<Eigen::MatrixXd>(const Eigen::MatrixXd&)> inputs;
  // Meta-learned models of further objectives (cost-aware transfer) at the
  // model's inputs, read by the Pareto step of a study with several
  // objectives.
  std::vector<OutputPrior> output_priors;
  // With several objectives: each further objective to minimise whose
  // observed values and reference coordinate are all positive (a run time, a
  // size) is modelled on the log scale unless the study sets
  // algorithm.output_warping (ParetoStepAcquisition's log_positive).
  bool log_positive_objectives = false;
};

// What a surrogate-based policy plugs into SuggestWithSurrogate.
struct SurrogateSuggestSteps {
  // The policy's name, the prefix of the result's source ("gp/ei").
  std::string name;
  // The policy instance's NewPolicyInstanceId (what `fit` depends on besides
  // its arguments), to match PreparedSurrogate results.
  uint64_t producer = 0;
  // Encodes configurations for the surrogate (the model's space).
  const space::Encoder* encoder = nullptr;
  // Zero-shot entries (in the study's space), suggested before anything else;
  // with `portfolio_in_design` only within the first `initial_trials` trials.
  const std::vector<v1::Configuration>* portfolio = nullptr;
  bool portfolio_in_design = false;
  // What the portfolio is, in the result's source: "portfolio" or a
  // task-aware design's method ("metabu").
  std::string portfolio_source = "portfolio";
  // Random configurations fill the first `initial_trials` handed-out trials
  // (failed and infeasible ones count, abandoned and stale ones do not).
  bool random_design = true;
  int initial_trials = 0;
  // Below this many observations every suggestion is random.
  int64_t min_observations = 2;
  const acquisition::SearchOptions* search = nullptr;
  // With several objectives (EHVI or ParEGO) over a catalogue: while some
  // algorithm of a stage is held by no trial (pending ones and this call's
  // picks count), each model-based pick draws one such (stage, algorithm)
  // uniformly and takes the acquisition's best untried entry with it
  // (docs/algorithms.md "Several objectives and constraints", "Untried
  // algorithms first").
  bool untried_algorithms_first = false;
  // Fits the surrogate to `data` (at least min_observations rows); may set
  // `update` when the policy's state changed. An error makes this call fall
  // back to random search ("random-fallback").
  std::function<absl::StatusOr<FittedSurrogate>(
      const TrainingData& data, space::Rng& rng,
      std::optional<PolicyUpdate>* update)>
      fit;
};

// `search` with the study's own budget: spec.algorithm.acquisition_samples
// random samples of the space when set (> 0; validated with the spec).
acquisition::SearchOptions WithStudySearchBudget(
    acquisition::SearchOptions search, const v1::StudySpec& spec);

// Suggests up to `count` configurations: the portfolio, the random initial
// design, then EI (pending trials and this call's earlier picks as
// fantasies), recording the steps taken in the result's source
// ("<name>/portfolio+initial-design+ei"). With several objectives or
// constraints the acquisition is pareto_step.h's, or with ParEGO
// (parego_step.h) the surrogate fits the values scalarised by a weight vector
// drawn from `rng` first. The surrogate is `prepared`'s when
// it matches (PreparedSurrogate::Matches), else steps.fit's.
absl::StatusOr<SuggestResult> SuggestWithSurrogate(
    const StudyView& study, int count, space::Rng& rng,
    const SurrogateSuggestSteps& steps,
    const std::shared_ptr<const PreparedFit>& prepared = nullptr);

// The EI step's fit of SuggestWithSurrogate, computed ahead: steps.fit on
// the study's observations, drawing from a copy of `rng`. Immutable and
// thread-safe. It refers to the producing policy's catalogue: it is used only
// by that policy (Matches checks `producer`), which is then alive.
class PreparedSurrogate final : public PreparedFit {
 public:
  // What the fit read and drew.
  uint64_t producer = 0;  // SurrogateSuggestSteps::producer
  Eigen::MatrixXd X;
  Eigen::VectorXd y;
  bool drew = false;  // whether the fit drew from its random stream
  space::Rng rng_before;
  space::Rng rng_after;
  // What the fit produced (an error makes the Suggest fall back to random,
  // as inline).
  absl::StatusOr<FittedSurrogate> fitted = FittedSurrogate();
  std::optional<PolicyUpdate> update;
  // With a catalogue, when computed ahead (PrepareSurrogate):
  // acquisition::ScreenCatalogue of the fitted model over the rows the study's
  // trials leave unheld, which a Suggest without pending trials reads instead
  // of screening them itself.
  // (Used when the Suggest's unheld rows are exactly the screened ones.)
  std::optional<acquisition::CatalogueScreen> catalogue_screen;

  // True if steps.fit on `data` with `rng` would compute exactly this: the
  // same producer and training data, and the same random stream if the fit
  // drew from it.
  bool Matches(uint64_t producer_id, const TrainingData& data,
               const space::Rng& rng) const;
};

// Null when the study has fewer than steps.min_observations observations
// (SuggestWithSurrogate then fits nothing).
absl::StatusOr<std::shared_ptr<const PreparedFit>> PrepareSurrogate(
    const StudyView& study, const space::Rng& rng,
    const SurrogateSuggestSteps& steps);

// A process-unique id for a policy instance (SurrogateSuggestSteps::producer):
// unlike its address, never reused.
uint64_t NewPolicyInstanceId();

}  // namespace metaopt::policy

#endif  // METAOPT_CORE_POLICY_MODEL_BASED_H_
