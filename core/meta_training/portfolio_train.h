// metaopt-train --kind portfolio: a MODEL_KIND_PORTFOLIO artifact holding the
// search space, the objective and a warm-start portfolio (greedy or
// evolutionary)
// (portfolio.h) with its regret curves on the training and validation tasks.
#ifndef METAOPT_CORE_META_TRAINING_PORTFOLIO_TRAIN_H_
#define METAOPT_CORE_META_TRAINING_PORTFOLIO_TRAIN_H_

#include <string>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
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

// The portfolio flags above (all but --size), shared with the kinds whose
// warm start is searched the same way (fsbo): their storage, with defaults.
struct PortfolioSearchFlags {
  std::string match = "auto";
  int candidates_per_task = PortfolioOptions().candidates_per_task;
  std::string search = "greedy";
  bool from_greedy = PortfolioOptions().evolutionary_from_greedy;
  EvolutionarySearch evolutionary;
};
// Adds them to `flags` (help text shows `state`'s current values as
// defaults); `state` must outlive the parse.
void AddPortfolioSearchFlags(CLI::App& flags, PortfolioSearchFlags* state);
// PortfolioOptions (size and seed left at their defaults) from parsed flags;
// INVALID_ARGUMENT for an unknown search or match name.
absl::StatusOr<PortfolioOptions> PortfolioOptionsFrom(
    const PortfolioSearchFlags& flags);

}  // namespace metaopt::train

#endif  // METAOPT_CORE_META_TRAINING_PORTFOLIO_TRAIN_H_
