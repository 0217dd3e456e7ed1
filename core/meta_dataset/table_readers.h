// The readers of a meta-dataset's tables (docs/meta_datasets.md): tasks.csv,
// evaluations.csv (resolved against the search space of space.json) and
// metafeatures.csv. Internal to ReadMetaDataset; errors name file:line, the
// column and the rule. Thread-compatible (no shared state).
#ifndef METAOPT_CORE_META_DATASET_TABLE_READERS_H_
#define METAOPT_CORE_META_DATASET_TABLE_READERS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/meta_dataset/csv_reader.h"
#include "core/meta_dataset/meta_dataset.h"
#include "metaopt/v1/study.pb.h"

namespace metaopt::meta {

// The values of tasks.csv `split`.
inline constexpr absl::string_view kTaskSplits[] = {"train", "valid", "test",
                                                    "holdout"};

// tasks.csv, read whole.
struct TaskTable {
  std::vector<Task> tasks;
  std::vector<int64_t> lines;  // Line of each task in tasks.csv.
  std::vector<std::string> property_names;
  absl::flat_hash_map<std::string, int> index;
};

// Reads tasks.csv (`csv` positioned before its header).
absl::StatusOr<TaskTable> ReadTasks(CsvReader csv);

// The columns of evaluations.csv, resolved against the search space.
enum class ParamKind { kFloat, kInt, kCategorical };

struct ParamColumn {
  int stage = 0;
  int algorithm = 0;
  std::string name;
  std::string column;
  ParamKind kind = ParamKind::kFloat;
  double low = 0;
  double high = 0;
  std::vector<std::string> values;  // Categorical only.
};

struct StageColumn {
  std::string name;
  std::vector<std::string> algorithms;
  std::vector<std::vector<int>>
      params;  // Per algorithm: indices into Layout::params.
};

struct Layout {
  std::vector<StageColumn> stages;
  std::vector<ParamColumn> params;
};

// The columns of EvaluationColumns(space), with each parameter's domain.
Layout MakeLayout(const v1::SearchSpace& space);

// Reads evaluations.csv into the tasks of `table` that are `selected` (rows of
// the others are validated only); `tasks_label` names tasks.csv in messages.
absl::Status ReadEvaluations(CsvReader csv, const v1::SearchSpace& space,
                             const Layout& layout,
                             const std::vector<bool>& selected,
                             const ReadOptions& options,
                             const std::string& tasks_label, TaskTable* table,
                             int64_t* num_rows);

// Reads metafeatures.csv into the `selected` tasks of `table`; `names` gets
// the feature columns in order.
absl::Status ReadMetafeatures(CsvReader csv, const std::vector<bool>& selected,
                              const std::string& tasks_label, TaskTable* table,
                              std::vector<std::string>* names);

}  // namespace metaopt::meta

#endif  // METAOPT_CORE_META_DATASET_TABLE_READERS_H_
