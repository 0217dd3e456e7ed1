#include "core/meta_training/training_loop.h"

#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/common/status_macros.h"

namespace metaopt::train {

TrainingOptimizer::TrainingOptimizer(int num_parameters,
                                     LearningRateSchedule schedule, int epochs,
                                     double max_gradient_norm)
    : adam_(num_parameters),
      schedule_(schedule),
      epochs_(epochs),
      max_gradient_norm_(max_gradient_norm) {}

double TrainingOptimizer::learning_rate() const {
  switch (schedule_.decay) {
    case LearningRateSchedule::Decay::kConstant:
      return schedule_.initial;
    case LearningRateSchedule::Decay::kCosinePerEpoch:
      return nn::CosineLearningRate(schedule_.initial, schedule_.final,
                                    epoch_ - 1, epochs_);
    case LearningRateSchedule::Decay::kCosinePerStep:
      return nn::CosineLearningRate(schedule_.initial, schedule_.final,
                                    adam_.steps(), schedule_.total_steps);
  }
  return schedule_.initial;
}

void TrainingOptimizer::Step(Eigen::Ref<Eigen::VectorXd> gradient,
                             Eigen::Ref<Eigen::VectorXd> params) {
  if (max_gradient_norm_ > 0.0) {
    nn::ClipGradientNorm(gradient, max_gradient_norm_);
  }
  adam_.Step(gradient, learning_rate(), params);
}

absl::StatusOr<TrainingLoopResult> RunTrainingLoop(
    const TrainingLoopOptions& options, int num_parameters,
    EpochTrainer& trainer) {
  const LearningRateSchedule& lr = options.learning_rate;
  if (options.epochs < 0 || options.log_every < 0 ||
      (options.patience.has_value() && *options.patience < 0) ||
      !(lr.initial >= 0.0) || !std::isfinite(lr.initial) ||
      !(lr.final >= 0.0) || !std::isfinite(lr.final) ||
      !(options.max_gradient_norm >= 0.0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "training loop: need epochs >= 0 (got ", options.epochs,
        "), log_every >= 0 (", options.log_every,
        "), patience >= 0, finite learning rates >= 0 (", lr.initial, ", ",
        lr.final, ") and max_gradient_norm >= 0 (", options.max_gradient_norm,
        ")"));
  }
  const absl::Time start =
      options.start == absl::InfinitePast() ? absl::Now() : options.start;
  TrainingOptimizer optimizer(num_parameters, lr, options.epochs,
                              options.max_gradient_norm);
  TrainingLoopResult result;
  double best_score = std::numeric_limits<double>::infinity();
  int since_best = 0;
  double epoch_seconds = 0.0;
  absl::Time last_line = absl::InfinitePast();

  // Scores the current parameters as epoch `epoch`'s, keeps them if best,
  // and reports; returns whether training stops there.
  auto finish_epoch = [&](int epoch, absl::Time epoch_start,
                          double learning_rate) -> absl::StatusOr<bool> {
    METAOPT_ASSIGN_OR_RETURN(std::optional<double> score, trainer.Score());
    EpochRecord record;
    record.epoch = epoch;
    record.epochs = options.epochs;
    record.score = score;
    record.learning_rate = learning_rate;
    if (epoch == 0) {
      record.best = true;
      if (score.has_value() && !std::isnan(*score)) best_score = *score;
    } else if (!score.has_value() || *score < best_score) {
      if (score.has_value()) best_score = *score;
      record.best = true;
    }
    if (record.best) {
      trainer.KeepBest();
      result.best_epoch = epoch;
    }
    const absl::Time now = absl::Now();
    if (epoch > 0) record.epoch_time = now - epoch_start;
    record.elapsed = now - start;
    const std::string numbers = trainer.EndEpoch(record);
    bool stop = false;
    if (epoch > 0) {
      since_best = record.best ? 0 : since_best + 1;
      stop = (options.patience.has_value() && since_best > *options.patience) ||
             now - start >= options.time_budget ||
             (options.should_stop && options.should_stop());
    }
    if (options.progress != nullptr) {
      const bool last = epoch == options.epochs || stop;
      const bool due = options.log_every > 0
                           ? epoch % options.log_every == 0 || last
                           : last || now - last_line >= absl::Seconds(1);
      if (due) {
        last_line = now;
        options.progress->Log(
            absl::StrFormat("%s %d/%d  %s%s  %.2fs", options.unit, epoch,
                            options.epochs, numbers, record.best ? " *" : "",
                            absl::ToDoubleSeconds(record.epoch_time)));
      }
    }
    if (epoch > 0) {
      epoch_seconds += absl::ToDoubleSeconds(record.epoch_time);
      result.epochs_run = epoch;
    }
    return stop;
  };

  METAOPT_RETURN_IF_ERROR(
      finish_epoch(0, start, options.learning_rate.initial).status());
  METAOPT_RETURN_IF_ERROR(trainer.Prepare());
  for (int epoch = 1; epoch <= options.epochs; ++epoch) {
    const absl::Time epoch_start = absl::Now();
    optimizer.epoch_ = epoch;
    const double learning_rate = optimizer.learning_rate();
    METAOPT_RETURN_IF_ERROR(trainer.RunEpoch(epoch, optimizer));
    METAOPT_ASSIGN_OR_RETURN(bool stop,
                             finish_epoch(epoch, epoch_start, learning_rate));
    if (stop) break;
  }
  result.steps = optimizer.steps();
  if (result.epochs_run > 0) {
    result.seconds_per_epoch = epoch_seconds / result.epochs_run;
  }
  return result;
}

void AddTrainingLoopMetrics(
    const TrainingLoopResult& result,
    google::protobuf::Map<std::string, double>* metrics) {
  (*metrics)["best_epoch"] = result.best_epoch;
  (*metrics)["epochs_run"] = result.epochs_run;
  (*metrics)["seconds_per_epoch"] = result.seconds_per_epoch;
}

}  // namespace metaopt::train
