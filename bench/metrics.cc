// metaopt-bench's metrics: normalised regret, average ranks, and their
// summaries over tasks and seeds (bench_lib.h, "Metrics" and "Aggregation").
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <vector>

#include "bench/bench_lib.h"
#include "core/objective/objective.h"

namespace metaopt::bench {
namespace {

double Mean(const std::vector<double>& v) {
  if (v.empty()) return 0;
  return std::accumulate(v.begin(), v.end(), 0.0) /
         static_cast<double>(v.size());
}

// Standard error of the mean (sample standard deviation / sqrt(n)); 0 for
// n < 2.
double StandardError(const std::vector<double>& v) {
  const size_t n = v.size();
  if (n < 2) return 0;
  const double mean = Mean(v);
  double ss = 0;
  for (double x : v) ss += (x - mean) * (x - mean);
  return std::sqrt(ss / static_cast<double>(n - 1)) /
         std::sqrt(static_cast<double>(n));
}

// Standard error of the mean of `v`, whose entries are num_tasks blocks of
// num_seeds runs (task-major, as Summarize gathers them), clustered by task:
// the standard error of the task means. Runs of one task share its catalogue
// and often its design, so they are not independent (a deterministic policy
// repeats one run on every seed); the task is the unit a choice must carry
// over. With one task, the standard error over its seeds.
double TaskClusteredStandardError(const std::vector<double>& v,
                                  size_t num_tasks) {
  if (num_tasks < 2) return StandardError(v);
  const size_t per_task = v.size() / num_tasks;
  std::vector<double> task_means;
  task_means.reserve(num_tasks);
  for (size_t t = 0; t < num_tasks; ++t) {
    task_means.push_back(
        Mean(std::vector<double>(v.begin() + t * per_task,
                                 v.begin() + (t + 1) * per_task)));
  }
  return StandardError(task_means);
}

// Linear-interpolation percentile (q in [0, 1]) of sorted `v`.
double Percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const size_t i = static_cast<size_t>(std::floor(pos));
  const size_t j = std::min(i + 1, sorted.size() - 1);
  return sorted[i] + (pos - static_cast<double>(i)) * (sorted[j] - sorted[i]);
}

}  // namespace

double NormalizedRegret(double best_so_far, double best, double worst) {
  const double r = (best_so_far - best) / (worst - best);
  return std::clamp(r, 0.0, 1.0);
}

std::vector<double> RegretCurve(const std::vector<double>& observed,
                                double best, double worst, v1::Goal goal,
                                int trials) {
  std::vector<double> curve;
  curve.reserve(std::max(trials, 0));
  double regret = 1;
  objective::Best best_so_far(goal);
  for (int t = 0; t < trials; ++t) {
    if (t < static_cast<int>(observed.size())) {
      best_so_far.Offer(observed[t]);
      regret = NormalizedRegret(best_so_far.value(), best, worst);
    }
    curve.push_back(regret);
  }
  return curve;
}

std::vector<double> RegretByCost(const std::vector<double>& observed,
                                 const std::vector<int>& costs, double best,
                                 double worst, v1::Goal goal, int64_t budget) {
  std::vector<double> curve(static_cast<size_t>(std::max<int64_t>(budget, 0)),
                            1.0);
  objective::Best best_so_far(goal);
  int64_t finished = 0;  // cost at which trial k finishes
  for (size_t k = 0; k < observed.size() && k < costs.size(); ++k) {
    finished += costs[k];
    if (finished > budget) break;
    if (!best_so_far.Offer(observed[k])) continue;
    const double regret = NormalizedRegret(best_so_far.value(), best, worst);
    for (int64_t c = finished; c <= budget; ++c) curve[c - 1] = regret;
  }
  return curve;
}

std::vector<double> SimpleRegretCurve(const std::vector<double>& observed,
                                      double f_star, int trials) {
  std::vector<double> curve;
  curve.reserve(std::max(trials, 0));
  double best = std::numeric_limits<double>::infinity();
  for (int t = 0; t < trials; ++t) {
    if (t < static_cast<int>(observed.size())) {
      best = std::min(best, observed[t]);
    }
    curve.push_back(best - f_star);
  }
  return curve;
}

double LogSimpleRegret(double simple_regret) {
  return std::log10(std::max(simple_regret, kLogRegretFloor));
}

std::vector<double> AverageRanks(const std::vector<double>& values) {
  const size_t n = values.size();
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return values[a] < values[b]; });
  std::vector<double> ranks(n);
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j + 1 < n && values[order[j + 1]] == values[order[i]]) ++j;
    // Positions i..j (0-based) share ranks i+1..j+1.
    const double rank = (static_cast<double>(i + j) / 2.0) + 1.0;
    for (size_t k = i; k <= j; ++k) ranks[order[k]] = rank;
    i = j + 1;
  }
  return ranks;
}

// ---------------------------------------------------------------------------
// Aggregation

std::vector<SummaryRow> Summarize(const BenchResult& result) {
  const size_t num_methods = result.methods.size();
  const size_t num_tasks = result.task_ids.size();
  const size_t num_seeds = static_cast<size_t>(result.seeds);
  const int trials = result.trials;
  // ranks[m][k]: one rank per (task, seed) at trial k+1.
  std::vector<std::vector<std::vector<double>>> ranks(
      num_methods, std::vector<std::vector<double>>(trials));
  std::vector<double> values(num_methods);
  for (size_t t = 0; t < num_tasks; ++t) {
    for (size_t s = 0; s < num_seeds; ++s) {
      for (int k = 0; k < trials; ++k) {
        for (size_t m = 0; m < num_methods; ++m) {
          values[m] = result.runs[result.RunIndex(m, t, s)].regret[k];
        }
        std::vector<double> r = AverageRanks(values);
        for (size_t m = 0; m < num_methods; ++m) ranks[m][k].push_back(r[m]);
      }
    }
  }
  std::vector<SummaryRow> rows;
  for (size_t m = 0; m < num_methods; ++m) {
    for (int k = 0; k < trials; ++k) {
      std::vector<double> regrets;
      regrets.reserve(num_tasks * num_seeds);
      for (size_t t = 0; t < num_tasks; ++t) {
        for (size_t s = 0; s < num_seeds; ++s) {
          regrets.push_back(result.runs[result.RunIndex(m, t, s)].regret[k]);
        }
      }
      SummaryRow row;
      row.method = result.methods[m].name;
      row.trials = k + 1;
      row.regret_mean = Mean(regrets);
      row.regret_sem = TaskClusteredStandardError(regrets, num_tasks);
      row.rank_mean = Mean(ranks[m][k]);
      row.rank_sem = TaskClusteredStandardError(ranks[m][k], num_tasks);
      rows.push_back(std::move(row));
    }
  }
  return rows;
}

std::vector<SummaryRow> SummarizeLogRegret(const BenchResult& result) {
  std::vector<SummaryRow> rows;
  if (result.functions.empty()) return rows;
  const size_t num_tasks = result.task_ids.size();
  for (size_t m = 0; m < result.methods.size(); ++m) {
    for (int k = 0; k < result.trials; ++k) {
      std::vector<double> logs;
      for (size_t t = 0; t < num_tasks; ++t) {
        for (int s = 0; s < result.seeds; ++s) {
          logs.push_back(LogSimpleRegret(
              result.runs[result.RunIndex(m, t, s)].simple_regret[k]));
        }
      }
      SummaryRow row;
      row.method = result.methods[m].name;
      row.trials = k + 1;
      row.regret_mean = Mean(logs);
      row.regret_sem = TaskClusteredStandardError(logs, num_tasks);
      rows.push_back(std::move(row));
    }
  }
  return rows;
}

std::vector<FunctionRow> SummarizeFunctions(const BenchResult& result,
                                            int trials) {
  std::vector<FunctionRow> rows;
  if (result.functions.empty() || trials < 1 || trials > result.trials) {
    return rows;
  }
  for (size_t m = 0; m < result.methods.size(); ++m) {
    for (size_t t = 0; t < result.task_ids.size(); ++t) {
      std::vector<double> regrets, logs;
      for (int s = 0; s < result.seeds; ++s) {
        const RunResult& run = result.runs[result.RunIndex(m, t, s)];
        regrets.push_back(run.regret[trials - 1]);
        logs.push_back(LogSimpleRegret(run.simple_regret[trials - 1]));
      }
      FunctionRow row;
      row.method = result.methods[m].name;
      row.function = result.task_ids[t];
      row.regret_mean = Mean(regrets);
      row.log_regret_mean = Mean(logs);
      row.log_regret_sem = StandardError(logs);
      rows.push_back(std::move(row));
    }
  }
  return rows;
}

std::vector<CostSummaryRow> SummarizeCost(const BenchResult& result) {
  std::vector<CostSummaryRow> rows;
  if (!result.early_stopping) return rows;
  std::vector<double> regrets;
  for (size_t m = 0; m < result.methods.size(); ++m) {
    for (int64_t c = 1; c <= result.budget; ++c) {
      regrets.clear();
      for (size_t t = 0; t < result.task_ids.size(); ++t) {
        for (int s = 0; s < result.seeds; ++s) {
          regrets.push_back(
              result.runs[result.RunIndex(m, t, s)].regret_by_cost[c - 1]);
        }
      }
      CostSummaryRow row;
      row.method = result.methods[m].name;
      row.cost = c;
      row.regret_mean = Mean(regrets);
      row.regret_sem =
          TaskClusteredStandardError(regrets, result.task_ids.size());
      rows.push_back(std::move(row));
    }
  }
  return rows;
}

std::vector<StoppingRow> SummarizeStopping(
    const BenchResult& result, const std::vector<CostSummaryRow>& cost) {
  std::vector<StoppingRow> rows;
  if (!result.early_stopping || result.budget < 1) return rows;
  const size_t budget = static_cast<size_t>(result.budget);
  // cost rows of method m: [m * budget, (m + 1) * budget).
  auto mean_regret = [&](size_t m, int64_t c) {
    return cost[m * budget + static_cast<size_t>(c - 1)].regret_mean;
  };
  // The fewest steps after which method m's mean regret is <= target.
  auto cost_to_reach = [&](size_t m, double target) -> int64_t {
    for (int64_t c = 1; c <= result.budget; ++c) {
      if (mean_regret(m, c) <= target) return c;
    }
    return -1;
  };
  for (size_t m = 0; m < result.methods.size(); ++m) {
    const MethodDefinition& method = result.methods[m];
    StoppingRow row;
    row.method = method.name;
    row.rule = method.early_stopping_rule;
    row.base_method = method.base_method;
    double trials = 0;
    double stopped = 0;
    double spent = 0;
    const double runs =
        static_cast<double>(result.task_ids.size() * result.seeds);
    for (size_t t = 0; t < result.task_ids.size(); ++t) {
      for (int s = 0; s < result.seeds; ++s) {
        const RunResult& run = result.runs[result.RunIndex(m, t, s)];
        trials += run.trials_observed;
        for (bool b : run.stopped) stopped += b ? 1 : 0;
        spent += static_cast<double>(run.cost);
      }
    }
    row.trials_mean = trials / runs;
    row.stopped_fraction = trials > 0 ? stopped / trials : 0;
    row.cost_mean = spent / runs;
    const CostSummaryRow& last = cost[m * budget + budget - 1];
    row.final_regret_mean = last.regret_mean;
    row.final_regret_sem = last.regret_sem;
    // The same method without a rule.
    for (size_t b = 0; b < result.methods.size(); ++b) {
      const MethodDefinition& base = result.methods[b];
      if (base.base_method != method.base_method ||
          base.early_stopping.rule_case() !=
              v1::EarlyStoppingSpec::RULE_NOT_SET) {
        continue;
      }
      const double target = mean_regret(b, result.budget);
      row.baseline_cost = cost_to_reach(b, target);
      row.cost_to_baseline = cost_to_reach(m, target);
      if (row.cost_to_baseline > 0) {
        row.saving = static_cast<double>(row.baseline_cost) /
                     static_cast<double>(row.cost_to_baseline);
      }
      break;
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<TimingRow> SummarizeTiming(const BenchResult& result) {
  std::vector<TimingRow> rows;
  for (size_t m = 0; m < result.methods.size(); ++m) {
    std::vector<double> ms;
    for (size_t t = 0; t < result.task_ids.size(); ++t) {
      for (int s = 0; s < result.seeds; ++s) {
        const RunResult& run = result.runs[result.RunIndex(m, t, s)];
        ms.insert(ms.end(), run.suggest_ms.begin(), run.suggest_ms.end());
      }
    }
    std::sort(ms.begin(), ms.end());
    TimingRow row;
    row.method = result.methods[m].name;
    row.calls = static_cast<int64_t>(ms.size());
    row.mean_ms = Mean(ms);
    row.p50_ms = Percentile(ms, 0.5);
    row.p95_ms = Percentile(ms, 0.95);
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace metaopt::bench
