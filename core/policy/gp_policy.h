// GP-based Bayesian optimization (the GP baseline, no transfer).
#ifndef METAOPT_CORE_POLICY_GP_POLICY_H_
#define METAOPT_CORE_POLICY_GP_POLICY_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "Eigen/Core"
#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "core/acquisition/acquisition_search.h"
#include "core/common/mutex.h"
#include "core/gp/gaussian_process.h"
#include "core/policy/model_based.h"
#include "core/policy/policy.h"
#include "core/registry/artifact.h"
#include "core/space/encoding.h"
#include "core/surrogate/surrogate.h"
#include "metaopt/v1/policy_state.pb.h"

namespace metaopt::policy {

struct GpPolicyOptions {
  // Random suggestions before the GP takes over (AlgorithmSpec.initial_trials
  // overrides it when positive).
  int initial_trials = 5;
  std::string kernel = "matern52";
  // Suggest-time fits stop on iteration counts, not on the clock, so equal
  // histories give equal suggestions on any machine; their cost is bounded by
  // fitting on at most `max_fit_points` observations (FitSample). A finite
  // time_budget is a latency safety net only: when it is hit, the result
  // depends on the machine's speed and load.
  //
  // Multi-start fit, used when the number of observations has doubled since
  // the last one (and by FineTune).
  gp::FitOptions full_fit = [] {
    gp::FitOptions o;
    o.num_starts = 3;
    o.max_iterations = 100;
    o.time_budget = absl::InfiniteDuration();
    return o;
  }();
  // Warm-started single-start refit, used when the observations grew by at
  // least `refit_growth` (relative) since the last fit.
  gp::FitOptions quick_fit = [] {
    gp::FitOptions o;
    o.num_starts = 1;
    o.max_iterations = 25;
    o.time_budget = absl::InfiniteDuration();
    return o;
  }();
  double refit_growth = 0.1;  // >= 0
  // Suggest-time fits read a systematic sample of at most this many
  // observations (0: all); the posterior always conditions on all of them.
  // At 256 a full fit costs at most ~300 likelihood evaluations of 256
  // points, whatever the study's size.
  int max_fit_points = 256;
  acquisition::SearchOptions search;
};

// INVALID_ARGUMENT for invalid options (GpPolicy::Create checks them).
absl::Status ValidateGpPolicyOptions(const GpPolicyOptions& options);

// The GP policy's hyperparameter schedule (GpPolicy's class comment), for any
// policy that keeps a plain GP beside its own model: `prior` carries the
// hyperparameters `state` records (the defaults for an empty state). Refits
// (seeded by rng(), drawn only then) on a FitSample of at most
// options.max_fit_points observations; the posterior conditions on all of
// `data` (n >= 1). When the hyperparameters are reused and `previous` (may be
// null) is a posterior with the same ones (the last fit's), the posterior
// extends its Cholesky factor (gp::GpPosterior::Recondition: O(n^2) after one
// new observation instead of O(n^3), equal up to rounding).
struct ScheduledGpFit {
  gp::GpPosterior posterior;
  // The state after a refit; nullopt when the hyperparameters were reused.
  std::optional<v1::GpPolicyState> refitted;
};
absl::StatusOr<ScheduledGpFit> FitGpOnSchedule(
    const gp::GaussianProcess& prior, const v1::GpPolicyState& state,
    const TrainingData& data, const GpPolicyOptions& options, space::Rng& rng,
    const gp::GpPosterior* previous = nullptr);

// The GP's inputs in a study with several objectives over a catalogue
// (EHVI or ParEGO): the encoding with each active algorithm block
// (space::Encoder: inactive blocks are zero) minus that block's mean over the
// catalogue's entries of the algorithm. Inputs of different algorithms are then
// about equally far apart however many parameters the algorithms have: with the
// raw encoding an entry of an algorithm with several parameters is far from
// everything else and one without parameters close to everything, so before
// either is tried EHVI finds the former uncertain and the latter known
// (docs/algorithms.md "Several objectives and constraints"). Within one
// algorithm the distances are unchanged. Immutable; thread-safe.
class AlgorithmBlockCentring {
 public:
  // The block means over the rows of `X` (encodings under `layout`) in which
  // the block's algorithm is chosen; zero for an algorithm no row chooses.
  AlgorithmBlockCentring(const space::EncodingLayout& layout,
                         const Eigen::MatrixXd& X);
  // `X` (encodings under the layout) with the means subtracted from each
  // row's chosen algorithms' blocks.
  Eigen::MatrixXd Apply(Eigen::MatrixXd X) const;

 private:
  space::EncodingLayout layout_;
  std::vector<Eigen::VectorXd> means_;  // one per layout_.blocks entry
};

// With a bound registry model, the model's portfolio entries (those inside the
// study's space or catalogue) are the first suggestions, in place of the
// random initial design.
//
// Matérn-5/2 ARD GP on the encoded configuration (space::Encoder), constant
// mean, learned noise, MAP hyperparameters by L-BFGS; EI maximised over the
// catalogue or by sampling plus local search; pending trials as
// kriging-believer fantasies. A maximised objective is negated internally.
//
// Hyperparameters are refitted on a schedule (not at every Suggest, which would
// cost far more than the rest): multi-start when the number of observations
// has doubled, warm-started single-start when it grew by 10%, otherwise reused.
// They are the policy's state, persisted after every refit, so a restarted
// server continues identically (over a space up to rounding: between refits
// a fit extends the Cholesky factor of the instance's last one, a restart
// refactors).
// Immutable (but for that reference to its last fit) and thread-safe.
class GpPolicy final : public Policy {
 public:
  // `state` is the stored GpPolicyState (absent for a new study).
  // INVALID_ARGUMENT for invalid options.
  static absl::StatusOr<std::shared_ptr<const GpPolicy>> Create(
      const v1::StudySpec& spec, std::optional<v1::GpPolicyState> state,
      std::shared_ptr<const registry::LoadedModel> model = nullptr,
      GpPolicyOptions options = {});

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
  std::string name() const override { return "gp"; }

  const v1::GpPolicyState& state() const { return state_; }

 private:
  // Suggest's steps, the EI step's fit included (SuggestWithSurrogate).
  SurrogateSuggestSteps Steps() const;
  GpPolicy(v1::Goal goal, int initial_trials, ZeroShotDesign portfolio,
           space::Encoder encoder,
           std::shared_ptr<const acquisition::EncodedCatalogue> catalogue,
           std::shared_ptr<const AlgorithmBlockCentring> centring,
           gp::GaussianProcess prior, v1::GpPolicyState state,
           GpPolicyOptions options);

  // The policy with `fitted` hyperparameters, recorded in `state`.
  PolicyUpdate WithFit(const gp::GaussianProcess& fitted,
                       v1::GpPolicyState state) const;

  const v1::Goal goal_;
  const int initial_trials_;
  // The bound model's zero-shot design (in the study's space), tried first.
  const ZeroShotDesign portfolio_;
  const space::Encoder encoder_;
  // The study's catalogue, encoded once (null without a catalogue); with
  // several objectives its rows are centred by `centring_`.
  const std::shared_ptr<const acquisition::EncodedCatalogue> catalogue_;
  // Set exactly when the study has several objectives and a catalogue: then
  // also untried algorithms come first, and with EHVI positive further
  // objectives are modelled on the log scale (Steps(); ParEGO scalarises
  // the observed values as they are).
  const std::shared_ptr<const AlgorithmBlockCentring> centring_;
  const gp::GaussianProcess prior_;  // with the current hyperparameters
  const v1::GpPolicyState state_;
  const GpPolicyOptions options_;
  // What a PreparedSurrogate of this instance is matched by.
  const uint64_t instance_id_ = NewPolicyInstanceId();
  // Without a catalogue: the posterior of this instance's last fit that
  // reused its hyperparameters, held weakly (alive while a kept prepared fit or
  // a Suggest holds it, so it costs no memory of its own): the next fit extends
  // its Cholesky factor.
  struct LastFit {
    Mutex mu;
    std::weak_ptr<const surrogate::GpSurrogate> surrogate ABSL_GUARDED_BY(mu);
  };
  const std::shared_ptr<LastFit> last_fit_ = std::make_shared<LastFit>();
};

}  // namespace metaopt::policy

#endif  // METAOPT_CORE_POLICY_GP_POLICY_H_
