// metaopt-bench with several objectives or a constraint: the tasks' true
// Pareto fronts, hypervolume regret, the regret of the best feasible value,
// and runs imported from trace files (bench_lib.h).
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "bench/bench_lib.h"
#include "core/common/file_util.h"
#include "core/common/status_macros.h"
#include "core/meta_dataset/csv_reader.h"
#include "core/objective/objective.h"
#include "core/objective/study_objectives.h"

namespace metaopt::bench {
namespace {

constexpr char kTraceHeader[] = "method,task,seed,trial,entry";
// Traces of synthetic functions (no catalogue) carry the values.
constexpr char kValueTraceHeader[] = "method,task,seed,trial,value";

// A meta::Task column by name, aligned with the task's rows, reduced to the
// replay's catalogue (the first row of each configuration).
absl::StatusOr<std::vector<double>> CatalogueColumn(const meta::Task& task,
                                                    const std::string& column,
                                                    const ReplayTask& replay) {
  const auto it = task.values.find(column);
  if (it == task.values.end() || it->second.size() != task.y.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "task \"", task.id, "\": no column \"", column,
        "\" aligned with its rows (read it with ReadOptions.value_columns)"));
  }
  std::vector<double> out(replay.catalogue.size());
  std::vector<bool> set(replay.catalogue.size(), false);
  for (size_t i = 0; i < task.configurations.size(); ++i) {
    const int entry = replay.index_by_key.at(
        space::ConfigurationKey(task.configurations[i]));
    if (set[entry]) continue;
    set[entry] = true;
    out[entry] = it->second[i];
  }
  return out;
}

}  // namespace

std::vector<objective::Point> NormalizedTargets(
    const std::vector<std::vector<double>>& columns,
    const std::vector<v1::Goal>& goals, const std::vector<bool>& log_scale) {
  const size_t n = columns.empty() ? 0 : columns.front().size();
  std::vector<objective::Point> points(n, objective::Point(columns.size()));
  for (size_t k = 0; k < columns.size(); ++k) {
    double low = std::numeric_limits<double>::infinity();
    double high = -low;
    for (size_t i = 0; i < n; ++i) {
      double v = objective::Minimized(columns[k][i], goals[k]);
      if (log_scale[k]) v = std::log10(std::max(v, 1e-3));
      points[i][k] = v;
      low = std::min(low, v);
      high = std::max(high, v);
    }
    for (size_t i = 0; i < n; ++i) {
      points[i][k] = high > low ? (points[i][k] - low) / (high - low) : 0.0;
    }
  }
  return points;
}

double TrueFrontHypervolume(const std::vector<objective::Point>& targets) {
  if (targets.empty()) return 0;
  std::vector<objective::Point> front;
  for (int i : objective::NonDominated(targets)) front.push_back(targets[i]);
  const objective::Point reference(targets.front().size(),
                                   kNormalizedReference);
  return objective::Hypervolume(front, reference);
}

std::vector<double> HypervolumeRegretCurve(
    const std::vector<int>& entries,
    const std::vector<objective::Point>& targets, double front_hypervolume,
    int trials) {
  std::vector<double> curve;
  curve.reserve(std::max(trials, 0));
  std::vector<objective::Point> seen;
  double regret = 1;
  for (int t = 0; t < trials; ++t) {
    if (t < static_cast<int>(entries.size())) {
      seen.push_back(targets[entries[t]]);
      // The front of what was seen: dominated points add no volume.
      std::vector<objective::Point> front;
      for (int i : objective::NonDominated(seen)) front.push_back(seen[i]);
      seen = std::move(front);
      const double hv = objective::Hypervolume(
          seen, objective::Point(seen.front().size(), kNormalizedReference));
      regret = std::clamp(1 - hv / front_hypervolume, 0.0, 1.0);
    }
    curve.push_back(regret);
  }
  return curve;
}

std::vector<double> FeasibleRegretCurve(const std::vector<double>& observed,
                                        const std::vector<bool>& feasible,
                                        double feasible_best,
                                        double feasible_worst, v1::Goal goal,
                                        int trials) {
  std::vector<double> curve;
  curve.reserve(std::max(trials, 0));
  objective::Best best(goal);
  double regret = 1;
  for (int t = 0; t < trials; ++t) {
    if (t < static_cast<int>(observed.size()) && feasible[t]) {
      best.Offer(observed[t]);
      regret = feasible_best == feasible_worst
                   ? 0.0
                   : NormalizedRegret(best.value(), feasible_best,
                                      feasible_worst);
    }
    curve.push_back(regret);
  }
  return curve;
}

std::vector<double> RunRegret(const ReplayTask& task,
                              const std::vector<int>& entries, v1::Goal goal,
                              int trials) {
  if (!task.targets.empty()) {
    return HypervolumeRegretCurve(entries, task.targets,
                                  task.front_hypervolume, trials);
  }
  std::vector<double> observed;
  for (int e : entries) observed.push_back(task.y[e]);
  if (!task.constraint_values.empty()) {
    std::vector<bool> feasible;
    for (int e : entries) {
      feasible.push_back(task.constraint_values[e] <= task.constraint_bound);
    }
    return FeasibleRegretCurve(observed, feasible, task.feasible_best,
                               task.feasible_worst, goal, trials);
  }
  return RegretCurve(observed, task.best, task.worst, goal, trials);
}

absl::Status AttachObjectives(const meta::Task& task,
                              const std::vector<std::string>& columns,
                              v1::Goal goal, ReplayTask& replay) {
  if (columns.empty() || columns.size() > 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("--objectives: y and 1 or 2 further columns, not ",
                     columns.size()));
  }
  std::vector<std::vector<double>> all = {replay.y};
  std::vector<v1::Goal> goals = {goal};
  std::vector<bool> log_scale = {false};
  replay.objective_values.clear();
  for (const std::string& column : columns) {
    METAOPT_ASSIGN_OR_RETURN(std::vector<double> values,
                             CatalogueColumn(task, column, replay));
    all.push_back(values);
    goals.push_back(v1::GOAL_MINIMIZE);
    log_scale.push_back(true);
    replay.objective_values.push_back(std::move(values));
  }
  replay.targets = NormalizedTargets(all, goals, log_scale);
  replay.front_hypervolume = TrueFrontHypervolume(replay.targets);
  return absl::OkStatus();
}

absl::Status AttachConstraint(const meta::Task& task, const std::string& column,
                              v1::Goal goal, ReplayTask& replay) {
  METAOPT_ASSIGN_OR_RETURN(replay.constraint_values,
                           CatalogueColumn(task, column, replay));
  std::vector<double> sorted = replay.constraint_values;
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  replay.constraint_bound =
      n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  bool any = false;
  for (size_t i = 0; i < n; ++i) {
    if (replay.constraint_values[i] > replay.constraint_bound) continue;
    const double v = replay.y[i];
    if (!any || objective::Better(v, replay.feasible_best, goal)) {
      replay.feasible_best = v;
    }
    if (!any || objective::Better(replay.feasible_worst, v, goal)) {
      replay.feasible_worst = v;
    }
    any = true;
  }
  return absl::OkStatus();
}

absl::Status ImportTraces(const std::vector<std::string>& paths,
                          const std::vector<ReplayTask>& tasks, v1::Goal goal,
                          BenchResult& result) {
  std::map<std::string, size_t> task_index;
  for (size_t t = 0; t < tasks.size(); ++t) task_index[tasks[t].id] = t;
  // Synthetic functions: every task has its function and no catalogue.
  const bool values = !tasks.empty() && static_cast<bool>(tasks[0].evaluate);
  const char* const header = values ? kValueTraceHeader : kTraceHeader;
  // (method, task, seed) -> entries (or values) in trial order; methods in
  // order seen.
  std::map<std::tuple<std::string, size_t, int64_t>, std::vector<double>> runs;
  std::vector<std::string> methods;
  for (const std::string& path : paths) {
    METAOPT_ASSIGN_OR_RETURN(std::string text,
                             ReadFileToString(path, "--traces"));
    METAOPT_ASSIGN_OR_RETURN(meta::CsvReader reader,
                             meta::CsvReader::Create(path, std::move(text)));
    std::vector<absl::string_view> fields;
    METAOPT_ASSIGN_OR_RETURN(bool any, reader.Next(&fields));
    const size_t columns = fields.size();
    if (!any || columns < 5 ||
        absl::StrJoin(fields.begin(), fields.begin() + 5, ",") != header) {
      return reader.Error(absl::StrCat("expected a header starting \"", header,
                                       "\" (a trace file)"));
    }
    while (true) {
      METAOPT_ASSIGN_OR_RETURN(bool more, reader.Next(&fields));
      if (!more) break;
      METAOPT_RETURN_IF_ERROR(reader.CheckFieldCount(fields, columns));
      const std::string method(fields[0]);
      const auto task = task_index.find(std::string(fields[1]));
      if (task == task_index.end()) {
        return reader.ColumnError("task", "is not a task of this replay");
      }
      int64_t seed = 0, trial = 0, entry = 0;
      double value = 0;
      if (auto why = meta::ParseInteger(fields[2], &seed);
          why.has_value() || seed < 0 || seed >= result.seeds) {
        return reader.ColumnError(
            "seed", why.value_or(absl::StrCat("is not in 0..",
                                              result.seeds - 1)));
      }
      if (auto why = meta::ParseInteger(fields[3], &trial);
          why.has_value() || trial < 1 || trial > result.trials) {
        return reader.ColumnError(
            "trial", why.value_or(absl::StrCat("is not in 1..",
                                               result.trials)));
      }
      const int64_t size =
          static_cast<int64_t>(tasks[task->second].catalogue.size());
      if (values) {
        if (auto why = meta::ParseNumber(fields[4], &value); why.has_value()) {
          return reader.ColumnError("value", *why);
        }
      } else if (auto why = meta::ParseInteger(fields[4], &entry);
                 why.has_value() || entry < 0 || entry >= size) {
        return reader.ColumnError(
            "entry", why.value_or(absl::StrCat(
                         "is not an index of the task's catalogue (0..",
                         size - 1, ")")));
      }
      if (std::find(methods.begin(), methods.end(), method) == methods.end()) {
        for (const MethodDefinition& m : result.methods) {
          if (m.name == method) {
            return reader.ColumnError("method",
                                      "is already a method of the replay");
          }
        }
        methods.push_back(method);
      }
      std::vector<double>& run = runs[{method, task->second, seed}];
      if (trial != static_cast<int64_t>(run.size()) + 1) {
        return reader.ColumnError(
            "trial", absl::StrCat(trial, " follows ", run.size(),
                                  " (a run's trials are 1, 2, ... once each, "
                                  "in one file)"));
      }
      run.push_back(values ? value : static_cast<double>(entry));
    }
  }
  for (const std::string& method : methods) {
    MethodDefinition definition;
    definition.name = method;
    definition.description = absl::StrCat("imported from --traces");
    result.methods.push_back(std::move(definition));
    for (size_t t = 0; t < tasks.size(); ++t) {
      for (int s = 0; s < result.seeds; ++s) {
        const auto it = runs.find({method, t, s});
        if (it == runs.end()) {
          return absl::InvalidArgumentError(
              absl::StrCat("--traces: no run of ", method, " on task \"",
                           tasks[t].id, "\" seed ", s,
                           " (a traced method needs every task and seed)"));
        }
        RunResult run;
        if (values) {
          run.values = it->second;
          run.regret = RegretCurve(run.values, tasks[t].best, tasks[t].worst,
                                   goal, result.trials);
          run.simple_regret =
              SimpleRegretCurve(run.values, tasks[t].best, result.trials);
        } else {
          for (double e : it->second) {
            run.entries.push_back(static_cast<int>(e));
            run.values.push_back(tasks[t].y[run.entries.back()]);
          }
          run.regret = RunRegret(tasks[t], run.entries, goal, result.trials);
        }
        run.trials_observed = static_cast<int>(run.values.size());
        result.runs.push_back(std::move(run));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace metaopt::bench
