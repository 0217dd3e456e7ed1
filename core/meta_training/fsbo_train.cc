#include "core/meta_training/fsbo_train.h"

#include <memory>

#include "CLI/CLI.hpp"
#include "core/common/status_macros.h"

namespace metaopt::train {

DeepPipeTrainOptions FsboTrainOptions() {
  DeepPipeTrainOptions train;
  train.architecture = surrogate::FsboArchitecture();
  train.epochs = 1000;
  train.batch_size = 50;  // "a batch size of fifty"
  train.lr = 1e-3;        // "Adam optimizer with learning rate 10^-3"
  train.min_lr = 1e-3;    // No schedule: the cosine is flat.
  train.augmentation = true;
  return train;
}

PortfolioSearchFlags FsboWarmStartFlags() {
  PortfolioSearchFlags flags;
  flags.search = "evolutionary";
  return flags;
}

TrainerKind FsboTrainerKind() {
  TrainerKind kind;
  kind.name = "fsbo";
  kind.description =
      "FSBO deep kernel (MLP 128-128, squared-exponential GP, zero mean) "
      "meta-learned with task augmentation, best epoch by validation NLL, "
      "plus the evolutionary warm start of 5 settings (FSBO §6)";
  kind.default_portfolio_size = 5;
  kind.add_flags = [](CLI::App& flags) -> Trainer {
    struct State {
      DeepPipeLoopFlags loop;
      PortfolioSearchFlags warm_start = FsboWarmStartFlags();
      bool standardize_targets = false;
    };
    auto state = std::make_shared<State>();
    state->loop.train = FsboTrainOptions();
    AddDeepPipeLoopFlags(flags, &state->loop);
    AddPortfolioSearchFlags(flags, &state->warm_start);
    flags
        .add_option("--standardize-targets", state->standardize_targets,
                    "fsbo: the served model standardises a study's targets by "
                    "their mean and standard deviation before each fine-tune "
                    "and posterior (false: the paper's raw targets); "
                    "meta-training is unchanged")
        ->capture_default_str();
    return
        [state](const CommonTrainOptions& options, const TrainingSplits& data,
                Progress& progress) -> absl::StatusOr<v1::ModelArtifact> {
          METAOPT_ASSIGN_OR_RETURN(PortfolioOptions warm_start,
                                   PortfolioOptionsFrom(state->warm_start));
          METAOPT_ASSIGN_OR_RETURN(
              v1::ModelArtifact artifact,
              TrainDeepPipeArtifact(DeepPipeTrainOptionsFrom(state->loop),
                                    options, data, progress, warm_start));
          // surrogate::DeepPipeModel::standardizes_fsbo_targets.
          if (state->standardize_targets) {
            (*artifact.mutable_normalization())["target_standardization"] = 1;
          }
          return artifact;
        };
  };
  return kind;
}

}  // namespace metaopt::train
