// metaopt-bench's metrics: normalised regret, average ranks, and their
// summaries over tasks and seeds (bench_lib.h, "Metrics" and "Aggregation").
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <vector>

#include "bench/bench_lib.h"
#include "core/common/goal.h"

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
  bool any = false;
  double best_so_far = 0;
  for (int t = 0; t < trials; ++t) {
    if (t < static_cast<int>(observed.size())) {
      if (!any || Better(observed[t], best_so_far, goal)) {
        best_so_far = observed[t];
        any = true;
      }
      regret = NormalizedRegret(best_so_far, best, worst);
    }
    curve.push_back(regret);
  }
  return curve;
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
      row.regret_sem = StandardError(regrets);
      row.rank_mean = Mean(ranks[m][k]);
      row.rank_sem = StandardError(ranks[m][k]);
      rows.push_back(std::move(row));
    }
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
