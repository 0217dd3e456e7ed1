#include "core/meta_training/portfolio_train.h"

#include <memory>
#include <string>
#include <utility>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/common/status_macros.h"
#include "core/meta_training/portfolio.h"

namespace metaopt::train {

void AddPortfolioSearchFlags(CLI::App& flags, PortfolioSearchFlags* state) {
  flags
      .add_option("--match", state->match,
                  "how a configuration's regret is known on a task: exact "
                  "(only where it was evaluated), nearest (the nearest "
                  "evaluated configuration in the encoded space), auto "
                  "(exact if configurations repeat across tasks)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "exact", "nearest"}));
  flags
      .add_option("--candidates-per-task", state->candidates_per_task,
                  "with nearest matching: candidates are the best N "
                  "configurations of each training task (0: all)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  flags
      .add_option("--portfolio-search", state->search,
                  "greedy (one pick at a time) or evolutionary (whole sets, "
                  "FSBO's evolutionary search)")
      ->capture_default_str()
      ->check(CLI::IsMember({"greedy", "evolutionary"}));
  flags
      .add_option("--steps", state->evolutionary.steps,
                  "evolutionary search: steps")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  flags
      .add_option("--population", state->evolutionary.population,
                  "evolutionary search: initial sets")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  flags
      .add_option("--parents", state->evolutionary.parents,
                  "evolutionary search: parents come from this many best "
                  "sets")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  flags
      .add_option("--from-greedy", state->from_greedy,
                  "evolutionary search: the greedy portfolio joins the "
                  "initial population (true: never worse than greedy on "
                  "the training tasks; false: the paper's search alone)")
      ->capture_default_str();
  flags
      .add_option("--mutation-probability",
                  state->evolutionary.mutation_probability,
                  "evolutionary search: probability of a mutation (else "
                  "crossover)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
}

absl::StatusOr<PortfolioOptions> PortfolioOptionsFrom(
    const PortfolioSearchFlags& flags) {
  PortfolioOptions options;
  options.candidates_per_task = flags.candidates_per_task;
  options.evolutionary = flags.evolutionary;
  options.evolutionary_from_greedy = flags.from_greedy;
  METAOPT_ASSIGN_OR_RETURN(options.search, ParsePortfolioSearch(flags.search));
  METAOPT_ASSIGN_OR_RETURN(options.match, ParsePortfolioMatch(flags.match));
  return options;
}

absl::StatusOr<v1::ModelArtifact> TrainPortfolioArtifact(
    const PortfolioOptions& portfolio_flags, const CommonTrainOptions& options,
    const TrainingSplits& data, Progress& progress) {
  const PortfolioOptions portfolio_options =
      WarmStartOptions(options, portfolio_flags, progress);
  METAOPT_ASSIGN_OR_RETURN(
      PortfolioResult portfolio,
      BuildPortfolio(data.dataset, data.train, data.valid, portfolio_options));
  progress.Log(absl::StrFormat(
      "portfolio: %d picks from %d candidates, match %s (coverage %.3f)",
      portfolio.configurations.size(), portfolio.num_candidates,
      std::string(PortfolioMatchName(portfolio.match)), portfolio.coverage));
  progress.Log(absl::StrFormat(
      "portfolio: %s search, summed train regret %.6f (greedy %.6f)",
      std::string(PortfolioSearchName(portfolio_options.search)),
      portfolio.train_objective, portfolio.greedy_train_objective));

  v1::ModelArtifact artifact;
  artifact.set_kind(v1::MODEL_KIND_PORTFOLIO);
  for (v1::Configuration& c : portfolio.configurations) {
    *artifact.add_portfolio() = std::move(c);
  }
  auto& int_options = *artifact.mutable_int_options();
  int_options["candidates"] = portfolio.num_candidates;
  int_options["nearest_match"] =
      portfolio.match == PortfolioMatch::kNearest ? 1 : 0;
  if (portfolio.match == PortfolioMatch::kNearest) {
    int_options["candidates_per_task"] = portfolio_options.candidates_per_task;
  }
  AddPortfolioSearchIntOptions(portfolio_options, &artifact);
  auto* metrics = artifact.mutable_provenance()->mutable_validation_metrics();
  AddCurveMetrics("train_regret", portfolio.train_regret, metrics);
  AddCurveMetrics("valid_regret", portfolio.valid_regret, metrics);
  (*metrics)["train_objective"] = portfolio.train_objective;
  (*metrics)["greedy_train_objective"] = portfolio.greedy_train_objective;
  return artifact;
}

TrainerKind PortfolioTrainerKind() {
  TrainerKind kind;
  kind.name = "portfolio";
  kind.description =
      "warm-start portfolio minimising summed normalised regret, greedy or "
      "by FSBO's evolutionary search (FSBO §6)";
  kind.add_flags = [](CLI::App& flags) -> Trainer {
    auto state = std::make_shared<PortfolioSearchFlags>();
    AddPortfolioSearchFlags(flags, state.get());
    return [state](const CommonTrainOptions& options,
                   const TrainingSplits& data,
                   Progress& progress) -> absl::StatusOr<v1::ModelArtifact> {
      METAOPT_ASSIGN_OR_RETURN(PortfolioOptions portfolio_options,
                               PortfolioOptionsFrom(*state));
      return TrainPortfolioArtifact(portfolio_options, options, data, progress);
    };
  };
  return kind;
}

}  // namespace metaopt::train
