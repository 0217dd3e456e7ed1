// Policy: proposes the next configurations of a study.
#ifndef METAOPT_CORE_POLICY_POLICY_H_
#define METAOPT_CORE_POLICY_POLICY_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/space/search_space.h"
#include "metaopt/v1/model.pb.h"
#include "metaopt/v1/optimizer_service.pb.h"
#include "metaopt/v1/study.pb.h"

namespace metaopt::policy {

// space::ConfigurationKey of every configuration that some trial holds
// (HoldsConfiguration of its state), with the number of trials holding it.
using HeldKeys = absl::flat_hash_map<std::string, int>;

// A read-only snapshot of a study, valid for the duration of one call.
struct StudyView {
  const v1::StudySpec* spec = nullptr;        // canonical (validated) spec
  const space::SearchSpace* space = nullptr;  // built from spec->search_space
  // Every trial, by increasing id, canonical configs. Policies read only a
  // trial's id, configuration, state and value: the study engine passes
  // those fields alone (study::StudyTrials::PolicyTrials).
  const std::vector<v1::Trial>* trials = nullptr;
  // Optional: space::ConfigurationKey of each spec->candidates entry, in
  // order, computed once per study (saves re-keying a large catalogue on every
  // Suggest). Null: computed on demand.
  const std::vector<std::string>* candidate_keys = nullptr;
  // Optional: the HeldKeys of `trials`, kept up to date by the engine as
  // trials change (saves re-keying every trial on every Suggest). Null:
  // computed on demand.
  const HeldKeys* held_keys = nullptr;
};

struct FineTuneOptions {
  int steps = 0;  // 0: the policy's default
  v1::FineTuneScope scope = v1::FINE_TUNE_SCOPE_KERNEL;
  absl::Duration time_budget = absl::Seconds(60);
};

class Policy;

// The part of a Suggest that depends only on the study's observations, the
// policy's own state and the Suggest's random stream up to that point (e.g. a
// fitted surrogate with its Cholesky factor), computed ahead of the Suggest
// that uses it (Policy::PrepareFit). Opaque to callers. Immutable and
// thread-safe once built.
class PreparedFit {
 public:
  virtual ~PreparedFit() = default;
};

// A policy whose internal state changed (e.g. refitted hyperparameters), with
// that state serialized so that a restart resumes from it.
struct PolicyUpdate {
  std::shared_ptr<const Policy> policy;
  std::string state;
};

struct SuggestResult {
  std::vector<v1::Configuration> configurations;
  // What produced them, recorded in each trial's metadata["policy"] (e.g.
  // "gp/ei", "gp/initial-design"); empty means Policy::name().
  std::string source;
  // Set when the policy's state changed; the engine stores it and uses it from
  // then on.
  std::optional<PolicyUpdate> update;
  // The fit this call used (given to SuggestPrepared, or computed inline),
  // for later calls on the same observations; null if none.
  std::shared_ptr<const PreparedFit> fit;
  // True when the PreparedFit given to SuggestPrepared was used (for metrics).
  bool used_prepared_fit = false;
};

struct FineTuneResult {
  double loss_before = 0;
  double loss_after = 0;
  int steps_run = 0;
  // The fine-tuned policy, which replaces the study's current one.
  PolicyUpdate update;
};

// Implementations are immutable after construction and thread-safe: Suggest,
// PrepareFit and FineTune are const and may run concurrently on snapshots.
class Policy {
 public:
  virtual ~Policy() = default;

  // Proposes up to `count` configurations (canonical, valid in the study's
  // space, distinct from each other). In a catalogue study they are untried
  // catalogue entries (not held by any trial that is ACTIVE, COMPLETED, FAILED
  // or INFEASIBLE); fewer are returned once those run out. Pure with respect to
  // `study`, `rng` and the policy's own immutable state.
  virtual absl::StatusOr<SuggestResult> Suggest(const StudyView& study,
                                                int count,
                                                space::Rng& rng) const = 0;

  // Computes ahead the fit that Suggest(study', count, rng') of this policy
  // would compute, for a later study' with the same observations; `rng` is the
  // random stream that Suggest would start with (the fit may draw from it).
  // Null when there is nothing to prepare (the default: no surrogate, or too
  // few observations). Pure, like Suggest; may take as long as the fit.
  virtual absl::StatusOr<std::shared_ptr<const PreparedFit>> PrepareFit(
      const StudyView& study, const space::Rng& rng) const;
  // True if PrepareFit can return a fit (worth preparing ahead).
  virtual bool PreparesFits() const { return false; }

  // Suggest, using `prepared` (a PrepareFit result, may be null) when it is
  // exactly what this call would fit: computed by this policy on the same
  // observations, and, if the fit drew random numbers, from the same random
  // stream. Otherwise (stale, another policy's) it is ignored and the fit is
  // computed inline. Either way the result is that of Suggest(study, count,
  // rng), to the last bit: the prepared path only saves time. The default
  // ignores `prepared`.
  virtual absl::StatusOr<SuggestResult> SuggestPrepared(
      const StudyView& study, int count, space::Rng& rng,
      const std::shared_ptr<const PreparedFit>& prepared) const;

  // Fits the policy's surrogate further on the study's observations. Policies
  // without a surrogate answer FAILED_PRECONDITION.
  virtual absl::StatusOr<FineTuneResult> FineTune(
      const StudyView& study, const FineTuneOptions& options) const;

  // A short name for trial metadata and logs, e.g. "random".
  virtual std::string name() const = 0;

  // False if Suggest reads only the view's held keys and candidate keys,
  // never its trials: the engine then passes a view without trials, and the
  // study's finished trials stay in their compact form.
  virtual bool ReadsTrials() const { return true; }
};

// True for trial states whose configuration counts as tried in a catalogue
// study (ACTIVE, COMPLETED, STOPPED, FAILED, INFEASIBLE); ABANDONED and STALE
// configurations may be suggested again.
bool HoldsConfiguration(v1::TrialState state);

// True for a trial whose value the surrogates fit: COMPLETED, or STOPPED early
// (its value is the last intermediate one, a pessimistic observation of the
// configuration under a minimized objective whose curve is still falling;
// docs/algorithms.md), with a value.
bool IsObservation(const v1::Trial& trial);

// The HeldKeys of `study`: *study.held_keys when set, else computed from
// study.trials into `*scratch` (which the result then refers to).
const HeldKeys& HeldConfigurationKeys(const StudyView& study,
                                      HeldKeys* scratch);

// What may not be suggested again: the configurations held by the study's
// trials (its HeldKeys) plus a call's earlier picks, by
// space::ConfigurationKey, without copying the trials or the keys. Not
// copyable (it may refer to its own scratch keys); valid while `study` is.
class HeldConfigurations {
 public:
  // Refers to *study.held_keys, or computes the keys from study.trials.
  explicit HeldConfigurations(const StudyView& study);
  HeldConfigurations(const HeldConfigurations&) = delete;
  HeldConfigurations& operator=(const HeldConfigurations&) = delete;

  // Counts `picks` (canonical) as held too.
  void Add(const std::vector<v1::Configuration>& picks);
  bool contains(const std::string& key) const {
    return keys_->contains(key) || picks_.contains(key);
  }

 private:
  HeldKeys scratch_;
  const HeldKeys* keys_;
  absl::flat_hash_set<std::string> picks_;
};

// Untried catalogue entries of `study` (empty if the study has no catalogue),
// in catalogue order: those not in `held` (by default the study's own).
std::vector<const v1::Configuration*> UntriedCandidates(
    const StudyView& study, const HeldConfigurations& held);
std::vector<const v1::Configuration*> UntriedCandidates(const StudyView& study);

// The zero-shot design of a registry model for a study. With
// spec.dataset_features (or, for a design whose feature_source is "dida",
// spec.dataset_sample: registry::DesignFeatures) and a task-aware design in
// the model (v1::TaskDesign), the best configurations of the archived tasks nearest to
// the study's dataset (registry::QueryTaskDesign), at most
// max(portfolio size, design neighbours) of them; otherwise the model's fixed
// portfolio. Each entry is canonicalized in the study's space (entries outside
// it, e.g. beyond narrower ranges, are dropped); in a catalogue study an entry
// that is not a catalogue entry is replaced by the nearest one in the encoded
// space (Euclidean). Duplicates dropped; design order.
struct ZeroShotDesign {
  std::vector<v1::Configuration> configurations;
  // "portfolio", the task design's method ("metabu"), or "" without a model.
  std::string source;
  std::vector<std::string> neighbours;        // nearest archived tasks
  std::vector<std::string> imputed_features;  // missing from the spec

  // What a study records about its design (v1::Study.metadata):
  // "zero_shot_design", and for a task-aware one "design_neighbours" and
  // "imputed_features" (comma-separated, "none").
  std::map<std::string, std::string> Metadata() const;
};
ZeroShotDesign ZeroShotDesignForStudy(const v1::ModelArtifact* model,
                                      const v1::StudySpec& spec,
                                      const space::SearchSpace& space);

// What a study bound to `model` records in v1::Study.metadata: its
// ZeroShotDesign's Metadata(), and, when the study's surrogate is a
// task-conditioned DeepPipe model (ALGORITHM_KIND_DEEPPIPE, or MOSAIC with
// the DeepPipe surrogate), "task_conditioning" = "meta-features" and
// "conditioning_imputed_features" (comma-separated names that took their
// training mean, or "none").
std::map<std::string, std::string> StudyMetadata(
    const v1::ModelArtifact& model, const v1::StudySpec& spec,
    const space::SearchSpace& space);

// ZeroShotDesignForStudy(...).configurations; empty without a model.
std::vector<v1::Configuration> PortfolioForStudy(
    const v1::ModelArtifact* model, const v1::StudySpec& spec,
    const space::SearchSpace& space);

// The first `count` entries of `portfolio` that no trial of `study` holds.
std::vector<v1::Configuration> NextPortfolioEntries(
    const StudyView& study, const std::vector<v1::Configuration>& portfolio,
    int count);

}  // namespace metaopt::policy

#endif  // METAOPT_CORE_POLICY_POLICY_H_
