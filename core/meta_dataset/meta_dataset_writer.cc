#include "core/meta_dataset/meta_dataset_writer.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"

namespace metaopt::meta {

std::string FormatNumber(double x) {
  char buffer[64];
  const auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), x);
  return std::string(buffer, end);
}

std::string RenderSpaceJson(absl::string_view name,
                            const v1::SearchSpace& space,
                            const v1::Objective& objective) {
  using json = nlohmann::json;
  json stages = json::array();
  for (const v1::Stage& stage : space.stages()) {
    json algorithms = json::array();
    for (const v1::Algorithm& algorithm : stage.algorithms()) {
      json params = json::array();
      for (const v1::Parameter& param : algorithm.parameters()) {
        json p = {{"name", param.name()}};
        if (param.has_float_domain()) {
          p["type"] = "float";
          p["low"] = param.float_domain().low();
          p["high"] = param.float_domain().high();
          p["log"] = param.float_domain().log();
        } else if (param.has_int_domain()) {
          p["type"] = "int";
          p["low"] = param.int_domain().low();
          p["high"] = param.int_domain().high();
          p["log"] = param.int_domain().log();
        } else {
          p["type"] = "categorical";
          p["values"] = json::array();
          for (const std::string& value : param.categorical_domain().values()) {
            p["values"].push_back(value);
          }
        }
        params.push_back(std::move(p));
      }
      algorithms.push_back(
          {{"name", algorithm.name()}, {"params", std::move(params)}});
    }
    stages.push_back(
        {{"name", stage.name()}, {"algorithms", std::move(algorithms)}});
  }
  const json root = {
      {"name", std::string(name)},
      {"objective",
       {{"name", objective.name()},
        {"goal",
         objective.goal() == v1::GOAL_MAXIMIZE ? "maximize" : "minimize"}}},
      {"stages", std::move(stages)}};
  return root.dump(1) + "\n";
}

absl::Status AppendEvaluationRow(const v1::SearchSpace& space,
                                 absl::string_view task_id,
                                 const v1::Configuration& config, double y,
                                 absl::Span<const std::string> extra,
                                 absl::string_view where, std::string* out) {
  if (config.assignments_size() != space.stages_size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": ", config.assignments_size(),
                     " assignments for ", space.stages_size(), " stages"));
  }
  std::vector<std::string> cells = {std::string(task_id)};
  for (const v1::Assignment& assignment : config.assignments()) {
    cells.push_back(assignment.algorithm());
  }
  for (int s = 0; s < space.stages_size(); ++s) {
    const v1::Assignment& assignment = config.assignments(s);
    for (const v1::Algorithm& algorithm : space.stages(s).algorithms()) {
      for (const v1::Parameter& param : algorithm.parameters()) {
        if (algorithm.name() != assignment.algorithm()) {
          cells.emplace_back();
          continue;
        }
        const auto it = assignment.parameters().find(param.name());
        if (it == assignment.parameters().end()) {
          return absl::InvalidArgumentError(absl::StrCat(
              where, ": parameter \"", param.name(), "\" missing"));
        }
        const v1::ParameterValue& value = it->second;
        if (param.has_categorical_domain() != value.has_category()) {
          return absl::InvalidArgumentError(absl::StrCat(
              where, ": parameter \"", param.name(), "\" has the wrong kind"));
        }
        if (value.has_category()) {
          cells.push_back(value.category());
        } else if (param.has_int_domain()) {
          cells.push_back(
              absl::StrCat(static_cast<int64_t>(std::llround(value.number()))));
        } else {
          cells.push_back(FormatNumber(value.number()));
        }
      }
    }
  }
  cells.push_back(FormatNumber(y));
  cells.insert(cells.end(), extra.begin(), extra.end());
  absl::StrAppend(out, absl::StrJoin(cells, ","), "\n");
  return absl::OkStatus();
}

}  // namespace metaopt::meta
