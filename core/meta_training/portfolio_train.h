// metaopt-train --kind portfolio: a MODEL_KIND_PORTFOLIO artifact holding the
// search space, the objective and a warm-start portfolio (greedy or
// evolutionary)
// (portfolio.h) with its regret curves on the training and validation tasks.
#ifndef METAOPT_CORE_META_TRAINING_PORTFOLIO_TRAIN_H_
#define METAOPT_CORE_META_TRAINING_PORTFOLIO_TRAIN_H_

#include "core/meta_training/portfolio.h"
#include "core/meta_training/train_common.h"

namespace metaopt::train {

// The artifact metaopt-train --kind portfolio writes: the portfolio of
// options.portfolio_size picks (seed options.seed; match and
// candidates_per_task, search and evolutionary from `portfolio`; progress of
// the evolutionary search to `progress` unless set) built on data.train, with
// the metrics and int_options below.
absl::StatusOr<v1::ModelArtifact> TrainPortfolioArtifact(
    const PortfolioOptions& portfolio, const CommonTrainOptions& options,
    const TrainingSplits& data, Progress& progress);

// Flags: --match auto|exact|nearest, --candidates-per-task N,
// --portfolio-search greedy|evolutionary, --steps, --population, --parents,
// --from-greedy, --mutation-probability (see PortfolioOptions,
// EvolutionarySearch); invalid values are INVALID_ARGUMENT from
// EvolutionaryPortfolio. Metrics: "train_regret@k" and "valid_regret@k" for k
// = 1..K (the mean normalised regret of the first k picks; valid_* only when
// the validation split has tasks), "train_objective" and
// "greedy_train_objective" (PortfolioResult). int_options: "candidates",
// "nearest_match" (1 when configurations were matched by nearest neighbour),
// "evolutionary_search" (1 for the evolutionary search, then also
// "evolutionary_steps", "evolutionary_population", "evolutionary_parents",
// "evolutionary_from_greedy").
TrainerKind PortfolioTrainerKind();

}  // namespace metaopt::train

#endif  // METAOPT_CORE_META_TRAINING_PORTFOLIO_TRAIN_H_
