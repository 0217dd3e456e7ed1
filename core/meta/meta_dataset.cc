#include "core/meta/meta_dataset.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <string_view>
#include <system_error>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "core/common/file_util.h"
#include "core/common/status_macros.h"
#include "core/common/strings.h"
#include "core/space/search_space.h"
#include "nlohmann/json.hpp"

namespace metaopt::meta {
namespace {

using json = nlohmann::json;

constexpr char kSpaceFile[] = "space.json";
constexpr char kEvaluationsFile[] = "evaluations.csv";
constexpr char kTasksFile[] = "tasks.csv";
constexpr char kMetafeaturesFile[] = "metafeatures.csv";

constexpr absl::string_view kTaskSplits[] = {"train", "valid", "test",
                                             "holdout"};
constexpr absl::string_view kTasksHeader[] = {"task", "name", "split", "n_rows",
                                              "n_features"};
constexpr char kSeedPrefix[] = "y_seed";

// ---------------------------------------------------------------------------------------------
// Small text helpers.

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// The C-locale number grammar of the format:
// -?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?
bool IsDecimalNumber(absl::string_view s) {
  size_t i = 0;
  const size_t n = s.size();
  if (i < n && s[i] == '-') ++i;
  size_t start = i;
  while (i < n && IsDigit(s[i])) ++i;
  if (i == start) return false;
  if (i < n && s[i] == '.') {
    start = ++i;
    while (i < n && IsDigit(s[i])) ++i;
    if (i == start) return false;
  }
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < n && (s[i] == '+' || s[i] == '-')) ++i;
    start = i;
    while (i < n && IsDigit(s[i])) ++i;
    if (i == start) return false;
  }
  return i == n;
}

// Parses a finite number in the format's grammar; on failure returns the
// reason.
std::optional<absl::string_view> ParseNumber(absl::string_view s, double* out) {
  if (!IsDecimalNumber(s)) return "is not a number";
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  if (ec != std::errc() || ptr != s.data() + s.size() || !std::isfinite(*out)) {
    return "is not a finite double";
  }
  return std::nullopt;
}

// Parses an integer (-?[0-9]+) that fits in int64; on failure returns the
// reason.
std::optional<absl::string_view> ParseInteger(absl::string_view s,
                                              int64_t* out) {
  size_t i = (!s.empty() && s[0] == '-') ? 1 : 0;
  if (i == s.size()) return "is not an integer";
  for (; i < s.size(); ++i) {
    if (!IsDigit(s[i]))
      return IsDecimalNumber(s) ? "is not an integer" : "is not a number";
  }
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  if (ec != std::errc() || ptr != s.data() + s.size())
    return "is out of the int64 range";
  return std::nullopt;
}

// A name of a stage, algorithm, parameter or categorical value must fit in a
// CSV cell.
std::optional<absl::string_view> BadNameReason(absl::string_view name) {
  if (name.empty()) return "is empty";
  if (name.find_first_of(",\n\r") != absl::string_view::npos) {
    return "contains a comma or a line break";
  }
  return std::nullopt;
}

// The text of a file the format requires.
absl::StatusOr<std::string> ReadRequiredFile(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFileToString(path, "");
  if (absl::IsNotFound(text.status())) {
    return absl::NotFoundError(
        absl::StrCat(text.status().message(), " (required by the format)"));
  }
  return text;
}

// ---------------------------------------------------------------------------------------------
// CSV: whole-file checks, then line by line, split on every comma without
// allocating. A CsvReader owns its text; not thread-safe.

class CsvReader {
 public:
  // `label` names the file in messages (its path). Checks the file-level rules:
  // not empty, no byte-order mark, LF line endings only, last line ends with
  // LF.
  static absl::StatusOr<CsvReader> Create(std::string label, std::string text) {
    if (text.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(label, ": the file is empty (expected a header line)"));
    }
    if (text.size() >= 3 && text.compare(0, 3, "\xEF\xBB\xBF") == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          label,
          ":1: starts with a byte-order mark (the format is plain ASCII)"));
    }
    if (const void* cr = std::memchr(text.data(), '\r', text.size());
        cr != nullptr) {
      const size_t offset = static_cast<const char*>(cr) - text.data();
      const int64_t line =
          1 + std::count(text.begin(), text.begin() + offset, '\n');
      return absl::InvalidArgumentError(absl::StrCat(
          label, ":", line,
          ": CR character (lines must end with LF only, no CR LF)"));
    }
    if (text.back() != '\n') {
      const int64_t line = 1 + std::count(text.begin(), text.end(), '\n');
      return absl::InvalidArgumentError(absl::StrCat(
          label, ":", line, ": the last line does not end with LF"));
    }
    return CsvReader(std::move(label), std::move(text));
  }

  // Reads the next line into `fields` (views into the text); false at the end.
  // A blank line is an error.
  absl::StatusOr<bool> Next(std::vector<absl::string_view>* fields) {
    if (pos_ >= text_.size()) return false;
    ++line_;
    const char* begin = text_.data() + pos_;
    const char* end = static_cast<const char*>(
        std::memchr(begin, '\n', text_.size() - pos_));  // present
    pos_ = end - text_.data() + 1;
    if (begin == end) return Error("blank line (the format has none)");
    fields->clear();
    const char* p = begin;
    while (true) {
      const char* comma =
          static_cast<const char*>(std::memchr(p, ',', end - p));
      if (comma == nullptr) {
        fields->emplace_back(p, end - p);
        break;
      }
      fields->emplace_back(p, comma - p);
      p = comma + 1;
    }
    return true;
  }

  // Checks that a data line has as many fields as the header.
  absl::Status CheckFieldCount(const std::vector<absl::string_view>& fields,
                               size_t expected) const {
    if (fields.size() == expected) return absl::OkStatus();
    return Error(absl::StrCat("expected ", expected,
                              " fields (as in the header), found ",
                              fields.size()));
  }

  // INVALID_ARGUMENT "<label>:<line>: <message>".
  absl::Status Error(absl::string_view message) const {
    return absl::InvalidArgumentError(
        absl::StrCat(label_, ":", line_, ": ", message));
  }
  // INVALID_ARGUMENT "<label>:<line>: column "<column>": <message>".
  absl::Status ColumnError(absl::string_view column,
                           absl::string_view message) const {
    return absl::InvalidArgumentError(absl::StrCat(
        label_, ":", line_, ": column \"", column, "\": ", message));
  }

  const std::string& label() const { return label_; }
  int64_t line() const { return line_; }

 private:
  CsvReader(std::string label, std::string text)
      : label_(std::move(label)), text_(std::move(text)) {}

  std::string label_;
  std::string text_;
  size_t pos_ = 0;
  int64_t line_ = 0;
};

// ---------------------------------------------------------------------------------------------
// space.json

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

// ---------------------------------------------------------------------------------------------
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

struct TaskTable {
  std::vector<Task> tasks;
  std::vector<int64_t> lines;  // Line of each task in tasks.csv.
  std::vector<std::string> property_names;
  absl::flat_hash_map<std::string, int> index;
};

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
