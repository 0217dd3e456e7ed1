#include "core/meta_dataset/space_json.h"

#include <cmath>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "core/common/status_macros.h"
#include "core/common/strings.h"
#include "core/space/search_space.h"
#include "nlohmann/json.hpp"

namespace metaopt::meta {
namespace {

using json = nlohmann::json;

// A name of a stage, algorithm, parameter or categorical value must fit in a
// CSV cell.
std::optional<absl::string_view> BadNameReason(absl::string_view name) {
  if (name.empty()) return "is empty";
  if (name.find_first_of(",\n\r") != absl::string_view::npos) {
    return "contains a comma or a line break";
  }
  return std::nullopt;
}

absl::Status SpaceError(absl::string_view path, absl::string_view message) {
  return absl::InvalidArgumentError(
      absl::StrCat(kSpaceFile, ": ", path, ": ", message));
}

// `path` plus the element's name when it has a usable one, e.g. `stages[0]
// ("estimator")`.
std::string NamedPath(const std::string& path, const json& object) {
  const auto it = object.find("name");
  if (it != object.end() && it->is_string()) {
    return absl::StrCat(path, " (\"", it->get_ref<const std::string&>(), "\")");
  }
  return path;
}

absl::StatusOr<const json*> GetMember(const json& object, const char* key,
                                      absl::string_view path) {
  const auto it = object.find(key);
  if (it == object.end())
    return SpaceError(path, absl::StrCat("missing key \"", key, "\""));
  return &*it;
}

absl::StatusOr<std::string> GetName(const json& object,
                                    absl::string_view path) {
  METAOPT_ASSIGN_OR_RETURN(const json* value, GetMember(object, "name", path));
  if (!value->is_string()) return SpaceError(path, "\"name\" must be a string");
  std::string name = value->get<std::string>();
  if (auto reason = BadNameReason(name)) {
    return SpaceError(path, absl::StrCat("name ", Quote(name), " ", *reason));
  }
  return name;
}

absl::StatusOr<const json*> GetArray(const json& object, const char* key,
                                     absl::string_view path) {
  METAOPT_ASSIGN_OR_RETURN(const json* value, GetMember(object, key, path));
  if (!value->is_array()) {
    return SpaceError(path, absl::StrCat("\"", key, "\" must be an array"));
  }
  return value;
}

absl::StatusOr<double> GetNumber(const json& object, const char* key,
                                 absl::string_view path) {
  METAOPT_ASSIGN_OR_RETURN(const json* value, GetMember(object, key, path));
  if (!value->is_number()) {
    return SpaceError(path, absl::StrCat("\"", key, "\" must be a number"));
  }
  const double x = value->get<double>();
  if (!std::isfinite(x))
    return SpaceError(path, absl::StrCat("\"", key, "\" is not finite"));
  return x;
}

absl::Status RejectKeys(const json& object,
                        std::initializer_list<const char*> keys,
                        absl::string_view type, absl::string_view path) {
  for (const char* key : keys) {
    if (object.contains(key)) {
      return SpaceError(path, absl::StrCat("a ", type, " parameter has no \"",
                                           key, "\" key"));
    }
  }
  return absl::OkStatus();
}

absl::Status ParseParameter(const json& object, const std::string& raw_path,
                            v1::Parameter* param) {
  if (!object.is_object()) return SpaceError(raw_path, "must be an object");
  const std::string path = NamedPath(raw_path, object);
  METAOPT_ASSIGN_OR_RETURN(std::string name, GetName(object, path));
  param->set_name(std::move(name));
  METAOPT_ASSIGN_OR_RETURN(const json* type_value,
                           GetMember(object, "type", path));
  if (!type_value->is_string())
    return SpaceError(path, "\"type\" must be a string");
  const std::string type = type_value->get<std::string>();

  if (type == "categorical") {
    METAOPT_RETURN_IF_ERROR(
        RejectKeys(object, {"low", "high", "log"}, type, path));
    METAOPT_ASSIGN_OR_RETURN(const json* values,
                             GetArray(object, "values", path));
    if (values->empty()) return SpaceError(path, "\"values\" is empty");
    auto* domain = param->mutable_categorical_domain();
    std::set<std::string> seen;
    for (size_t i = 0; i < values->size(); ++i) {
      const json& v = (*values)[i];
      const std::string where = absl::StrCat(path, ".values[", i, "]");
      if (!v.is_string()) return SpaceError(where, "must be a string");
      std::string value = v.get<std::string>();
      if (auto reason = BadNameReason(value)) {
        return SpaceError(where,
                          absl::StrCat("value ", Quote(value), " ", *reason));
      }
      if (!seen.insert(value).second) {
        return SpaceError(where,
                          absl::StrCat("duplicate value ", Quote(value)));
      }
      domain->add_values(std::move(value));
    }
    return absl::OkStatus();
  }
  if (type != "float" && type != "int") {
    return SpaceError(
        path,
        absl::StrCat("unknown type ", Quote(type),
                     " (expected \"float\", \"int\" or \"categorical\")"));
  }
  METAOPT_RETURN_IF_ERROR(RejectKeys(object, {"values"}, type, path));
  METAOPT_ASSIGN_OR_RETURN(const double low, GetNumber(object, "low", path));
  METAOPT_ASSIGN_OR_RETURN(const double high, GetNumber(object, "high", path));
  METAOPT_ASSIGN_OR_RETURN(const json* log_value,
                           GetMember(object, "log", path));
  if (!log_value->is_boolean())
    return SpaceError(path, "\"log\" must be true or false");
  const bool log = log_value->get<bool>();
  if (low > high)
    return SpaceError(path, absl::StrCat("low ", low, " > high ", high));
  if (type == "float") {
    if (log && low <= 0) {
      return SpaceError(
          path, absl::StrCat("log scale needs low > 0, found low ", low));
    }
    auto* domain = param->mutable_float_domain();
    domain->set_low(low);
    domain->set_high(high);
    domain->set_log(log);
    return absl::OkStatus();
  }
  constexpr double kInt64Limit = 9.2e18;
  for (const auto& [key, x] :
       {std::pair{"low", low}, std::pair{"high", high}}) {
    if (x != std::floor(x) || std::fabs(x) > kInt64Limit) {
      return SpaceError(
          path, absl::StrCat("int bound ", key, " ", x, " is not an integer"));
    }
  }
  if (log && low < 1) {
    return SpaceError(
        path,
        absl::StrCat("log scale of an int needs low >= 1, found low ", low));
  }
  auto* domain = param->mutable_int_domain();
  domain->set_low(static_cast<int64_t>(low));
  domain->set_high(static_cast<int64_t>(high));
  domain->set_log(log);
  return absl::OkStatus();
}

absl::Status ParseStage(const json& object, const std::string& raw_path,
                        v1::Stage* stage) {
  if (!object.is_object()) return SpaceError(raw_path, "must be an object");
  const std::string path = NamedPath(raw_path, object);
  METAOPT_ASSIGN_OR_RETURN(std::string name, GetName(object, path));
  stage->set_name(std::move(name));
  METAOPT_ASSIGN_OR_RETURN(const json* algorithms,
                           GetArray(object, "algorithms", path));
  if (algorithms->empty()) return SpaceError(path, "\"algorithms\" is empty");
  std::set<std::string> algorithm_names;
  for (size_t a = 0; a < algorithms->size(); ++a) {
    const json& algorithm_json = (*algorithms)[a];
    const std::string raw_algorithm_path =
        absl::StrCat(raw_path, ".algorithms[", a, "]");
    if (!algorithm_json.is_object())
      return SpaceError(raw_algorithm_path, "must be an object");
    const std::string algorithm_path =
        NamedPath(raw_algorithm_path, algorithm_json);
    v1::Algorithm* algorithm = stage->add_algorithms();
    METAOPT_ASSIGN_OR_RETURN(std::string algorithm_name,
                             GetName(algorithm_json, algorithm_path));
    if (!algorithm_names.insert(algorithm_name).second) {
      return SpaceError(
          algorithm_path,
          absl::StrCat("duplicate algorithm name ", Quote(algorithm_name),
                       " in stage ", Quote(stage->name())));
    }
    algorithm->set_name(std::move(algorithm_name));
    METAOPT_ASSIGN_OR_RETURN(
        const json* params, GetArray(algorithm_json, "params", algorithm_path));
    std::set<std::string> param_names;
    for (size_t p = 0; p < params->size(); ++p) {
      v1::Parameter* param = algorithm->add_parameters();
      const std::string param_path =
          absl::StrCat(raw_algorithm_path, ".params[", p, "]");
      METAOPT_RETURN_IF_ERROR(ParseParameter((*params)[p], param_path, param));
      if (!param_names.insert(param->name()).second) {
        return SpaceError(
            NamedPath(param_path, (*params)[p]),
            absl::StrCat("duplicate parameter name ", Quote(param->name()),
                         " in algorithm ", Quote(algorithm->name())));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::vector<std::string> EvaluationColumns(const v1::SearchSpace& space) {
  std::map<std::string, std::set<int>>
      stages_of;  // "<algorithm>.<param>" -> stages.
  for (int s = 0; s < space.stages_size(); ++s) {
    for (const v1::Algorithm& algorithm : space.stages(s).algorithms()) {
      for (const v1::Parameter& param : algorithm.parameters()) {
        stages_of[absl::StrCat(algorithm.name(), ".", param.name())].insert(s);
      }
    }
  }
  std::vector<std::string> columns = {"task"};
  for (const v1::Stage& stage : space.stages()) columns.push_back(stage.name());
  for (const v1::Stage& stage : space.stages()) {
    for (const v1::Algorithm& algorithm : stage.algorithms()) {
      for (const v1::Parameter& param : algorithm.parameters()) {
        std::string column = absl::StrCat(algorithm.name(), ".", param.name());
        if (stages_of[column].size() > 1)
          column = absl::StrCat(stage.name(), ".", column);
        columns.push_back(std::move(column));
      }
    }
  }
  columns.push_back("y");
  return columns;
}

absl::StatusOr<SpaceFile> ParseSpaceJson(std::string_view text) {
  json root;
  try {
    root = json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(kSpaceFile, ": invalid JSON: ", e.what()));
  }
  if (!root.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(kSpaceFile, ": the top level must be a JSON object"));
  }
  SpaceFile result;
  METAOPT_ASSIGN_OR_RETURN(result.name, GetName(root, "(top level)"));

  METAOPT_ASSIGN_OR_RETURN(const json* objective,
                           GetMember(root, "objective", "(top level)"));
  if (!objective->is_object())
    return SpaceError("objective", "must be an object");
  METAOPT_ASSIGN_OR_RETURN(std::string objective_name,
                           GetName(*objective, "objective"));
  result.objective.set_name(std::move(objective_name));
  METAOPT_ASSIGN_OR_RETURN(const json* goal,
                           GetMember(*objective, "goal", "objective"));
  if (goal->is_string() && *goal == "minimize") {
    result.objective.set_goal(v1::GOAL_MINIMIZE);
  } else if (goal->is_string() && *goal == "maximize") {
    result.objective.set_goal(v1::GOAL_MAXIMIZE);
  } else {
    return SpaceError("objective",
                      absl::StrCat("goal ", goal->dump(),
                                   " is not \"minimize\" or \"maximize\""));
  }

  METAOPT_ASSIGN_OR_RETURN(const json* stages,
                           GetArray(root, "stages", "(top level)"));
  if (stages->empty())
    return SpaceError("stages", "no stages (at least one is required)");
  std::set<std::string> stage_names;
  for (size_t s = 0; s < stages->size(); ++s) {
    v1::Stage* stage = result.space.add_stages();
    const std::string path = absl::StrCat("stages[", s, "]");
    METAOPT_RETURN_IF_ERROR(ParseStage((*stages)[s], path, stage));
    if (!stage_names.insert(stage->name()).second) {
      return SpaceError(
          NamedPath(path, (*stages)[s]),
          absl::StrCat("duplicate stage name ", Quote(stage->name())));
    }
  }
  // Every column name of evaluations.csv must be unique (e.g. no stage named
  // "task" or "y").
  std::set<std::string> columns;
  for (const std::string& column : EvaluationColumns(result.space)) {
    if (!columns.insert(column).second) {
      return SpaceError("stages",
                        absl::StrCat("the evaluations.csv column name ",
                                     Quote(column), " would occur twice"));
    }
  }
  // The rules of every search space of the service (name lengths, control
  // characters, int bounds within +-2^53, size limits), so that a study or a
  // model over this space can be created.
  if (absl::Status status = space::ValidateSearchSpace(result.space, "");
      !status.ok()) {
    // With an empty prefix the paths read ".stages[1]...".
    return absl::InvalidArgumentError(absl::StrCat(
        kSpaceFile, ": ", absl::StripPrefix(status.message(), ".")));
  }
  return result;
}

}  // namespace metaopt::meta
