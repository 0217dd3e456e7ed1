// The meta-training loop every model kind of metaopt-train runs: Adam
// (nn::Adam) over the kind's parameter vector on a learning-rate schedule,
// epochs, the best epoch by a validation score, a time budget, early stopping,
// progress lines, and the loop's metrics in the artifact. A kind supplies
// what differs through EpochTrainer: an epoch's gradients (its batches, task
// order and threads are its own), the score of the current parameters, a
// copy of the best ones, and the numbers of its progress line.
//
//   epoch 0: Score() the initial model; it is the best so far (KeepBest).
//   Prepare() (e.g. pre-training outside the selection).
//   for epoch 1..epochs:
//     RunEpoch(epoch, optimizer)   the kind calls optimizer.Step per batch
//     Score()                      nullopt (no validation): every epoch is
//                                  the best, so the last one is kept;
//                                  otherwise the best is the lowest score
//                                  (strictly lower than every earlier one)
//     KeepBest() if best; EndEpoch(record) -> the progress line's numbers
//     stop after `patience` epochs without a better score, when the time
//     budget is spent or should_stop() says so (the best epoch is kept).
#ifndef METAOPT_CORE_META_TRAINING_TRAINING_LOOP_H_
#define METAOPT_CORE_META_TRAINING_TRAINING_LOOP_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "Eigen/Core"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/meta_training/train_common.h"
#include "core/nn/optimizer.h"
#include "google/protobuf/map.h"

namespace metaopt::train {

struct TrainingLoopOptions;
struct TrainingLoopResult;
class EpochTrainer;

// The learning rate of each optimizer step.
struct LearningRateSchedule {
  enum class Decay {
    kConstant,  // `initial` throughout.
    // nn::CosineLearningRate(initial, final, epoch - 1, epochs): one value
    // per epoch (PyTorch's CosineAnnealingLR stepped per epoch).
    kCosinePerEpoch,
    // nn::CosineLearningRate(initial, final, steps taken, total_steps).
    kCosinePerStep,
  };
  Decay decay = Decay::kConstant;
  double initial = 1e-3;
  double final = 0.0;
  int64_t total_steps = 0;  // kCosinePerStep.
};

// Adam over one parameter vector at the schedule's learning rate, as the
// loop hands it to EpochTrainer::RunEpoch. Not thread-safe.
class TrainingOptimizer {
 public:
  TrainingOptimizer(int num_parameters, LearningRateSchedule schedule,
                    int epochs, double max_gradient_norm);

  // The learning rate of the next step.
  double learning_rate() const;
  // Steps taken so far.
  int64_t steps() const { return adam_.steps(); }
  // Clips `gradient` in place to the loop's max_gradient_norm (none when 0),
  // then one Adam step on `params` (same size) at learning_rate().
  void Step(Eigen::Ref<Eigen::VectorXd> gradient,
            Eigen::Ref<Eigen::VectorXd> params);

 private:
  friend absl::StatusOr<TrainingLoopResult> RunTrainingLoop(
      const TrainingLoopOptions&, int, EpochTrainer&);

  nn::Adam adam_;
  LearningRateSchedule schedule_;
  int epochs_;
  int epoch_ = 1;
  double max_gradient_norm_;
};

// What the loop knows of an epoch when it is done (epoch 0: the initial
// model, before any step).
struct EpochRecord {
  int epoch = 0;
  int epochs = 0;  // Planned.
  // EpochTrainer::Score: nullopt without validation.
  std::optional<double> score;
  bool best = false;  // The best epoch so far.
  // Of the epoch's steps (per-step decay: of its first); epoch 0: initial.
  double learning_rate = 0.0;
  absl::Duration epoch_time;  // Zero for epoch 0.
  absl::Duration elapsed;     // Since TrainingLoopOptions::start.
};

// A model kind's part of the loop. Calls come in the order of the loop
// above, from the thread that runs RunTrainingLoop.
class EpochTrainer {
 public:
  virtual ~EpochTrainer() = default;

  // Once, after epoch 0 and before epoch 1.
  virtual absl::Status Prepare() { return absl::OkStatus(); }
  // Epoch `epoch` (from 1): the kind's batches, each gradient applied with
  // optimizer.Step to the kind's parameters. An error ends training.
  virtual absl::Status RunEpoch(int epoch, TrainingOptimizer& optimizer) = 0;
  // The selection score of the current parameters, lower is better (NaN is
  // never better); nullopt without validation.
  virtual absl::StatusOr<std::optional<double>> Score() = 0;
  // Keeps the current parameters as the best checkpoint.
  virtual void KeepBest() = 0;
  // The epoch is done: the kind records it and returns the numbers of its
  // progress line (e.g. "train NLL 0.1234  valid NLL 0.5678").
  virtual std::string EndEpoch(const EpochRecord& record) = 0;
};

struct TrainingLoopOptions {
  int epochs = 0;
  LearningRateSchedule learning_rate;
  double max_gradient_norm = 0.0;  // 0: no clipping.
  // Stop after this many epochs in a row without a better score (nullopt:
  // never).
  std::optional<int> patience;
  // The time budget counts from `start` (InfinitePast: when the loop starts);
  // training stops after the epoch that exceeds it.
  absl::Time start = absl::InfinitePast();
  absl::Duration time_budget = absl::InfiniteDuration();
  // Asked after every epoch; true stops training there. Empty: never.
  std::function<bool()> should_stop;
  // Progress lines "<unit> e/E  <numbers>[ *]  <epoch seconds>s" (the star
  // marks the best epoch so far): every `log_every` epochs and the last, or
  // with log_every = 0 at most once a second and the last. Null: none.
  Progress* progress = nullptr;
  int log_every = 1;
  std::string unit = "epoch";
};

struct TrainingLoopResult {
  int best_epoch = 0;  // 0: the initial model was never beaten.
  int epochs_run = 0;
  int64_t steps = 0;  // Optimizer steps taken.
  // The mean wall time of the epochs after epoch 0; 0 when none ran.
  double seconds_per_epoch = 0.0;
};

// Runs the loop over `num_parameters` parameters. INVALID_ARGUMENT for
// epochs < 0, a negative patience or log_every, or a negative or non-finite
// learning rate or gradient norm; the trainer's errors.
absl::StatusOr<TrainingLoopResult> RunTrainingLoop(
    const TrainingLoopOptions& options, int num_parameters,
    EpochTrainer& trainer);

// The loop's metrics: "best_epoch", "epochs_run" and "seconds_per_epoch"
// (added in that order).
void AddTrainingLoopMetrics(
    const TrainingLoopResult& result,
    google::protobuf::Map<std::string, double>* metrics);

}  // namespace metaopt::train

#endif  // METAOPT_CORE_META_TRAINING_TRAINING_LOOP_H_
