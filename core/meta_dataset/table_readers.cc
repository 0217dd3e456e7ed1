#include "core/meta_dataset/table_readers.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <set>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/common/status_macros.h"
#include "core/common/strings.h"
#include "core/meta_dataset/space_json.h"

namespace metaopt::meta {
namespace {

constexpr absl::string_view kTasksHeader[] = {"task", "name", "split", "n_rows",
                                              "n_features"};
constexpr char kSeedPrefix[] = "y_seed";

struct EvaluationColumnsCheck {
  size_t num_fields = 0;
  std::vector<std::string> seed_columns;
};

absl::StatusOr<EvaluationColumnsCheck> CheckEvaluationHeader(
    const CsvReader& csv, const std::vector<absl::string_view>& fields,
    const std::vector<std::string>& expected) {
  for (size_t i = 0; i < expected.size(); ++i) {
    if (i >= fields.size()) {
      return csv.Error(absl::StrCat(
          "the header has ", fields.size(),
          " columns but space.json requires at least ", expected.size(),
          "; column ", i + 1, " must be \"", expected[i],
          "\" (expected header start: ", absl::StrJoin(expected, ","), ")"));
    }
    if (fields[i] != expected[i]) {
      return csv.Error(absl::StrCat(
          "header column ", i + 1, " is ", Quote(fields[i]),
          " but space.json requires \"", expected[i],
          "\" (expected header start: ", absl::StrJoin(expected, ","), ")"));
    }
  }
  EvaluationColumnsCheck check;
  check.num_fields = fields.size();
  std::set<absl::string_view> names(fields.begin(),
                                    fields.begin() + expected.size());
  size_t i = expected.size();
  for (; i < fields.size() && absl::StartsWith(fields[i], kSeedPrefix); ++i) {
    const std::string want =
        absl::StrCat(kSeedPrefix, check.seed_columns.size());
    if (fields[i] != want) {
      return csv.Error(absl::StrCat(
          "header column ", i + 1, " is ", Quote(fields[i]),
          " but the seed columns after \"y\" must be y_seed0, y_seed1, "
          "... in order (expected \"",
          want, "\")"));
    }
    check.seed_columns.push_back(want);
    names.insert(fields[i]);
  }
  for (; i < fields.size(); ++i) {
    if (fields[i].empty())
      return csv.Error(absl::StrCat("header column ", i + 1, " has no name"));
    if (absl::StartsWith(fields[i], kSeedPrefix)) {
      return csv.Error(
          absl::StrCat("header column ", i + 1, " ", Quote(fields[i]),
                       ": y_seed columns must directly follow \"y\""));
    }
    if (!names.insert(fields[i]).second) {
      return csv.Error(absl::StrCat("header column ", i + 1,
                                    ": duplicate column name ",
                                    Quote(fields[i])));
    }
  }
  return check;
}

// Appends the raw bytes of `value` to `key`.
template <typename T>
void AppendBytes(const T& value, std::string* key) {
  key->append(reinterpret_cast<const char*>(&value), sizeof(value));
}

// The configuration keys of one task's rows, stored back to back in one buffer
// (no allocation per row), and a hash set of row indices over them to find
// duplicates. Not thread-safe.
class ConfigurationKeys {
 public:
  ConfigurationKeys() : rows_(0, Hash{this}, Eq{this}) {}
  ConfigurationKeys(const ConfigurationKeys&) = delete;
  ConfigurationKeys& operator=(const ConfigurationKeys&) = delete;

  void Clear() {
    bytes_.clear();
    offsets_.assign(1, 0);
    rows_.clear();
  }

  // Adds the key of the next row (the bytes appended to `buffer()` since the
  // last call); returns the index of an earlier row with the same key, or -1.
  int64_t Add() {
    const int64_t row = static_cast<int64_t>(offsets_.size()) - 1;
    offsets_.push_back(bytes_.size());
    const auto [it, inserted] = rows_.insert(row);
    if (inserted) return -1;
    bytes_.resize(offsets_[row]);  // Forget the duplicate.
    offsets_.pop_back();
    return *it;
  }

  std::string* buffer() { return &bytes_; }

 private:
  absl::string_view Key(int64_t row) const {
    return absl::string_view(bytes_).substr(offsets_[row],
                                            offsets_[row + 1] - offsets_[row]);
  }
  struct Hash {
    const ConfigurationKeys* keys;
    size_t operator()(int64_t row) const {
      return absl::Hash<absl::string_view>()(keys->Key(row));
    }
  };
  struct Eq {
    const ConfigurationKeys* keys;
    bool operator()(int64_t a, int64_t b) const {
      return keys->Key(a) == keys->Key(b);
    }
  };

  std::string bytes_;
  std::vector<size_t> offsets_ = {0};
  absl::flat_hash_set<int64_t, Hash, Eq> rows_;
};

}  // namespace

Layout MakeLayout(const v1::SearchSpace& space) {
  const std::vector<std::string> columns = EvaluationColumns(space);
  Layout layout;
  size_t column = 1 + space.stages_size();
  for (int s = 0; s < space.stages_size(); ++s) {
    const v1::Stage& stage = space.stages(s);
    StageColumn& stage_column = layout.stages.emplace_back();
    stage_column.name = stage.name();
    for (int a = 0; a < stage.algorithms_size(); ++a) {
      const v1::Algorithm& algorithm = stage.algorithms(a);
      stage_column.algorithms.push_back(algorithm.name());
      std::vector<int>& indices = stage_column.params.emplace_back();
      for (const v1::Parameter& param : algorithm.parameters()) {
        indices.push_back(static_cast<int>(layout.params.size()));
        ParamColumn& p = layout.params.emplace_back();
        p.stage = s;
        p.algorithm = a;
        p.name = param.name();
        p.column = columns[column++];
        if (param.has_float_domain()) {
          p.kind = ParamKind::kFloat;
          p.low = param.float_domain().low();
          p.high = param.float_domain().high();
        } else if (param.has_int_domain()) {
          p.kind = ParamKind::kInt;
          p.low = static_cast<double>(param.int_domain().low());
          p.high = static_cast<double>(param.int_domain().high());
        } else {
          p.kind = ParamKind::kCategorical;
          p.values.assign(param.categorical_domain().values().begin(),
                          param.categorical_domain().values().end());
        }
      }
    }
  }
  return layout;
}

// ---------------------------------------------------------------------------------------------
// tasks.csv

absl::StatusOr<TaskTable> ReadTasks(CsvReader csv) {
  std::vector<absl::string_view> fields;
  // The header line (CsvReader::Create ensures there is one).
  METAOPT_RETURN_IF_ERROR(csv.Next(&fields).status());
  const std::string expected_header = absl::StrJoin(kTasksHeader, ",");
  bool header_ok = fields.size() >= std::size(kTasksHeader);
  for (size_t i = 0; header_ok && i < std::size(kTasksHeader); ++i) {
    header_ok = fields[i] == kTasksHeader[i];
  }
  if (!header_ok) {
    return csv.Error(absl::StrCat("the header must start with \"",
                                  expected_header, "\", found ",
                                  Quote(absl::StrJoin(fields, ","))));
  }
  TaskTable table;
  std::set<absl::string_view> names(std::begin(kTasksHeader),
                                    std::end(kTasksHeader));
  for (size_t i = std::size(kTasksHeader); i < fields.size(); ++i) {
    if (fields[i].empty())
      return csv.Error(absl::StrCat("column ", i + 1, " has no name"));
    if (!names.insert(fields[i]).second) {
      return csv.Error(
          absl::StrCat("duplicate column name ", Quote(fields[i])));
    }
    table.property_names.emplace_back(fields[i]);
  }
  const size_t num_fields = fields.size();
  while (true) {
    METAOPT_ASSIGN_OR_RETURN(const bool more, csv.Next(&fields));
    if (!more) break;
    METAOPT_RETURN_IF_ERROR(csv.CheckFieldCount(fields, num_fields));
    Task task;
    if (fields[0].empty()) return csv.ColumnError("task", "empty task id");
    task.id = std::string(fields[0]);
    task.name = std::string(fields[1]);
    if (std::find(std::begin(kTaskSplits), std::end(kTaskSplits), fields[2]) ==
        std::end(kTaskSplits)) {
      return csv.ColumnError(
          "split",
          absl::StrCat(Quote(fields[2]), " is not a split (expected one of ",
                       absl::StrJoin(kTaskSplits, ", "), ")"));
    }
    task.split = std::string(fields[2]);
    for (int i = 3; i <= 4; ++i) {
      if (fields[i].empty()) continue;
      int64_t value;
      const auto reason = ParseInteger(fields[i], &value);
      if (reason || value < 0) {
        return csv.ColumnError(
            kTasksHeader[i],
            absl::StrCat(Quote(fields[i]), " is not a non-negative integer"));
      }
      (i == 3 ? task.n_rows : task.n_features) = value;
    }
    for (size_t i = std::size(kTasksHeader); i < num_fields; ++i) {
      if (!fields[i].empty()) {
        task.properties.emplace(
            table.property_names[i - std::size(kTasksHeader)],
            std::string(fields[i]));
      }
    }
    const auto [it, inserted] =
        table.index.emplace(task.id, static_cast<int>(table.tasks.size()));
    if (!inserted) {
      return csv.ColumnError(
          "task",
          absl::StrCat("duplicate task ", Quote(task.id), " (first at line ",
                       table.lines[it->second], ")"));
    }
    table.tasks.push_back(std::move(task));
    table.lines.push_back(csv.line());
  }
  if (table.tasks.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(csv.label(), ": no tasks (only a header)"));
  }
  return table;
}

// ---------------------------------------------------------------------------------------------
// evaluations.csv

absl::Status ReadEvaluations(CsvReader csv, const v1::SearchSpace& space,
                             const Layout& layout,
                             const std::vector<bool>& selected,
                             const ReadOptions& options,
                             const std::string& tasks_label, TaskTable* table,
                             int64_t* num_rows) {
  std::vector<absl::string_view> fields;
  // The header line (CsvReader::Create ensures there is one).
  METAOPT_RETURN_IF_ERROR(csv.Next(&fields).status());
  const std::vector<std::string> expected = EvaluationColumns(space);
  METAOPT_ASSIGN_OR_RETURN(const EvaluationColumnsCheck header,
                           CheckEvaluationHeader(csv, fields, expected));

  const size_t num_stages = layout.stages.size();
  const size_t num_params = layout.params.size();
  const size_t first_param = 1 + num_stages;
  const size_t y_column = first_param + num_params;
  const size_t num_seeds = header.seed_columns.size();
  // ReadOptions::value_columns: their positions in the header.
  std::vector<size_t> value_positions;
  for (size_t v = 0; v < options.value_columns.size(); ++v) {
    const std::string& name = options.value_columns[v];
    const auto it = std::find(fields.begin() + y_column + 1, fields.end(),
                              absl::string_view(name));
    if (it == fields.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "ReadOptions.value_columns: ", Quote(name), " is not a column of ",
          csv.label(), " after \"y\""));
    }
    if (std::find(options.value_columns.begin(),
                  options.value_columns.begin() + v,
                  name) != options.value_columns.begin() + v) {
      return absl::InvalidArgumentError(
          absl::StrCat("ReadOptions.value_columns: ", Quote(name),
                       " is listed twice"));
    }
    value_positions.push_back(static_cast<size_t>(it - fields.begin()));
  }

  std::vector<int> chosen(num_stages);
  std::vector<double> numbers(num_params);
  std::vector<int> categories(num_params);
  ConfigurationKeys keys;  // Of the current task's rows.
  std::string* key = keys.buffer();
  std::vector<int64_t> first_line(table->tasks.size(), 0);
  int current = -1;
  absl::string_view current_id;
  Task* current_task = nullptr;
  int64_t rows = 0;

  while (true) {
    METAOPT_ASSIGN_OR_RETURN(const bool more, csv.Next(&fields));
    if (!more) break;
    ++rows;
    METAOPT_RETURN_IF_ERROR(csv.CheckFieldCount(fields, header.num_fields));

    // Task: rows are grouped by task, in tasks.csv order.
    if (current < 0 || fields[0] != current_id) {
      const auto it = table->index.find(fields[0]);
      if (it == table->index.end()) {
        return csv.ColumnError(
            "task", absl::StrCat("task ", Quote(fields[0]), " is not in ",
                                 tasks_label));
      }
      const int next = it->second;
      if (first_line[next] != 0) {
        return csv.ColumnError(
            "task",
            absl::StrCat("rows of task ", Quote(fields[0]),
                         " are not contiguous (its rows started at line ",
                         first_line[next], ", then rows of task ",
                         Quote(current_id), " came in between)"));
      }
      if (next < current) {
        return csv.ColumnError(
            "task",
            absl::StrCat(
                "task ", Quote(fields[0]), " follows task ", Quote(current_id),
                " but comes before it in tasks.csv (rows must be grouped by "
                "task in tasks.csv order)"));
      }
      current = next;
      current_id = table->tasks[current].id;
      current_task = selected[current] ? &table->tasks[current] : nullptr;
      first_line[current] = csv.line();
      keys.Clear();
    }

    // Stages.
    for (size_t s = 0; s < num_stages; ++s) {
      const StageColumn& stage = layout.stages[s];
      const absl::string_view cell = fields[1 + s];
      int a = 0;
      const int num_algorithms = static_cast<int>(stage.algorithms.size());
      while (a < num_algorithms && stage.algorithms[a] != cell) ++a;
      if (a == num_algorithms) {
        return csv.ColumnError(
            stage.name,
            absl::StrCat(cell.empty() ? std::string("empty") : Quote(cell),
                         " is not an algorithm of stage \"", stage.name,
                         "\" (expected one of ",
                         absl::StrJoin(stage.algorithms, ", "), ")"));
      }
      chosen[s] = a;
      AppendBytes(static_cast<int32_t>(a), key);
    }

    // Parameters: set exactly when their algorithm is chosen.
    for (size_t p = 0; p < num_params; ++p) {
      const ParamColumn& param = layout.params[p];
      const absl::string_view cell = fields[first_param + p];
      const bool active = chosen[param.stage] == param.algorithm;
      if (!active) {
        if (!cell.empty()) {
          const StageColumn& stage = layout.stages[param.stage];
          return csv.ColumnError(
              param.column,
              absl::StrCat(Quote(cell), " is set but stage \"", stage.name,
                           "\" chose \"", stage.algorithms[chosen[param.stage]],
                           "\" (a parameter is set exactly when its algorithm "
                           "is chosen)"));
        }
        continue;
      }
      if (cell.empty()) {
        const StageColumn& stage = layout.stages[param.stage];
        return csv.ColumnError(
            param.column,
            absl::StrCat("empty but stage \"", stage.name, "\" chose \"",
                         stage.algorithms[param.algorithm],
                         "\" (a parameter is set exactly when its algorithm is "
                         "chosen)"));
      }
      if (param.kind == ParamKind::kCategorical) {
        int c = 0;
        const int num_values = static_cast<int>(param.values.size());
        while (c < num_values && param.values[c] != cell) ++c;
        if (c == num_values) {
          return csv.ColumnError(
              param.column,
              absl::StrCat(Quote(cell), " is not one of the values [",
                           absl::StrJoin(param.values, ", "), "]"));
        }
        categories[p] = c;
        AppendBytes(static_cast<int32_t>(c), key);
        continue;
      }
      double x;
      if (param.kind == ParamKind::kInt) {
        int64_t i;
        if (auto reason = ParseInteger(cell, &i)) {
          return csv.ColumnError(param.column,
                                 absl::StrCat(Quote(cell), " ", *reason));
        }
        x = static_cast<double>(i);
      } else if (auto reason = ParseNumber(cell, &x)) {
        return csv.ColumnError(param.column,
                               absl::StrCat(Quote(cell), " ", *reason));
      }
      if (x < param.low || x > param.high) {
        return csv.ColumnError(
            param.column, absl::StrCat(Quote(cell), " is outside [", param.low,
                                       ", ", param.high, "]"));
      }
      x += 0.0;  // -0 -> +0, so that equal values have equal keys.
      numbers[p] = x;
      AppendBytes(x, key);
    }

    // Objective and per-seed values.
    double y;
    if (fields[y_column].empty())
      return csv.ColumnError("y", "empty (y is required)");
    if (auto reason = ParseNumber(fields[y_column], &y)) {
      return csv.ColumnError(
          "y", absl::StrCat(Quote(fields[y_column]), " ", *reason));
    }
    for (size_t k = 0; k < num_seeds; ++k) {
      const absl::string_view cell = fields[y_column + 1 + k];
      double value;
      if (cell.empty()) continue;
      if (auto reason = ParseNumber(cell, &value)) {
        return csv.ColumnError(header.seed_columns[k],
                               absl::StrCat(Quote(cell), " ", *reason));
      }
    }

    // Rows of a task are consecutive lines, so row i of the task is on line
    // first_line + i.
    if (const int64_t same = keys.Add(); same >= 0) {
      return csv.Error(absl::StrCat("duplicate configuration in task ",
                                    Quote(current_id), " (same as line ",
                                    first_line[current] + same, ")"));
    }

    if (current_task == nullptr ||
        (options.max_rows_per_task > 0 &&
         static_cast<int64_t>(current_task->y.size()) >=
             options.max_rows_per_task)) {
      continue;
    }
    v1::Configuration& config = current_task->configurations.emplace_back();
    config.mutable_assignments()->Reserve(static_cast<int>(num_stages));
    for (size_t s = 0; s < num_stages; ++s) {
      const StageColumn& stage = layout.stages[s];
      v1::Assignment* assignment = config.add_assignments();
      assignment->set_stage(stage.name);
      assignment->set_algorithm(stage.algorithms[chosen[s]]);
      auto& parameters = *assignment->mutable_parameters();
      for (const int p : stage.params[chosen[s]]) {
        const ParamColumn& param = layout.params[p];
        if (param.kind == ParamKind::kCategorical) {
          parameters[param.name].set_category(param.values[categories[p]]);
        } else {
          parameters[param.name].set_number(numbers[p]);
        }
      }
    }
    current_task->y.push_back(y);
    for (size_t v = 0; v < value_positions.size(); ++v) {
      const std::string& name = options.value_columns[v];
      const absl::string_view cell = fields[value_positions[v]];
      double value;
      if (cell.empty()) return csv.ColumnError(name, "empty (a value column)");
      if (auto reason = ParseNumber(cell, &value)) {
        return csv.ColumnError(name, absl::StrCat(Quote(cell), " ", *reason));
      }
      current_task->values[name].push_back(value);
    }
  }

  for (size_t t = 0; t < table->tasks.size(); ++t) {
    if (first_line[t] == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(tasks_label, ":", table->lines[t], ": task ",
                       Quote(table->tasks[t].id), " has no rows in ",
                       csv.label(), " (every task must appear in both files)"));
    }
  }
  *num_rows = rows;
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------------------------
// metafeatures.csv

absl::Status ReadMetafeatures(CsvReader csv, const std::vector<bool>& selected,
                              const std::string& tasks_label, TaskTable* table,
                              std::vector<std::string>* names) {
  std::vector<absl::string_view> fields;
  // The header line (CsvReader::Create ensures there is one).
  METAOPT_RETURN_IF_ERROR(csv.Next(&fields).status());
  if (fields[0] != "task") {
    return csv.Error(absl::StrCat(
        "the first header column must be \"task\", found ", Quote(fields[0])));
  }
  std::map<absl::string_view, size_t> columns;
  for (size_t i = 1; i < fields.size(); ++i) {
    if (fields[i].empty())
      return csv.Error(absl::StrCat("header column ", i + 1, " has no name"));
    const auto [it, inserted] = columns.emplace(fields[i], i);
    if (!inserted) {
      return csv.Error(absl::StrCat("duplicate feature name ", Quote(fields[i]),
                                    " (columns ", it->second + 1, " and ",
                                    i + 1, ")"));
    }
  }
  names->clear();
  for (size_t i = 1; i < fields.size(); ++i) names->emplace_back(fields[i]);
  const size_t num_fields = fields.size();
  std::vector<int64_t> row_line(table->tasks.size(), 0);
  while (true) {
    METAOPT_ASSIGN_OR_RETURN(const bool more, csv.Next(&fields));
    if (!more) break;
    METAOPT_RETURN_IF_ERROR(csv.CheckFieldCount(fields, num_fields));
    const auto it = table->index.find(fields[0]);
    if (it == table->index.end()) {
      return csv.ColumnError("task", absl::StrCat("task ", Quote(fields[0]),
                                                  " is not in ", tasks_label));
    }
    const int t = it->second;
    if (row_line[t] != 0) {
      return csv.ColumnError(
          "task", absl::StrCat("duplicate row for task ", Quote(fields[0]),
                               " (first at line ", row_line[t], ")"));
    }
    row_line[t] = csv.line();
    Task& task = table->tasks[t];
    for (size_t i = 1; i < num_fields; ++i) {
      if (fields[i].empty()) continue;
      double value;
      if (auto reason = ParseNumber(fields[i], &value)) {
        return csv.ColumnError((*names)[i - 1],
                               absl::StrCat(Quote(fields[i]), " ", *reason));
      }
      if (selected[t]) task.metafeatures.emplace((*names)[i - 1], value);
    }
  }
  return absl::OkStatus();
}

}  // namespace metaopt::meta
