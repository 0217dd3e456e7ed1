#include "core/registry/model_binding.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "core/common/status_macros.h"
#include "core/common/strings.h"

namespace metaopt::registry {
namespace {

const char* DomainType(const v1::Parameter& parameter) {
  switch (parameter.domain_case()) {
    case v1::Parameter::kFloatDomain:
      return "float";
    case v1::Parameter::kIntDomain:
      return "int";
    case v1::Parameter::kCategoricalDomain:
      return "categorical";
    case v1::Parameter::DOMAIN_NOT_SET:
      break;
  }
  return "unset";
}

// Compares the names of two lists element by element; returns the first
// difference (described below `path` as "<what>[i] ...") or nullopt.
// `name_of(list, i)` gives the i-th name.
template <typename List, typename NameOf>
std::optional<std::string> FirstNameMismatch(const List& model,
                                             const List& study,
                                             const char* what,
                                             const std::string& path,
                                             NameOf name_of) {
  const int common = std::min(model.size(), study.size());
  const std::string prefix = path.empty() ? "" : absl::StrCat(path, ": ");
  for (int i = 0; i < common; ++i) {
    if (name_of(model, i) != name_of(study, i)) {
      return absl::StrCat(prefix, what, "[", i, "] is ",
                          Quote(name_of(model, i)), " in the model, ",
                          Quote(name_of(study, i)), " in the study");
    }
  }
  if (model.size() > common) {
    return absl::StrCat(prefix, what, "[", common, "] ",
                        Quote(name_of(model, common)),
                        " is in the model only");
  }
  if (study.size() > common) {
    return absl::StrCat(prefix, what, "[", common, "] ",
                        Quote(name_of(study, common)),
                        " is in the study only");
  }
  return std::nullopt;
}

std::optional<std::string> FirstParameterMismatch(const v1::Parameter& model,
                                                  const v1::Parameter& study,
                                                  const std::string& path) {
  if (model.domain_case() != study.domain_case()) {
    return absl::StrCat(path, ": ", DomainType(model), " in the model, ",
                        DomainType(study), " in the study");
  }
  if (model.domain_case() != v1::Parameter::kCategoricalDomain)
    return std::nullopt;
  const auto& model_values = model.categorical_domain().values();
  const auto& study_values = study.categorical_domain().values();
  for (const std::string& value : model_values) {
    if (std::find(study_values.begin(), study_values.end(), value) ==
        study_values.end()) {
      return absl::StrCat(path, ": value ", Quote(value),
                          " is in the model only");
    }
  }
  for (const std::string& value : study_values) {
    if (std::find(model_values.begin(), model_values.end(), value) ==
        model_values.end()) {
      return absl::StrCat(path, ": value ", Quote(value),
                          " is in the study only");
    }
  }
  return std::nullopt;
}

std::optional<std::string> FirstMismatch(const v1::SearchSpace& model,
                                         const v1::SearchSpace& study) {
  auto name_of = [](const auto& list, int i) -> const std::string& {
    return list.Get(i).name();
  };
  if (auto mismatch = FirstNameMismatch(model.stages(), study.stages(), "stage",
                                        "", name_of)) {
    return mismatch;
  }
  for (int s = 0; s < model.stages_size(); ++s) {
    const v1::Stage& model_stage = model.stages(s);
    const v1::Stage& study_stage = study.stages(s);
    const std::string stage_path =
        absl::StrCat("stage[", s, "] ", Quote(model_stage.name()));
    if (auto mismatch = FirstNameMismatch(model_stage.algorithms(),
                                          study_stage.algorithms(), "algorithm",
                                          stage_path, name_of)) {
      return mismatch;
    }
    for (int a = 0; a < model_stage.algorithms_size(); ++a) {
      const v1::Algorithm& model_algorithm = model_stage.algorithms(a);
      const v1::Algorithm& study_algorithm = study_stage.algorithms(a);
      const std::string algorithm_path = absl::StrCat(
          stage_path, ": algorithm[", a, "] ", Quote(model_algorithm.name()));
      if (auto mismatch = FirstNameMismatch(
              model_algorithm.parameters(), study_algorithm.parameters(),
              "parameter", algorithm_path, name_of)) {
        return mismatch;
      }
      for (int p = 0; p < model_algorithm.parameters_size(); ++p) {
        const std::string parameter_path =
            absl::StrCat(algorithm_path, ": parameter[", p, "] ",
                         Quote(model_algorithm.parameters(p).name()));
        if (auto mismatch = FirstParameterMismatch(
                model_algorithm.parameters(p), study_algorithm.parameters(p),
                parameter_path)) {
          return mismatch;
        }
      }
    }
  }
  return std::nullopt;
}

}  // namespace

absl::Status CheckModelKind(const v1::AlgorithmSpec& algorithm,
                            v1::ModelKind kind) {
  const bool ok = [&] {
    switch (algorithm.kind()) {
      case v1::ALGORITHM_KIND_DEEPPIPE:
        // A portfolio-only model gives a scratch DeepPipe its warm start.
        return kind == v1::MODEL_KIND_DEEPPIPE ||
               kind == v1::MODEL_KIND_PORTFOLIO;
      case v1::ALGORITHM_KIND_PMF:
        return kind == v1::MODEL_KIND_PMF;
      case v1::ALGORITHM_KIND_GROSI:
        return kind == v1::MODEL_KIND_GROSI;
      default:
        return true;  // every model kind carries a portfolio
    }
  }();
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "spec.algorithm.model: a ", v1::ModelKind_Name(kind),
      " model cannot serve ", v1::AlgorithmKind_Name(algorithm.kind())));
}

bool AutoBindsModel(const v1::AlgorithmSpec& algorithm, v1::ModelKind kind) {
  // A GROSI model binds other kinds only by name: its portfolio is its data's
  // portfolio model's, which also carries the task-aware design.
  if (kind == v1::MODEL_KIND_GROSI) {
    return algorithm.kind() == v1::ALGORITHM_KIND_GROSI;
  }
  switch (algorithm.kind()) {
    case v1::ALGORITHM_KIND_RANDOM:
      return false;
    case v1::ALGORITHM_KIND_DEEPPIPE:
      return kind == v1::MODEL_KIND_DEEPPIPE;
    case v1::ALGORITHM_KIND_MOSAIC:
      return algorithm.mosaic().surrogate() == v1::MOSAIC_SURROGATE_DEEPPIPE
                 ? kind == v1::MODEL_KIND_DEEPPIPE
                 : true;
    default:
      return CheckModelKind(algorithm, kind).ok();
  }
}

absl::Status CheckMatches(const v1::SearchSpace& model_space,
                          const v1::SearchSpace& study_space) {
  if (std::optional<std::string> mismatch =
          FirstMismatch(model_space, study_space)) {
    return absl::InvalidArgumentError(
        absl::StrCat("search spaces do not match: ", *mismatch));
  }
  return absl::OkStatus();
}

absl::Status CheckMatches(const LoadedModel& model,
                          const v1::SearchSpace& study_space) {
  if (std::optional<std::string> mismatch =
          FirstMismatch(model.space.proto(), study_space)) {
    return absl::InvalidArgumentError(
        absl::StrCat("model ", Quote(model.reference()),
                     " does not match the study's space: ", *mismatch));
  }
  return absl::OkStatus();
}

bool ServesOwner(const LoadedModel& model, std::string_view owner) {
  const std::string& learned_for = model.artifact.provenance().owner();
  return learned_for.empty() || learned_for == owner;
}

absl::StatusOr<ModelBinding> BindModel(ModelManager* models,
                                       const v1::StudySpec& spec,
                                       std::string_view owner) {
  const std::string& named = spec.algorithm().model();
  if (named == "none") return ModelBinding();
  if (named.empty()) {
    if (models == nullptr) return ModelBinding();
    // Served models: those learned from history first, then by name; the
    // first that serves the owner, whose kind the algorithm takes and whose
    // space matches.
    for (const bool from_history : {true, false}) {
      for (auto& model : models->List()) {
        if (model->artifact.provenance().from_history() == from_history &&
            ServesOwner(*model, owner) &&
            AutoBindsModel(spec.algorithm(), model->artifact.kind()) &&
            CheckMatches(*model, spec.search_space()).ok()) {
          return ModelBinding{model};
        }
      }
    }
    return ModelBinding();
  }
  METAOPT_ASSIGN_OR_RETURN(ModelReference reference,
                           ParseModelReference(named));
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
        "spec.algorithm.model: ", Quote(named),
        " was learned from another owner's studies and serves only theirs"));
  }
  METAOPT_RETURN_IF_ERROR(
      CheckModelKind(spec.algorithm(), (*model)->artifact.kind()));
  absl::Status matches = CheckMatches(**model, spec.search_space());
  if (!matches.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec.algorithm.model: ", matches.message()));
  }
  return ModelBinding{*std::move(model)};
}

absl::StatusOr<ModelBinding> StoredBinding(ModelManager* models,
                                           const v1::Study& study) {
  if (study.bound_model().empty()) return ModelBinding();
  std::shared_ptr<const LoadedModel> model;
  auto bound = ParseModelReference(study.bound_model(), "study.bound_model");
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
  return ModelBinding{std::move(model)};
}

}  // namespace metaopt::registry
