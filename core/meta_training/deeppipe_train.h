// Meta-training of DeepPipe ("Deep Pipeline Embeddings for AutoML",
// Algorithm 1) and
// metaopt-train --kind deeppipe.
//
// Per epoch, in a shuffled task order, one Adam step per training task on a
// batch of that task's evaluations (sampled without replacement: min(batch
// size, evaluations) rows, so no duplicate rows; the authors sample 1000 with
// replacement), on the per-point GP NLL of the batch's targets standardised by
// the batch's mean and standard deviation (as Posterior/FineTune standardise a
// study's observations). The learning rate follows a cosine from `lr` down to
// `min_lr` over the epochs (stepped once per epoch, like the authors'
// CosineAnnealingLR). After every epoch the model is scored on the validation
// tasks the way the authors select checkpoints: for each task a fixed support
// set (min(50, n/2) evaluations) and a disjoint query set (min(100, rest)),
// drawn once from the seed; the GP is conditioned on the support embeddings
// and the mean predictive NLL of the query targets (standardised by the
// support's statistics, observation noise included) is averaged over tasks.
// The best epoch by that score is returned (the last epoch without validation
// tasks).
//
// With `augmentation` (the task augmentation of "Few-Shot Bayesian
// Optimization with Deep Kernel Surrogates", Wistuba & Grabocka, ICLR 2021) the
// batch targets are not standardised but rescaled as y <- (y - l) / (u - l)
// with l < u drawn uniformly from [min y, max y] over all training tasks.
//
// With `condition_on_features` every task's batch and validation sets are
// embedded with that task's standardized meta-features, and the validation
// score goes through the conditioned posterior (mean head included).
//
// Objectives to maximise are negated first (the GP sees losses, as the
// policies' surrogates do; the standardised NLL does not depend on the sign).
//
// Threads: with threads = k > 1 the per-task gradients of k consecutive tasks
// of the epoch's order are computed in parallel at the same parameters, then
// applied as k Adam steps in task order (gradients up to k - 1 steps stale).
// Each task's batch is drawn from its own generator seeded by (seed, epoch,
// task), so the result is deterministic for a fixed seed and thread count,
// and for threads = 1 it is exactly sequential Algorithm 1. Validation runs in
// parallel too (it does not change the result).
#ifndef METAOPT_CORE_META_TRAINING_DEEPPIPE_TRAIN_H_
#define METAOPT_CORE_META_TRAINING_DEEPPIPE_TRAIN_H_

#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/meta_dataset/meta_dataset.h"
#include "core/meta_training/train_common.h"
#include "core/meta_training/training_loop.h"
#include "core/surrogate/deeppipe_model.h"

namespace metaopt::train {

struct DeepPipeTrainOptions {
  surrogate::DeepPipeArchitecture architecture;
  int epochs = 100;                // The authors run 10000.
  int batch_size = 1000;           // The authors' b.
  double lr = 1e-4;                // The authors' Adam learning rate.
  double min_lr = 1e-7;            // Cosine floor (the authors' eta_min).
  double max_gradient_norm = 0.0;  // 0: no clipping (the authors clip none).
  bool augmentation = false;
  // Task conditioning (surrogate::DeepPipeModel): the model reads the
  // training tasks' meta-features (those with a positive spread over the
  // training tasks, standardized by their statistics; a task without a
  // feature gets its mean) and each batch is embedded with its own task's.
  bool condition_on_features = false;
  // Conditioned models: each training batch sees each of its task's features
  // imputed (set to the training mean, as a study that lacks it) with this
  // probability, so that the model degrades gracefully on partial features.
  double feature_dropout = 0.0;
  // Conditioned models: weight of the mean head's regression term
  // (DeepPipeModel::Loss), which trains the zero-shot prior mean.
  double mean_loss_weight = 1.0;
  int valid_support = 50;
  int valid_query = 100;
  uint64_t seed = 0;
  int threads = 1;
  // The arithmetic of the training steps' loss and gradient
  // (surrogate::NetworkPrecision: the network and K^-1 in float for
  // kFloat32; Adam, the parameters, the Cholesky factor, validation and the
  // saved model stay in double).
  surrogate::NetworkPrecision precision = surrogate::NetworkPrecision::kFloat64;
  // Stops after the epoch that exceeds it (the best epoch so far is kept).
  absl::Duration time_budget = absl::InfiniteDuration();
  // Asked after every epoch; true stops training there (the best epoch so far
  // is kept). Empty: never.
  std::function<bool()> should_stop;
};

// One epoch's numbers (epoch 0: the initial model, train_nll NaN).
struct DeepPipeEpochStats {
  int epoch = 0;
  int epochs = 0;  // Planned.
  // Mean per-point NLL of the epoch's training batches (at the parameters each
  // gradient was computed at).
  double train_nll = std::numeric_limits<double>::quiet_NaN();
  // Mean validation query NLL (NaN without validation tasks).
  double valid_nll = std::numeric_limits<double>::quiet_NaN();
  double learning_rate = 0.0;
  int failed_steps = 0;  // Batches whose Cholesky failed (step skipped).
  bool best = false;     // The best checkpoint so far.
  absl::Duration epoch_time;
  absl::Duration elapsed;
};

struct DeepPipeTrainResult {
  surrogate::DeepPipeModel best;
  int best_epoch = 0;
  std::vector<DeepPipeEpochStats> history;  // history[0] is epoch 0.
  TrainingLoopResult loop;  // Epochs run, steps, seconds per epoch.
  absl::Duration wall_time;
};

using DeepPipeProgressCallback = std::function<void(const DeepPipeEpochStats&)>;

// Meta-trains a DeepPipe over `data.space` on `train` (non-empty) and selects
// the checkpoint on `valid` (may be empty); tasks must belong to `data`.
// INVALID_ARGUMENT for bad options (epochs < 0, batch_size < 2, lr <= 0,
// threads < 1, ...), an invalid architecture or a task with fewer than 2
// evaluations (validation tasks need 3). Runs RunTrainingLoop (cosine
// learning rate per epoch); `progress` sees every epoch's numbers, and
// `progress_lines` (may be null) gets the loop's progress lines.
// Thread-safe (no shared state).
absl::StatusOr<DeepPipeTrainResult> TrainDeepPipe(
    const meta::MetaDataset& data, const std::vector<const meta::Task*>& train,
    const std::vector<const meta::Task*>& valid,
    const DeepPipeTrainOptions& options,
    const DeepPipeProgressCallback& progress = nullptr,
    Progress* progress_lines = nullptr);

// The artifact metaopt-train --kind deeppipe (and fsbo) writes, from `train`
// (its seed replaced by options.seed): the best checkpoint of TrainDeepPipe
// on data.train / data.valid (surrogate::DeepPipeModel::ToArtifact: kind
// MODEL_KIND_FSBO for FSBO's GP), the warm-start portfolio (portfolio.h,
// options.portfolio_size picks, searched as `warm_start` says: greedy by
// default; an evolutionary search is recorded in int_options as
// portfolio_train.h's) and the metrics valid_nll, train_nll (at the best
// epoch), initial_valid_nll, best_epoch, epochs_run, seconds_per_epoch, the
// portfolio's valid_regret@k, train_objective and greedy_train_objective.
// Progress lines go to `progress`.
absl::StatusOr<v1::ModelArtifact> TrainDeepPipeArtifact(
    const DeepPipeTrainOptions& train, const CommonTrainOptions& options,
    const TrainingSplits& data, Progress& progress,
    const PortfolioOptions& warm_start = {});

// The meta-training loop's flags, shared by --kind deeppipe and fsbo:
// --epochs, --batch-size, --lr, --min-lr, --threads, --precision,
// --max-grad-norm, --valid-support, --valid-query, --max-minutes. Help shows
// `state`'s values as defaults; `state` must outlive the parse.
struct DeepPipeLoopFlags {
  DeepPipeTrainOptions train;
  double max_minutes = 0.0;
};
void AddDeepPipeLoopFlags(CLI::App& flags, DeepPipeLoopFlags* state);
// The parsed options (time_budget from --max-minutes).
DeepPipeTrainOptions DeepPipeTrainOptionsFrom(const DeepPipeLoopFlags& flags);

// metaopt-train --kind deeppipe (TrainDeepPipeArtifact). Flags: --epochs,
// --batch-size, --lr,
// --min-lr, --encoder-layers, --aggregation-layers, --width-factor, --hidden,
// --embedding, --threads, --precision, --augmentation, --max-grad-norm,
// --valid-support,
// --valid-query, --max-minutes (the seed is the common --seed). The artifact
// holds the best checkpoint (surrogate::DeepPipeModel::ToArtifact), the
// greedy warm-start portfolio (portfolio.h, --size picks) and the metrics
// valid_nll, train_nll (at the best epoch), initial_valid_nll, best_epoch,
// epochs_run, seconds_per_epoch and the portfolio's valid_regret@k.
TrainerKind DeepPipeTrainerKind();

}  // namespace metaopt::train

#endif  // METAOPT_CORE_META_TRAINING_DEEPPIPE_TRAIN_H_
