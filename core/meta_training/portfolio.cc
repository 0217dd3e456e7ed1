#include "core/meta_training/portfolio.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <utility>

#include "Eigen/Core"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "core/common/status_macros.h"
#include "core/objective/objective.h"
#include "core/space/encoding.h"
#include "core/space/random.h"
#include "core/space/search_space.h"

namespace metaopt::train {
namespace {

// Equal sums of regrets within this much per task count as a tie.
constexpr double kTieTolerancePerTask = 1e-12;
// kAuto picks kExact above this coverage.
constexpr double kExactCoverageThreshold = 0.5;

constexpr double kUnknown = std::numeric_limits<double>::quiet_NaN();

absl::Status CheckTask(const meta::Task& task) {
  if (task.configurations.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("task \"", task.id, "\" has no evaluations"));
  }
  if (task.configurations.size() != task.y.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("task \"", task.id, "\" has ", task.configurations.size(),
                     " configurations but ", task.y.size(), " values of y"));
  }
  return absl::OkStatus();
}

absl::Status CheckTasks(const std::vector<const meta::Task*>& tasks) {
  for (const meta::Task* task : tasks) {
    METAOPT_RETURN_IF_ERROR(CheckTask(*task));
  }
  return absl::OkStatus();
}

// The loss (lower is better) of objective value `y`.
double Loss(double y, v1::Goal goal) { return objective::Minimized(y, goal); }

// Normalised regrets of a task's configurations, in file order.
std::vector<double> TaskRegrets(const meta::Task& task, v1::Goal goal) {
  double best = std::numeric_limits<double>::infinity();
  double worst = -best;
  for (double y : task.y) {
    best = std::min(best, Loss(y, goal));
    worst = std::max(worst, Loss(y, goal));
  }
  std::vector<double> regrets(task.y.size(), 0.0);
  const double range = worst - best;
  if (!(range > 0)) return regrets;  // All equal: every configuration is best.
  for (size_t i = 0; i < task.y.size(); ++i) {
    regrets[i] = std::clamp((Loss(task.y[i], goal) - best) / range, 0.0, 1.0);
  }
  return regrets;
}

// Indices of a task's configurations from best to worst (ties: file order).
std::vector<int> RankedIndices(const std::vector<double>& regrets) {
  std::vector<int> order(regrets.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return regrets[a] < regrets[b]; });
  return order;
}

// Encoded configurations as columns (dimension x count), so that each
// configuration is contiguous.
Eigen::MatrixXd EncodeColumns(const space::Encoder& encoder,
                              const std::vector<v1::Configuration>& configs) {
  return encoder.EncodeBatch(configs).transpose();
}

// table(t, c) = r_t(candidates[c]) under `match` (kExact or kNearest), NaN when
// unknown.
absl::StatusOr<Eigen::MatrixXd> RegretTable(
    const meta::MetaDataset& data, const std::vector<const meta::Task*>& tasks,
    const std::vector<v1::Configuration>& candidates, PortfolioMatch match) {
  const Eigen::Index num_tasks = static_cast<Eigen::Index>(tasks.size());
  const Eigen::Index num_candidates =
      static_cast<Eigen::Index>(candidates.size());
  Eigen::MatrixXd table =
      Eigen::MatrixXd::Constant(num_tasks, num_candidates, kUnknown);
  if (match == PortfolioMatch::kExact) {
    std::vector<std::string> keys;
    keys.reserve(candidates.size());
    for (const v1::Configuration& c : candidates) {
      keys.push_back(space::ConfigurationKey(c));
    }
    for (Eigen::Index t = 0; t < num_tasks; ++t) {
      const meta::Task& task = *tasks[t];
      const std::vector<double> regrets =
          TaskRegrets(task, data.objective.goal());
      absl::flat_hash_map<std::string, int> index;
      index.reserve(task.configurations.size());
      for (size_t i = 0; i < task.configurations.size(); ++i) {
        index.emplace(space::ConfigurationKey(task.configurations[i]),
                      static_cast<int>(i));
      }
      for (Eigen::Index c = 0; c < num_candidates; ++c) {
        auto it = index.find(keys[c]);
        if (it != index.end()) table(t, c) = regrets[it->second];
      }
    }
    return table;
  }
  if (match != PortfolioMatch::kNearest) {
    return absl::InvalidArgumentError(
        "portfolio match must be resolved to exact or nearest");
  }
  METAOPT_ASSIGN_OR_RETURN(space::SearchSpace space,
                           space::SearchSpace::Create(data.space, "space"));
  const space::Encoder encoder(space);
  const Eigen::MatrixXd encoded_candidates = EncodeColumns(encoder, candidates);
  for (Eigen::Index t = 0; t < num_tasks; ++t) {
    const meta::Task& task = *tasks[t];
    const std::vector<double> regrets =
        TaskRegrets(task, data.objective.goal());
    const Eigen::MatrixXd encoded = EncodeColumns(encoder, task.configurations);
    for (Eigen::Index c = 0; c < num_candidates; ++c) {
      const auto x = encoded_candidates.col(c);
      double best_distance = std::numeric_limits<double>::infinity();
      Eigen::Index nearest = 0;
      for (Eigen::Index j = 0; j < encoded.cols(); ++j) {
        const double distance = (encoded.col(j) - x).squaredNorm();
        if (distance < best_distance) {
          best_distance = distance;
          nearest = j;
        }
      }
      table(t, c) = regrets[nearest];
    }
  }
  return table;
}

// The distinct configurations of `tasks` in first-seen order, and their
// coverage (see PortfolioResult::coverage).
struct DistinctConfigurations {
  std::vector<const v1::Configuration*> configurations;
  absl::flat_hash_map<std::string, int> index;
  double coverage = 0;
};

DistinctConfigurations Distinct(const std::vector<const meta::Task*>& tasks) {
  DistinctConfigurations distinct;
  int64_t rows = 0;
  for (const meta::Task* task : tasks) {
    for (const v1::Configuration& c : task->configurations) {
      ++rows;
      auto [it, inserted] = distinct.index.emplace(
          space::ConfigurationKey(c),
          static_cast<int>(distinct.configurations.size()));
      if (inserted) distinct.configurations.push_back(&c);
    }
  }
  if (!distinct.configurations.empty()) {
    distinct.coverage = static_cast<double>(rows) /
                        (static_cast<double>(distinct.configurations.size()) *
                         static_cast<double>(tasks.size()));
  }
  return distinct;
}

// The candidates for `match` (see PortfolioOptions::candidates_per_task).
std::vector<v1::Configuration> Candidates(
    const meta::MetaDataset& data, const std::vector<const meta::Task*>& tasks,
    const DistinctConfigurations& distinct, PortfolioMatch match,
    int candidates_per_task) {
  std::vector<v1::Configuration> candidates;
  if (match == PortfolioMatch::kExact || candidates_per_task == 0) {
    candidates.reserve(distinct.configurations.size());
    for (const v1::Configuration* c : distinct.configurations) {
      candidates.push_back(*c);
    }
    return candidates;
  }
  absl::flat_hash_map<std::string, bool> seen;
  for (const meta::Task* task : tasks) {
    const std::vector<int> ranked =
        RankedIndices(TaskRegrets(*task, data.objective.goal()));
    const size_t keep =
        std::min(ranked.size(), static_cast<size_t>(candidates_per_task));
    for (size_t i = 0; i < keep; ++i) {
      const v1::Configuration& c = task->configurations[ranked[i]];
      if (seen.emplace(space::ConfigurationKey(c), true).second) {
        candidates.push_back(c);
      }
    }
  }
  return candidates;
}

// A random permutation's ranks (Fisher-Yates on the portable space::Rng).
std::vector<int64_t> RandomRanks(int64_t n, uint64_t seed) {
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  space::Rng rng(seed);
  for (int64_t i = n - 1; i > 0; --i) {
    const int64_t j = static_cast<int64_t>(space::UniformIndex(rng, i + 1));
    std::swap(order[i], order[j]);
  }
  std::vector<int64_t> rank(n);
  for (int64_t i = 0; i < n; ++i) rank[order[i]] = i;
  return rank;
}

// The regret of the current set plus candidate column `r` on each task
// (NaN entries leave the set's regret unchanged), summed.
double SetRegretWith(const std::vector<double>& current,
                     const Eigen::Ref<const Eigen::VectorXd>& r) {
  double sum = 0;
  for (size_t t = 0; t < current.size(); ++t) {
    const double v = r[static_cast<Eigen::Index>(t)];
    sum += std::isnan(v) ? current[t] : std::min(current[t], v);
  }
  return sum;
}

double Mean(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0) /
         static_cast<double>(v.size());
}

// Cumulative mean regret over the rows of `table` when its columns are added
// in order.
std::vector<double> CurveOfColumns(const Eigen::MatrixXd& table) {
  std::vector<double> current(static_cast<size_t>(table.rows()), 1.0);
  std::vector<double> curve;
  curve.reserve(static_cast<size_t>(table.cols()));
  for (Eigen::Index c = 0; c < table.cols(); ++c) {
    for (Eigen::Index t = 0; t < table.rows(); ++t) {
      if (!std::isnan(table(t, c))) {
        current[t] = std::min(current[t], table(t, c));
      }
    }
    curve.push_back(Mean(current));
  }
  return curve;
}

// The greedy picks (columns of `table`, in order; see the header).
std::vector<int64_t> GreedyColumns(const Eigen::MatrixXd& table, int size,
                                   uint64_t seed) {
  const int64_t n = table.cols();
  const double tolerance =
      kTieTolerancePerTask * static_cast<double>(table.rows());
  std::vector<double> standalone(static_cast<size_t>(n));
  for (int64_t c = 0; c < n; ++c) {
    standalone[c] =
        table.col(c)
            .unaryExpr([](double v) { return std::isnan(v) ? 1.0 : v; })
            .sum();
  }
  const std::vector<int64_t> rank = RandomRanks(n, seed);
  std::vector<bool> picked(static_cast<size_t>(n), false);
  std::vector<double> current(static_cast<size_t>(table.rows()), 1.0);
  std::vector<int64_t> columns;
  const int64_t picks = std::min<int64_t>(size, n);
  for (int64_t k = 0; k < picks; ++k) {
    int64_t best = -1;
    double best_sum = 0;
    for (int64_t c = 0; c < n; ++c) {
      if (picked[c]) continue;
      const double sum = SetRegretWith(current, table.col(c));
      bool better = best < 0 || sum < best_sum - tolerance;
      if (!better && std::abs(sum - best_sum) <= tolerance) {
        if (standalone[c] < standalone[best] - tolerance) {
          better = true;
        } else if (std::abs(standalone[c] - standalone[best]) <= tolerance) {
          better = rank[c] < rank[best];
        }
      }
      if (better) {
        best = c;
        best_sum = sum;
      }
    }
    picked[best] = true;
    for (size_t t = 0; t < current.size(); ++t) {
      const double v = table(static_cast<Eigen::Index>(t), best);
      if (!std::isnan(v)) current[t] = std::min(current[t], v);
    }
    columns.push_back(best);
  }
  return columns;
}

}  // namespace

std::string_view PortfolioSearchName(PortfolioSearch search) {
  switch (search) {
    case PortfolioSearch::kGreedy:
      return "greedy";
    case PortfolioSearch::kEvolutionary:
      return "evolutionary";
  }
  return "unknown";
}

absl::StatusOr<PortfolioSearch> ParsePortfolioSearch(std::string_view name) {
  for (PortfolioSearch search :
       {PortfolioSearch::kGreedy, PortfolioSearch::kEvolutionary}) {
    if (name == PortfolioSearchName(search)) return search;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("portfolio search \"", std::string(name),
                   "\" is not one of greedy, evolutionary"));
}

std::string_view PortfolioMatchName(PortfolioMatch match) {
  switch (match) {
    case PortfolioMatch::kAuto:
      return "auto";
    case PortfolioMatch::kExact:
      return "exact";
    case PortfolioMatch::kNearest:
      return "nearest";
  }
  return "unknown";
}

absl::StatusOr<PortfolioMatch> ParsePortfolioMatch(std::string_view name) {
  for (PortfolioMatch match : {PortfolioMatch::kAuto, PortfolioMatch::kExact,
                               PortfolioMatch::kNearest}) {
    if (name == PortfolioMatchName(match)) return match;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("portfolio match \"", std::string(name),
                   "\" is not one of auto, exact, nearest"));
}

absl::StatusOr<std::vector<double>> PortfolioRegretCurve(
    const meta::MetaDataset& data, const std::vector<const meta::Task*>& tasks,
    const std::vector<v1::Configuration>& portfolio, PortfolioMatch match) {
  if (match == PortfolioMatch::kAuto) {
    return absl::InvalidArgumentError(
        "PortfolioRegretCurve needs match exact or nearest, not auto");
  }
  if (portfolio.empty()) {
    return absl::InvalidArgumentError("the portfolio is empty");
  }
  if (tasks.empty()) return absl::InvalidArgumentError("no tasks to score on");
  METAOPT_RETURN_IF_ERROR(CheckTasks(tasks));
  METAOPT_ASSIGN_OR_RETURN(Eigen::MatrixXd table,
                           RegretTable(data, tasks, portfolio, match));
  return CurveOfColumns(table);
}

absl::StatusOr<PortfolioResult> BuildPortfolio(
    const meta::MetaDataset& data,
    const std::vector<const meta::Task*>& train_tasks,
    const std::vector<const meta::Task*>& valid_tasks,
    const PortfolioOptions& options) {
  if (train_tasks.empty()) {
    return absl::InvalidArgumentError("no training tasks");
  }
  if (options.size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("portfolio size ", options.size, " must be at least 1"));
  }
  if (options.candidates_per_task < 0) {
    return absl::InvalidArgumentError(absl::StrCat("candidates per task ",
                                                   options.candidates_per_task,
                                                   " must be >= 0 (0: all)"));
  }
  METAOPT_RETURN_IF_ERROR(CheckTasks(train_tasks));
  METAOPT_RETURN_IF_ERROR(CheckTasks(valid_tasks));

  PortfolioResult result;
  const DistinctConfigurations distinct = Distinct(train_tasks);
  result.coverage = distinct.coverage;
  result.match = options.match;
  if (result.match == PortfolioMatch::kAuto) {
    result.match = result.coverage > kExactCoverageThreshold
                       ? PortfolioMatch::kExact
                       : PortfolioMatch::kNearest;
  }
  std::vector<v1::Configuration> candidates = Candidates(
      data, train_tasks, distinct, result.match, options.candidates_per_task);
  result.num_candidates = static_cast<int64_t>(candidates.size());
  METAOPT_ASSIGN_OR_RETURN(
      Eigen::MatrixXd table,
      RegretTable(data, train_tasks, candidates, result.match));

  const std::vector<int64_t> greedy =
      GreedyColumns(table, options.size, options.seed);
  result.greedy_train_objective = SetLoss(table, greedy);
  std::vector<int64_t> columns = greedy;
  if (options.search == PortfolioSearch::kEvolutionary) {
    EvolutionarySearch search = options.evolutionary;
    if (options.evolutionary_from_greedy) search.initial_sets.push_back(greedy);
    METAOPT_ASSIGN_OR_RETURN(
        EvolutionaryResult evolutionary,
        EvolutionaryPortfolio(table, options.size, options.seed, search));
    columns = std::move(evolutionary.members);
  }
  result.train_objective = SetLoss(table, columns);
  Eigen::MatrixXd picked(table.rows(),
                         static_cast<Eigen::Index>(columns.size()));
  for (size_t k = 0; k < columns.size(); ++k) {
    picked.col(static_cast<Eigen::Index>(k)) = table.col(columns[k]);
    result.configurations.push_back(candidates[columns[k]]);
  }
  result.train_regret = CurveOfColumns(picked);
  if (!valid_tasks.empty()) {
    METAOPT_ASSIGN_OR_RETURN(
        result.valid_regret,
        PortfolioRegretCurve(data, valid_tasks, result.configurations,
                             result.match));
  }
  return result;
}

}  // namespace metaopt::train
