#include "core/meta_training/pmf_train.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <utility>

#include "CLI/CLI.hpp"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/common/status_macros.h"
#include "core/meta_training/portfolio.h"
#include "core/meta_training/training_loop.h"
#include "core/nn/optimizer.h"
#include "core/objective/objective.h"
#include "core/space/random.h"
#include "core/space/search_space.h"

namespace metaopt::train {
namespace {

using RowMajorMatrix =
    Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Fisher-Yates with the portable space::UniformIndex.
void Shuffle(std::vector<int>& v, space::Rng& rng) {
  for (size_t i = v.size(); i > 1; --i) {
    const size_t j = space::UniformIndex(rng, i);
    std::swap(v[i - 1], v[j]);
  }
}

std::vector<int> Iota(int n) {
  std::vector<int> v(n);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

// Cycles through a permutation of [0, n), reshuffling when fewer than the
// requested number remain, so a draw never repeats an element.
class PermutationCycle {
 public:
  PermutationCycle(int n, space::Rng& rng) : order_(Iota(n)) {
    Shuffle(order_, rng);
  }
  std::vector<int> Next(int count, space::Rng& rng) {
    count = std::min<int>(count, static_cast<int>(order_.size()));
    if (pos_ + count > order_.size()) {
      Shuffle(order_, rng);
      pos_ = 0;
    }
    std::vector<int> out(order_.begin() + pos_, order_.begin() + pos_ + count);
    pos_ += count;
    return out;
  }

 private:
  std::vector<int> order_;
  size_t pos_ = 0;
};

// The rows `subset` (positions into `column`) as latents and targets.
void Gather(const Eigen::Ref<const RowMajorMatrix>& X, const PmfColumn& column,
            const std::vector<int>& subset, Eigen::MatrixXd* Xd,
            Eigen::VectorXd* td) {
  Xd->resize(static_cast<Eigen::Index>(subset.size()), X.cols());
  td->resize(static_cast<Eigen::Index>(subset.size()));
  for (size_t i = 0; i < subset.size(); ++i) {
    Xd->row(i) = X.row(column.entries[subset[i]]);
    (*td)[i] = column.targets[subset[i]];
  }
}

// Normalised ranks of `losses` in [0, 1] (0 best), ties averaged.
std::vector<double> NormalisedRanks(const Eigen::VectorXd& losses) {
  const int n = static_cast<int>(losses.size());
  std::vector<int> order = Iota(n);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return losses[a] < losses[b]; });
  std::vector<double> ranks(n, 0.0);
  for (int i = 0; i < n;) {
    int j = i;
    while (j + 1 < n && losses[order[j + 1]] == losses[order[i]]) ++j;
    const double average = 0.5 * (i + j);  // 0-based
    for (int k = i; k <= j; ++k) {
      ranks[order[k]] = n > 1 ? average / (n - 1) : 0.0;
    }
    i = j + 1;
  }
  return ranks;
}

// The model at theta = [latents (row-major N x Q), raw kernel parameters
// (Q + 2)].
absl::StatusOr<surrogate::PmfModel> PmfModelOf(const PmfProblem& problem, int Q,
                                               const Eigen::VectorXd& theta) {
  const int N = static_cast<int>(problem.catalogue.size());
  return surrogate::PmfModel::Create(
      Eigen::Map<const RowMajorMatrix>(theta.data(), N, Q),
      surrogate::PmfKernelParams::FromRaw(theta.tail(Q + 2)), problem.y_mean,
      problem.y_std);
}

// PMF's epochs for the training loop: per step a batch of datasets, each with
// at most max_pipelines of its entries, and the exact marginal likelihood's
// gradient per observation; the score is the validation NLL per observation
// (without validation tasks: the epoch's mean training NLL).
class PmfEpochs final : public EpochTrainer {
 public:
  PmfEpochs(const PmfProblem& problem, const PmfTrainOptions& options,
            Eigen::VectorXd theta, uint64_t eval_seed, PmfTrainReport* report)
      : problem_(problem),
        options_(options),
        N_(static_cast<int>(problem.catalogue.size())),
        Q_(options.latent_dim),
        D_(static_cast<int>(problem.train.size())),
        theta_(std::move(theta)),
        best_theta_(theta_),
        eval_seed_(eval_seed),
        report_(report),
        rng_(options.seed),
        datasets_(D_, rng_),
        batch_(std::min(options.batch_datasets, D_)),
        steps_per_epoch_((D_ + batch_ - 1) / batch_) {
    pipelines_.reserve(D_);
    for (int d = 0; d < D_; ++d) {
      pipelines_.emplace_back(static_cast<int>(problem.train[d].entries.size()),
                              rng_);
    }
  }

  int num_parameters() const { return static_cast<int>(theta_.size()); }
  int steps_per_epoch() const { return steps_per_epoch_; }
  const Eigen::VectorXd& best_theta() const { return best_theta_; }

  absl::Status RunEpoch(int epoch, TrainingOptimizer& optimizer) override {
    const int N = N_, Q = Q_;
    double epoch_nll = 0.0;
    int64_t epoch_obs = 0;
    for (int s = 0; s < steps_per_epoch_; ++s) {
      const surrogate::PmfKernelParams params =
          surrogate::PmfKernelParams::FromRaw(theta_.tail(Q + 2));
      const Eigen::Map<const RowMajorMatrix> X(theta_.data(), N, Q);
      Eigen::VectorXd grad = Eigen::VectorXd::Zero(theta_.size());
      Eigen::Map<RowMajorMatrix> grad_X(grad.data(), N, Q);
      Eigen::VectorXd grad_log = Eigen::VectorXd::Zero(Q + 2);
      int64_t obs = 0;
      double nll_sum = 0.0;
      for (int d : datasets_.Next(batch_, rng_)) {
        const PmfColumn& column = problem_.train[d];
        if (column.entries.empty()) continue;
        const std::vector<int> subset =
            pipelines_[d].Next(options_.max_pipelines, rng_);
        Gather(X, column, subset, &Xd_, &td_);
        METAOPT_ASSIGN_OR_RETURN(
            surrogate::PmfNll nll,
            surrogate::PmfNegativeLogLikelihood(Xd_, td_, params, true));
        nll_sum += nll.value;
        obs += td_.size();
        grad_log += nll.grad_log_params;
        for (size_t i = 0; i < subset.size(); ++i) {
          grad_X.row(column.entries[subset[i]]) += nll.grad_latents.row(i);
        }
      }
      if (obs == 0) continue;
      grad.tail(Q + 2) = surrogate::RawGradient(grad_log, params);
      grad /= static_cast<double>(obs);
      if (!grad.allFinite()) {
        return absl::InternalError(absl::StrCat(
            "PMF: non-finite gradient at epoch ", epoch, " step ", s));
      }
      optimizer.Step(grad, theta_);
      epoch_nll += nll_sum;
      epoch_obs += obs;
    }
    train_nll_ =
        epoch_obs > 0 ? epoch_nll / static_cast<double>(epoch_obs) : 0.0;
    return absl::OkStatus();
  }

  absl::StatusOr<std::optional<double>> Score() override {
    if (first_score_) {
      // The initial model, as TrainPmfModel scored it.
      first_score_ = false;
      train_nll_ = report_->initial_train_nll;
      return problem_.valid.empty() ? report_->initial_train_nll
                                    : report_->initial_valid_nll;
    }
    METAOPT_ASSIGN_OR_RETURN(surrogate::PmfModel model,
                             PmfModelOf(problem_, Q_, theta_));
    if (problem_.valid.empty()) return train_nll_;
    return PmfMeanNll(model, problem_.valid, options_.max_pipelines,
                      eval_seed_);
  }

  void KeepBest() override { best_theta_ = theta_; }

  std::string EndEpoch(const EpochRecord& record) override {
    report_->criterion_curve.push_back(*record.score);
    return absl::StrFormat("train NLL/obs %.4f  %s %.4f", train_nll_,
                           problem_.valid.empty() ? "criterion" : "valid",
                           *record.score);
  }

 private:
  const PmfProblem& problem_;
  const PmfTrainOptions& options_;
  const int N_, Q_, D_;
  Eigen::VectorXd theta_;
  Eigen::VectorXd best_theta_;
  const uint64_t eval_seed_;
  PmfTrainReport* report_;
  space::Rng rng_;
  PermutationCycle datasets_;
  std::vector<PermutationCycle> pipelines_;
  const int batch_;
  const int steps_per_epoch_;
  double train_nll_ = 0.0;  // Of the last epoch.
  bool first_score_ = true;
  Eigen::MatrixXd Xd_;
  Eigen::VectorXd td_;
};
}  // namespace

absl::StatusOr<PmfProblem> BuildPmfProblem(
    const meta::MetaDataset& data, const std::vector<const meta::Task*>& train,
    const std::vector<const meta::Task*>& valid) {
  const v1::Goal goal = data.objective.goal();
  PmfProblem problem;
  for (const meta::Task* task : train) {
    for (const v1::Configuration& config : task->configurations) {
      std::string key = space::ConfigurationKey(config);
      if (problem.index_by_key.contains(key)) continue;
      problem.index_by_key.emplace(std::move(key),
                                   static_cast<int>(problem.catalogue.size()));
      problem.catalogue.push_back(config);
    }
  }
  auto column_of = [&](const meta::Task& task) {
    PmfColumn column;
    column.task_id = task.id;
    absl::flat_hash_set<int> seen;
    std::vector<double> losses;
    for (size_t i = 0; i < task.configurations.size(); ++i) {
      auto it = problem.index_by_key.find(
          space::ConfigurationKey(task.configurations[i]));
      if (it == problem.index_by_key.end() || !seen.insert(it->second).second) {
        continue;
      }
      column.entries.push_back(it->second);
      losses.push_back(objective::Minimized(task.y[i], goal));
    }
    column.targets = Eigen::Map<const Eigen::VectorXd>(
        losses.data(), static_cast<Eigen::Index>(losses.size()));
    return column;
  };
  double sum = 0.0;
  double sum_sq = 0.0;
  int64_t count = 0;
  for (const meta::Task* task : train) {
    problem.train.push_back(column_of(*task));
    const Eigen::VectorXd& t = problem.train.back().targets;
    sum += t.sum();
    sum_sq += t.squaredNorm();
    count += t.size();
  }
  if (count == 0) {
    return absl::InvalidArgumentError(
        "PMF: the training tasks have no evaluations");
  }
  problem.y_mean = sum / static_cast<double>(count);
  const double var = count > 1
                         ? (sum_sq - count * problem.y_mean * problem.y_mean) /
                               static_cast<double>(count - 1)
                         : 0.0;
  problem.y_std = var > 1e-24 ? std::sqrt(var) : 1.0;
  for (const meta::Task* task : valid) {
    PmfColumn column = column_of(*task);
    if (!column.entries.empty()) problem.valid.push_back(std::move(column));
  }
  for (std::vector<PmfColumn>* columns : {&problem.train, &problem.valid}) {
    for (PmfColumn& column : *columns) {
      column.targets =
          (column.targets.array() - problem.y_mean) / problem.y_std;
    }
  }
  return problem;
}

absl::StatusOr<double> PmfMeanNll(const surrogate::PmfModel& model,
                                  const std::vector<PmfColumn>& columns,
                                  int max_pipelines, uint64_t seed) {
  double total = 0.0;
  int64_t count = 0;
  const RowMajorMatrix X = model.latents();
  for (size_t c = 0; c < columns.size(); ++c) {
    const PmfColumn& column = columns[c];
    std::vector<int> subset = Iota(static_cast<int>(column.entries.size()));
    if (max_pipelines > 0 && static_cast<int>(subset.size()) > max_pipelines) {
      space::Rng rng(seed + 7919 * c);
      Shuffle(subset, rng);
      subset.resize(max_pipelines);
    }
    if (subset.empty()) continue;
    Eigen::MatrixXd Xd;
    Eigen::VectorXd td;
    Gather(X, column, subset, &Xd, &td);
    METAOPT_ASSIGN_OR_RETURN(
        surrogate::PmfNll nll,
        surrogate::PmfNegativeLogLikelihood(Xd, td, model.params(), false));
    total += nll.value;
    count += td.size();
  }
  if (count == 0) return std::numeric_limits<double>::quiet_NaN();
  return total / static_cast<double>(count);
}

absl::StatusOr<surrogate::PmfModel> TrainPmfModel(
    const PmfProblem& problem, const PmfTrainOptions& options,
    Progress* progress, PmfTrainReport* report) {
  if (options.latent_dim < 1 || options.epochs < 0 ||
      options.batch_datasets < 1 || options.max_pipelines < 1 ||
      !(options.learning_rate > 0) || !(options.initial_noise_variance > 0)) {
    return absl::InvalidArgumentError(
        "PMF: --latent-dim, --batch-datasets, --max-pipelines and "
        "--learning-rate must be positive and --epochs non-negative");
  }
  const int N = static_cast<int>(problem.catalogue.size());
  const int Q = options.latent_dim;
  const int D = static_cast<int>(problem.train.size());
  if (N == 0 || D == 0) {
    return absl::InvalidArgumentError("PMF: empty catalogue or no tasks");
  }
  PmfTrainReport local_report;
  if (report == nullptr) report = &local_report;
  *report = PmfTrainReport();
  auto log = [&](const std::string& message) {
    if (progress != nullptr) progress->Log(message);
  };

  // PCA initialisation of the standardised, mean-imputed matrix.
  Eigen::MatrixXd Y =
      Eigen::MatrixXd::Constant(N, D, std::numeric_limits<double>::quiet_NaN());
  for (int d = 0; d < D; ++d) {
    const PmfColumn& column = problem.train[d];
    for (size_t i = 0; i < column.entries.size(); ++i) {
      Y(column.entries[i], d) = column.targets[i];
    }
  }
  METAOPT_ASSIGN_OR_RETURN(Eigen::MatrixXd X0, surrogate::PcaLatents(Y, Q));
  // One common lengthscale such that two typical latents are at scaled
  // squared distance ~2 (the PCA scores are not rescaled, so their scale
  // sets how far apart the initial lengthscales see them).
  const double mean_sq = X0.rowwise().squaredNorm().mean();
  const double l0 = mean_sq > 1e-12 ? std::sqrt(mean_sq) : 1.0;
  const surrogate::PmfKernelParams init_params =
      surrogate::PmfKernelParams::FromPositive(Eigen::VectorXd::Constant(Q, l0),
                                               1.0,
                                               options.initial_noise_variance);

  // theta = [latents (row-major N x Q), raw kernel parameters (Q + 2)].
  const Eigen::Index nx = static_cast<Eigen::Index>(N) * Q;
  Eigen::VectorXd theta(nx + Q + 2);
  theta.head(nx) =
      Eigen::Map<const Eigen::VectorXd>(RowMajorMatrix(X0).data(), nx);
  theta.tail(Q + 2) = init_params.Raw();
  const uint64_t eval_seed = options.seed ^ 0x706d66ull;
  METAOPT_ASSIGN_OR_RETURN(surrogate::PmfModel initial,
                           PmfModelOf(problem, Q, theta));
  METAOPT_ASSIGN_OR_RETURN(
      report->initial_train_nll,
      PmfMeanNll(initial, problem.train, options.max_pipelines, eval_seed));
  report->initial_valid_nll =
      problem.valid.empty() ? std::numeric_limits<double>::quiet_NaN()
                            : *PmfMeanNll(initial, problem.valid,
                                          options.max_pipelines, eval_seed);
  log(absl::StrFormat(
      "pmf: %d entries x %d tasks (%d validation), Q = %d, initial "
      "lengthscale %.3g; initial NLL/obs train %.4f, valid %.4f",
      N, D, problem.valid.size(), Q, l0, report->initial_train_nll,
      report->initial_valid_nll));

  PmfEpochs epochs(problem, options, std::move(theta), eval_seed, report);
  TrainingLoopOptions loop;
  loop.epochs = options.epochs;
  loop.learning_rate.decay = LearningRateSchedule::Decay::kCosinePerStep;
  loop.learning_rate.initial = options.learning_rate;
  loop.learning_rate.final = 0.1 * options.learning_rate;
  loop.learning_rate.total_steps =
      static_cast<int64_t>(epochs.steps_per_epoch()) * options.epochs;
  loop.progress = progress;
  loop.log_every = std::max(1, options.epochs / 20);
  METAOPT_ASSIGN_OR_RETURN(
      TrainingLoopResult trained_loop,
      RunTrainingLoop(loop, epochs.num_parameters(), epochs));
  report->epochs_run = trained_loop.epochs_run;
  report->steps = trained_loop.steps;
  report->best_epoch = trained_loop.best_epoch;
  const Eigen::VectorXd& best_theta = epochs.best_theta();
  METAOPT_ASSIGN_OR_RETURN(surrogate::PmfModel trained,
                           PmfModelOf(problem, Q, best_theta));
  METAOPT_ASSIGN_OR_RETURN(
      report->train_nll,
      PmfMeanNll(trained, problem.train, options.max_pipelines, eval_seed));
  report->valid_nll = problem.valid.empty()
                          ? std::numeric_limits<double>::quiet_NaN()
                          : *PmfMeanNll(trained, problem.valid,
                                        options.max_pipelines, eval_seed);
  return trained;
}

void AddPmfWarmStartData(const PmfProblem& problem,
                         const std::vector<const meta::Task*>& train, int depth,
                         v1::ModelArtifact* artifact) {
  std::map<std::string, std::vector<double>> by_name;
  for (const meta::Task* task : train) {
    v1::DatasetFeatures* features = artifact->add_training_features();
    features->set_task_id(task->id);
    for (const auto& [name, value] : task->metafeatures) {
      if (!std::isfinite(value)) continue;
      (*features->mutable_features())[name] = value;
      by_name[name].push_back(value);
    }
  }
  for (const auto& [name, values] : by_name) {
    const double n = static_cast<double>(values.size());
    const double mean = std::accumulate(values.begin(), values.end(), 0.0) / n;
    double ss = 0.0;
    for (double v : values) ss += (v - mean) * (v - mean);
    const double sd = values.size() > 1 ? std::sqrt(ss / (n - 1)) : 0.0;
    (*artifact->mutable_normalization())["feature_mean/" + name] = mean;
    (*artifact->mutable_normalization())["feature_std/" + name] =
        std::isfinite(sd) ? sd : 0.0;
  }
  const int N = static_cast<int>(problem.catalogue.size());
  const int T = static_cast<int>(problem.train.size());
  const int M = std::max(1, depth);
  v1::Tensor* top = artifact->add_tensors();
  top->set_name("training_top_entries");
  top->add_shape(T);
  top->add_shape(M);
  top->mutable_values()->Resize(T * M, -1.0);
  std::vector<double> sum(N, 0.0);
  std::vector<int> count(N, 0);
  for (int t = 0; t < T; ++t) {
    const PmfColumn& column = problem.train[t];
    const std::vector<double> r = NormalisedRanks(column.targets);
    std::vector<int> order = Iota(static_cast<int>(column.entries.size()));
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      if (r[a] != r[b]) return r[a] < r[b];
      return column.entries[a] < column.entries[b];
    });
    for (int k = 0; k < std::min<int>(M, static_cast<int>(order.size())); ++k) {
      top->set_values(t * M + k, column.entries[order[k]]);
    }
    for (size_t i = 0; i < column.entries.size(); ++i) {
      sum[column.entries[i]] += r[i];
      ++count[column.entries[i]];
    }
  }
  v1::Tensor* mean_ranks = artifact->add_tensors();
  mean_ranks->set_name("mean_ranks");
  mean_ranks->add_shape(N);
  for (int n = 0; n < N; ++n) {
    mean_ranks->add_values(count[n] > 0 ? sum[n] / count[n] : 1.0);
  }
}

std::vector<int> AverageRankOrder(const PmfProblem& problem) {
  const int N = static_cast<int>(problem.catalogue.size());
  std::vector<double> sum(N, 0.0);
  std::vector<int> count(N, 0);
  for (const PmfColumn& column : problem.train) {
    const std::vector<double> r = NormalisedRanks(column.targets);
    for (size_t i = 0; i < column.entries.size(); ++i) {
      sum[column.entries[i]] += r[i];
      ++count[column.entries[i]];
    }
  }
  std::vector<double> mean(N);
  for (int n = 0; n < N; ++n) mean[n] = count[n] > 0 ? sum[n] / count[n] : 2.0;
  std::vector<int> order = Iota(N);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return mean[a] < mean[b]; });
  return order;
}

namespace {

struct PmfFlags {
  PmfTrainOptions train;
  std::string portfolio = "greedy";
  int warm_start_depth = 32;
};

absl::StatusOr<v1::ModelArtifact> TrainPmf(const PmfFlags& flags,
                                           const CommonTrainOptions& options,
                                           const TrainingSplits& data,
                                           Progress& progress) {
  METAOPT_ASSIGN_OR_RETURN(
      PmfProblem problem,
      BuildPmfProblem(data.dataset, data.train, data.valid));
  PmfTrainOptions train_options = flags.train;
  train_options.seed = options.seed;
  PmfTrainReport report;
  METAOPT_ASSIGN_OR_RETURN(
      surrogate::PmfModel model,
      TrainPmfModel(problem, train_options, &progress, &report));
  progress.Log(absl::StrFormat(
      "pmf: best epoch %d of %d (%d steps): NLL/obs train %.4f, valid %.4f",
      report.best_epoch, report.epochs_run, report.steps, report.train_nll,
      report.valid_nll));

  v1::ModelArtifact artifact;
  artifact.set_kind(v1::MODEL_KIND_PMF);
  for (const v1::Configuration& config : problem.catalogue) {
    *artifact.add_catalogue() = config;
  }
  model.ToArtifact(&artifact);
  AddPmfWarmStartData(problem, data.train, flags.warm_start_depth, &artifact);

  auto* metrics = artifact.mutable_provenance()->mutable_validation_metrics();
  std::vector<v1::Configuration> portfolio;
  if (flags.portfolio == "average-rank") {
    for (int n : AverageRankOrder(problem)) {
      if (static_cast<int>(portfolio.size()) >= options.portfolio_size) break;
      portfolio.push_back(problem.catalogue[n]);
    }
  } else {
    PortfolioOptions portfolio_options;
    portfolio_options.size = options.portfolio_size;
    portfolio_options.seed = options.seed;
    portfolio_options.match = PortfolioMatch::kExact;
    METAOPT_ASSIGN_OR_RETURN(PortfolioResult result,
                             BuildPortfolio(data.dataset, data.train,
                                            data.valid, portfolio_options));
    portfolio = std::move(result.configurations);
  }
  if (!portfolio.empty()) {
    METAOPT_ASSIGN_OR_RETURN(
        std::vector<double> train_curve,
        PortfolioRegretCurve(data.dataset, data.train, portfolio,
                             PortfolioMatch::kExact));
    AddCurveMetrics("train_regret", train_curve, metrics);
    if (!data.valid.empty()) {
      METAOPT_ASSIGN_OR_RETURN(
          std::vector<double> valid_curve,
          PortfolioRegretCurve(data.dataset, data.valid, portfolio,
                               PortfolioMatch::kExact));
      AddCurveMetrics("valid_regret", valid_curve, metrics);
    }
  }
  for (v1::Configuration& c : portfolio)
    *artifact.add_portfolio() = std::move(c);

  (*metrics)["train_nll"] = report.train_nll;
  (*metrics)["initial_train_nll"] = report.initial_train_nll;
  if (!problem.valid.empty()) {
    (*metrics)["valid_nll"] = report.valid_nll;
    (*metrics)["initial_valid_nll"] = report.initial_valid_nll;
  }
  (*metrics)["best_epoch"] = report.best_epoch;
  auto& int_options = *artifact.mutable_int_options();
  int_options["epochs"] = report.epochs_run;
  int_options["best_epoch"] = report.best_epoch;
  int_options["batch_datasets"] = train_options.batch_datasets;
  int_options["max_pipelines"] = train_options.max_pipelines;
  int_options["warm_start_depth"] = flags.warm_start_depth;
  return artifact;
}

}  // namespace

TrainerKind PmfTrainerKind() {
  TrainerKind kind;
  kind.name = "pmf";
  kind.description =
      "probabilistic matrix factorisation (GP-LVM) over the catalogue, with "
      "meta-feature warm start (Fusi et al. 2018)";
  kind.add_flags = [](CLI::App& flags) -> Trainer {
    auto state = std::make_shared<PmfFlags>();
    flags
        .add_option("--latent-dim", state->train.latent_dim,
                    "Q, latent dimensions per catalogue entry")
        ->capture_default_str()
        ->check(CLI::Range(1, 1000));
    flags.add_option("--epochs", state->train.epochs, "training epochs")
        ->capture_default_str()
        ->check(CLI::Range(0, 1000000));
    flags
        .add_option("--batch-datasets", state->train.batch_datasets,
                    "datasets per step")
        ->capture_default_str()
        ->check(CLI::Range(1, 1000000));
    flags
        .add_option("--max-pipelines", state->train.max_pipelines,
                    "catalogue entries per dataset per step")
        ->capture_default_str()
        ->check(CLI::Range(1, 1000000));
    flags
        .add_option("--learning-rate", state->train.learning_rate,
                    "Adam learning rate (cosine-decayed to a tenth)")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    flags
        .add_option("--warm-start-depth", state->warm_start_depth,
                    "best entries stored per training task for the "
                    "meta-feature warm start")
        ->capture_default_str()
        ->check(CLI::Range(1, 1000000));
    flags
        .add_option("--portfolio", state->portfolio,
                    "warm-start portfolio without meta-features: greedy "
                    "(minimum summed regret) or average-rank")
        ->capture_default_str()
        ->check(CLI::IsMember({"greedy", "average-rank"}));
    return [state](const CommonTrainOptions& options,
                   const TrainingSplits& data, Progress& progress) {
      return TrainPmf(*state, options, data, progress);
    };
  };
  return kind;
}

}  // namespace metaopt::train
