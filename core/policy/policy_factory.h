// The algorithm kinds this server implements, one descriptor each: how a
// study's policy is built and what a study of the kind may ask for. Adding a
// kind is one row of the table (policy_factory.cc).
#ifndef METAOPT_CORE_POLICY_POLICY_FACTORY_H_
#define METAOPT_CORE_POLICY_POLICY_FACTORY_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/policy/model_binding.h"
#include "core/policy/policy.h"
#include "core/registry/artifact.h"
#include "metaopt/v1/policy_state.pb.h"

namespace metaopt::policy {

// One algorithm kind. Immutable (a static table).
struct AlgorithmKindDescriptor {
  v1::AlgorithmKind kind;
  // Builds the study's policy from its canonical spec, its stored state
  // (empty for a new study) and its bound registry model (null for none).
  absl::StatusOr<std::shared_ptr<const Policy>> (*create)(
      const v1::StudySpec& spec, const v1::PolicyState& state,
      std::shared_ptr<const registry::LoadedModel> model);
  // Fits a model over the study's encoded space (the server's
  // --max-model-dimension applies); false for kinds that sample it or model
  // catalogue entries by their own latent factors.
  bool models_encoded_space;
  // Accepts several objectives (spec.objectives), by expected hypervolume
  // improvement or by ParEGO (algorithm.multi_objective_acquisition; the
  // default is parego_step.h's MultiObjectiveAcquisitionOf), and constraints
  // (spec.constraints).
  bool ehvi;
  bool parego;
  bool constraints;
  // A study that names no candidates runs over its bound model's catalogue
  // (AddModelCatalogue, catalogue.h).
  bool catalogue_from_model;
  // What a study of the kind takes from the registry (some kinds' rules
  // depend on their options, e.g. Mosaic's surrogate).
  BindingRules (*binding)(const v1::AlgorithmSpec& algorithm);
};

// Every kind implemented, in AlgorithmKind order.
absl::Span<const AlgorithmKindDescriptor> AlgorithmKinds();

// The descriptor of `kind`; INVALID_ARGUMENT for ALGORITHM_KIND_UNSPECIFIED
// and UNIMPLEMENTED naming the kind for one this build does not implement.
absl::StatusOr<const AlgorithmKindDescriptor*> FindAlgorithmKind(
    v1::AlgorithmKind kind);

// Builds the policy of a study from its canonical spec, the stored policy state
// (absent for a new study) and the registry model the study is bound to (null
// for none). Algorithm kinds this build does not implement are UNIMPLEMENTED
// naming the kind. Thread-safe.
absl::StatusOr<std::shared_ptr<const Policy>> CreatePolicy(
    const v1::StudySpec& spec, const std::optional<std::string>& stored_state,
    std::shared_ptr<const registry::LoadedModel> model = nullptr);

// OK if CreatePolicy can build a policy of this kind; UNIMPLEMENTED naming the
// kind otherwise.
absl::Status CheckAlgorithmSupported(const v1::AlgorithmSpec& algorithm);

// OK if the spec's kind accepts its objectives, their acquisition
// (algorithm.multi_objective_acquisition, a known value even with one
// objective) and its constraints; INVALID_ARGUMENT naming the field, the
// value, the kind and what is accepted otherwise.
absl::Status CheckObjectivesSupported(const v1::StudySpec& spec);

}  // namespace metaopt::policy

#endif  // METAOPT_CORE_POLICY_POLICY_FACTORY_H_
