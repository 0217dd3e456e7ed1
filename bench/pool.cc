// Pooling of metaopt-bench outputs (per_task.csv) into one result: the folds
// of bench/cross_validate.sh, or runs of different methods over the same
// tasks.
#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "bench/bench_lib.h"
#include "core/common/file_util.h"
#include "core/common/status_macros.h"
#include "core/meta_dataset/csv_reader.h"

namespace metaopt::bench {
namespace {

constexpr char kPerTaskHeader[] = "method,task,seed,trial,regret";

// Names in order of first appearance.
class FirstSeen {
 public:
  void Add(const std::string& name) {
    if (seen_.insert(name).second) order_.push_back(name);
  }
  const std::vector<std::string>& order() const { return order_; }

 private:
  absl::flat_hash_set<std::string> seen_;
  std::vector<std::string> order_;
};

}  // namespace

absl::StatusOr<BenchResult> PoolPerTaskCsvs(
    const std::vector<std::string>& paths) {
  if (paths.empty()) {
    return absl::InvalidArgumentError("--pool: no per_task.csv files given");
  }
  // (method, task, seed) -> the regret after trials 1, 2, ...
  std::map<std::tuple<std::string, std::string, int64_t>, std::vector<double>>
      curves;
  FirstSeen method_names, task_names;
  int64_t seeds = 0;
  for (const std::string& path : paths) {
    METAOPT_ASSIGN_OR_RETURN(std::string text,
                             ReadFileToString(path, "--pool"));
    METAOPT_ASSIGN_OR_RETURN(meta::CsvReader reader,
                             meta::CsvReader::Create(path, std::move(text)));
    std::vector<absl::string_view> fields;
    METAOPT_ASSIGN_OR_RETURN(bool any, reader.Next(&fields));
    if (!any || absl::StrJoin(fields, ",") != kPerTaskHeader) {
      return reader.Error(absl::StrCat("expected the header \"", kPerTaskHeader,
                                       "\" (a metaopt-bench per_task.csv)"));
    }
    while (true) {
      METAOPT_ASSIGN_OR_RETURN(bool more, reader.Next(&fields));
      if (!more) break;
      METAOPT_RETURN_IF_ERROR(reader.CheckFieldCount(fields, 5));
      int64_t seed = 0, trial = 0;
      double regret = 0;
      if (auto why = meta::ParseInteger(fields[2], &seed);
          why.has_value() || seed < 0) {
        return reader.ColumnError("seed", why.value_or("is negative"));
      }
      if (auto why = meta::ParseInteger(fields[3], &trial);
          why.has_value() || trial < 1) {
        return reader.ColumnError("trial", why.value_or("is below 1"));
      }
      if (auto why = meta::ParseNumber(fields[4], &regret); why.has_value()) {
        return reader.ColumnError("regret", *why);
      }
      const std::string method(fields[0]);
      const std::string task(fields[1]);
      method_names.Add(method);
      task_names.Add(task);
      seeds = std::max(seeds, seed + 1);
      std::vector<double>& curve = curves[{method, task, seed}];
      if (trial != static_cast<int64_t>(curve.size()) + 1) {
        return reader.ColumnError(
            "trial", absl::StrCat(trial, " follows ", curve.size(), " for ",
                                  method, " on ", task, " seed ", seed,
                                  " (a run's trials are 1, 2, ... once each, "
                                  "in one file)"));
      }
      curve.push_back(regret);
    }
  }
  const std::vector<std::string>& methods = method_names.order();
  const std::vector<std::string>& tasks = task_names.order();
  BenchResult result;
  result.split = "pooled";
  result.backend = absl::StrCat("pooled from ", paths.size(),
                                paths.size() == 1 ? " file" : " files");
  result.pooled_from = paths;
  result.seeds = static_cast<int>(seeds);
  result.task_ids = tasks;
  result.split_task_count = static_cast<int>(tasks.size());
  for (const std::string& m : methods) {
    MethodDefinition definition;
    definition.name = m;
    result.methods.push_back(std::move(definition));
  }
  result.runs.resize(methods.size() * tasks.size() *
                     static_cast<size_t>(seeds));
  for (size_t m = 0; m < methods.size(); ++m) {
    for (size_t t = 0; t < tasks.size(); ++t) {
      for (int64_t s = 0; s < seeds; ++s) {
        auto it = curves.find({methods[m], tasks[t], s});
        if (it == curves.end()) {
          return absl::InvalidArgumentError(absl::StrCat(
              "--pool: no run of ", methods[m], " on ", tasks[t], " seed ", s,
              " (every method needs every task and seed 0..", seeds - 1, ")"));
        }
        if (result.trials == 0) {
          result.trials = static_cast<int>(it->second.size());
        }
        if (static_cast<int>(it->second.size()) != result.trials) {
          return absl::InvalidArgumentError(absl::StrCat(
              "--pool: ", methods[m], " on ", tasks[t], " seed ", s, " has ",
              it->second.size(), " trials, other runs ", result.trials,
              " (pool runs of the same length)"));
        }
        RunResult& run = result.runs[result.RunIndex(m, t, s)];
        run.regret = std::move(it->second);
        run.trials_observed = result.trials;
      }
    }
  }
  return result;
}

}  // namespace metaopt::bench
