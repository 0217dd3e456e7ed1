#include "core/meta_training/deeppipe_train.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <numeric>
#include <string>
#include <utility>

#include "CLI/CLI.hpp"
#include "Eigen/Core"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/common/parallel.h"
#include "core/common/status_macros.h"
#include "core/gp/gaussian_process.h"
#include "core/meta_training/portfolio.h"
#include "core/meta_training/training_loop.h"
#include "core/nn/optimizer.h"
#include "core/objective/objective.h"
#include "core/space/random.h"

namespace metaopt::train {
namespace {

using surrogate::DeepPipeLoss;
using surrogate::DeepPipeModel;

constexpr double kLog2Pi = 1.8378770664093454836;

// SplitMix64 finaliser: decorrelates seeds derived from small integers.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
uint64_t Mix(uint64_t a, uint64_t b) {
  return Mix(Mix(a) ^ (b + 0x632be59bd9b4e019ULL));
}
uint64_t Mix(uint64_t a, uint64_t b, uint64_t c) { return Mix(Mix(a, b), c); }

// Generator streams.
constexpr uint64_t kBatchStream = 1;
constexpr uint64_t kOrderStream = 2;
constexpr uint64_t kValidStream = 3;

struct TaskData {
  Eigen::MatrixXd X;
  Eigen::VectorXd y;     // Losses (negated for maximised objectives).
  Eigen::VectorXd task;  // Standardized meta-features (conditioned models).
};

struct ValidTask {
  Eigen::VectorXd task;
  Eigen::MatrixXd X_support;
  Eigen::VectorXd y_support;
  Eigen::MatrixXd X_query;
  Eigen::VectorXd y_query;
};

absl::StatusOr<TaskData> PrepareTask(const DeepPipeModel& model,
                                     const meta::Task& task, v1::Goal goal,
                                     int min_rows) {
  if (static_cast<int>(task.configurations.size()) < min_rows ||
      task.configurations.size() != task.y.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("task \"", task.id, "\" (split ", task.split, ") has ",
                     task.configurations.size(),
                     " evaluations; DeepPipe needs at least ", min_rows));
  }
  TaskData d;
  d.X = model.encoder().EncodeBatch(task.configurations);
  d.y = Eigen::Map<const Eigen::VectorXd>(
            task.y.data(), static_cast<Eigen::Index>(task.y.size()))
            .unaryExpr(
                [goal](double y) { return objective::Minimized(y, goal); });
  d.task = model.task_features().Standardize(task.metafeatures, nullptr);
  if (!d.y.allFinite()) {
    return absl::InvalidArgumentError(
        absl::StrCat("task \"", task.id, "\": non-finite objective values"));
  }
  return d;
}

// Runs fn on `model` as seen by a task: a conditioned model is copied with
// the task's vector (cheap next to a batch's Cholesky factorisation), an
// unconditioned one is used as it is.
template <typename Fn>
auto WithTask(const DeepPipeModel& model, const Eigen::VectorXd& task,
              const Fn& fn) {
  if (!model.conditioned()) return fn(model);
  DeepPipeModel copy = model;
  copy.set_task(task).IgnoreError();  // The task vector has the right size.
  return fn(copy);
}

// Mean predictive NLL of the query targets given the support set, in units
// of the support's standard deviation.
double ValidationNll(const DeepPipeModel& model, const ValidTask& task) {
  absl::StatusOr<std::shared_ptr<const surrogate::DeepPipeSurrogate>>
      surrogate = WithTask(model, task.task, [&](const DeepPipeModel& m) {
        return m.Posterior(task.X_support, task.y_support);
      });
  if (!surrogate.ok()) return std::numeric_limits<double>::infinity();
  absl::StatusOr<gp::Prediction> prediction =
      (*surrogate)->Predict(task.X_query);
  if (!prediction.ok()) return std::numeric_limits<double>::infinity();
  const gp::GpPosterior& posterior = (*surrogate)->posterior();
  const gp::Standardization& standardization = posterior.standardization();
  const double noise = posterior.noise_variance();
  double nll = 0.0;
  for (Eigen::Index i = 0; i < task.y_query.size(); ++i) {
    const double v = prediction->variance[i] + noise;
    const double r = task.y_query[i] - prediction->mean[i];
    nll += 0.5 * (kLog2Pi + std::log(v) + r * r / v);
  }
  nll /= static_cast<double>(task.y_query.size());
  return nll - std::log(standardization.scale);
}

double MeanValidationNll(const DeepPipeModel& model,
                         const std::vector<ValidTask>& valid, int threads) {
  if (valid.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::vector<double> nll(valid.size());
  ParallelFor(static_cast<int>(valid.size()), threads,
              [&](int i) { nll[i] = ValidationNll(model, valid[i]); });
  double sum = 0.0;
  for (double v : nll) sum += v;  // Fixed order: deterministic.
  return sum / static_cast<double>(valid.size());
}

std::string FormatNll(double v) {
  return std::isnan(v) ? std::string("-") : absl::StrFormat("%.4f", v);
}

// Algorithm 1's epochs for the training loop: per epoch, one Adam step per
// training task in a shuffled order (threads: gradients of consecutive tasks
// at the same parameters, applied in order); the score is the validation NLL.
class DeepPipeEpochs final : public EpochTrainer {
 public:
  DeepPipeEpochs(DeepPipeModel model, std::vector<TaskData> tasks,
                 std::vector<ValidTask> valid, double y_min, double y_max,
                 const DeepPipeTrainOptions& options,
                 const DeepPipeProgressCallback& progress)
      : model_(std::move(model)),
        tasks_(std::move(tasks)),
        valid_(std::move(valid)),
        y_min_(y_min),
        y_max_(y_max),
        options_(options),
        progress_(progress),
        params_(model_.parameters()),
        result_{model_} {}

  int num_parameters() const { return static_cast<int>(params_.size()); }
  DeepPipeTrainResult result() && { return std::move(result_); }

  absl::Status RunEpoch(int epoch, TrainingOptimizer& optimizer) override {
    stats_ = DeepPipeEpochStats();
    stats_.learning_rate = optimizer.learning_rate();
    const int num_tasks = static_cast<int>(tasks_.size());
    const int kp = model_.num_kernel_parameters();
    std::vector<int> order(num_tasks);
    std::iota(order.begin(), order.end(), 0);
    {
      space::Rng rng(Mix(options_.seed, kOrderStream, epoch));
      for (int i = num_tasks - 1; i > 0; --i) {
        std::swap(order[i], order[space::UniformIndex(rng, i + 1)]);
      }
    }
    double train_sum = 0.0;
    int train_count = 0;
    std::vector<absl::StatusOr<DeepPipeLoss>> losses(options_.threads);
    for (int g = 0; g < num_tasks; g += options_.threads) {
      const int k = std::min(options_.threads, num_tasks - g);
      ParallelFor(k, k,
                  [&](int i) { losses[i] = BatchLoss(epoch, order[g + i]); });
      for (int i = 0; i < k; ++i) {
        if (!losses[i].ok() || !std::isfinite(losses[i]->value) ||
            !losses[i]->gradient.allFinite()) {
          ++stats_.failed_steps;
          continue;
        }
        train_sum += losses[i]->value;
        ++train_count;
        Eigen::VectorXd next = params_;
        optimizer.Step(losses[i]->gradient, next);
        model_.ClampKernelParameters(next.tail(kp));
        if (model_.set_parameters(next).ok()) {
          params_ = std::move(next);
        } else {
          ++stats_.failed_steps;
        }
      }
    }
    if (train_count > 0) stats_.train_nll = train_sum / train_count;
    return absl::OkStatus();
  }

  absl::StatusOr<std::optional<double>> Score() override {
    stats_.valid_nll = MeanValidationNll(model_, valid_, options_.threads);
    if (valid_.empty()) return std::nullopt;
    return stats_.valid_nll;
  }

  void KeepBest() override { result_.best = model_; }

  std::string EndEpoch(const EpochRecord& record) override {
    stats_.epoch = record.epoch;
    stats_.epochs = record.epochs;
    if (record.epoch == 0) stats_.learning_rate = record.learning_rate;
    stats_.best = record.best;
    stats_.epoch_time = record.epoch_time;
    stats_.elapsed = record.elapsed;
    result_.history.push_back(stats_);
    if (progress_) progress_(stats_);
    return absl::StrFormat(
        "train NLL %s  valid NLL %s  lr %.3g%s", FormatNll(stats_.train_nll),
        FormatNll(stats_.valid_nll), stats_.learning_rate,
        stats_.failed_steps > 0
            ? absl::StrCat("  (", stats_.failed_steps, " failed steps)")
            : std::string());
  }

 private:
  // The loss of task t's batch of this epoch at the current parameters.
  absl::StatusOr<DeepPipeLoss> BatchLoss(int epoch, int t) const {
    const TaskData& task = tasks_[t];
    space::Rng rng(Mix(options_.seed, Mix(kBatchStream, epoch), t));
    const Eigen::Index n = task.y.size();
    const std::vector<Eigen::Index> rows = SampleWithoutReplacement(
        n, std::min<Eigen::Index>(options_.batch_size, n), rng);
    Eigen::VectorXd y = task.y(rows);
    if (options_.augmentation && y_max_ > y_min_) {
      double l = y_min_ + (y_max_ - y_min_) * space::Uniform01(rng);
      double u = y_min_ + (y_max_ - y_min_) * space::Uniform01(rng);
      if (l > u) std::swap(l, u);
      if (u > l) y = (y.array() - l) / (u - l);
    } else {
      y = gp::Standardization::FromTargets(y).Apply(y);
    }
    Eigen::VectorXd features = task.task;
    if (options_.feature_dropout > 0.0) {
      for (Eigen::Index f = 0; f < features.size(); ++f) {
        if (space::Uniform01(rng) < options_.feature_dropout) features[f] = 0;
      }
    }
    return WithTask(model_, features, [&](const DeepPipeModel& m) {
      return m.Loss(task.X(rows, Eigen::all), y,
                    m.conditioned() ? options_.mean_loss_weight : 0.0,
                    options_.precision);
    });
  }

  DeepPipeModel model_;
  const std::vector<TaskData> tasks_;
  const std::vector<ValidTask> valid_;
  const double y_min_;
  const double y_max_;
  const DeepPipeTrainOptions& options_;
  const DeepPipeProgressCallback& progress_;
  Eigen::VectorXd params_;
  DeepPipeTrainResult result_;
  DeepPipeEpochStats stats_;  // Of the epoch running.
};

// The meta-features with a positive spread over the training tasks, with
// their statistics. INVALID_ARGUMENT if there are none.
absl::StatusOr<surrogate::FeatureScaler> TaskFeatureScaler(
    const std::vector<const meta::Task*>& train) {
  const FeatureStatistics stats = ComputeFeatureStatistics(train);
  std::vector<std::string> names;
  std::vector<double> means, stds;
  for (size_t f = 0; f < stats.names.size(); ++f) {
    if (!(stats.stds[f] > 0)) continue;
    names.push_back(stats.names[f]);
    means.push_back(stats.means[f]);
    stds.push_back(stats.stds[f]);
  }
  if (names.empty()) {
    return absl::InvalidArgumentError(
        "DeepPipe task conditioning: no meta-feature varies over the "
        "training tasks (metafeatures.csv missing or constant)");
  }
  return surrogate::FeatureScaler::Create(
      std::move(names),
      Eigen::Map<const Eigen::VectorXd>(means.data(), means.size()),
      Eigen::Map<const Eigen::VectorXd>(stds.data(), stds.size()));
}

absl::Status ValidateOptions(const DeepPipeTrainOptions& o) {
  if (o.epochs < 0 || o.batch_size < 2 || !(o.lr > 0.0) ||
      !std::isfinite(o.lr) || !(o.min_lr >= 0.0) || o.min_lr > o.lr ||
      !(o.max_gradient_norm >= 0.0) || o.valid_support < 1 ||
      !(o.feature_dropout >= 0.0 && o.feature_dropout < 1.0) ||
      !(o.mean_loss_weight >= 0.0) || !std::isfinite(o.mean_loss_weight) ||
      o.valid_query < 1 || o.threads < 1 || o.threads > 256) {
    return absl::InvalidArgumentError(absl::StrCat(
        "DeepPipe training options: need epochs >= 0 (got ", o.epochs,
        "), batch_size >= 2 (", o.batch_size, "), 0 <= min_lr <= lr, lr > 0 (",
        o.lr, ", ", o.min_lr,
        "), max_gradient_norm >= 0, feature_dropout in [0, 1) (",
        o.feature_dropout, "), mean_loss_weight >= 0 (", o.mean_loss_weight,
        "), valid_support and valid_query >= 1, threads in "
        "[1, 256] (",
        o.threads, ")"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<DeepPipeTrainResult> TrainDeepPipe(
    const meta::MetaDataset& data, const std::vector<const meta::Task*>& train,
    const std::vector<const meta::Task*>& valid,
    const DeepPipeTrainOptions& options,
    const DeepPipeProgressCallback& progress, Progress* progress_lines) {
  const absl::Time start = absl::Now();
  METAOPT_RETURN_IF_ERROR(ValidateOptions(options));
  if (train.empty()) {
    return absl::InvalidArgumentError("DeepPipe training: no training tasks");
  }
  surrogate::FeatureScaler task_features;
  if (options.condition_on_features) {
    METAOPT_ASSIGN_OR_RETURN(task_features, TaskFeatureScaler(train));
  }
  METAOPT_ASSIGN_OR_RETURN(
      DeepPipeModel model,
      DeepPipeModel::Create(data.space, options.architecture, options.seed,
                            std::move(task_features)));
  const v1::Goal goal = data.objective.goal();

  std::vector<TaskData> tasks;
  tasks.reserve(train.size());
  double y_min = std::numeric_limits<double>::infinity();
  double y_max = -y_min;
  for (const meta::Task* task : train) {
    METAOPT_ASSIGN_OR_RETURN(TaskData d, PrepareTask(model, *task, goal, 2));
    y_min = std::min(y_min, d.y.minCoeff());
    y_max = std::max(y_max, d.y.maxCoeff());
    tasks.push_back(std::move(d));
  }
  std::vector<ValidTask> valid_tasks;
  valid_tasks.reserve(valid.size());
  for (size_t t = 0; t < valid.size(); ++t) {
    METAOPT_ASSIGN_OR_RETURN(TaskData d,
                             PrepareTask(model, *valid[t], goal, 3));
    const Eigen::Index n = d.y.size();
    const Eigen::Index support =
        std::min<Eigen::Index>(options.valid_support, n / 2);
    const Eigen::Index query =
        std::min<Eigen::Index>(options.valid_query, n - support);
    space::Rng rng(Mix(options.seed, kValidStream, t));
    const std::vector<Eigen::Index> idx =
        SampleWithoutReplacement(n, support + query, rng);
    const std::vector<Eigen::Index> s(idx.begin(), idx.begin() + support);
    const std::vector<Eigen::Index> q(idx.begin() + support, idx.end());
    ValidTask v;
    v.task = d.task;
    v.X_support = d.X(s, Eigen::all);
    v.y_support = d.y(s);
    v.X_query = d.X(q, Eigen::all);
    v.y_query = d.y(q);
    valid_tasks.push_back(std::move(v));
  }

  DeepPipeEpochs epochs(std::move(model), std::move(tasks),
                        std::move(valid_tasks), y_min, y_max, options,
                        progress);
  TrainingLoopOptions loop;
  loop.epochs = options.epochs;
  loop.learning_rate.decay = LearningRateSchedule::Decay::kCosinePerEpoch;
  loop.learning_rate.initial = options.lr;
  loop.learning_rate.final = options.min_lr;
  loop.max_gradient_norm = options.max_gradient_norm;
  loop.start = start;
  loop.time_budget = options.time_budget;
  loop.should_stop = options.should_stop;
  loop.progress = progress_lines;
  METAOPT_ASSIGN_OR_RETURN(
      TrainingLoopResult trained,
      RunTrainingLoop(loop, epochs.num_parameters(), epochs));
  DeepPipeTrainResult result = std::move(epochs).result();
  result.best_epoch = trained.best_epoch;
  result.loop = trained;
  result.wall_time = absl::Now() - start;
  return result;
}

// ---------------------------------------------------------------------------
// metaopt-train --kind deeppipe.

absl::StatusOr<v1::ModelArtifact> TrainDeepPipeArtifact(
    const DeepPipeTrainOptions& train_options,
    const CommonTrainOptions& options, const TrainingSplits& data,
    Progress& progress, const PortfolioOptions& warm_start) {
  DeepPipeTrainOptions train = train_options;
  train.seed = options.seed;
  const char* name = train.architecture.gp == surrogate::DeepKernelGp::kFsbo
                         ? "fsbo"
                         : "deeppipe";
  progress.Log(absl::StrFormat(
      "%s: %d train / %d valid tasks, %d epochs, batch %d, lr %g, "
      "encoder layers %d, %d threads, network in %s%s%s",
      name, data.train.size(), data.valid.size(), train.epochs,
      train.batch_size, train.lr, train.architecture.encoder_layers,
      train.threads,
      train.precision == surrogate::NetworkPrecision::kFloat32 ? "float32"
                                                               : "float64",
      train.augmentation ? ", task augmentation" : "",
      train.condition_on_features ? ", conditioned on meta-features" : ""));
  METAOPT_ASSIGN_OR_RETURN(
      DeepPipeTrainResult trained,
      TrainDeepPipe(data.dataset, data.train, data.valid, train,
                    /*progress=*/nullptr, &progress));
  const DeepPipeEpochStats& best = trained.history[trained.best_epoch];
  progress.Log(absl::StrFormat(
      "%s: best epoch %d (valid NLL %s), %d parameters, %.2fs/epoch", name,
      trained.best_epoch, FormatNll(best.valid_nll),
      trained.best.num_parameters(), trained.loop.seconds_per_epoch));

  v1::ModelArtifact artifact;
  trained.best.ToArtifact(&artifact);
  *artifact.mutable_objective() = data.dataset.objective;
  METAOPT_ASSIGN_OR_RETURN(
      PortfolioResult portfolio,
      AddWarmStartPortfolio(options, data, progress, &artifact, warm_start));
  auto& ints = *artifact.mutable_int_options();
  ints["train_epochs"] = train.epochs;
  ints["train_batch_size"] = train.batch_size;
  ints["train_augmentation"] = train.augmentation ? 1 : 0;
  ints["train_valid_support"] = train.valid_support;
  // The warm start's search (only when not the default greedy one, so
  // DeepPipe artifacts are as before).
  if (warm_start.search == PortfolioSearch::kEvolutionary) {
    AddPortfolioSearchIntOptions(warm_start, &artifact);
  }
  (*artifact.mutable_provenance()
        ->mutable_validation_metrics())["train_objective"] =
      portfolio.train_objective;
  (*artifact.mutable_provenance()
        ->mutable_validation_metrics())["greedy_train_objective"] =
      portfolio.greedy_train_objective;
  // Only when not the default, so float64 artifacts are as before.
  if (train.precision == surrogate::NetworkPrecision::kFloat32) {
    ints["train_float32"] = 1;
  }

  auto* metrics = artifact.mutable_provenance()->mutable_validation_metrics();
  if (!std::isnan(best.valid_nll)) (*metrics)["valid_nll"] = best.valid_nll;
  if (!std::isnan(best.train_nll)) (*metrics)["train_nll"] = best.train_nll;
  if (!std::isnan(trained.history[0].valid_nll)) {
    (*metrics)["initial_valid_nll"] = trained.history[0].valid_nll;
  }
  AddTrainingLoopMetrics(trained.loop, metrics);
  AddCurveMetrics("valid_regret", portfolio.valid_regret, metrics);
  return artifact;
}

void AddDeepPipeLoopFlags(CLI::App& flags, DeepPipeLoopFlags* state) {
  DeepPipeTrainOptions& t = state->train;
  flags
      .add_option("--epochs", t.epochs,
                  "meta-training epochs (the authors: 10000)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  flags
      .add_option("--batch-size", t.batch_size,
                  "evaluations per task batch (capped at the task's count)")
      ->capture_default_str()
      ->check(CLI::Range(2, 100000));
  flags.add_option("--lr", t.lr, "Adam learning rate (cosine-decayed)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  flags.add_option("--min-lr", t.min_lr, "final learning rate of the cosine")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  flags
      .add_option("--threads", t.threads,
                  "threads for per-task gradients (deterministic per "
                  "thread count)")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  flags
      .add_option("--precision", t.precision,
                  "arithmetic of the training steps' network passes and "
                  "of K^-1 for the GP gradients (the parameters, the "
                  "Cholesky factor, validation and the saved model are "
                  "double either way)")
      ->transform(CLI::CheckedTransformer(
          std::map<std::string, surrogate::NetworkPrecision>{
              {"float64", surrogate::NetworkPrecision::kFloat64},
              {"float32", surrogate::NetworkPrecision::kFloat32}},
          CLI::ignore_case))
      ->default_str("float64");
  flags
      .add_option("--max-grad-norm", t.max_gradient_norm,
                  "gradient-norm clipping (0: none)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  flags
      .add_option("--valid-support", t.valid_support,
                  "validation: support evaluations per task")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  flags
      .add_option("--valid-query", t.valid_query,
                  "validation: query evaluations per task")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  flags
      .add_option("--max-minutes", state->max_minutes,
                  "stop after the epoch that exceeds this wall time (0: "
                  "no limit)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
}

DeepPipeTrainOptions DeepPipeTrainOptionsFrom(const DeepPipeLoopFlags& flags) {
  DeepPipeTrainOptions train = flags.train;
  if (flags.max_minutes > 0) {
    train.time_budget = absl::Seconds(60.0 * flags.max_minutes);
  }
  return train;
}

TrainerKind DeepPipeTrainerKind() {
  TrainerKind kind;
  kind.name = "deeppipe";
  kind.description =
      "DeepPipe deep-kernel GP meta-learned on the training tasks (one Adam "
      "step per task per epoch), best epoch by validation NLL, plus a "
      "warm-start portfolio";
  kind.add_flags = [](CLI::App& flags) -> Trainer {
    auto state = std::make_shared<DeepPipeLoopFlags>();
    DeepPipeTrainOptions& t = state->train;
    surrogate::DeepPipeArchitecture& a = t.architecture;
    AddDeepPipeLoopFlags(flags, state.get());
    flags
        .add_option("--encoder-layers", a.encoder_layers,
                    "per-algorithm encoder layers (0: flat vector plus "
                    "algorithm one-hot, the authors' transfer models)")
        ->capture_default_str()
        ->check(CLI::Range(0, 8));
    flags
        .add_option("--aggregation-layers", a.aggregation_layers,
                    "aggregator layers including the output (0: 4 - encoder "
                    "layers)")
        ->capture_default_str()
        ->check(CLI::Range(0, 16));
    flags
        .add_option("--width-factor", a.width_factor,
                    "F: encoder width F * L_i, aggregator width F * sum L_i")
        ->capture_default_str()
        ->check(CLI::Range(1, 256));
    flags
        .add_option("--hidden", a.hidden,
                    "aggregator hidden width (0: max(F * sum L_i, 24))")
        ->capture_default_str()
        ->check(CLI::Range(0, 8192));
    flags.add_option("--embedding", a.embedding, "embedding dimension Z")
        ->capture_default_str()
        ->check(CLI::Range(1, 1024));
    flags.add_flag("--augmentation", t.augmentation,
                   "FSBO task augmentation instead of per-batch "
                   "standardisation");
    flags.add_flag("--condition-on-features", t.condition_on_features,
                   "task-conditioned model: the aggregator reads the task's "
                   "standardized meta-features and a mean head predicts "
                   "each configuration's standardized value");
    flags
        .add_option("--feature-dropout", t.feature_dropout,
                    "conditioned models: probability that a training batch "
                    "sees a meta-feature imputed (its training mean)")
        ->capture_default_str()
        ->check(CLI::Range(0.0, 0.99));
    flags
        .add_option("--mean-loss-weight", t.mean_loss_weight,
                    "conditioned models: weight of the mean head's zero-shot "
                    "regression loss next to the marginal likelihood")
        ->capture_default_str()
        ->check(CLI::NonNegativeNumber);
    return [state](const CommonTrainOptions& options,
                   const TrainingSplits& data, Progress& progress) {
      return TrainDeepPipeArtifact(DeepPipeTrainOptionsFrom(*state), options,
                                   data, progress);
    };
  };
  return kind;
}

}  // namespace metaopt::train
