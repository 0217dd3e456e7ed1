// Meta-datasets: recorded evaluations of configurations on many tasks, in the
// folder format of docs/meta_datasets.md (space.json, evaluations.csv,
// tasks.csv, optional metafeatures.csv).
//
//   meta::ReadOptions options;
//   options.splits = {"train", "valid"};
//   METAOPT_ASSIGN_OR_RETURN(meta::MetaDataset data, meta::ReadMetaDataset(dir,
//   options)); METAOPT_ASSIGN_OR_RETURN(std::vector<const meta::Task*> train,
//   data.TasksOfSplit("train"));
//
// The reader validates strictly; every error names the file, the line, the
// column (by header name) and the rule, e.g. `<dir>/evaluations.csv:1234:
// column "KNN.p": "abc" is not a number`.
//
// The parts: space_json.h (space.json), csv_reader.h (the strict CSV reader)
// and table_readers.h (tasks.csv, evaluations.csv, metafeatures.csv).
#ifndef METAOPT_CORE_META_DATASET_META_DATASET_H_
#define METAOPT_CORE_META_DATASET_META_DATASET_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/meta_dataset/space_json.h"
#include "metaopt/v1/study.pb.h"

namespace metaopt::meta {

// One task (dataset) of a meta-dataset with its evaluated configurations. A
// plain value; thread- compatible.
struct Task {
  std::string id;     // tasks.csv `task`: an opaque string, unique within the
                      // meta-dataset.
  std::string name;   // Human-readable name; may be empty.
  std::string split;  // "train", "valid", "test" or "holdout".
  std::optional<int64_t> n_rows;
  std::optional<int64_t> n_features;
  // Non-empty cells of the tasks.csv columns after `n_features` (e.g.
  // `n_classes`), by column name.
  std::map<std::string, std::string> properties;
  // Canonical configurations (one assignment per stage, in stage order, `stage`
  // and `algorithm` always set; `number` for float/int parameters, `category`
  // for categoricals) in file order.
  std::vector<v1::Configuration> configurations;
  std::vector<double> y;  // Objective values, aligned with `configurations`.
  // The evaluations.csv columns of ReadOptions::value_columns, by name, each
  // aligned with `y`.
  std::map<std::string, std::vector<double>> values;
  // Meta-features of the task: only the non-empty cells of its metafeatures.csv
  // row (if any).
  std::map<std::string, double> metafeatures;
};

// A whole meta-dataset folder (or the part of it selected by ReadOptions). A
// plain value; thread- compatible.
struct MetaDataset {
  std::string name;  // space.json `name`.
  v1::SearchSpace space;
  v1::Objective objective;
  // The loaded tasks (all tasks, or those of the selected splits), in tasks.csv
  // order.
  std::vector<Task> tasks;
  // tasks.csv columns after `n_features`, in column order (see
  // Task::properties).
  std::vector<std::string> task_property_names;
  // metafeatures.csv feature columns in column order; empty if the folder has
  // no metafeatures.csv.
  std::vector<std::string> metafeature_names;
  // Data rows of evaluations.csv (all tasks, whatever was selected).
  int64_t num_evaluation_rows = 0;

  // The loaded tasks of `split` ("train", "valid", "test", "holdout" or "all"),
  // in tasks.csv order. Any other split is INVALID_ARGUMENT listing the allowed
  // values.
  absl::StatusOr<std::vector<const Task*>> TasksOfSplit(
      std::string_view split) const;

  // The loaded task with this id, or nullptr.
  const Task* FindTask(std::string_view id) const;
};

struct ReadOptions {
  // Load only the tasks of these splits ("train", "valid", "test", "holdout";
  // "all" or an empty list: every task). Rows of other tasks are still
  // validated but no configurations are built.
  std::vector<std::string> splits;
  // If > 0, keep only the first this many rows of each task (all rows are still
  // validated).
  int64_t max_rows_per_task = 0;
  // Columns of evaluations.csv after `y` to read as numbers into
  // Task::values (e.g. oboe's `runtime_s`). A name the header lacks, a
  // repeated name, `y` itself, or an empty or non-numeric cell of a selected
  // task's row is INVALID_ARGUMENT naming the column (and file:line).
  std::vector<std::string> value_columns;
};

// Reads and validates the meta-dataset folder `dir`. README.md is not read.
// Errors: NOT_FOUND for a missing folder or required file (space.json,
// evaluations.csv, tasks.csv); INVALID_ARGUMENT for bad options or any content
// that breaks the format, naming file:line, the column and the rule.
// Thread-safe (no shared state).
absl::StatusOr<MetaDataset> ReadMetaDataset(const std::string& dir,
                                            const ReadOptions& options = {});

// Whether `split` is one of "train", "valid", "test", "holdout", "all";
// otherwise INVALID_ARGUMENT listing those.
absl::Status ValidateSplitName(std::string_view split);

}  // namespace metaopt::meta

#endif  // METAOPT_CORE_META_DATASET_META_DATASET_H_
