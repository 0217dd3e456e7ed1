// metaopt-bench's learning-curve replay inputs: early-stopping rules from the
// command line and the curves file (bench_lib.h, "Early stopping").
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "bench/bench_lib.h"
#include "core/common/file_util.h"
#include "core/common/status_macros.h"
#include "core/meta_dataset/csv_reader.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"

namespace metaopt::bench {
namespace {

using ::google::protobuf::Descriptor;
using ::google::protobuf::FieldDescriptor;
using ::google::protobuf::Message;
using ::google::protobuf::Reflection;

// Command-line rule names and the field of EarlyStoppingSpec's oneof each
// sets (none: no rule).
struct RuleName {
  const char* name;
  const char* field;
};
constexpr RuleName kRuleNames[] = {
    {"none", nullptr},
    {"median", "median"},
    {"sha", "successive_halving"},
    {"asha", "asha"},
    {"threshold", "threshold"},
};

std::string KnownRules() {
  std::vector<std::string> names;
  for (const RuleName& rule : kRuleNames) names.push_back(rule.name);
  return absl::StrJoin(names, ", ");
}

std::string FieldNames(const Descriptor* descriptor) {
  std::vector<std::string> names;
  for (int i = 0; i < descriptor->field_count(); ++i) {
    names.push_back(std::string(descriptor->field(i)->name()));
  }
  return absl::StrJoin(names, ", ");
}

// Sets `field` of `message` from `text`; the reason on failure.
absl::Status SetNumber(Message& message, const FieldDescriptor* field,
                       absl::string_view text) {
  const Reflection* reflection = message.GetReflection();
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32: {
      int32_t v = 0;
      if (!absl::SimpleAtoi(text, &v)) break;
      reflection->SetInt32(&message, field, v);
      return absl::OkStatus();
    }
    case FieldDescriptor::CPPTYPE_INT64: {
      int64_t v = 0;
      if (!absl::SimpleAtoi(text, &v)) break;
      reflection->SetInt64(&message, field, v);
      return absl::OkStatus();
    }
    case FieldDescriptor::CPPTYPE_DOUBLE: {
      double v = 0;
      if (!absl::SimpleAtod(text, &v) || !std::isfinite(v)) break;
      reflection->SetDouble(&message, field, v);
      return absl::OkStatus();
    }
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("field ", field->name(), " is not a number field"));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("\"", text, "\" is not a finite ", field->cpp_type_name(),
                   " for ", field->name()));
}

}  // namespace

absl::StatusOr<std::vector<EarlyStoppingRule>> ParseEarlyStoppingRules(
    std::string_view comma_list) {
  std::vector<EarlyStoppingRule> out;
  absl::flat_hash_set<std::string> seen;
  for (absl::string_view part : absl::StrSplit(
           absl::string_view(comma_list.data(), comma_list.size()), ',')) {
    const absl::string_view written = absl::StripAsciiWhitespace(part);
    if (written.empty()) continue;
    std::vector<absl::string_view> pieces = absl::StrSplit(written, ':');
    const RuleName* rule = nullptr;
    for (const RuleName& candidate : kRuleNames) {
      if (pieces[0] == candidate.name) rule = &candidate;
    }
    if (rule == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("--early-stopping: unknown rule \"", pieces[0],
                       "\" in \"", written, "\"; known: ", KnownRules()));
    }
    EarlyStoppingRule parsed;
    parsed.name = std::string(written);
    if (rule->field == nullptr) {
      if (pieces.size() > 1) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--early-stopping: \"", written, "\": none has no settings"));
      }
    } else {
      const FieldDescriptor* oneof_field =
          v1::EarlyStoppingSpec::descriptor()->FindFieldByName(rule->field);
      if (oneof_field == nullptr) {
        return absl::InternalError(
            absl::StrCat("v1.EarlyStoppingSpec has no field ", rule->field));
      }
      Message* message = parsed.spec.GetReflection()->MutableMessage(
          &parsed.spec, oneof_field);
      for (size_t i = 1; i < pieces.size(); ++i) {
        std::pair<absl::string_view, absl::string_view> setting =
            absl::StrSplit(pieces[i], absl::MaxSplits('=', 1));
        if (setting.first == "metric") {
          // EarlyStoppingSpec.metric: a column of the curves file.
          if (setting.second.empty()) {
            return absl::InvalidArgumentError(
                absl::StrCat("--early-stopping: \"", written,
                             "\": metric= needs a column of the curves file"));
          }
          parsed.spec.set_metric(std::string(setting.second));
          continue;
        }
        const FieldDescriptor* field =
            message->GetDescriptor()->FindFieldByName(
                std::string(setting.first));
        if (field == nullptr || !absl::StrContains(pieces[i], '=')) {
          return absl::InvalidArgumentError(
              absl::StrCat("--early-stopping: \"", written, "\": \"", pieces[i],
                           "\" is not FIELD=VALUE with a field of ",
                           message->GetDescriptor()->full_name(), " (",
                           FieldNames(message->GetDescriptor()), ")"));
        }
        absl::Status set = SetNumber(*message, field, setting.second);
        if (!set.ok()) {
          return absl::InvalidArgumentError(absl::StrCat(
              "--early-stopping: \"", written, "\": ", set.message()));
        }
      }
    }
    if (!seen.insert(parsed.name).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--early-stopping: \"", parsed.name, "\" is listed twice"));
    }
    out.push_back(std::move(parsed));
  }
  if (out.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--early-stopping: no rule given; known: ", KnownRules()));
  }
  return out;
}

absl::StatusOr<CurveTable> ReadCurves(const std::string& path,
                                      const std::string& column) {
  METAOPT_ASSIGN_OR_RETURN(std::string text,
                           ReadFileToString(path, "curves file"));
  METAOPT_ASSIGN_OR_RETURN(meta::CsvReader reader,
                           meta::CsvReader::Create(path, std::move(text)));
  std::vector<absl::string_view> fields;
  METAOPT_ASSIGN_OR_RETURN(bool has_header, reader.Next(&fields));
  static const char* const kColumns[] = {"task", "config", "epoch", "value"};
  if (!has_header || fields.size() < 4 || fields[0] != kColumns[0] ||
      fields[1] != kColumns[1] || fields[2] != kColumns[2] ||
      fields[3] != kColumns[3]) {
    return reader.Error("the header must start with task,config,epoch,value");
  }
  const size_t columns = fields.size();
  size_t read = 3;
  while (read < columns && fields[read] != column) ++read;
  if (read == columns) {
    return reader.Error(absl::StrCat("no column \"", column, "\""));
  }
  CurveTable table;
  std::string current_task;
  std::vector<std::vector<double>>* curves = nullptr;
  while (true) {
    METAOPT_ASSIGN_OR_RETURN(bool more, reader.Next(&fields));
    if (!more) break;
    METAOPT_RETURN_IF_ERROR(reader.CheckFieldCount(fields, columns));
    if (fields[0].empty()) return reader.ColumnError("task", "is empty");
    int64_t config = 0;
    int64_t epoch = 0;
    double value = 0;
    if (auto why = meta::ParseInteger(fields[1], &config)) {
      return reader.ColumnError("config",
                                absl::StrCat("\"", fields[1], "\" ", *why));
    }
    if (auto why = meta::ParseInteger(fields[2], &epoch)) {
      return reader.ColumnError("epoch",
                                absl::StrCat("\"", fields[2], "\" ", *why));
    }
    if (auto why = meta::ParseNumber(fields[read], &value)) {
      return reader.ColumnError(column,
                                absl::StrCat("\"", fields[read], "\" ", *why));
    }
    if (curves == nullptr || fields[0] != current_task) {
      current_task = std::string(fields[0]);
      auto [it, inserted] = table.try_emplace(current_task);
      if (!inserted) {
        return reader.ColumnError("task",
                                  absl::StrCat("the rows of \"", current_task,
                                               "\" are not contiguous"));
      }
      curves = &it->second;
    }
    // A new configuration starts at epoch 1 with the next index; a
    // configuration's epochs follow each other.
    if (epoch != 1 &&
        (curves->empty() ||
         epoch != static_cast<int64_t>(curves->back().size()) + 1)) {
      return reader.ColumnError(
          "epoch", absl::StrCat(epoch, " does not follow epoch ",
                                curves->empty() ? 0 : curves->back().size(),
                                " of the same configuration"));
    }
    const int64_t expected_config =
        epoch == 1 ? static_cast<int64_t>(curves->size())
                   : static_cast<int64_t>(curves->size()) - 1;
    if (config != expected_config) {
      return reader.ColumnError(
          "config", absl::StrCat(config, " where ", expected_config,
                                 " was expected (configurations of a task are "
                                 "0, 1, 2, ... in order, each from epoch 1)"));
    }
    if (epoch == 1) curves->emplace_back();
    curves->back().push_back(value);
  }
  if (table.empty()) return reader.Error("no curves (only a header)");
  return table;
}

namespace {

// The curves of `task` in `table`, one per catalogue entry and all as long as
// the first; INVALID_ARGUMENT otherwise (AttachCurves).
absl::StatusOr<const std::vector<std::vector<double>>*> TaskCurves(
    const CurveTable& table, const ReplayTask& task) {
  auto it = table.find(task.id);
  if (it == table.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("task \"", task.id, "\" has no curves"));
  }
  const std::vector<std::vector<double>>& curves = it->second;
  if (task.duplicate_rows > 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "task \"", task.id, "\" repeats configurations (", task.duplicate_rows,
        " rows); curves need each configuration once"));
  }
  if (curves.size() != task.catalogue.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("task \"", task.id, "\": ", curves.size(), " curves for ",
                     task.catalogue.size(), " configurations"));
  }
  for (size_t i = 0; i < curves.size(); ++i) {
    if (curves[i].size() != curves.front().size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "task \"", task.id, "\", config ", i, ": ", curves[i].size(),
          " epochs where config 0 has ", curves.front().size()));
    }
  }
  return &curves;
}

}  // namespace

absl::Status AttachCurves(const CurveTable& table, ReplayTask& task) {
  METAOPT_ASSIGN_OR_RETURN(const std::vector<std::vector<double>>* found,
                           TaskCurves(table, task));
  const std::vector<std::vector<double>>& curves = *found;
  for (size_t i = 0; i < curves.size(); ++i) {
    if (curves[i].back() != task.y[i]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "task \"", task.id, "\", config ", i, ": the last epoch's value ",
          curves[i].back(), " is not its y ", task.y[i]));
    }
  }
  task.curves = curves;
  return absl::OkStatus();
}

absl::Status AttachMetricCurves(const CurveTable& table,
                                const std::string& metric, ReplayTask& task) {
  METAOPT_ASSIGN_OR_RETURN(const std::vector<std::vector<double>>* curves,
                           TaskCurves(table, task));
  if (!task.curves.empty() &&
      curves->front().size() != task.curves.front().size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("task \"", task.id, "\": the ", metric, " curves have ",
                     curves->front().size(), " epochs, the value curves ",
                     task.curves.front().size()));
  }
  task.metric_curves.emplace_back(metric, *curves);
  return absl::OkStatus();
}

}  // namespace metaopt::bench
