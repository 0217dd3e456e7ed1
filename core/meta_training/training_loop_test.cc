#include "core/meta_training/training_loop.h"

#include <cmath>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "Eigen/Core"
#include "absl/time/time.h"
#include "core/nn/optimizer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"

namespace metaopt::train {
namespace {

using ::metaopt::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Minimises |p - target|^2 with one step per epoch; the scores are scripted
// (epoch 0 first; nullopt: no validation).
class ScriptedTrainer final : public EpochTrainer {
 public:
  explicit ScriptedTrainer(std::vector<std::optional<double>> scores)
      : scores_(std::move(scores)) {}

  absl::Status Prepare() override {
    prepared_at_ = static_cast<int>(records_.size());
    return absl::OkStatus();
  }
  absl::Status RunEpoch(int epoch, TrainingOptimizer& optimizer) override {
    learning_rates_.push_back(optimizer.learning_rate());
    Eigen::VectorXd gradient = 2.0 * (params_ - target_);
    optimizer.Step(gradient, params_);
    return absl::OkStatus();
  }
  absl::StatusOr<std::optional<double>> Score() override {
    return scores_[records_.size()];
  }
  void KeepBest() override { best_ = params_; }
  std::string EndEpoch(const EpochRecord& record) override {
    records_.push_back(record);
    return "numbers";
  }

  Eigen::VectorXd params_ = Eigen::Vector2d(0.0, 0.0);
  const Eigen::VectorXd target_ = Eigen::Vector2d(1.0, -1.0);
  Eigen::VectorXd best_;
  std::vector<std::optional<double>> scores_;
  std::vector<EpochRecord> records_;
  std::vector<double> learning_rates_;
  int prepared_at_ = -1;
};

TEST(TrainingLoopTest, KeepsTheLowestScoreAndStepsWithAdam) {
  ScriptedTrainer trainer({5.0, 4.0, 3.0, 3.0, 6.0});
  TrainingLoopOptions options;
  options.epochs = 4;
  options.learning_rate.initial = 0.1;
  METAOPT_ASSERT_OK_AND_ASSIGN(TrainingLoopResult result,
                               RunTrainingLoop(options, 2, trainer));
  EXPECT_EQ(result.best_epoch, 2);  // A tie is no better.
  EXPECT_EQ(result.epochs_run, 4);
  EXPECT_EQ(result.steps, 4);
  EXPECT_EQ(trainer.prepared_at_, 1);  // After epoch 0, before epoch 1.
  ASSERT_EQ(trainer.records_.size(), 5u);
  std::vector<bool> best;
  for (const EpochRecord& r : trainer.records_) best.push_back(r.best);
  EXPECT_THAT(best, ElementsAre(true, true, true, false, false));
  // The same steps as nn::Adam's.
  nn::Adam adam(2);
  Eigen::VectorXd p = Eigen::Vector2d(0.0, 0.0);
  for (int e = 1; e <= 2; ++e) {
    adam.Step(2.0 * (p - trainer.target_), 0.1, p);
  }
  EXPECT_EQ(trainer.best_, p);
}

TEST(TrainingLoopTest, WithoutValidationTheLastEpochIsKept) {
  ScriptedTrainer trainer({std::nullopt, std::nullopt, std::nullopt});
  TrainingLoopOptions options;
  options.epochs = 2;
  METAOPT_ASSERT_OK_AND_ASSIGN(TrainingLoopResult result,
                               RunTrainingLoop(options, 2, trainer));
  EXPECT_EQ(result.best_epoch, 2);
  EXPECT_EQ(trainer.best_, trainer.params_);
}

TEST(TrainingLoopTest, CosineSchedulesPerEpochAndPerStep) {
  ScriptedTrainer per_epoch({1.0, 1.0, 1.0, 1.0});
  TrainingLoopOptions options;
  options.epochs = 3;
  options.learning_rate.decay = LearningRateSchedule::Decay::kCosinePerEpoch;
  options.learning_rate.initial = 1.0;
  options.learning_rate.final = 0.1;
  METAOPT_ASSERT_OK(RunTrainingLoop(options, 2, per_epoch).status());
  ASSERT_EQ(per_epoch.learning_rates_.size(), 3u);
  for (int e = 1; e <= 3; ++e) {
    EXPECT_EQ(per_epoch.learning_rates_[e - 1],
              nn::CosineLearningRate(1.0, 0.1, e - 1, 3));
  }
  ScriptedTrainer per_step({1.0, 1.0, 1.0, 1.0});
  options.learning_rate.decay = LearningRateSchedule::Decay::kCosinePerStep;
  options.learning_rate.total_steps = 3;
  METAOPT_ASSERT_OK(RunTrainingLoop(options, 2, per_step).status());
  for (int s = 0; s < 3; ++s) {
    EXPECT_EQ(per_step.learning_rates_[s],
              nn::CosineLearningRate(1.0, 0.1, s, 3));
  }
}

TEST(TrainingLoopTest, StopsOnPatienceBudgetAndRequest) {
  TrainingLoopOptions options;
  options.epochs = 10;
  options.patience = 1;
  ScriptedTrainer patient(
      {3.0, 2.0, 2.5, 2.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0});
  METAOPT_ASSERT_OK_AND_ASSIGN(TrainingLoopResult result,
                               RunTrainingLoop(options, 2, patient));
  EXPECT_EQ(result.epochs_run, 3);  // Epochs 2 and 3 are no better.
  EXPECT_EQ(result.best_epoch, 1);

  options.patience.reset();
  options.time_budget = absl::ZeroDuration();
  ScriptedTrainer budget(std::vector<std::optional<double>>(11, 1.0));
  METAOPT_ASSERT_OK_AND_ASSIGN(result, RunTrainingLoop(options, 2, budget));
  EXPECT_EQ(result.epochs_run, 1);

  options.time_budget = absl::InfiniteDuration();
  int asked = 0;
  options.should_stop = [&] { return ++asked == 2; };
  ScriptedTrainer request(std::vector<std::optional<double>>(11, 1.0));
  METAOPT_ASSERT_OK_AND_ASSIGN(result, RunTrainingLoop(options, 2, request));
  EXPECT_EQ(result.epochs_run, 2);
  EXPECT_EQ(asked, 2);
}

TEST(TrainingLoopTest, WritesProgressLinesAndMetrics) {
  std::ostringstream out;
  Progress progress(&out);
  TrainingLoopOptions options;
  options.epochs = 4;
  options.log_every = 2;
  options.progress = &progress;
  ScriptedTrainer trainer({2.0, 1.0, 3.0, 3.0, 3.0});
  METAOPT_ASSERT_OK_AND_ASSIGN(TrainingLoopResult result,
                               RunTrainingLoop(options, 2, trainer));
  const std::string lines = out.str();
  EXPECT_THAT(lines, HasSubstr("epoch 0/4  numbers *"));
  EXPECT_THAT(lines, HasSubstr("epoch 2/4  numbers  "));
  EXPECT_THAT(lines, HasSubstr("epoch 4/4  numbers  "));
  EXPECT_THAT(lines, ::testing::Not(HasSubstr("epoch 1/4")));
  google::protobuf::Map<std::string, double> metrics;
  AddTrainingLoopMetrics(result, &metrics);
  EXPECT_EQ(metrics["best_epoch"], 1);
  EXPECT_EQ(metrics["epochs_run"], 4);
  EXPECT_GE(metrics["seconds_per_epoch"], 0.0);
}

TEST(TrainingLoopTest, RejectsBadOptions) {
  ScriptedTrainer trainer({1.0});
  TrainingLoopOptions options;
  options.epochs = -1;
  EXPECT_THAT(RunTrainingLoop(options, 2, trainer).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("epochs >= 0 (got -1)")));
  options.epochs = 1;
  options.learning_rate.initial = std::nan("");
  EXPECT_THAT(RunTrainingLoop(options, 2, trainer).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("learning rates")));
}

}  // namespace
}  // namespace metaopt::train
