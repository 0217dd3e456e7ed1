// metaopt-bench's outputs: summary.csv, per_task.csv, trials.csv, timing.csv,
// report.md and the SVG plots (bench_lib.h, "Aggregation and outputs").
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "bench/bench_lib.h"
#include "bench/functions.h"
#include "bench/svg_plot.h"
#include "core/common/status_macros.h"
#include "core/common/strings.h"

namespace metaopt::bench {
namespace {

absl::Status WriteTextFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) {
    return absl::PermissionDeniedError(absl::StrCat(
        "cannot open ", path, " for writing: ", std::strerror(errno)));
  }
  out << text;
  out.close();
  if (!out) {
    return absl::DataLossError(absl::StrCat("writing ", path, " failed"));
  }
  return absl::OkStatus();
}

// A regret for report.md: 4 decimals, or 3 significant digits in scientific
// notation below 0.001 (fcnet's regrets are ~1e-6: its worst values are huge).
std::string FormatRegret(double v) {
  if (v != 0 && std::abs(v) < 1e-3) return absl::StrFormat("%.2e", v);
  return absl::StrFormat("%.4f", v);
}

std::string GoalName(v1::Goal goal) {
  switch (goal) {
    case v1::GOAL_MINIMIZE:
      return "minimize";
    case v1::GOAL_MAXIMIZE:
      return "maximize";
    default:
      return "unspecified";
  }
}

// What the runs' regret measures: a short name (plot titles, axis) and
// report.md's heading and definition.
struct RegretKind {
  std::string name;
  std::string heading;
  std::string definition;
};

RegretKind RegretKindOf(const BenchResult& result) {
  if (result.objectives.size() > 1) {
    const std::string further = absl::StrJoin(result.objectives.begin() + 1,
                                              result.objectives.end(), ", ");
    return {"hypervolume regret", "Hypervolume regret",
            absl::StrCat(
                "Objectives: `", result.objective_name, "` (",
                GoalName(result.goal), ") and `", further,
                "` (minimize). Per task each objective is minimised, the "
                "further ones (times) taken on a log10 scale (below 1e-3 as "
                "1e-3), then scaled to [0, 1] by its minimum and maximum over "
                "the task's catalogue; the reference point is ",
                absl::StrFormat("%.1f", kNormalizedReference),
                " in every coordinate. Mean over tasks x seeds (± the "
                "standard error of the task means) of `1 - HV(front of the "
                "trials so far) / HV(Pareto front of the task's whole "
                "catalogue)` (0: the true front is "
                "dominated; 1: nothing yet).")};
  }
  if (!result.constraint.empty()) {
    return {"feasible regret", "Regret of the best feasible trial",
            absl::StrCat(
                "`", result.objective_name, "` (", GoalName(result.goal),
                ") subject to `", result.constraint,
                "` <= the task's median of it over its catalogue. Mean over "
                "tasks x seeds (± the standard error of the task means) of "
                "`(best feasible so far "
                "- best feasible in task) / (worst feasible in task - best "
                "feasible in task)`, 1 before the first feasible trial.")};
  }
  if (!result.functions.empty()) {
    return {"normalised regret", "Normalised regret",
            absl::StrCat(
                "Mean over functions x seeds (± the standard error of the "
                "function means) of `(best so far - f*) / (f_ref - f*)`, "
                "clamped to [0, 1]: f* is the function's global minimum, f_ref "
                "the median of f over ",
                kReferenceSamples,
                " points drawn uniformly from its space (log-uniformly on "
                "log-scale parameters; space::SearchSpace::Sample, seed ",
                kReferenceSeed,
                "), so 1 is what a typical random point reaches and 0 the "
                "minimum.")};
  }
  return {"normalised regret", "Normalised regret",
          "Mean over tasks x seeds (± the standard error of the task means) "
          "of `(best so far - best in task) / (worst in task - best in task)` (0: the task's best "
          "configuration was found)."};
}

// regret_vs_cost.svg and log_regret_vs_cost.svg: one line per method over
// steps 1..budget.
absl::Status WriteCostPlots(const BenchResult& result,
                            const std::vector<CostSummaryRow>& cost,
                            const std::string& dir) {
  LineChart chart;
  chart.title = absl::StrCat(result.dataset_name, " (", result.split,
                             " split): normalised regret against cost");
  chart.subtitle = absl::StrCat(
      result.task_ids.size(),
      result.task_ids.size() == 1 ? " task x " : " tasks x ", result.seeds,
      result.seeds == 1 ? " seed" : " seeds",
      "; mean ± 1 standard error; cost = training steps (epochs) reported");
  chart.x_label = "training steps (epochs) spent";
  chart.y_label = "normalised regret";
  chart.y_min = 0;
  for (const MethodDefinition& method : result.methods) {
    PlotSeries series{method.name, {}, {}, {}, {}};
    for (const CostSummaryRow& row : cost) {
      if (row.method != method.name) continue;
      series.x.push_back(static_cast<double>(row.cost));
      series.y.push_back(row.regret_mean);
      series.lower.push_back(row.regret_mean - row.regret_sem);
      series.upper.push_back(row.regret_mean + row.regret_sem);
    }
    chart.series.push_back(std::move(series));
  }
  LineChart log_chart = chart;
  log_chart.title = absl::StrCat(chart.title, ", log scale");
  log_chart.log_y = true;
  log_chart.y_min.reset();
  METAOPT_RETURN_IF_ERROR(WriteTextFile(absl::StrCat(dir, "regret_vs_cost.svg"),
                                        RenderLineChart(chart)));
  return WriteTextFile(absl::StrCat(dir, "log_regret_vs_cost.svg"),
                       RenderLineChart(log_chart));
}

}  // namespace

std::string SummaryCsv(const std::vector<SummaryRow>& rows) {
  std::string out = "method,trials,regret_mean,regret_sem,rank_mean\n";
  for (const SummaryRow& row : rows) {
    absl::StrAppend(
        &out, absl::StrFormat("%s,%d,%.8g,%.8g,%.8g\n", row.method, row.trials,
                              row.regret_mean, row.regret_sem, row.rank_mean));
  }
  return out;
}

std::string PerTaskCsv(const BenchResult& result) {
  std::string out = "method,task,seed,trial,regret\n";
  for (size_t m = 0; m < result.methods.size(); ++m) {
    for (size_t t = 0; t < result.task_ids.size(); ++t) {
      for (int s = 0; s < result.seeds; ++s) {
        const RunResult& run = result.runs[result.RunIndex(m, t, s)];
        for (size_t k = 0; k < run.regret.size(); ++k) {
          absl::StrAppend(
              &out,
              absl::StrFormat("%s,%s,%d,%d,%.8g\n", result.methods[m].name,
                              result.task_ids[t], s, k + 1, run.regret[k]));
        }
      }
    }
  }
  return out;
}

std::string TrialsCsv(const BenchResult& result) {
  if (!result.functions.empty()) {
    std::string out = "method,task,seed,trial,value\n";
    for (size_t m = 0; m < result.methods.size(); ++m) {
      for (size_t t = 0; t < result.task_ids.size(); ++t) {
        for (int s = 0; s < result.seeds; ++s) {
          const RunResult& run = result.runs[result.RunIndex(m, t, s)];
          for (size_t k = 0; k < run.values.size(); ++k) {
            absl::StrAppend(
                &out,
                absl::StrFormat("%s,%s,%d,%d,%.17g\n", result.methods[m].name,
                                result.task_ids[t], s, k + 1, run.values[k]));
          }
        }
      }
    }
    return out;
  }
  std::string out = result.early_stopping
                        ? "method,task,seed,trial,entry,value,cost,stopped\n"
                        : "method,task,seed,trial,entry,value\n";
  for (size_t m = 0; m < result.methods.size(); ++m) {
    for (size_t t = 0; t < result.task_ids.size(); ++t) {
      for (int s = 0; s < result.seeds; ++s) {
        const RunResult& run = result.runs[result.RunIndex(m, t, s)];
        for (size_t k = 0; k < run.entries.size(); ++k) {
          absl::StrAppend(
              &out, absl::StrFormat("%s,%s,%d,%d,%d,%.10g",
                                    result.methods[m].name, result.task_ids[t],
                                    s, k + 1, run.entries[k], run.values[k]));
          if (result.early_stopping) {
            absl::StrAppend(&out, ",", run.costs[k], ",",
                            run.stopped[k] ? 1 : 0);
          }
          absl::StrAppend(&out, "\n");
        }
      }
    }
  }
  return out;
}

std::string TimingCsv(const std::vector<TimingRow>& rows) {
  std::string out = "method,suggest_ms_mean,suggest_ms_p50,suggest_ms_p95\n";
  for (const TimingRow& row : rows) {
    absl::StrAppend(&out, absl::StrFormat("%s,%.4f,%.4f,%.4f\n", row.method,
                                          row.mean_ms, row.p50_ms, row.p95_ms));
  }
  return out;
}

std::vector<int> ReportCheckpoints(int trials, bool long_studies) {
  std::vector<int> out;
  const std::vector<int> counts = long_studies
                                      ? std::vector<int>{10, 25, 50, 100, 200}
                                      : std::vector<int>{5, 10, 25, 50};
  for (int k : counts) {
    if (k <= trials) out.push_back(k);
  }
  if (out.empty() || out.back() != trials) out.push_back(trials);
  return out;
}

std::string ReportMarkdown(const BenchResult& result,
                           const std::vector<SummaryRow>& summary,
                           const std::vector<TimingRow>& timing,
                           const ReportInfo& info) {
  const bool functions = !result.functions.empty();
  const std::vector<int> checkpoints =
      ReportCheckpoints(result.trials, functions);
  auto row_of = [&](const std::string& method, int k) -> const SummaryRow* {
    for (const SummaryRow& row : summary) {
      if (row.method == method && row.trials == k) return &row;
    }
    return nullptr;
  };
  std::vector<std::string> method_names;
  for (const MethodDefinition& m : result.methods)
    method_names.push_back(m.name);

  const bool pooled = !result.pooled_from.empty();
  std::string md;
  if (functions) {
    absl::StrAppend(&md, "# metaopt-bench: ", result.dataset_name, "\n\n");
  } else if (!pooled) {
    absl::StrAppend(&md, "# metaopt-bench: ", result.dataset_name, " (",
                    result.split, " split)\n\n");
  } else {
    absl::StrAppend(&md, "# metaopt-bench: ", result.dataset_name, "\n\n");
  }
  if (!result.failure.ok()) {
    absl::StrAppend(
        &md, "**Partial run.** It stopped at an error: `",
        result.failure.ToString(), "`. Reported below are the ",
        result.task_ids.size(),
        result.task_ids.size() == 1 ? " task" : " tasks",
        " all of whose runs had finished; not finished: ",
        result.unfinished_tasks.size(), " (",
        absl::StrJoin(result.unfinished_tasks, ", "), ").\n\n");
  }
  absl::StrAppend(&md, "| | |\n|---|---|\n");
  if (pooled) {
    absl::StrAppend(&md, "| data | pooled from `",
                    absl::StrJoin(result.pooled_from, "`, `"), "` |\n");
  } else if (functions) {
    absl::StrAppend(&md,
                    "| data | synthetic test functions (`--functions`), each a "
                    "study over its search space without a catalogue; every "
                    "suggested configuration is evaluated by the function |\n");
    absl::StrAppend(&md, "| objective | `", result.objective_name, "` (",
                    GoalName(result.goal), ") |\n");
  } else {
    absl::StrAppend(&md, "| data | `", result.dataset_name, "` (folder `",
                    result.data_dir, "`), split `", result.split, "` |\n");
    absl::StrAppend(&md, "| objective | `", result.objective_name, "` (",
                    GoalName(result.goal), ") |\n");
  }
  std::string skipped = result.skipped_tasks.empty()
                            ? "none"
                            : absl::StrJoin(result.skipped_tasks, ", ");
  if (functions) {
    absl::StrAppend(&md, "| functions | ", absl::StrJoin(result.task_ids, ", "),
                    " |\n");
  } else {
    absl::StrAppend(&md, "| tasks | ", result.task_ids.size(), " evaluated of ",
                    result.split_task_count,
                    " in the split; skipped (zero y spread): ",
                    result.skipped_tasks.size(), " (", skipped, ")");
    if (!result.featureless_tasks.empty()) {
      absl::StrAppend(&md, "; without meta-features (--tasks-with-features): ",
                      result.featureless_tasks.size(), " (",
                      absl::StrJoin(result.featureless_tasks, ", "), ")");
    }
    if (!result.unavailable_tasks.empty()) {
      // The tasks grouped by reason, reasons in order of first appearance.
      std::vector<std::pair<std::string, std::vector<std::string>>> by_reason;
      for (const auto& [id, reason] : result.unavailable_tasks) {
        auto it =
            std::find_if(by_reason.begin(), by_reason.end(),
                         [&](const auto& r) { return r.first == reason; });
        if (it == by_reason.end()) {
          by_reason.push_back({reason, {}});
          it = by_reason.end() - 1;
        }
        it->second.push_back(id);
      }
      std::vector<std::string> parts;
      for (const auto& [reason, ids] : by_reason) {
        parts.push_back(
            absl::StrCat(absl::StrJoin(ids, ", "), " (", reason, ")"));
      }
      absl::StrAppend(&md, "; left out because a method cannot run on them (",
                      "--skip-unavailable): ", result.unavailable_tasks.size(),
                      ": ", absl::StrJoin(parts, "; "));
    }
    if (!result.failure.ok()) {
      absl::StrAppend(&md, "; not finished (partial run): ",
                      result.unfinished_tasks.size());
    }
    absl::StrAppend(&md, " |\n");
  }
  absl::StrAppend(&md, "| methods | ", absl::StrJoin(method_names, ", "),
                  " |\n");
  if (!result.unavailable_methods.empty()) {
    std::vector<std::string> parts;
    for (const auto& [name, reason] : result.unavailable_methods) {
      parts.push_back(absl::StrCat(name, " (", reason, ")"));
    }
    absl::StrAppend(&md, "| not run (unavailable) | ",
                    absl::StrJoin(parts, "; "), " |\n");
  }
  absl::StrAppend(&md, "| trials x seeds | ", result.trials, " x ",
                  result.seeds,
                  " (study seed = FNV-1a-64(task id) + seed, seeds 0..",
                  result.seeds - 1, ") |\n");
  if (!pooled) {
    absl::StrAppend(&md, "| engine | ", result.backend, ", ", result.jobs,
                    result.jobs == 1 ? " job" : " jobs", " |\n");
    absl::StrAppend(
        &md, "| registry models | ",
        result.models.empty() ? "none" : absl::StrJoin(result.models, ", "),
        " |\n");
  }
  absl::StrAppend(&md, "| metaopt | ", info.version, " |\n");
  absl::StrAppend(&md, "| compiler | ", info.compiler, " |\n");
  absl::StrAppend(&md, "| date | ",
                  absl::FormatTime("%Y-%m-%d %H:%M:%S UTC", info.start_time,
                                   absl::UTCTimeZone()),
                  " |\n");
  if (!pooled) {
    absl::StrAppend(
        &md, "| wall time | ",
        absl::StrFormat("%.1f s", absl::ToDoubleSeconds(result.wall_time)),
        " |\n\n");
  } else {
    absl::StrAppend(&md, "\n");
  }
  absl::StrAppend(&md, "Command:\n\n```sh\n", info.command_line, "\n```\n\n");
  if (functions) {
    absl::StrAppend(&md,
                    "## Functions\n\n| function | parameters | definition | "
                    "f* | f_ref |\n|---|---|---|---|---|\n");
    for (const FunctionTaskInfo& f : result.functions) {
      absl::StrAppend(
          &md, absl::StrFormat("| %s | %d | %s | %.6f | %.6g |\n", f.name,
                               f.dimensions, f.description, f.f_star, f.f_ref));
    }
    absl::StrAppend(&md, "\n");
  }

  auto header = [&](const char* first) {
    std::string h = absl::StrCat("| ", first, " |");
    std::string rule = "|---|";
    for (int k : checkpoints) {
      absl::StrAppend(&h, " ", k, k == 1 ? " trial" : " trials", " |");
      absl::StrAppend(&rule, "---|");
    }
    return absl::StrCat(h, "\n", rule, "\n");
  };
  const RegretKind kind = RegretKindOf(result);
  absl::StrAppend(&md, "## ", kind.heading, "\n\n", kind.definition, "\n\n",
                  header("method"));
  for (const std::string& name : method_names) {
    absl::StrAppend(&md, "| ", name, " |");
    for (int k : checkpoints) {
      const SummaryRow* row = row_of(name, k);
      absl::StrAppend(&md, " ", FormatRegret(row->regret_mean), " ± ",
                      FormatRegret(row->regret_sem), " |");
    }
    absl::StrAppend(&md, "\n");
  }
  if (functions) {
    const std::vector<SummaryRow> logs = SummarizeLogRegret(result);
    auto log_of = [&](const std::string& method, int k) -> const SummaryRow* {
      for (const SummaryRow& row : logs) {
        if (row.method == method && row.trials == k) return &row;
      }
      return nullptr;
    };
    absl::StrAppend(
        &md,
        "\n## log10 simple regret\n\nMean over functions x seeds (± the "
        "standard error of the function means) of `log10(best so far - f*)`, "
        "the simple regret floored at ",
        absl::StrFormat("%g", kLogRegretFloor),
        " (the precision of f*); lower is better, -1 is a tenth of a unit of "
        "f above its minimum.\n\n",
        header("method"));
    for (const std::string& name : method_names) {
      absl::StrAppend(&md, "| ", name, " |");
      for (int k : checkpoints) {
        const SummaryRow* row = log_of(name, k);
        absl::StrAppend(&md, absl::StrFormat(" %.2f ± %.2f |", row->regret_mean,
                                             row->regret_sem));
      }
      absl::StrAppend(&md, "\n");
    }
    // Per function at the last checkpoint.
    const int last = checkpoints.back();
    const std::vector<FunctionRow> per_function =
        SummarizeFunctions(result, last);
    absl::StrAppend(&md, "\n## Per function after ", last,
                    " trials\n\nlog10 simple regret, mean ± standard error "
                    "over seeds (normalised regret in brackets).\n\n| "
                    "function |");
    std::string rule = "|---|";
    for (const std::string& name : method_names) {
      absl::StrAppend(&md, " ", name, " |");
      absl::StrAppend(&rule, "---|");
    }
    absl::StrAppend(&md, "\n", rule, "\n");
    for (size_t t = 0; t < result.task_ids.size(); ++t) {
      absl::StrAppend(&md, "| ", result.task_ids[t], " |");
      for (size_t m = 0; m < method_names.size(); ++m) {
        const FunctionRow& row = per_function[m * result.task_ids.size() + t];
        absl::StrAppend(
            &md,
            absl::StrFormat(" %.2f ± %.2f (%s) |", row.log_regret_mean,
                            row.log_regret_sem, FormatRegret(row.regret_mean)));
      }
      absl::StrAppend(&md, "\n");
    }
  }
  absl::StrAppend(&md,
                  "\n## Average rank\n\nRank of each method per (task, seed, "
                  "trial count) on regret, ties averaged (1 = best), averaged "
                  "over tasks x seeds.\n\n",
                  header("method"));
  for (const std::string& name : method_names) {
    absl::StrAppend(&md, "| ", name, " |");
    for (int k : checkpoints) {
      absl::StrAppend(&md,
                      absl::StrFormat(" %.2f |", row_of(name, k)->rank_mean));
    }
    absl::StrAppend(&md, "\n");
  }
  if (pooled) {
    absl::StrAppend(&md,
                    "\n## Suggest latency\n\nNot pooled: see each "
                    "file's own report.\n");
  } else {
    absl::StrAppend(&md,
                    "\n## Suggest latency\n\nWall time of one Suggest(count=1) "
                    "call as the bench sees it (",
                    result.backend,
                    ").\n\n| method | calls | mean (ms) | p50 (ms) | p95 (ms) "
                    "|\n|---|---|---|---|---|\n");
  }
  for (const TimingRow& row : timing) {
    absl::StrAppend(
        &md, absl::StrFormat("| %s | %d | %.3f | %.3f | %.3f |\n", row.method,
                             row.calls, row.mean_ms, row.p50_ms, row.p95_ms));
  }
  absl::StrAppend(
      &md,
      absl::StrCat("\n## Plots\n\n![", kind.heading,
                   "](regret_vs_trials.svg)\n\n"
                   "![Average rank](rank_vs_trials.svg)\n\n"
                   "![", kind.heading, ", log scale](log_regret_vs_trials.svg)\n"));
  if (functions) {
    absl::StrAppend(&md,
                    "\n![log10 simple regret]"
                    "(log10_simple_regret_vs_trials.svg)\n");
  }
  if (!result.short_tasks.empty() || result.duplicate_rows > 0) {
    absl::StrAppend(&md, "\n## Notes\n\n");
    if (!result.short_tasks.empty()) {
      std::vector<std::string> parts;
      for (const auto& [id, size] : result.short_tasks) {
        parts.push_back(absl::StrCat(id, " (", size, ")"));
      }
      absl::StrAppend(&md, "- Tasks with fewer than ", result.trials,
                      " configurations (the run stops when the catalogue is "
                      "exhausted and its last best value is carried forward): ",
                      absl::StrJoin(parts, ", "), ".\n");
    }
    if (result.duplicate_rows > 0) {
      absl::StrAppend(&md, "- ", result.duplicate_rows,
                      " rows repeated a configuration of their task; the "
                      "first row of each configuration was used.\n");
    }
  }
  return md;
}

std::string CostSummaryCsv(const std::vector<CostSummaryRow>& rows) {
  std::string out = "method,cost,regret_mean,regret_sem\n";
  for (const CostSummaryRow& row : rows) {
    absl::StrAppend(&out,
                    absl::StrFormat("%s,%d,%.8g,%.8g\n", row.method, row.cost,
                                    row.regret_mean, row.regret_sem));
  }
  return out;
}

std::string StoppingCsv(const std::vector<StoppingRow>& rows) {
  std::string out =
      "method,rule,base_method,trials_mean,stopped_fraction,cost_mean,"
      "final_regret_mean,final_regret_sem,cost_to_baseline,baseline_cost,"
      "saving\n";
  for (const StoppingRow& row : rows) {
    absl::StrAppend(
        &out,
        absl::StrFormat("%s,%s,%s,%.6g,%.6g,%.6g,%.8g,%.8g,%d,%d,%.6g\n",
                        row.method, row.rule, row.base_method, row.trials_mean,
                        row.stopped_fraction, row.cost_mean,
                        row.final_regret_mean, row.final_regret_sem,
                        row.cost_to_baseline, row.baseline_cost, row.saving));
  }
  return out;
}

std::string StoppingMarkdown(const BenchResult& result,
                             const std::vector<CostSummaryRow>& cost,
                             const std::vector<StoppingRow>& stopping) {
  std::string md;
  absl::StrAppend(
      &md,
      "\n## Early stopping\n\nEvery trial replays its configuration's "
      "learning curve (`",
      result.curves_path, "`, ", result.curve_length,
      " steps) through ReportIntermediate, one step at a time, until the "
      "engine answers should_stop or the curve ends; it is then observed with "
      "the last value it reported and costs the steps it reported. A run "
      "starts no trial once it has spent ",
      result.budget, " steps (its budget) and ends after ", result.trials,
      " trials or an exhausted catalogue; the regret after c steps counts the "
      "trials finished by then. The saving is the cost at which the same "
      "method without a rule (`none`) first reaches its final mean regret, "
      "divided by the cost at which the rule first reaches that regret.\n\n");
  absl::StrAppend(&md,
                  "| method | trials per run | stopped | steps per run | "
                  "regret at budget | steps to `none`'s final regret | "
                  "saving |\n|---|---|---|---|---|---|---|\n");
  for (const StoppingRow& row : stopping) {
    std::string reach = "not reached";
    if (row.cost_to_baseline > 0) {
      reach = absl::StrCat(row.cost_to_baseline, " (none: ", row.baseline_cost,
                           ")");
    } else if (row.baseline_cost < 0) {
      reach = "no `none` run";
    }
    absl::StrAppend(
        &md,
        absl::StrFormat("| %s | %.1f | %.0f%% | %.0f | %s ± %s | %s | %s |\n",
                        row.method, row.trials_mean, 100 * row.stopped_fraction,
                        row.cost_mean, FormatRegret(row.final_regret_mean),
                        FormatRegret(row.final_regret_sem), reach,
                        row.saving > 0 ? absl::StrFormat("%.2fx", row.saving)
                                       : std::string("-")));
  }
  // Mean regret at a few costs.
  std::vector<int64_t> checkpoints;
  for (int64_t divisor : {8, 4, 2, 1}) {
    const int64_t c = std::max<int64_t>(1, result.budget / divisor);
    if (checkpoints.empty() || checkpoints.back() != c)
      checkpoints.push_back(c);
  }
  absl::StrAppend(&md,
                  "\nMean normalised regret ± standard error after c "
                  "steps:\n\n| method |");
  std::string rule = "|---|";
  for (int64_t c : checkpoints) {
    absl::StrAppend(&md, " ", c, " steps |");
    absl::StrAppend(&rule, "---|");
  }
  absl::StrAppend(&md, "\n", rule, "\n");
  const size_t budget = static_cast<size_t>(result.budget);
  for (size_t m = 0; m < result.methods.size(); ++m) {
    absl::StrAppend(&md, "| ", result.methods[m].name, " |");
    for (int64_t c : checkpoints) {
      const CostSummaryRow& row = cost[m * budget + static_cast<size_t>(c - 1)];
      absl::StrAppend(&md, " ", FormatRegret(row.regret_mean), " ± ",
                      FormatRegret(row.regret_sem), " |");
    }
    absl::StrAppend(&md, "\n");
  }
  absl::StrAppend(&md,
                  "\n![Normalised regret against cost](regret_vs_cost.svg)\n\n"
                  "![Normalised regret against cost, log scale]"
                  "(log_regret_vs_cost.svg)\n");
  return md;
}

std::string ShellCommandLine(const std::vector<std::string>& args) {
  std::vector<std::string> quoted;
  quoted.reserve(args.size());
  for (const std::string& arg : args) quoted.push_back(ShellQuote(arg));
  return absl::StrJoin(quoted, " ");
}

absl::Status WriteOutputs(const BenchResult& result, const ReportInfo& info,
                          const std::string& out_dir) {
  std::error_code error;
  std::filesystem::create_directories(out_dir, error);
  if (error) {
    return absl::PermissionDeniedError(
        absl::StrCat("--out: cannot create ", out_dir, ": ", error.message()));
  }
  // A pooled result has regrets only: no traces, no timings.
  const bool pooled = !result.pooled_from.empty();
  const std::vector<SummaryRow> summary = Summarize(result);
  const std::vector<TimingRow> timing =
      pooled ? std::vector<TimingRow>() : SummarizeTiming(result);
  const std::string dir = absl::StrCat(out_dir, "/");
  METAOPT_RETURN_IF_ERROR(
      WriteTextFile(absl::StrCat(dir, "summary.csv"), SummaryCsv(summary)));
  METAOPT_RETURN_IF_ERROR(
      WriteTextFile(absl::StrCat(dir, "per_task.csv"), PerTaskCsv(result)));
  if (!pooled) {
    METAOPT_RETURN_IF_ERROR(
        WriteTextFile(absl::StrCat(dir, "trials.csv"), TrialsCsv(result)));
    METAOPT_RETURN_IF_ERROR(
        WriteTextFile(absl::StrCat(dir, "timing.csv"), TimingCsv(timing)));
  }
  std::string report = ReportMarkdown(result, summary, timing, info);
  if (result.early_stopping) {
    const std::vector<CostSummaryRow> cost = SummarizeCost(result);
    const std::vector<StoppingRow> stopping = SummarizeStopping(result, cost);
    absl::StrAppend(&report, StoppingMarkdown(result, cost, stopping));
    METAOPT_RETURN_IF_ERROR(WriteTextFile(absl::StrCat(dir, "cost_summary.csv"),
                                          CostSummaryCsv(cost)));
    METAOPT_RETURN_IF_ERROR(WriteTextFile(
        absl::StrCat(dir, "early_stopping.csv"), StoppingCsv(stopping)));
    METAOPT_RETURN_IF_ERROR(WriteCostPlots(result, cost, dir));
  }
  METAOPT_RETURN_IF_ERROR(
      WriteTextFile(absl::StrCat(dir, "report.md"), report));

  // Plots: one series per method over trials 1..T.
  const bool functions = !result.functions.empty();
  const std::string where =
      pooled || functions
          ? result.dataset_name
          : absl::StrCat(result.dataset_name, " (", result.split, " split)");
  const char* const unit = functions ? " function" : " task";
  const std::string sample = absl::StrCat(
      result.task_ids.size(), unit,
      result.task_ids.size() == 1 ? " x " : "s x ", result.seeds,
      result.seeds == 1 ? " seed" : " seeds", "; mean ± 1 standard error");
  const RegretKind kind = RegretKindOf(result);
  LineChart regret;
  regret.title = absl::StrCat(where, ": ", kind.name);
  regret.subtitle = absl::StrCat(
      sample, functions ? "; 0 = f*, 1 = the median of f over the space"
              : result.objectives.size() > 1
                  ? "; 0 = the task's Pareto front"
                  : "; 0 = the task's best (feasible) configuration");
  regret.x_label = "trials";
  regret.y_label = kind.name;
  regret.y_min = 0;
  LineChart log_regret = regret;
  log_regret.title = absl::StrCat(where, ": ", kind.name, ", log scale");
  log_regret.log_y = true;
  log_regret.y_min.reset();
  LineChart rank;
  rank.title = absl::StrCat(where, ": average rank");
  rank.subtitle = absl::StrCat(sample, "; 1 = best, ties averaged");
  rank.x_label = "trials";
  rank.y_label = "average rank";
  const double n = static_cast<double>(result.methods.size());
  rank.y_min = n > 1 ? 1.0 : 0.0;
  rank.y_max = n > 1 ? n : 2.0;
  for (const MethodDefinition& method : result.methods) {
    PlotSeries r{method.name, {}, {}, {}, {}};
    PlotSeries k{method.name, {}, {}, {}, {}};
    for (const SummaryRow& row : summary) {
      if (row.method != method.name) continue;
      r.x.push_back(row.trials);
      r.y.push_back(row.regret_mean);
      r.lower.push_back(row.regret_mean - row.regret_sem);
      r.upper.push_back(row.regret_mean + row.regret_sem);
      k.x.push_back(row.trials);
      k.y.push_back(row.rank_mean);
      k.lower.push_back(row.rank_mean - row.rank_sem);
      k.upper.push_back(row.rank_mean + row.rank_sem);
    }
    regret.series.push_back(r);
    log_regret.series.push_back(std::move(r));
    rank.series.push_back(std::move(k));
  }
  METAOPT_RETURN_IF_ERROR(WriteTextFile(
      absl::StrCat(dir, "regret_vs_trials.svg"), RenderLineChart(regret)));
  METAOPT_RETURN_IF_ERROR(WriteTextFile(absl::StrCat(dir, "rank_vs_trials.svg"),
                                        RenderLineChart(rank)));
  METAOPT_RETURN_IF_ERROR(
      WriteTextFile(absl::StrCat(dir, "log_regret_vs_trials.svg"),
                    RenderLineChart(log_regret)));
  if (!functions) return absl::OkStatus();

  // Synthetic functions: the log10 simple regret and the per-function table.
  const std::vector<SummaryRow> logs = SummarizeLogRegret(result);
  METAOPT_RETURN_IF_ERROR(
      WriteTextFile(absl::StrCat(dir, "log_summary.csv"), SummaryCsv(logs)));
  std::string per_function =
      "method,function,trials,regret_mean,log10_regret_mean,"
      "log10_regret_sem\n";
  for (int k : ReportCheckpoints(result.trials, true)) {
    for (const FunctionRow& row : SummarizeFunctions(result, k)) {
      absl::StrAppend(&per_function,
                      absl::StrFormat("%s,%s,%d,%.8g,%.8g,%.8g\n", row.method,
                                      row.function, k, row.regret_mean,
                                      row.log_regret_mean, row.log_regret_sem));
    }
  }
  METAOPT_RETURN_IF_ERROR(
      WriteTextFile(absl::StrCat(dir, "functions.csv"), per_function));
  LineChart log10_chart;
  log10_chart.title = absl::StrCat(where, ": log10 simple regret");
  log10_chart.subtitle =
      absl::StrCat(sample, "; log10(best so far - f*), floored at ",
                   absl::StrFormat("%g", kLogRegretFloor));
  log10_chart.x_label = "trials";
  log10_chart.y_label = "log10 simple regret";
  for (const MethodDefinition& method : result.methods) {
    PlotSeries series{method.name, {}, {}, {}, {}};
    for (const SummaryRow& row : logs) {
      if (row.method != method.name) continue;
      series.x.push_back(row.trials);
      series.y.push_back(row.regret_mean);
      series.lower.push_back(row.regret_mean - row.regret_sem);
      series.upper.push_back(row.regret_mean + row.regret_sem);
    }
    log10_chart.series.push_back(std::move(series));
  }
  return WriteTextFile(absl::StrCat(dir, "log10_simple_regret_vs_trials.svg"),
                       RenderLineChart(log10_chart));
}

}  // namespace metaopt::bench
