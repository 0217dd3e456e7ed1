#include "core/meta_training/grosi_train.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <utility>

#include "CLI/CLI.hpp"
#include "Eigen/Core"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/common/status_macros.h"
#include "core/meta_dataset/dataset_samples.h"
#include "core/meta_training/portfolio.h"
#include "core/meta_training/training_loop.h"
#include "core/nn/optimizer.h"
#include "core/objective/objective.h"
#include "core/space/random.h"

namespace metaopt::train {
namespace {

using surrogate::GrosiModel;
using surrogate::RawSample;

struct TaskData {
  std::string id;
  const RawSample* sample = nullptr;  // with Dataset2Vec
  Eigen::VectorXd z;
  Eigen::MatrixXd X;
  Eigen::VectorXd y;  // normalised regret
};

// Normalised regrets of a task's values, or nullopt without a spread.
std::optional<Eigen::VectorXd> NormalisedRegret(const meta::Task& task,
                                                v1::Goal goal) {
  if (task.y.empty() || task.y.size() != task.configurations.size()) {
    return std::nullopt;
  }
  const Eigen::VectorXd loss =
      Eigen::Map<const Eigen::VectorXd>(
          task.y.data(), static_cast<Eigen::Index>(task.y.size()))
          .unaryExpr(
              [goal](double y) { return objective::Minimized(y, goal); });
  if (!loss.allFinite()) return std::nullopt;
  const double lo = loss.minCoeff();
  const double hi = loss.maxCoeff();
  if (!(hi > lo)) return std::nullopt;
  return ((loss.array() - lo) / (hi - lo)).matrix();
}

std::vector<double> RegretCurve(const Eigen::VectorXd& predicted,
                                const Eigen::VectorXd& regret, int k) {
  std::vector<int> order(predicted.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return predicted[a] < predicted[b]; });
  std::vector<double> curve;
  double best = 1.0;
  for (int i = 0; i < k; ++i) {
    if (i < static_cast<int>(order.size())) {
      best = std::min(best, regret[order[i]]);
    }
    curve.push_back(best);
  }
  return curve;
}

absl::Status ValidateOptions(const GrosiTrainOptions& o) {
  if (o.epochs < 0 || o.meta_batch < 1 || o.inner_steps < 1 ||
      !(o.inner_lr > 0) || !(o.lr > 0) || !std::isfinite(o.lr) ||
      !std::isfinite(o.inner_lr) || o.batch_configs < 1 ||
      !(o.feature_dropout >= 0 && o.feature_dropout < 1) || o.select_k < 1 ||
      o.curve_k < o.select_k || !(o.weights.alpha >= 0) ||
      !(o.weights.delta >= 0) || o.d2v_rows < 1 || o.d2v_columns < 1 ||
      o.d2v_pretrain_epochs < 0 ||
      (o.architecture.dataset2vec && o.samples == nullptr)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "GROSI training options: need epochs >= 0 (got ", o.epochs,
        "), meta_batch >= 1 (", o.meta_batch, "), inner_steps >= 1 (",
        o.inner_steps, "), inner_lr > 0 (", o.inner_lr, "), lr > 0 (", o.lr,
        "), batch_configs >= 1 (", o.batch_configs,
        "), feature_dropout in [0, 1) (", o.feature_dropout,
        "), 1 <= select_k <= curve_k (", o.select_k, ", ", o.curve_k,
        "), alpha and delta >= 0, d2v_rows and d2v_columns >= 1 (", o.d2v_rows,
        ", ", o.d2v_columns, "), d2v_pretrain_epochs >= 0 (",
        o.d2v_pretrain_epochs, "), samples with dataset2vec"));
  }
  return absl::OkStatus();
}

struct ValidData {
  const meta::Task* task;
  const RawSample* sample;
  Eigen::VectorXd z;
  Eigen::MatrixXd X;
  Eigen::VectorXd y;
};

void Validate(const GrosiModel& model, const std::vector<ValidData>& valid,
              const GrosiTrainOptions& options, GrosiEpochStats* stats) {
  if (valid.empty()) return;
  std::vector<double> curve(options.curve_k, 0.0);
  double mse = 0.0;
  for (const ValidData& v : valid) {
    const Eigen::VectorXd predicted =
        model.Predict(model.Embed(model.Input(v.z, v.sample)), v.X);
    mse += (predicted - v.y).squaredNorm() / static_cast<double>(v.y.size());
    const std::vector<double> c = RegretCurve(predicted, v.y, options.curve_k);
    for (int k = 0; k < options.curve_k; ++k) curve[k] += c[k];
  }
  const double n = static_cast<double>(valid.size());
  for (double& c : curve) c /= n;
  stats->valid_mse = mse / n;
  stats->valid_regret = curve;
  double score = 0.0;
  for (int k = 0; k < options.select_k; ++k) score += curve[k];
  stats->valid_score = score / options.select_k;
}

// One inner step's data; the batch points into the sub-samples.
struct StepData {
  RawSample t, p, q;
  surrogate::GrosiStepBatch batch;
};

// The step of task `ti` against `qi`: `configs` configurations of t, the
// positive view (features dropped at random; another sub-batch of the
// sample) and the negative one.
void MakeStep(const std::vector<TaskData>& tasks, int ti, int qi, int configs,
              const GrosiTrainOptions& options, space::Rng& rng,
              StepData* step) {
  const TaskData& t = tasks[ti];
  const std::vector<Eigen::Index> rows = SampleWithoutReplacement(
      t.y.size(), std::min<Eigen::Index>(configs, t.y.size()), rng);
  surrogate::GrosiStepBatch& batch = step->batch;
  batch.features = t.z;
  batch.positive = t.z;
  for (Eigen::Index f = 0; f < t.z.size(); ++f) {
    if (space::Uniform01(rng) < options.feature_dropout) {
      batch.positive[f] = 0.0;
    }
  }
  batch.negative = tasks[qi].z;
  batch.X = t.X(rows, Eigen::all);
  batch.y = t.y(rows);
  if (t.sample != nullptr && tasks[qi].sample != nullptr) {
    step->t = surrogate::SubSample(*t.sample, options.d2v_rows,
                                   options.d2v_columns, rng);
    step->p = surrogate::SubSample(*t.sample, options.d2v_rows,
                                   options.d2v_columns, rng);
    step->q = surrogate::SubSample(*tasks[qi].sample, options.d2v_rows,
                                   options.d2v_columns, rng);
    batch.sample = &step->t;
    batch.positive_sample = &step->p;
    batch.negative_sample = &step->q;
  }
}

std::string Format(double v) {
  return std::isnan(v) ? std::string("-") : absl::StrFormat("%.4f", v);
}

std::string CurveAt(const std::vector<double>& curve, int k) {
  return k <= static_cast<int>(curve.size()) ? Format(curve[k - 1])
                                             : std::string("-");
}

// Algorithm 1's epochs for the training loop: per meta-batch of tasks,
// `inner_steps` SGD steps from beta per task, and the mean of beta - beta'
// as the outer gradient; the score is the zero-shot validation regret.
class GrosiEpochs final : public EpochTrainer {
 public:
  GrosiEpochs(GrosiModel model, std::vector<TaskData> tasks,
              std::vector<ValidData> valid, const GrosiTrainOptions& options)
      : model_(std::move(model)),
        tasks_(std::move(tasks)),
        valid_(std::move(valid)),
        options_(options),
        beta_(model_.parameters()),
        inner_(model_),
        rng_(options.seed ^ 0x67726f7369ULL),  // "grosi"
        result_{model_} {}

  int num_parameters() const { return static_cast<int>(beta_.size()); }
  const std::vector<TaskData>& tasks() const { return tasks_; }
  size_t valid_size() const { return valid_.size(); }
  GrosiTrainResult& result() { return result_; }

  // Dataset identification alone (P), one Adam step per task, before
  // Algorithm 1 (Dataset2Vec only); outside the selection.
  absl::Status Prepare() override {
    if (!options_.architecture.dataset2vec ||
        options_.d2v_pretrain_epochs <= 0) {
      return absl::OkStatus();
    }
    surrogate::GrosiLossWeights identification;
    identification.regression = 0.0;
    identification.alpha = 0.0;
    identification.delta = 1.0;
    nn::Adam pretrain(static_cast<int>(beta_.size()));
    space::Rng pretrain_rng(options_.seed ^ 0x64327670ULL);  // "d2vp"
    const int T = static_cast<int>(tasks_.size());
    for (int epoch = 0; epoch < options_.d2v_pretrain_epochs; ++epoch) {
      for (int t = 0; t < T; ++t) {
        int q = static_cast<int>(space::UniformIndex(pretrain_rng, T - 1));
        if (q >= t) ++q;
        MakeStep(tasks_, t, q, /*configs=*/1, options_, pretrain_rng, &step_);
        const surrogate::GrosiLoss loss =
            model_.Loss(step_.batch, identification);
        if (!std::isfinite(loss.value) || !loss.gradient.allFinite()) continue;
        pretrain.Step(loss.gradient, options_.lr, beta_);
        METAOPT_RETURN_IF_ERROR(model_.set_parameters(beta_));
      }
    }
    return inner_.set_parameters(beta_);
  }

  absl::Status RunEpoch(int epoch, TrainingOptimizer& optimizer) override {
    stats_ = GrosiEpochStats();
    const int T = static_cast<int>(tasks_.size());
    std::vector<int> order(T);
    std::iota(order.begin(), order.end(), 0);
    for (int i = T - 1; i > 0; --i) {
      std::swap(order[i], order[space::UniformIndex(rng_, i + 1)]);
    }
    double sums[3] = {0, 0, 0};
    int steps = 0;
    for (int g = 0; g < T; g += options_.meta_batch) {
      const int k = std::min(options_.meta_batch, T - g);
      Eigen::VectorXd direction = Eigen::VectorXd::Zero(beta_.size());
      for (int i = 0; i < k; ++i) {
        Eigen::VectorXd beta_inner = beta_;
        METAOPT_RETURN_IF_ERROR(inner_.set_parameters(beta_inner));
        for (int v = 0; v < options_.inner_steps; ++v) {
          int q = static_cast<int>(space::UniformIndex(rng_, T - 1));
          if (q >= order[g + i]) ++q;
          MakeStep(tasks_, order[g + i], q, options_.batch_configs, options_,
                   rng_, &step_);
          const surrogate::GrosiLoss loss =
              inner_.Loss(step_.batch, options_.weights);
          if (!std::isfinite(loss.value) || !loss.gradient.allFinite()) {
            continue;
          }
          sums[0] += loss.regression;
          sums[1] += loss.consistency;
          sums[2] += loss.identification;
          ++steps;
          beta_inner -= options_.inner_lr * loss.gradient;
          METAOPT_RETURN_IF_ERROR(inner_.set_parameters(beta_inner));
        }
        direction += beta_ - beta_inner;
      }
      direction /= static_cast<double>(k);
      optimizer.Step(direction, beta_);
      METAOPT_RETURN_IF_ERROR(model_.set_parameters(beta_));
    }
    if (steps > 0) {
      stats_.regression = sums[0] / steps;
      stats_.consistency = sums[1] / steps;
      stats_.identification = sums[2] / steps;
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::optional<double>> Score() override {
    Validate(model_, valid_, options_, &stats_);
    if (valid_.empty()) return std::nullopt;
    return stats_.valid_score;
  }

  void KeepBest() override { result_.best = model_; }

  std::string EndEpoch(const EpochRecord& record) override {
    stats_.epoch = record.epoch;
    stats_.epochs = record.epochs;
    stats_.best = record.best;
    stats_.epoch_time = record.epoch_time;
    result_.history.push_back(stats_);
    return absl::StrFormat(
        "O %s  R %s  P %s  valid regret@1/5/10 %s/%s/%s  MSE %s",
        Format(stats_.regression), Format(stats_.consistency),
        Format(stats_.identification), CurveAt(stats_.valid_regret, 1),
        CurveAt(stats_.valid_regret, 5), CurveAt(stats_.valid_regret, 10),
        Format(stats_.valid_mse));
  }

 private:
  GrosiModel model_;
  const std::vector<TaskData> tasks_;
  const std::vector<ValidData> valid_;
  const GrosiTrainOptions& options_;
  Eigen::VectorXd beta_;
  GrosiModel inner_;
  space::Rng rng_;
  StepData step_;
  GrosiTrainResult result_;
  GrosiEpochStats stats_;  // Of the epoch running.
};

}  // namespace

std::vector<double> GrosiZeroShotRegret(const GrosiModel& model,
                                        const meta::Task& task, v1::Goal goal,
                                        int k, const RawSample* sample) {
  const std::optional<Eigen::VectorXd> regret = NormalisedRegret(task, goal);
  if (!regret.has_value()) return {};
  const Eigen::VectorXd z =
      model.Input(model.Standardize(task.metafeatures, nullptr), sample);
  const Eigen::VectorXd predicted = model.Predict(
      model.Embed(z), model.encoder().EncodeBatch(task.configurations));
  return RegretCurve(predicted, *regret, k);
}

absl::StatusOr<std::map<std::string, RawSample>> ReadDatasetSamples(
    const std::string& dir, const std::vector<const meta::Task*>& tasks) {
  std::vector<std::string> ids;
  for (const meta::Task* task : tasks) ids.push_back(task->id);
  METAOPT_ASSIGN_OR_RETURN(
      auto samples, meta::ReadDatasetSamples(dir, ids, "--dataset-samples"));
  std::map<std::string, RawSample> out;
  for (const auto& [id, sample] : samples) {
    METAOPT_ASSIGN_OR_RETURN(RawSample raw,
                             surrogate::RawSampleFromProto(sample));
    out.emplace(id, std::move(raw));
  }
  return out;
}

absl::StatusOr<GrosiTrainResult> TrainGrosi(
    const meta::MetaDataset& data, const std::vector<const meta::Task*>& train,
    const std::vector<const meta::Task*>& valid,
    const GrosiTrainOptions& options, Progress* progress) {
  METAOPT_RETURN_IF_ERROR(ValidateOptions(options));
  const v1::Goal goal = data.objective.goal();
  const bool d2v = options.architecture.dataset2vec;
  const bool engineered = !d2v || options.engineered;
  auto sample_of = [&](const meta::Task* task) -> const RawSample* {
    if (!d2v) return nullptr;
    auto it = options.samples->find(task->id);
    return it == options.samples->end() ? nullptr : &it->second;
  };
  auto usable = [&](const meta::Task* task) {
    if (engineered && task->metafeatures.empty()) return false;
    if (d2v && sample_of(task) == nullptr) return false;
    return NormalisedRegret(*task, goal).has_value();
  };
  std::vector<const meta::Task*> used;
  int skipped = 0;
  for (const meta::Task* task : train) {
    if (!usable(task)) {
      ++skipped;
      continue;
    }
    used.push_back(task);
  }
  if (used.size() < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("GROSI training needs at least 2 training tasks with ",
                     engineered ? "meta-features (metafeatures.csv)" : "",
                     engineered && d2v ? ", " : "",
                     d2v ? "a dataset sample (--dataset-samples)" : "",
                     " and a spread of y; ", used.size(), " of ", train.size(),
                     " have them"));
  }
  const FeatureStatistics stats =
      engineered ? ComputeFeatureStatistics(used) : FeatureStatistics{};
  METAOPT_ASSIGN_OR_RETURN(
      GrosiModel model, GrosiModel::Create(data.space, stats.names,
                                           options.architecture, options.seed));
  METAOPT_RETURN_IF_ERROR(model.SetFeatureStatistics(stats.means, stats.stds));

  std::vector<TaskData> tasks;
  for (const meta::Task* task : used) {
    TaskData d;
    d.id = task->id;
    d.sample = sample_of(task);
    d.z = model.Standardize(task->metafeatures, nullptr);
    d.X = model.encoder().EncodeBatch(task->configurations);
    d.y = *NormalisedRegret(*task, goal);
    tasks.push_back(std::move(d));
  }
  std::vector<ValidData> valid_data;
  int skipped_valid = 0;
  for (const meta::Task* task : valid) {
    if (!usable(task)) {
      ++skipped_valid;
      continue;
    }
    const std::optional<Eigen::VectorXd> y = NormalisedRegret(*task, goal);
    valid_data.push_back(
        {task, sample_of(task), model.Standardize(task->metafeatures, nullptr),
         model.encoder().EncodeBatch(task->configurations), *y});
  }

  GrosiEpochs epochs(std::move(model), std::move(tasks), std::move(valid_data),
                     options);
  GrosiTrainResult& result = epochs.result();
  for (const TaskData& t : epochs.tasks()) result.train_tasks.push_back(t.id);
  result.skipped_train_tasks = skipped;
  result.valid_tasks = static_cast<int>(epochs.valid_size());
  result.skipped_valid_tasks = skipped_valid;
  TrainingLoopOptions loop;
  loop.epochs = options.epochs;
  loop.learning_rate.initial = options.lr;
  loop.time_budget = options.time_budget;
  loop.progress = progress;
  METAOPT_ASSIGN_OR_RETURN(
      TrainingLoopResult trained,
      RunTrainingLoop(loop, epochs.num_parameters(), epochs));
  result.best_epoch = trained.best_epoch;
  result.loop = trained;
  const std::vector<TaskData>& tasks_used = epochs.tasks();
  const int T = static_cast<int>(tasks_used.size());
  if (d2v) {
    // The stand-in for studies without a sample: the mean training D2V.
    Eigen::VectorXd mean =
        Eigen::VectorXd::Zero(result.best.dataset2vec()->output());
    for (const TaskData& t : tasks_used) {
      mean += result.best.dataset2vec()->Forward(*t.sample);
    }
    METAOPT_RETURN_IF_ERROR(
        result.best.set_dataset2vec_mean(mean / static_cast<double>(T)));
  }
  return std::move(result);
}

// ---------------------------------------------------------------------------
// metaopt-train --kind grosi.

namespace {

struct GrosiFlags {
  GrosiTrainOptions train;
  double max_minutes = 0.0;
  std::string dataset_samples;  // --dataset-samples: Dataset2Vec when set
  bool d2v_only = false;
  int d2v_width = 32;
};

absl::StatusOr<v1::ModelArtifact> TrainGrosiArtifact(
    const GrosiFlags& flags, const CommonTrainOptions& options,
    const TrainingSplits& data, Progress& progress) {
  GrosiTrainOptions train = flags.train;
  train.seed = options.seed;
  if (!flags.dataset_samples.empty()) {
    std::vector<const meta::Task*> tasks = data.train;
    tasks.insert(tasks.end(), data.valid.begin(), data.valid.end());
    METAOPT_ASSIGN_OR_RETURN(auto samples,
                             ReadDatasetSamples(flags.dataset_samples, tasks));
    progress.Log(absl::StrFormat(
        "grosi: Dataset2Vec over the raw samples of %d of %d train/valid "
        "tasks (%s), %s engineered meta-features; sub-batches %d x %d, "
        "pre-training %d epochs",
        samples.size(), tasks.size(), flags.dataset_samples,
        flags.d2v_only ? "without" : "with", train.d2v_rows, train.d2v_columns,
        train.d2v_pretrain_epochs));
    train.samples =
        std::make_shared<const std::map<std::string, surrogate::RawSample>>(
            std::move(samples));
    train.architecture.dataset2vec = true;
    train.engineered = !flags.d2v_only;
    surrogate::Dataset2VecArchitecture& d = train.architecture.d2v;
    d.f_width = d.g_width = d.h_width = flags.d2v_width;
    d.output = train.architecture.embedding;
  }
  if (flags.max_minutes > 0) {
    train.time_budget = absl::Seconds(60.0 * flags.max_minutes);
  }
  const surrogate::GrosiArchitecture& a = train.architecture;
  progress.Log(absl::StrFormat(
      "grosi: %d train / %d valid tasks, %d epochs, meta-batch %d, %d inner "
      "steps (SGD %g), Adam %g, %d configurations per step, alpha %g, delta "
      "%g, K %d, psi1 %s %dx%d, head %dx%d",
      data.train.size(), data.valid.size(), train.epochs, train.meta_batch,
      train.inner_steps, train.inner_lr, train.lr, train.batch_configs,
      train.weights.alpha, train.weights.delta, a.embedding,
      a.joint_psi1 ? "joint" : "towers", a.tower_layers, a.tower_width,
      a.head_layers, a.head_width));
  METAOPT_ASSIGN_OR_RETURN(
      GrosiTrainResult trained,
      TrainGrosi(data.dataset, data.train, data.valid, train, &progress));
  const GrosiEpochStats& best = trained.history[trained.best_epoch];
  progress.Log(absl::StrFormat(
      "grosi: %d training tasks used (%d without meta-features or y spread "
      "left out), %d validation tasks (%d left out); best epoch %d (valid "
      "regret@1/5/10 %s/%s/%s), %d parameters, %.2fs/epoch",
      trained.train_tasks.size(), trained.skipped_train_tasks,
      trained.valid_tasks, trained.skipped_valid_tasks, trained.best_epoch,
      CurveAt(best.valid_regret, 1), CurveAt(best.valid_regret, 5),
      CurveAt(best.valid_regret, 10), trained.best.num_parameters(),
      trained.loop.seconds_per_epoch));

  v1::ModelArtifact artifact;
  trained.best.ToArtifact(&artifact);
  *artifact.mutable_objective() = data.dataset.objective;
  METAOPT_ASSIGN_OR_RETURN(
      PortfolioResult portfolio,
      AddWarmStartPortfolio(options, data, progress, &artifact));
  const std::set<std::string> used(trained.train_tasks.begin(),
                                   trained.train_tasks.end());
  for (const meta::Task* task : data.train) {
    if (used.count(task->id) == 0) continue;
    v1::DatasetFeatures* features = artifact.add_training_features();
    features->set_task_id(task->id);
    for (const auto& [name, value] : task->metafeatures) {
      (*features->mutable_features())[name] = value;
    }
  }
  auto& ints = *artifact.mutable_int_options();
  ints["train_epochs"] = train.epochs;
  ints["train_meta_batch"] = train.meta_batch;
  ints["train_inner_steps"] = train.inner_steps;
  ints["train_batch_configs"] = train.batch_configs;
  auto* metrics = artifact.mutable_provenance()->mutable_validation_metrics();
  AddCurveMetrics("valid_regret", best.valid_regret, metrics);
  AddCurveMetrics("initial_valid_regret", trained.history[0].valid_regret,
                  metrics);
  AddCurveMetrics("portfolio_valid_regret", portfolio.valid_regret, metrics);
  if (!std::isnan(best.valid_mse)) (*metrics)["valid_mse"] = best.valid_mse;
  if (!std::isnan(best.regression)) {
    (*metrics)["train_regression_loss"] = best.regression;
  }
  AddTrainingLoopMetrics(trained.loop, metrics);
  (*metrics)["train_tasks"] = static_cast<double>(trained.train_tasks.size());
  (*metrics)["valid_tasks"] = trained.valid_tasks;
  (*metrics)["alpha"] = train.weights.alpha;
  if (train.architecture.dataset2vec) {
    ints["train_d2v_rows"] = train.d2v_rows;
    ints["train_d2v_columns"] = train.d2v_columns;
    ints["train_d2v_pretrain_epochs"] = train.d2v_pretrain_epochs;
    ints["train_engineered_features"] = train.engineered ? 1 : 0;
  }
  (*metrics)["delta"] = train.weights.delta;
  return artifact;
}

}  // namespace

TrainerKind GrosiTrainerKind() {
  TrainerKind kind;
  kind.name = "grosi";
  kind.description =
      "GROSI gray-box surrogate over (meta-feature embedding, configuration) "
      "meta-trained with the regression, consistency and dataset "
      "identification losses; best epoch by zero-shot validation regret";
  kind.add_flags = [](CLI::App& flags) -> Trainer {
    auto state = std::make_shared<GrosiFlags>();
    GrosiTrainOptions& t = state->train;
    surrogate::GrosiArchitecture& a = t.architecture;
    flags.add_option("--epochs", t.epochs, "passes over the training tasks")
        ->capture_default_str()
        ->check(CLI::NonNegativeNumber);
    flags.add_option("--meta-batch", t.meta_batch, "tasks per outer step")
        ->capture_default_str()
        ->check(CLI::Range(1, 100000));
    flags.add_option("--inner-steps", t.inner_steps, "SGD steps per task (v)")
        ->capture_default_str()
        ->check(CLI::Range(1, 1000));
    flags.add_option("--inner-lr", t.inner_lr, "inner SGD learning rate")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    flags.add_option("--lr", t.lr, "outer Adam learning rate")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    flags
        .add_option("--batch-configs", t.batch_configs,
                    "configurations of the task per inner step")
        ->capture_default_str()
        ->check(CLI::Range(1, 100000));
    flags.add_option("--alpha", t.weights.alpha, "weight of the consistency R")
        ->capture_default_str()
        ->check(CLI::NonNegativeNumber);
    flags
        .add_option("--delta", t.weights.delta,
                    "weight of the dataset identification P")
        ->capture_default_str()
        ->check(CLI::NonNegativeNumber);
    flags
        .add_option("--feature-dropout", t.feature_dropout,
                    "probability of dropping a feature in the positive view")
        ->capture_default_str()
        ->check(CLI::Range(0.0, 0.99));
    flags.add_option("--embedding", a.embedding, "K, the dimension of phi")
        ->capture_default_str()
        ->check(CLI::Range(1, 4096));
    flags
        .add_option("--feature-hidden", a.feature_hidden,
                    "hidden width of the meta-feature network (0: linear)")
        ->capture_default_str()
        ->check(CLI::Range(0, 4096));
    flags
        .add_option_function<std::string>(
            "--psi1",
            [&a](const std::string& layout) {
              a.joint_psi1 = layout == "joint";
            },
            "psi1's layout: joint (one network over the (configuration, "
            "meta-feature) pair, the paper's) or towers (one per input, "
            "meeting in psi2)")
        ->default_str("joint")
        ->check(CLI::IsMember({"joint", "towers"}));
    flags
        .add_option("--tower-layers", a.tower_layers, "layers of psi1 (each tower)")
        ->capture_default_str()
        ->check(CLI::Range(1, 8));
    flags
        .add_option("--tower-width", a.tower_width,
                    "output width of psi1 (each tower; widths double upwards)")
        ->capture_default_str()
        ->check(CLI::Range(1, 4096));
    flags.add_option("--head-layers", a.head_layers, "hidden layers of psi2")
        ->capture_default_str()
        ->check(CLI::Range(0, 8));
    flags
        .add_option("--head-width", a.head_width,
                    "last hidden width of psi2 (widths double upwards)")
        ->capture_default_str()
        ->check(CLI::Range(1, 4096));
    flags
        .add_option("--select-k", t.select_k,
                    "checkpoint selection: mean valid regret@1..k")
        ->capture_default_str()
        ->check(CLI::Range(1, 20));
    flags
        .add_option("--dataset-samples", state->dataset_samples,
                    "folder of <task>.json raw samples: adds the Dataset2Vec "
                    "extractor (data/prep/dataset_samples/export_samples.py)")
        ->capture_default_str();
    flags.add_flag("--d2v-only", state->d2v_only,
                   "with --dataset-samples: no engineered meta-features");
    flags
        .add_option("--d2v-rows", t.d2v_rows,
                    "rows of a training sub-batch of a sample")
        ->capture_default_str()
        ->check(CLI::Range(1, 256));
    flags
        .add_option("--d2v-columns", t.d2v_columns,
                    "columns of a training sub-batch of a sample")
        ->capture_default_str()
        ->check(CLI::Range(1, 16));
    flags
        .add_option("--d2v-width", state->d2v_width,
                    "width of the Dataset2Vec networks f, g, h")
        ->capture_default_str()
        ->check(CLI::Range(1, 1024));
    flags
        .add_option("--d2v-pretrain-epochs", t.d2v_pretrain_epochs,
                    "epochs of dataset identification alone before GROSI's "
                    "training")
        ->capture_default_str()
        ->check(CLI::NonNegativeNumber);
    flags
        .add_option("--max-minutes", state->max_minutes,
                    "stop after the epoch that exceeds this wall time (0: "
                    "no limit)")
        ->capture_default_str()
        ->check(CLI::NonNegativeNumber);
    return [state](const CommonTrainOptions& options,
                   const TrainingSplits& data, Progress& progress) {
      return TrainGrosiArtifact(*state, options, data, progress);
    };
  };
  return kind;
}

}  // namespace metaopt::train
