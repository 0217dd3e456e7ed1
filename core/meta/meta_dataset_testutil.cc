#include "core/meta/meta_dataset_testutil.h"

#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string_view>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/common/status_macros.h"
#include "nlohmann/json.hpp"

namespace metaopt::meta {
namespace {

using json = nlohmann::json;

// Shortest text that round-trips to `x` (C locale).
std::string FormatNumber(double x) {
  char buffer[64];
  const auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), x);
  return std::string(buffer, end);
}

json SpaceToJson(const MetaDataset& dataset) {
  json stages = json::array();
  for (const v1::Stage& stage : dataset.space.stages()) {
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
  return {
      {"name", dataset.name},
      {"objective",
       {{"name", dataset.objective.name()},
        {"goal", dataset.objective.goal() == v1::GOAL_MAXIMIZE ? "maximize"
                                                               : "minimize"}}},
      {"stages", std::move(stages)}};
}

absl::Status AppendRow(const v1::SearchSpace& space, const Task& task, size_t i,
                       std::string* out) {
  const v1::Configuration& config = task.configurations[i];
  const std::string where =
      absl::StrCat("task \"", task.id, "\" configuration ", i);
  if (config.assignments_size() != space.stages_size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": ", config.assignments_size(),
                     " assignments for ", space.stages_size(), " stages"));
  }
  std::vector<std::string> cells = {task.id};
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
  cells.push_back(FormatNumber(task.y[i]));
  absl::StrAppend(out, absl::StrJoin(cells, ","), "\n");
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<FolderText> RenderMetaDataset(const MetaDataset& dataset) {
  FolderText text;
  text.space_json = SpaceToJson(dataset).dump(1) + "\n";

  std::vector<std::string> task_header = {"task", "name", "split", "n_rows",
                                          "n_features"};
  task_header.insert(task_header.end(), dataset.task_property_names.begin(),
                     dataset.task_property_names.end());
  text.tasks_csv = absl::StrCat(absl::StrJoin(task_header, ","), "\n");
  text.evaluations_csv =
      absl::StrCat(absl::StrJoin(EvaluationColumns(dataset.space), ","), "\n");
  for (const Task& task : dataset.tasks) {
    std::vector<std::string> cells = {
        task.id, task.name, task.split,
        task.n_rows ? absl::StrCat(*task.n_rows) : std::string(),
        task.n_features ? absl::StrCat(*task.n_features) : std::string()};
    for (const std::string& property : dataset.task_property_names) {
      const auto it = task.properties.find(property);
      cells.push_back(it == task.properties.end() ? std::string() : it->second);
    }
    absl::StrAppend(&text.tasks_csv, absl::StrJoin(cells, ","), "\n");
    if (task.configurations.size() != task.y.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "task \"", task.id, "\": configurations and y differ in size"));
    }
    for (size_t i = 0; i < task.configurations.size(); ++i) {
      METAOPT_RETURN_IF_ERROR(
          AppendRow(dataset.space, task, i, &text.evaluations_csv));
    }
  }
  if (!dataset.metafeature_names.empty()) {
    text.metafeatures_csv = absl::StrCat(
        "task,", absl::StrJoin(dataset.metafeature_names, ","), "\n");
    for (const Task& task : dataset.tasks) {
      if (task.metafeatures.empty()) continue;
      std::vector<std::string> cells = {task.id};
      for (const std::string& feature : dataset.metafeature_names) {
        const auto it = task.metafeatures.find(feature);
        cells.push_back(it == task.metafeatures.end()
                            ? std::string()
                            : FormatNumber(it->second));
      }
      absl::StrAppend(&text.metafeatures_csv, absl::StrJoin(cells, ","), "\n");
    }
  }
  return text;
}

absl::Status WriteFolder(const FolderText& text, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot create ", dir, ": ", ec.message()));
  }
  const std::pair<const char*, const std::string*> files[] = {
      {"space.json", &text.space_json},
      {"evaluations.csv", &text.evaluations_csv},
      {"tasks.csv", &text.tasks_csv},
      {"metafeatures.csv", &text.metafeatures_csv}};
  for (const auto& [name, content] : files) {
    const std::string path = absl::StrCat(dir, "/", name);
    if (content->empty() && std::string_view(name) == "metafeatures.csv") {
      std::filesystem::remove(path, ec);
      continue;
    }
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << *content;
    out.close();
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  }
  return absl::OkStatus();
}

absl::Status WriteMetaDataset(const MetaDataset& dataset,
                              const std::string& dir) {
  METAOPT_ASSIGN_OR_RETURN(FolderText text, RenderMetaDataset(dataset));
  return WriteFolder(text, dir);
}

}  // namespace metaopt::meta
