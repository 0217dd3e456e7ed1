// Meta-training of GROSI ("Zero-shot Transfer Learning for Gray-box
// Hyper-parameter Optimization", Algorithm 1) and metaopt-train --kind grosi.
//
// The data: every training task with at least one meta-feature (tasks without
// any carry no dataset information and are left out) and a non-constant
// objective. Its targets are its normalised regrets (loss - min) / (max - min)
// over its own evaluations (the paper's per-dataset min-max scaling of the
// response, with 0 the best). The meta-features are the union of those of
// the training tasks, sorted by name, standardised by their means and
// standard deviations over the training tasks that have them; a missing one is
// imputed with the mean (z = 0).
//
// Algorithm 1 (Reptile-style): per outer step a meta-batch of `meta_batch`
// tasks (8); for each, beta' = beta, then `inner_steps` (v = 5) plain SGD
// steps at `inner_lr` (1e-3) on O + alpha R + delta P, each with a fresh
// negative task q != t and `batch_configs` configurations of t drawn without
// replacement; the outer step is Adam at `lr` (1e-3) with the mean of
// beta - beta' over the meta-batch as the gradient. An epoch is one pass over
// the training tasks in a shuffled order.
//
// The positive pair of P: the paper pairs two batches (subsamples) of the same
// dataset. With engineered meta-features there is one vector per dataset, so
// the second view z_t' drops each present feature (imputes it, z = 0) with
// probability `feature_dropout` (0.2), which also teaches the embedding to
// tolerate missing features.
//
// Dataset2Vec (architecture.dataset2vec, metaopt-train --dataset-samples):
// the model reads each task's raw sample (`samples`, by task id) through the
// extractor, with (`engineered`) or without the engineered meta-features; a
// task without a sample (or, with `engineered`, without meta-features) is left
// out. Every view of an inner step is a random sub-batch of its task's sample
// (`d2v_rows` rows x `d2v_columns` columns, all targets; the paper's batches):
// t and t' are two sub-batches of the same sample (the positive pair of P), q's
// another task's. Validation and serving read the whole sample. Before
// Algorithm 1, `d2v_pretrain_epochs` epochs train the extractor (and h) on P
// alone with Adam at `lr`, one step per training task ("Dataset2Vec: Learning
// Dataset Meta-Features", the dataset identification objective). The artifact
// keeps the mean D2V output over the training tasks for studies without a
// sample.
//
// Selection: after every epoch each validation task (with meta-features) is
// scored zero-shot: its evaluated configurations ranked by the predicted
// normalised regret, regret@k = the best true normalised regret among the
// first k. The epoch with the lowest mean of regret@1..`select_k` (10) is
// kept (without validation tasks: the last epoch). Deterministic given the
// seed.
#ifndef METAOPT_CORE_META_TRAINING_GROSI_TRAIN_H_
#define METAOPT_CORE_META_TRAINING_GROSI_TRAIN_H_

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/meta_dataset/meta_dataset.h"
#include "core/meta_training/train_common.h"
#include "core/meta_training/training_loop.h"
#include "core/surrogate/grosi_model.h"

namespace metaopt::train {

struct GrosiTrainOptions {
  surrogate::GrosiArchitecture architecture;
  surrogate::GrosiLossWeights weights;  // alpha 0.5, delta 1 (App. F.1)
  int epochs = 100;
  int meta_batch = 8;
  int inner_steps = 5;
  double inner_lr = 1e-3;
  double lr = 1e-3;
  int batch_configs = 32;
  double feature_dropout = 0.2;
  int select_k = 10;
  // Length of the reported regret curves.
  int curve_k = 20;
  // Dataset2Vec (with architecture.dataset2vec): raw samples by task id.
  std::shared_ptr<const std::map<std::string, surrogate::RawSample>> samples;
  bool engineered = true;  // also the engineered meta-features
  int d2v_rows = 64;
  int d2v_columns = 8;
  int d2v_pretrain_epochs = 0;
  uint64_t seed = 0;
  absl::Duration time_budget = absl::InfiniteDuration();
};

// One epoch's numbers (epoch 0: the initial model).
struct GrosiEpochStats {
  int epoch = 0;
  int epochs = 0;
  // Means over the epoch's inner steps (NaN for epoch 0).
  double regression = std::numeric_limits<double>::quiet_NaN();
  double consistency = std::numeric_limits<double>::quiet_NaN();
  double identification = std::numeric_limits<double>::quiet_NaN();
  // Zero-shot validation (NaN / empty without validation tasks).
  double valid_score = std::numeric_limits<double>::quiet_NaN();
  double valid_mse = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> valid_regret;  // regret@1..curve_k
  bool best = false;
  absl::Duration epoch_time;
};

struct GrosiTrainResult {
  surrogate::GrosiModel best;
  int best_epoch = 0;
  std::vector<GrosiEpochStats> history;  // history[0]: epoch 0
  TrainingLoopResult loop;  // Epochs run, steps, seconds per epoch.
  // Training tasks used (with meta-features and a y spread) and left out.
  std::vector<std::string> train_tasks;
  int skipped_train_tasks = 0;
  int valid_tasks = 0;
  int skipped_valid_tasks = 0;
};

// Trains on `train` and selects on `valid` (tasks of `data`) with
// RunTrainingLoop (constant outer learning rate; progress lines to
// `progress`, which may be null). INVALID_ARGUMENT
// for bad options or when fewer than 2 training tasks have meta-features and a
// y spread.
absl::StatusOr<GrosiTrainResult> TrainGrosi(
    const meta::MetaDataset& data, const std::vector<const meta::Task*>& train,
    const std::vector<const meta::Task*>& valid,
    const GrosiTrainOptions& options, Progress* progress = nullptr);

// Zero-shot regret@1..k of `model` on `task` (its evaluated configurations
// ranked by the predicted normalised regret, ties by row order) given the
// task's raw sample (null: none); empty for a task without a y spread.
std::vector<double> GrosiZeroShotRegret(
    const surrogate::GrosiModel& model, const meta::Task& task, v1::Goal goal,
    int k, const surrogate::RawSample* sample = nullptr);

// The raw samples of `tasks` in `dir` (meta::ReadDatasetSamples) by task id.
absl::StatusOr<std::map<std::string, surrogate::RawSample>> ReadDatasetSamples(
    const std::string& dir, const std::vector<const meta::Task*>& tasks);

// metaopt-train --kind grosi. Flags: --epochs, --meta-batch, --inner-steps,
// --inner-lr, --lr, --batch-configs, --alpha, --delta, --feature-dropout,
// --embedding, --feature-hidden, --psi1, --tower-layers, --tower-width,
// --head-layers, --head-width, --select-k, --max-minutes; Dataset2Vec:
// --dataset-samples DIR, --d2v-only (no engineered meta-features),
// --d2v-rows, --d2v-columns, --d2v-width, --d2v-pretrain-epochs. The artifact:
// the best epoch's model (surrogate::GrosiModel::ToArtifact), the raw
// meta-features of the training tasks used (training_features), the greedy
// portfolio (--size), and the metrics valid_regret@k, valid_mse,
// initial_valid_regret@k, portfolio_valid_regret@k, best_epoch, epochs_run,
// seconds_per_epoch, train_tasks, valid_tasks.
TrainerKind GrosiTrainerKind();

}  // namespace metaopt::train

#endif  // METAOPT_CORE_META_TRAINING_GROSI_TRAIN_H_
