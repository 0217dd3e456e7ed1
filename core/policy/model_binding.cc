#include "core/policy/model_binding.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/common/status_macros.h"
#include "core/common/strings.h"
#include "core/policy/policy_factory.h"

namespace metaopt::policy {
namespace {

// The encoder layers of a DeepPipe artifact (0 when absent).
int64_t EncoderLayers(const v1::ModelArtifact& artifact) {
  auto it = artifact.int_options().find("encoder_layers");
  return it == artifact.int_options().end() ? 0 : it->second;
}

}  // namespace

BindingRules BindingRulesOf(const v1::AlgorithmSpec& algorithm) {
  absl::StatusOr<const AlgorithmKindDescriptor*> kind =
      FindAlgorithmKind(algorithm.kind());
  if (!kind.ok()) return BindingRules();
  return (*kind)->binding(algorithm);
}

absl::Status CheckModelKind(const v1::AlgorithmSpec& algorithm,
                            v1::ModelKind kind) {
  if (BindingRulesOf(algorithm).Accepts(kind)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "spec.algorithm.model: a ", v1::ModelKind_Name(kind),
      " model cannot serve ", v1::AlgorithmKind_Name(algorithm.kind())));
}

bool AutoBindsModel(const v1::AlgorithmSpec& algorithm, v1::ModelKind kind) {
  return BindingRulesOf(algorithm).BindsByItself(kind);
}

absl::Status CheckMatches(const v1::SearchSpace& model_space,
                          const v1::SearchSpace& study_space) {
  absl::StatusOr<space::SpaceMapping> mapping =
      space::MapStudySpace(model_space, study_space);
  if (mapping.ok()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("search spaces do not match: ", mapping.status().message()));
}

absl::Status CheckMatches(const registry::LoadedModel& model,
                          const v1::SearchSpace& study_space) {
  absl::StatusOr<space::SpaceMapping> mapping =
      space::MapStudySpace(model.space.proto(), study_space);
  if (mapping.ok()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "model ", Quote(model.reference()),
      " does not match the study's space: ", mapping.status().message()));
}

absl::Status CheckPartialBinding(const v1::AlgorithmSpec& algorithm,
                                 const registry::LoadedModel& model,
                                 const space::SpaceMapping& mapping) {
  if (mapping.new_algorithms.empty()) return absl::OkStatus();
  const v1::ModelKind kind = model.artifact.kind();
  std::string reason;
  if (kind == v1::MODEL_KIND_PORTFOLIO) return absl::OkStatus();
  if (kind == v1::MODEL_KIND_DEEPPIPE) {
    const BindingRules rules = BindingRulesOf(algorithm);
    if (rules.deeppipe_use == BindingRules::DeepPipeUse::kPortfolioOnly) {
      return absl::OkStatus();
    }
    if (rules.deeppipe_use == BindingRules::DeepPipeUse::kKernelOnly) {
      reason = rules.kernel_only_reason;
    } else if (EncoderLayers(model.artifact) < 1) {
      reason =
          "the model has no per-algorithm encoders (encoder_layers 0); train "
          "one with --encoder-layers 1 or more";
    } else {
      return absl::OkStatus();
    }
  } else if (kind == v1::MODEL_KIND_PMF) {
    reason = "a PMF model predicts only its catalogue's configurations";
  } else if (kind == v1::MODEL_KIND_GROSI) {
    reason = "a GROSI model reads a fixed configuration encoding";
  } else if (kind == v1::MODEL_KIND_FSBO) {
    reason =
        "an FSBO model's network reads a fixed configuration encoding (no "
        "per-algorithm encoders)";
  } else {
    reason = "this model kind cannot learn new algorithms";
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "model ", Quote(model.reference()), " cannot serve algorithm ",
      Quote(mapping.new_algorithms.front()),
      ", which the model was not trained on: ", reason));
}

std::map<std::string, std::string> ModelBinding::Metadata() const {
  std::map<std::string, std::string> out;
  if (model == nullptr) {
    if (!unbound_reason.empty()) {
      out["binding"] = "none";
      out["binding_reason"] = unbound_reason;
    }
    return out;
  }
  out["binding"] = mapping.identical() ? "exact" : "partial";
  if (mapping.identical()) return out;
  auto join = [](const std::vector<std::string>& items, const char* sep) {
    return items.empty() ? std::string("none") : absl::StrJoin(items, sep);
  };
  out["binding_new_algorithms"] = join(mapping.new_algorithms, ",");
  out["binding_masked_algorithms"] = join(mapping.masked_algorithms, ",");
  out["binding_narrowed_parameters"] = join(mapping.narrowed_parameters, "; ");
  return out;
}

namespace {

// Whose studies a model that serves only one namespace was learned from, for
// messages.
std::string LearnedFrom(const registry::LoadedModel& model) {
  const std::string& owner = model.artifact.provenance().owner();
  return owner.empty() ? std::string("the studies of the open namespace (a "
                                     "server without tokens)")
                       : std::string("another owner's studies");
}

}  // namespace

bool ServesOwner(const registry::LoadedModel& model, std::string_view owner) {
  const v1::TrainingProvenance& provenance = model.artifact.provenance();
  // Learned from history: only the namespace it was learned in, the open one
  // ("", no tokens) included, so that turning tokens on hides it.
  if (provenance.from_history()) return provenance.owner() == owner;
  return provenance.owner().empty() || provenance.owner() == owner;
}

absl::StatusOr<ModelBinding> BindModel(registry::ModelManager* models,
                                       const v1::StudySpec& spec,
                                       std::string_view owner) {
  const std::string& named = spec.algorithm().model();
  if (named == "none") return ModelBinding();
  if (named.empty()) {
    if (models == nullptr) return ModelBinding();
    // Served models that serve the owner and whose kind the algorithm takes,
    // those learned from history first, then by name: the first whose space
    // is the study's, else the first that serves it partially.
    std::optional<ModelBinding> partial;
    // Why the closest model did not bind: one whose space maps but that
    // cannot serve the mapping is closer than one whose space does not map.
    std::string closest;
    bool closest_maps = false;
    for (const bool from_history : {true, false}) {
      for (auto& model : models->List()) {
        if (model->artifact.provenance().from_history() != from_history ||
            !ServesOwner(*model, owner) ||
            !AutoBindsModel(spec.algorithm(), model->artifact.kind())) {
          continue;
        }
        absl::StatusOr<space::SpaceMapping> mapping =
            space::MapStudySpace(model->space.proto(), spec.search_space());
        if (!mapping.ok()) {
          if (closest.empty()) {
            closest = absl::StrCat("model ", Quote(model->reference()),
                                   " does not match the study's space: ",
                                   mapping.status().message());
          }
          continue;
        }
        if (absl::Status serves =
                CheckPartialBinding(spec.algorithm(), *model, *mapping);
            !serves.ok()) {
          if (!closest_maps) closest = std::string(serves.message());
          closest_maps = true;
          continue;
        }
        if (mapping->identical()) return ModelBinding{model, *mapping};
        if (!partial.has_value()) partial = ModelBinding{model, *mapping};
      }
    }
    if (partial.has_value()) return *std::move(partial);
    ModelBinding none;
    if (BindingRulesOf(spec.algorithm()).learns_from_model) {
      none.unbound_reason =
          closest.empty()
              ? absl::StrCat("the registry serves no model that ",
                             v1::AlgorithmKind_Name(spec.algorithm().kind()),
                             " binds to; the study runs without one")
              : absl::StrCat("no served model matches the study's space; "
                             "the closest: ",
                             closest, "; the study runs without a model");
    }
    return none;
  }
  METAOPT_ASSIGN_OR_RETURN(registry::ModelReference reference,
                           registry::ParseModelReference(named));
  if (models == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("spec.algorithm.model: \"", named,
                     "\" cannot be used: the server has no model registry"));
  }
  auto model = models->Resolve(reference);
  if (!model.ok()) {
    return absl::Status(
        model.status().code(),
        absl::StrCat("spec.algorithm.model: ", model.status().message()));
  }
  if (!ServesOwner(**model, owner)) {
    return absl::NotFoundError(absl::StrCat(
        "spec.algorithm.model: ", Quote(named), " was learned from ",
        LearnedFrom(**model), " and serves only theirs"));
  }
  METAOPT_RETURN_IF_ERROR(
      CheckModelKind(spec.algorithm(), (*model)->artifact.kind()));
  absl::StatusOr<space::SpaceMapping> mapping =
      space::MapStudySpace((*model)->space.proto(), spec.search_space());
  if (!mapping.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "spec.algorithm.model: model ", Quote((*model)->reference()),
        " does not match the study's space: ", mapping.status().message()));
  }
  absl::Status partial =
      CheckPartialBinding(spec.algorithm(), **model, *mapping);
  if (!partial.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec.algorithm.model: ", partial.message()));
  }
  return ModelBinding{*std::move(model), *std::move(mapping)};
}

absl::StatusOr<ModelBinding> StoredBinding(registry::ModelManager* models,
                                           const v1::Study& study) {
  if (study.bound_model().empty()) return ModelBinding();
  std::shared_ptr<const registry::LoadedModel> model;
  auto bound = registry::ParseModelReference(study.bound_model(), "study.bound_model");
  if (bound.ok() && models != nullptr) {
    auto loaded = models->Resolve(*bound);
    if (loaded.ok()) model = *std::move(loaded);
  }
  if (model == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "study \"", study.study_id(), "\" is bound to model ",
        study.bound_model(),
        ", which the registry can no longer load; restore that version or "
        "delete the study"));
  }
  // A binding made before learned models were scoped to their namespace may
  // name another namespace's model: never served.
  if (!ServesOwner(*model, study.owner())) {
    return absl::FailedPreconditionError(absl::StrCat(
        "study \"", study.study_id(), "\" is bound to model ",
        study.bound_model(), ", which was learned from ", LearnedFrom(*model),
        " and does not serve this study's owner; delete the study"));
  }
  // The study was validated against this version when it was created.
  absl::StatusOr<space::SpaceMapping> mapping =
      space::MapStudySpace(model->space.proto(), study.spec().search_space());
  return ModelBinding{std::move(model), mapping.ok() ? *std::move(mapping)
                                                     : space::SpaceMapping()};
}

}  // namespace metaopt::policy
