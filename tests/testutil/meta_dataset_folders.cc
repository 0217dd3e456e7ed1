#include "tests/testutil/meta_dataset_folders.h"

#include <filesystem>
#include <fstream>
#include <string_view>
#include <vector>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/common/status_macros.h"
#include "core/meta_dataset/meta_dataset_writer.h"

namespace metaopt::meta {

absl::StatusOr<FolderText> RenderMetaDataset(const MetaDataset& dataset) {
  FolderText text;
  text.space_json =
      RenderSpaceJson(dataset.name, dataset.space, dataset.objective);

  std::vector<std::string> task_header = {"task", "name", "split", "n_rows",
                                          "n_features"};
  task_header.insert(task_header.end(), dataset.task_property_names.begin(),
                     dataset.task_property_names.end());
  text.tasks_csv = absl::StrCat(absl::StrJoin(task_header, ","), "\n");
  // Task::values as columns after y (those of the first task, every task has
  // them).
  std::vector<std::string> value_columns;
  if (!dataset.tasks.empty()) {
    for (const auto& [name, values] : dataset.tasks.front().values) {
      value_columns.push_back(name);
    }
  }
  std::vector<std::string> header = EvaluationColumns(dataset.space);
  header.insert(header.end(), value_columns.begin(), value_columns.end());
  text.evaluations_csv = absl::StrCat(absl::StrJoin(header, ","), "\n");
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
    for (const std::string& name : value_columns) {
      const auto it = task.values.find(name);
      if (it == task.values.end() || it->second.size() != task.y.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("task \"", task.id, "\": values \"", name,
                         "\" missing or not aligned with y"));
      }
    }
    for (size_t i = 0; i < task.configurations.size(); ++i) {
      std::vector<std::string> extra;
      for (const std::string& name : value_columns) {
        extra.push_back(FormatNumber(task.values.at(name)[i]));
      }
      METAOPT_RETURN_IF_ERROR(AppendEvaluationRow(
          dataset.space, task.id, task.configurations[i], task.y[i], extra,
          absl::StrCat("task \"", task.id, "\" configuration ", i),
          &text.evaluations_csv));
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
