// The data-driven evolutionary warm start of "Few-Shot Bayesian Optimization
// with Deep Kernel Surrogates" (§6, Eq. 12-14): the set X of I candidates
// minimising
//   L(X) = sum_t min_{j in X} F(t, j)                                (Eq. 12)
// over a table F of normalised regrets (tasks x candidates, in [0, 1], Eq. 13;
// NaN: unknown, counted as 1 = no help on that task, as in portfolio.h), found
// by an evolutionary search of sets instead of portfolio.h's greedy picks.
//
//   EvolutionarySearch search;  // 100,000 steps, as the paper.
//   METAOPT_ASSIGN_OR_RETURN(EvolutionaryResult best,
//                            EvolutionaryPortfolio(F, /*size=*/5, seed,
//                            search));
//
// The paper's algorithm: a population of sets whose members are drawn with
// probability proportional to w_j = exp(-min_t F(t, j)) (Eq. 14); each step
// either mutates a set (one member removed uniformly, one added by the Eq. 14
// weights) or crosses two sets over (a new set filled from the union of the
// parents); the child joins the population; after the steps the best set wins.
//
// Ours where the paper is silent: `population` initial sets; each step mutates
// with probability `mutation_probability`, else crosses over; parents are drawn
// uniformly (independently, so possibly the same set) from the `parents` best
// distinct sets seen so far (the rest of the population can never be chosen
// again, so only those are kept; the global best is among them); a set never
// repeats a candidate (sampling excludes the members, a mutation never re-adds
// the member it removed); crossover draws I members uniformly without
// replacement from the union; a child equal to a kept set is dropped; ties in
// L go to the earlier set. The winner's members are returned in greedy order
// (each next the one lowering L of the prefix most; ties: lower summed
// standalone regret, then lower index), so that a study trying them in turn
// sees the best prefixes. All draws come from one space::Rng seeded by `seed`:
// the same inputs give the same set on every platform.
#ifndef METAOPT_CORE_META_TRAINING_EVOLUTIONARY_PORTFOLIO_H_
#define METAOPT_CORE_META_TRAINING_EVOLUTIONARY_PORTFOLIO_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "Eigen/Core"
#include "absl/status/statusor.h"

namespace metaopt::train {

struct EvolutionarySearch {
  int64_t steps = 100000;             // >= 0 (0: the best initial set).
  int population = 100;               // >= 1 initial sets.
  int parents = 10;                   // >= 1: parents come from this many best.
  double mutation_probability = 0.5;  // In [0, 1]; else crossover.
  // Called every `progress_every` steps (>= 1) and after the last with the
  // steps done and the best L so far; may be empty.
  std::function<void(int64_t step, double best_loss)> progress;
  int64_t progress_every = 1000;
  // Sets joining the initial population besides the `population` drawn ones
  // (ours, e.g. the greedy portfolio, so that the result is never worse than
  // it): each of min(size, columns) distinct valid column indices.
  std::vector<std::vector<int64_t>> initial_sets;
};

struct EvolutionaryResult {
  std::vector<int64_t> members;  // Column indices of F, greedy order.
  double loss = 0;               // L(members).
  int64_t improvements = 0;      // Steps whose child became the best set.
};

// L(members) for columns `members` of `regrets` (NaN counted as 1); L({}) is
// the number of tasks. Requires valid column indices.
double SetLoss(const Eigen::MatrixXd& regrets,
               const std::vector<int64_t>& members);

// The best set of min(size, columns) columns found. INVALID_ARGUMENT (naming
// the field, value and rule) for an empty table, an entry outside [0, 1] that
// is not NaN, size < 1, steps < 0, population < 1, parents < 1,
// mutation_probability outside [0, 1], progress_every < 1, or an initial set
// of the wrong size or with a repeated or out-of-range column. Thread-safe (no
// shared state).
absl::StatusOr<EvolutionaryResult> EvolutionaryPortfolio(
    const Eigen::MatrixXd& regrets, int size, uint64_t seed,
    const EvolutionarySearch& search);

}  // namespace metaopt::train

#endif  // METAOPT_CORE_META_TRAINING_EVOLUTIONARY_PORTFOLIO_H_
