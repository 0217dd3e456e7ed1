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
namespace {

struct PortfolioFlags {
  std::string match = "auto";
  int candidates_per_task = PortfolioOptions().candidates_per_task;
};

}  // namespace

absl::StatusOr<v1::ModelArtifact> TrainPortfolioArtifact(
    const PortfolioOptions& portfolio_flags, const CommonTrainOptions& options,
    const TrainingSplits& data, Progress& progress) {
  PortfolioOptions portfolio_options = portfolio_flags;
  portfolio_options.size = options.portfolio_size;
  portfolio_options.seed = options.seed;
  METAOPT_ASSIGN_OR_RETURN(
      PortfolioResult portfolio,
      BuildPortfolio(data.dataset, data.train, data.valid, portfolio_options));
  progress.Log(absl::StrFormat(
      "portfolio: %d picks from %d candidates, match %s (coverage %.3f)",
      portfolio.configurations.size(), portfolio.num_candidates,
      std::string(PortfolioMatchName(portfolio.match)), portfolio.coverage));

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
  auto* metrics = artifact.mutable_provenance()->mutable_validation_metrics();
  AddCurveMetrics("train_regret", portfolio.train_regret, metrics);
  AddCurveMetrics("valid_regret", portfolio.valid_regret, metrics);
  return artifact;
}

TrainerKind PortfolioTrainerKind() {
  TrainerKind kind;
  kind.name = "portfolio";
  kind.description =
      "greedy warm-start portfolio minimising summed normalised regret "
      "(FSBO §6)";
  kind.add_flags = [](CLI::App& flags) -> Trainer {
    auto state = std::make_shared<PortfolioFlags>();
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
    return [state](const CommonTrainOptions& options,
                   const TrainingSplits& data,
                   Progress& progress) -> absl::StatusOr<v1::ModelArtifact> {
      PortfolioOptions portfolio_options;
      portfolio_options.candidates_per_task = state->candidates_per_task;
      METAOPT_ASSIGN_OR_RETURN(portfolio_options.match,
                               ParsePortfolioMatch(state->match));
      return TrainPortfolioArtifact(portfolio_options, options, data, progress);
    };
  };
  return kind;
}

}  // namespace metaopt::train
