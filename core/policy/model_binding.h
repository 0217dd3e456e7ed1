// Binding a study to a registry model: which model kinds an algorithm takes,
// whether a model's search space can serve a study's, which model a new study
// binds to, and the model a stored study stays bound to.
#ifndef METAOPT_CORE_POLICY_MODEL_BINDING_H_
#define METAOPT_CORE_POLICY_MODEL_BINDING_H_

#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/registry/artifact.h"
#include "core/registry/model_manager.h"
#include "core/space/space_mapping.h"
#include "metaopt/v1/model.pb.h"
#include "metaopt/v1/study.pb.h"

namespace metaopt::policy {

// What a study of one algorithm takes from the registry: the descriptor table
// of algorithm kinds (policy_factory.h) gives each kind's.
struct BindingRules {
  // A set of model kinds: bit (1 << kind).
  using ModelKinds = uint32_t;
  static constexpr ModelKinds Set(std::initializer_list<v1::ModelKind> kinds) {
    ModelKinds set = 0;
    for (v1::ModelKind kind : kinds) set |= ModelKinds{1} << kind;
    return set;
  }
  static constexpr ModelKinds kAnyModel = ~ModelKinds{0};

  // How the algorithm uses a DeepPipe model beyond its portfolio, which
  // decides whether the model can serve algorithms it was not trained on.
  enum class DeepPipeUse {
    kPortfolioOnly,  // new algorithms are fine
    kKernelOnly,     // fine-tunes the kernel: cannot learn new algorithms
    kLearnsEncoders  // learns new algorithms' encoders (needs encoder layers)
  };

  // The model kinds a study may name in spec.algorithm.model.
  ModelKinds accepts = kAnyModel;
  // The model kinds a study binds to by itself (spec.algorithm.model empty).
  ModelKinds binds_by_itself = 0;
  // The algorithm's point is a meta-learned model: a study that binds none
  // records why (ModelBinding::unbound_reason).
  bool learns_from_model = false;
  DeepPipeUse deeppipe_use = DeepPipeUse::kPortfolioOnly;
  // Why kKernelOnly cannot serve new algorithms, for messages.
  const char* kernel_only_reason = "";

  bool Accepts(v1::ModelKind kind) const {
    return (accepts >> kind) & 1;
  }
  bool BindsByItself(v1::ModelKind kind) const {
    return (binds_by_itself >> kind) & 1;
  }
};

// The rules of `algorithm`'s kind (an unknown kind: the defaults above).
BindingRules BindingRulesOf(const v1::AlgorithmSpec& algorithm);

// Whether a study of this algorithm binds by itself (spec.algorithm.model
// empty) to a served registry model of kind `kind` over its space, and whether
// it accepts such a model when named (BindingRules). RANDOM uses only named
// models (for their portfolio), so the random baseline stays a baseline; only
// GROSI studies bind to a GROSI model by themselves.
bool AutoBindsModel(const v1::AlgorithmSpec& algorithm, v1::ModelKind kind);
absl::Status CheckModelKind(const v1::AlgorithmSpec& algorithm,
                            v1::ModelKind kind);

// OK if a model trained on `model_space` can serve a study over
// `study_space` (space::MapStudySpace: the same stages, at least one shared
// algorithm per stage, shared algorithms with the same parameters, study
// ranges within the model's, categorical values a subset). Otherwise
// INVALID_ARGUMENT naming the first violation, e.g. `search spaces do not
// match: stage[1] "estimator": no algorithm in common with the model's
// ("RF", ...)`. Whether the model's kind serves a study that adds
// algorithms is CheckPartialBinding's.
absl::Status CheckMatches(const v1::SearchSpace& model_space,
                          const v1::SearchSpace& study_space);
// As above, with the message `model "oboe-portfolio@3" does not match the
// study's space: ...`.
absl::Status CheckMatches(const registry::LoadedModel& model,
                          const v1::SearchSpace& study_space);

// Whether `model` can serve a study of `algorithm` whose space maps onto the
// model's as `mapping` says. Masked algorithms and narrowed ranges are fine
// for every kind (a portfolio or catalogue keeps the entries inside the
// study's space). New algorithms: a portfolio model ignores them; a
// DeepPipe model learns them with a fresh per-algorithm encoder for an
// ALGORITHM_KIND_DEEPPIPE study if it has encoder layers; PMF (latent
// factors per catalogue entry), GROSI (a fixed-width configuration tower)
// and Mosaic's DeepPipe surrogate (kernel fine-tuning only) refuse them.
// INVALID_ARGUMENT naming the model and the first new algorithm otherwise.
absl::Status CheckPartialBinding(const v1::AlgorithmSpec& algorithm,
                                 const registry::LoadedModel& model,
                                 const space::SpaceMapping& mapping);

// A study's binding to a registry model and how the study's space maps onto
// the model's (partial binding, docs/algorithms.md).
struct ModelBinding {
  // Null: the study binds to no model.
  std::shared_ptr<const registry::LoadedModel> model;
  space::SpaceMapping mapping;
  // Without a model, for an algorithm that learns from a model (DeepPipe,
  // PMF, GROSI) and names none: why no served model binds, naming the
  // closest one and why it did not match. Empty otherwise.
  std::string unbound_reason;

  // What the study records in v1::Study.metadata about the mapping:
  // "binding" = "exact" or "partial", and for a partial one
  // "binding_new_algorithms", "binding_masked_algorithms" (comma-separated
  // stage/algorithm, "none") and "binding_narrowed_parameters"
  // ("; "-separated lines of space::SpaceMapping, "none"). Without a model:
  // "binding" = "none" and "binding_reason" (unbound_reason) when
  // unbound_reason is set, else nothing.
  std::map<std::string, std::string> Metadata() const;
};

// Whether `model` may serve a study of `owner` (or be listed to it): a model
// learned from history (provenance.from_history, metaopt-server
// --learn-from-history) serves only the namespace it was learned in,
// provenance.owner, which is "" for the open namespace of a server without
// tokens (so such a model serves no token owner once tokens are turned on,
// and a token owner's model serves no one after they are turned off); another
// model with provenance.owner set serves only that owner; every other model
// serves everyone.
bool ServesOwner(const registry::LoadedModel& model, std::string_view owner);

// The binding of a new study of `owner` with canonical spec `spec`: the model
// `spec.algorithm.model` names ("none": no model), which must serve the owner
// (ServesOwner), be of a kind the algorithm takes and match the study's space
// exactly or partially; else, with no model named, among the served models
// that serve the owner and that the algorithm binds to by itself
// (AutoBindsModel), models learned from history (provenance.from_history)
// first, then by name: the first whose space is the study's (up to orders),
// else the first that serves it partially (CheckPartialBinding); else none.
// `models` may be null (no registry). Errors name `spec.algorithm.model`.
absl::StatusOr<ModelBinding> BindModel(registry::ModelManager* models,
                                       const v1::StudySpec& spec,
                                       std::string_view owner = "");

// The binding of stored study `study`: the model version it was bound to
// (study.bound_model(); none when empty), even after newer versions were
// published. FAILED_PRECONDITION if the registry can no longer load it, or if
// it does not serve the study's owner (ServesOwner).
absl::StatusOr<ModelBinding> StoredBinding(registry::ModelManager* models,
                                           const v1::Study& study);

}  // namespace metaopt::policy

#endif  // METAOPT_CORE_POLICY_MODEL_BINDING_H_
