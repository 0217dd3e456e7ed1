// Binding a study to a registry model: which model kinds an algorithm takes,
// whether a model's search space can serve a study's, which model a new study
// binds to, and the model a stored study stays bound to.
#ifndef METAOPT_CORE_REGISTRY_MODEL_BINDING_H_
#define METAOPT_CORE_REGISTRY_MODEL_BINDING_H_

#include <memory>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/registry/artifact.h"
#include "core/registry/model_manager.h"
#include "metaopt/v1/model.pb.h"
#include "metaopt/v1/study.pb.h"

namespace metaopt::registry {

// Whether a study of this algorithm binds by itself (spec.algorithm.model
// empty) to a served registry model of kind `kind` over its space, and whether
// it accepts such a model when named. RANDOM uses only named models (for their
// portfolio), so the random baseline stays a baseline; only GROSI studies bind
// to a GROSI model by themselves.
bool AutoBindsModel(const v1::AlgorithmSpec& algorithm, v1::ModelKind kind);
absl::Status CheckModelKind(const v1::AlgorithmSpec& algorithm,
                            v1::ModelKind kind);

// OK if a model trained on `model_space` can serve a study over `study_space`:
// the same stages (names, in order), the same algorithms per stage (names, in
// order) and the same parameters per algorithm (names, in order, and domain
// types: float / int / categorical). Numeric ranges and log scaling may differ
// (the model normalizes in its own ranges); categorical value sets must be
// equal (order may differ). Otherwise INVALID_ARGUMENT naming the first
// mismatch, e.g. `search spaces do not match: stage[0] "estimator":
// algorithm[2] is "GBT" in the model, "RF" in the study`.
absl::Status CheckMatches(const v1::SearchSpace& model_space,
                          const v1::SearchSpace& study_space);
// As above, with the message `model "oboe-portfolio@3" does not match the
// study's space: ...`.
absl::Status CheckMatches(const LoadedModel& model,
                          const v1::SearchSpace& study_space);

// A study's binding to a registry model. Today a model serves a study only
// when their spaces match (CheckMatches), so the study's configurations are
// the model's. Partial binding (a study space that adds or drops algorithms,
// or narrows ranges, against the model's) relaxes CheckMatches and adds here
// how the study's space maps onto the model's.
struct ModelBinding {
  // Null: the study binds to no model.
  std::shared_ptr<const LoadedModel> model;
};

// Whether `model` may serve a study of `owner` (or be listed to it): a model
// learned from one owner's studies (provenance.owner set, metaopt-server
// --learn-from-history) serves only that owner; every other model serves
// everyone.
bool ServesOwner(const LoadedModel& model, std::string_view owner);

// The binding of a new study of `owner` with canonical spec `spec`: the model
// `spec.algorithm.model` names ("none": no model), which must serve the owner
// (ServesOwner), be of a kind the algorithm takes and match the study's space;
// else, with no model named, the first served model that serves the owner,
// that the algorithm binds to by itself (AutoBindsModel) and whose space
// matches, models learned from history (provenance.from_history) first, then
// by name; else none. `models` may be null (no registry). Errors name
// `spec.algorithm.model`.
absl::StatusOr<ModelBinding> BindModel(ModelManager* models,
                                       const v1::StudySpec& spec,
                                       std::string_view owner = "");

// The binding of stored study `study`: the model version it was bound to
// (study.bound_model(); none when empty), even after newer versions were
// published. FAILED_PRECONDITION if the registry can no longer load it.
absl::StatusOr<ModelBinding> StoredBinding(ModelManager* models,
                                           const v1::Study& study);

}  // namespace metaopt::registry

#endif  // METAOPT_CORE_REGISTRY_MODEL_BINDING_H_
