// Zero-shot warm-start portfolios (the warm start of "Few-Shot Bayesian
// Optimization with Deep Kernel Surrogates"; docs/algorithms.md): K
// configurations, chosen greedily from a meta-dataset's training tasks, whose
// best member is good on as many tasks as possible. A new study tries them
// first, before it has any observation.
//
//   train::PortfolioOptions options;
//   options.size = 16;
//   METAOPT_ASSIGN_OR_RETURN(train::PortfolioResult portfolio,
//                            train::BuildPortfolio(data, train, valid,
//                            options));
//
// Definitions. The loss of a configuration x on task t is l_t(x) = y (goal
// minimize) or -y (goal maximize). Its normalised regret is
//   r_t(x) = (l_t(x) - min l_t) / (max l_t - min l_t)   in [0, 1],
// min and max over the configurations evaluated on t (0 for every x when all of
// t's values are equal). The regret of a set S on t is min over x in S of
// r_t(x) for the members whose r_t is known (see PortfolioMatch), and 1 when no
// member is known on t (in particular for the empty set): a configuration that
// says nothing about a task cannot help on it.
//
// Greedy (FSBO's objective, Eq. 12, built one pick at a time instead of by its
// evolutionary search): S_0 = {}, S_k = S_{k-1} + c_k where c_k minimises
// sum_t regret_t(S_{k-1} + c) over the remaining candidates. Ties (equal sums
// up to 1e-12 per task) go to the candidate with the lower summed standalone
// regret sum_t r_t(c) (unknown counted as 1), which keeps picks meaningful once
// every training task is solved (e.g. a single training task); remaining ties
// to a random order of the candidates drawn from `seed`. The same inputs and
// seed give the same portfolio.
//
// Evolutionary (PortfolioSearch::kEvolutionary): the same objective over the
// same regret table, minimised over whole sets of K candidates by the paper's
// evolutionary search (evolutionary_portfolio.h); the set is ordered greedily.
#ifndef METAOPT_CORE_META_TRAINING_PORTFOLIO_H_
#define METAOPT_CORE_META_TRAINING_PORTFOLIO_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "core/meta_dataset/meta_dataset.h"
#include "core/meta_training/evolutionary_portfolio.h"
#include "metaopt/v1/study.pb.h"

namespace metaopt::train {

// How the regret of a configuration is known on a task.
enum class PortfolioMatch {
  // kExact when configurations repeat across the training tasks (grids,
  // catalogues), kNearest otherwise (per-task random search, such as
  // adaboost). Precisely: kExact iff the distinct configurations of the
  // training tasks were evaluated, on average, on more than half of the
  // training tasks (always true for a single training task).
  kAuto,
  // r_t(x) is known only when x itself was evaluated on t (equal canonical
  // configurations, space::ConfigurationKey).
  kExact,
  // r_t(x) is always known: it is r_t of the configuration of t nearest to x
  // in the encoded unit cube (space::Encoder; Euclidean distance; ties: the
  // first in file order). A 1-nearest-neighbour surrogate standing in for
  // FSBO's imputation of missing values with its deep-kernel GP. Exact where
  // x was evaluated on t (distance 0).
  kNearest,
};

std::string_view PortfolioMatchName(PortfolioMatch match);  // "auto", ...
// "auto", "exact" or "nearest"; anything else is INVALID_ARGUMENT.
absl::StatusOr<PortfolioMatch> ParsePortfolioMatch(std::string_view name);

// How the K picks are searched for.
enum class PortfolioSearch {
  kGreedy,        // One pick at a time (above).
  kEvolutionary,  // Whole sets, FSBO's evolutionary search.
};

std::string_view PortfolioSearchName(PortfolioSearch search);  // "greedy", ...
// "greedy" or "evolutionary"; anything else is INVALID_ARGUMENT.
absl::StatusOr<PortfolioSearch> ParsePortfolioSearch(std::string_view name);

struct PortfolioOptions {
  int size = 16;  // K >= 1: the number of picks.
  uint64_t seed = 0;
  PortfolioMatch match = PortfolioMatch::kAuto;
  // With kNearest: the candidates are the best this many configurations of
  // each training task (by y, ties by file order), without duplicates; 0: every
  // configuration of the training tasks. The neighbour search costs
  // O(candidates x evaluated configurations x encoded dimension). With kExact
  // every distinct configuration of the training tasks is a candidate.
  int candidates_per_task = 64;
  PortfolioSearch search = PortfolioSearch::kGreedy;
  // With kEvolutionary: its steps, population, parents, mutation probability
  // and progress (the set size is `size`, the seed `seed`).
  EvolutionarySearch evolutionary;
  // With kEvolutionary: the greedy portfolio joins the initial population
  // (ours), so the result's objective is never worse than greedy's.
  bool evolutionary_from_greedy = true;
};

struct PortfolioResult {
  // The picks in order (canonical configurations of the meta-dataset); fewer
  // than `size` only when there are fewer candidates.
  std::vector<v1::Configuration> configurations;
  // [k - 1]: mean over the training tasks of the regret of the first k picks.
  std::vector<double> train_regret;
  // The same over the validation tasks (same matching rule); empty without
  // validation tasks.
  std::vector<double> valid_regret;
  PortfolioMatch match =
      PortfolioMatch::kExact;  // The rule used (never kAuto).
  int64_t num_candidates = 0;
  // Mean over the distinct training configurations of the fraction of training
  // tasks each was evaluated on (1 for a full grid; 1/T when no configuration
  // repeats across T tasks).
  double coverage = 0;
  // Eq. 12's objective over the training tasks, sum_t regret_t(portfolio),
  // for the portfolio returned and for the greedy one of the same size (the
  // same value under kGreedy).
  double train_objective = 0;
  double greedy_train_objective = 0;
};

// Builds a portfolio from `train_tasks` (tasks of `data`) and scores it on
// `valid_tasks` (may be empty). INVALID_ARGUMENT for no training tasks, size <
// 1, candidates_per_task < 0, invalid evolutionary options (see
// EvolutionaryPortfolio), or a task without evaluations or with
// configurations and y of different lengths. Thread-safe (no shared state).
absl::StatusOr<PortfolioResult> BuildPortfolio(
    const meta::MetaDataset& data,
    const std::vector<const meta::Task*>& train_tasks,
    const std::vector<const meta::Task*>& valid_tasks,
    const PortfolioOptions& options);

// The mean over `tasks` of the regret of the first k members of `portfolio`
// (canonical configurations of data.space), for k = 1..portfolio.size().
// `match` is kExact or kNearest. INVALID_ARGUMENT for kAuto, an empty
// portfolio or task list, or a task without evaluations.
absl::StatusOr<std::vector<double>> PortfolioRegretCurve(
    const meta::MetaDataset& data, const std::vector<const meta::Task*>& tasks,
    const std::vector<v1::Configuration>& portfolio, PortfolioMatch match);

}  // namespace metaopt::train

#endif  // METAOPT_CORE_META_TRAINING_PORTFOLIO_H_
