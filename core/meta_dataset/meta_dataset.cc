#include "core/meta_dataset/meta_dataset.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <string_view>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "core/common/file_util.h"
#include "core/common/status_macros.h"
#include "core/common/strings.h"
#include "core/meta_dataset/csv_reader.h"
#include "core/meta_dataset/space_json.h"
#include "core/meta_dataset/table_readers.h"

namespace metaopt::meta {
namespace {

constexpr char kEvaluationsFile[] = "evaluations.csv";
constexpr char kTasksFile[] = "tasks.csv";
constexpr char kMetafeaturesFile[] = "metafeatures.csv";

// The text of a file the format requires.
absl::StatusOr<std::string> ReadRequiredFile(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFileToString(path, "");
  if (absl::IsNotFound(text.status())) {
    return absl::NotFoundError(
        absl::StrCat(text.status().message(), " (required by the format)"));
  }
  return text;
}

std::string JoinPath(const std::string& dir, absl::string_view file) {
  if (dir.empty() || dir.back() == '/') return absl::StrCat(dir, file);
  return absl::StrCat(dir, "/", file);
}

absl::StatusOr<CsvReader> OpenCsv(const std::string& dir,
                                  absl::string_view file) {
  std::string path = JoinPath(dir, file);
  METAOPT_ASSIGN_OR_RETURN(std::string text, ReadRequiredFile(path));
  return CsvReader::Create(std::move(path), std::move(text));
}

std::string AllowedSplits() {
  return absl::StrCat(absl::StrJoin(kTaskSplits, ", "), ", all");
}

}  // namespace

absl::Status ValidateSplitName(std::string_view split_name) {
  const absl::string_view split(split_name.data(), split_name.size());
  if (split == "all" ||
      std::find(std::begin(kTaskSplits), std::end(kTaskSplits), split) !=
          std::end(kTaskSplits)) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown split ", Quote(split),
                                                 " (expected one of ",
                                                 AllowedSplits(), ")"));
}

absl::StatusOr<std::vector<const Task*>> MetaDataset::TasksOfSplit(
    std::string_view split) const {
  METAOPT_RETURN_IF_ERROR(ValidateSplitName(split));
  std::vector<const Task*> result;
  for (const Task& task : tasks) {
    if (split == "all" || task.split == split) result.push_back(&task);
  }
  return result;
}

const Task* MetaDataset::FindTask(std::string_view id) const {
  for (const Task& task : tasks) {
    if (task.id == id) return &task;
  }
  return nullptr;
}

absl::StatusOr<MetaDataset> ReadMetaDataset(const std::string& dir,
                                            const ReadOptions& options) {
  for (const std::string& split : options.splits) {
    absl::Status status = ValidateSplitName(split);
    if (!status.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("ReadOptions.splits: ", status.message()));
    }
  }
  if (options.max_rows_per_task < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ReadOptions.max_rows_per_task: ", options.max_rows_per_task,
        " is negative"));
  }
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return absl::NotFoundError(
        absl::StrCat("meta-dataset folder ", dir, " does not exist"));
  }

  const std::string space_path = JoinPath(dir, kSpaceFile);
  METAOPT_ASSIGN_OR_RETURN(const std::string space_text,
                           ReadRequiredFile(space_path));
  absl::StatusOr<SpaceFile> space_file = ParseSpaceJson(space_text);
  if (!space_file.ok()) {
    // Messages start with "space.json: "; name the full path instead.
    return absl::InvalidArgumentError(absl::StrCat(
        space_path, absl::string_view(space_file.status().message())
                        .substr(std::strlen(kSpaceFile))));
  }

  MetaDataset result;
  result.name = std::move(space_file->name);
  result.space = std::move(space_file->space);
  result.objective = std::move(space_file->objective);

  METAOPT_ASSIGN_OR_RETURN(CsvReader tasks_csv, OpenCsv(dir, kTasksFile));
  const std::string tasks_label = tasks_csv.label();
  METAOPT_ASSIGN_OR_RETURN(TaskTable table, ReadTasks(std::move(tasks_csv)));

  const bool all_splits =
      options.splits.empty() ||
      std::find(options.splits.begin(), options.splits.end(), "all") !=
          options.splits.end();
  std::vector<bool> selected(table.tasks.size());
  for (size_t t = 0; t < table.tasks.size(); ++t) {
    selected[t] =
        all_splits || std::find(options.splits.begin(), options.splits.end(),
                                table.tasks[t].split) != options.splits.end();
  }

  METAOPT_ASSIGN_OR_RETURN(CsvReader evaluations_csv,
                           OpenCsv(dir, kEvaluationsFile));
  const Layout layout = MakeLayout(result.space);
  METAOPT_RETURN_IF_ERROR(ReadEvaluations(
      std::move(evaluations_csv), result.space, layout, selected, options,
      tasks_label, &table, &result.num_evaluation_rows));

  const std::string metafeatures_path = JoinPath(dir, kMetafeaturesFile);
  if (std::filesystem::exists(metafeatures_path, ec)) {
    METAOPT_ASSIGN_OR_RETURN(CsvReader metafeatures_csv,
                             OpenCsv(dir, kMetafeaturesFile));
    METAOPT_RETURN_IF_ERROR(ReadMetafeatures(std::move(metafeatures_csv),
                                             selected, tasks_label, &table,
                                             &result.metafeature_names));
  }

  result.task_property_names = std::move(table.property_names);
  for (size_t t = 0; t < table.tasks.size(); ++t) {
    if (selected[t]) result.tasks.push_back(std::move(table.tasks[t]));
  }
  return result;
}

}  // namespace metaopt::meta
