#include "core/meta_training/metabu.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "Eigen/Eigenvalues"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/common/status_macros.h"
#include "core/meta_training/optimal_transport.h"
#include "core/meta_training/training_loop.h"

namespace metaopt::train {

int IntrinsicDimension(const Eigen::MatrixXd& distances) {
  const Eigen::Index n = distances.rows();
  std::vector<double> mu;
  for (Eigen::Index i = 0; i < n; ++i) {
    std::vector<double> row;
    for (Eigen::Index j = 0; j < n; ++j) {
      // The diagonal may hold rounding noise instead of 0.
      if (j != i && distances(i, j) > 0) row.push_back(distances(i, j));
    }
    std::sort(row.begin(), row.end());
    row.erase(std::unique(row.begin(), row.end()), row.end());
    if (row.size() < 2) continue;
    mu.push_back(row[1] / (row[0] + 1e-3));
  }
  if (mu.empty()) return 1;
  std::sort(mu.begin(), mu.end());
  const size_t keep =
      std::min(mu.size(), static_cast<size_t>(std::floor(0.9 * mu.size())) + 1);
  double xy = 0, xx = 0;
  for (size_t i = 0; i < keep; ++i) {
    const double x = std::log(mu[i] > 0 ? mu[i] : 1 + 1e-3);
    const double f = static_cast<double>(i + 1) / static_cast<double>(n);
    if (f >= 1) break;
    const double y = -std::log(1 - f);
    xy += x * y;
    xx += x * x;
  }
  if (!(xx > 0)) return 1;
  return std::max(1, static_cast<int>(std::ceil(xy / xx)));
}

Eigen::MatrixXd ClassicalMds(const Eigen::MatrixXd& distances, int dimension) {
  const Eigen::Index n = distances.rows();
  const Eigen::MatrixXd centering =
      Eigen::MatrixXd::Identity(n, n) -
      Eigen::MatrixXd::Constant(n, n, 1.0 / static_cast<double>(n));
  const Eigen::MatrixXd gram =
      -0.5 * centering * distances.cwiseAbs2() * centering;
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> solver(gram);
  // Eigenvalues ascend: the largest are last.
  Eigen::MatrixXd out(n, dimension);
  for (int c = 0; c < dimension; ++c) {
    const Eigen::Index k = n - 1 - c;
    const double value = k >= 0 ? std::max(0.0, solver.eigenvalues()(k)) : 0;
    out.col(c) =
        k >= 0
            ? Eigen::VectorXd(solver.eigenvectors().col(k) * std::sqrt(value))
            : Eigen::VectorXd::Zero(n);
  }
  return out;
}

double NdcgAtK(const Eigen::MatrixXd& predicted, const Eigen::MatrixXd& truth,
               int k) {
  const Eigen::Index rows = predicted.rows();
  const Eigen::Index cols = predicted.cols();
  if (rows == 0 || cols == 0) return 0;
  const int kk = static_cast<int>(std::min<Eigen::Index>(k, cols));
  double ideal = 0;
  for (int r = 0; r < kk; ++r) ideal += 1.0 / std::log2(r + 2.0);
  auto order = [&](const Eigen::MatrixXd& m, Eigen::Index i) {
    std::vector<int> idx(cols);
    std::iota(idx.begin(), idx.end(), 0);
    std::stable_sort(idx.begin(), idx.end(),
                     [&](int a, int b) { return m(i, a) < m(i, b); });
    return idx;
  };
  double total = 0;
  for (Eigen::Index i = 0; i < rows; ++i) {
    const std::vector<int> true_order = order(truth, i);
    std::vector<bool> relevant(cols, false);
    for (int r = 0; r < kk; ++r) relevant[true_order[r]] = true;
    const std::vector<int> predicted_order = order(predicted, i);
    double dcg = 0;
    for (int r = 0; r < kk; ++r) {
      if (relevant[predicted_order[r]]) dcg += 1.0 / std::log2(r + 2.0);
    }
    total += dcg / ideal;
  }
  return total / static_cast<double>(rows);
}

Eigen::MatrixXd TargetDistances(const std::vector<MetabuTask>& rows,
                                const std::vector<MetabuTask>& columns) {
  Eigen::MatrixXd out(rows.size(), columns.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    for (size_t j = 0; j < columns.size(); ++j) {
      out(i, j) = &rows == &columns && j < i
                      ? out(j, i)
                      : UniformWasserstein(rows[i].top, columns[j].top);
    }
  }
  return out;
}

namespace {

Eigen::MatrixXd FeatureMatrix(const std::vector<MetabuTask>& tasks) {
  Eigen::MatrixXd x(tasks.size(), tasks.empty() ? 0 : tasks[0].features.size());
  for (size_t i = 0; i < tasks.size(); ++i) x.row(i) = tasks[i].features;
  return x;
}

absl::Status CheckTasks(const std::vector<MetabuTask>& tasks,
                        Eigen::Index features, Eigen::Index top_rows,
                        Eigen::Index top_cols, const char* what) {
  for (const MetabuTask& task : tasks) {
    if (task.features.size() != features || task.top.rows() != top_rows ||
        task.top.cols() != top_cols || !task.features.allFinite() ||
        !task.top.allFinite()) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " task \"", task.id, "\": expected ", features,
                       " finite features and ", top_rows, " x ", top_cols,
                       " top configurations, got ", task.features.size(),
                       " and ", task.top.rows(), " x ", task.top.cols()));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<MetabuFit> FitMetabu(const std::vector<MetabuTask>& train,
                                    const std::vector<MetabuTask>& valid,
                                    const MetabuOptions& options,
                                    Progress* progress) {
  if (train.size() < 3) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Metabu needs at least 3 training tasks, got ", train.size()));
  }
  const Eigen::Index num_features = train[0].features.size();
  const Eigen::Index top_rows = train[0].top.rows();
  const Eigen::Index top_cols = train[0].top.cols();
  if (num_features == 0 || top_rows == 0) {
    return absl::InvalidArgumentError(
        "Metabu needs meta-features and top configurations");
  }
  if (auto s = CheckTasks(train, num_features, top_rows, top_cols, "training");
      !s.ok()) {
    return s;
  }
  if (auto s =
          CheckTasks(valid, num_features, top_rows, top_cols, "validation");
      !s.ok()) {
    return s;
  }
  const int n = static_cast<int>(train.size());

  // Steps 1-2: target distances, their dimension and MDS embedding.
  Eigen::MatrixXd target = TargetDistances(train, train);
  const double max_distance = target.maxCoeff();
  if (max_distance > 0) target /= max_distance;
  MetabuFit fit;
  fit.dimension = options.dimension > 0
                      ? options.dimension
                      : std::clamp(IntrinsicDimension(target), 2, n - 1);
  Eigen::MatrixXd u = ClassicalMds(target, fit.dimension);
  for (Eigen::Index c = 0; c < u.cols(); ++c) {
    const double mean = u.col(c).mean();
    const double sd = std::sqrt((u.col(c).array() - mean).square().mean());
    u.col(c) = (u.col(c).array() - mean) / (sd > 0 ? sd : 1.0);
  }

  // The criterion: NDCG@k of the neighbours psi predicts.
  const Eigen::MatrixXd x = FeatureMatrix(train);
  const Eigen::MatrixXd x_valid = FeatureMatrix(valid);
  fit.criterion_on_valid = !valid.empty();
  const Eigen::MatrixXd truth =
      fit.criterion_on_valid ? TargetDistances(valid, train) : target;
  auto criterion = [&](const Eigen::MatrixXd& psi) {
    const Eigen::MatrixXd mapped = x * psi.transpose();
    if (fit.criterion_on_valid) {
      return NdcgAtK(SquaredDistances(x_valid * psi.transpose(), mapped), truth,
                     options.ndcg_k);
    }
    Eigen::MatrixXd self = SquaredDistances(mapped, mapped);
    // A task is not its own neighbour.
    self.diagonal().setConstant(std::numeric_limits<double>::infinity());
    Eigen::MatrixXd self_truth = truth;
    self_truth.diagonal().setConstant(std::numeric_limits<double>::infinity());
    return NdcgAtK(self, self_truth, options.ndcg_k);
  };

  // Step 3: psi by Adam on FGW + L1, PyTorch's Linear initialisation.
  std::mt19937_64 rng(options.seed);
  const double bound = 1.0 / std::sqrt(static_cast<double>(num_features));
  std::uniform_real_distribution<double> init(-bound, bound);
  Eigen::VectorXd params(fit.dimension * num_features);
  for (Eigen::Index i = 0; i < params.size(); ++i) params(i) = init(rng);
  const Eigen::MatrixXd correspondence =
      Eigen::MatrixXd::Identity(n, n) / static_cast<double>(n);
  FgwOptions fgw;
  fgw.alpha = options.alpha;

  // Step 3's Adam steps as epochs of the training loop, the criterion
  // negated as its score.
  class MetabuSteps final : public EpochTrainer {
   public:
    MetabuSteps(const Eigen::MatrixXd& x, const Eigen::MatrixXd& u,
                const Eigen::MatrixXd& correspondence, const FgwOptions& fgw,
                double l1, Eigen::VectorXd params, int rows, int cols,
                std::function<double(const Eigen::MatrixXd&)> criterion,
                int ndcg_k)
        : x_(x),
          u_(u),
          correspondence_(correspondence),
          fgw_(fgw),
          l1_(l1),
          params_(std::move(params)),
          rows_(rows),
          cols_(cols),
          criterion_(std::move(criterion)),
          ndcg_k_(ndcg_k) {}

    absl::Status RunEpoch(int, TrainingOptimizer& optimizer) override {
      const Eigen::MatrixXd psi = AsMatrix();
      const FgwResult result = FusedGromovWasserstein(x_ * psi.transpose(), u_,
                                                      correspondence_, fgw_);
      loss_ = result.value + l1_ * psi.cwiseAbs().sum();
      Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>
          grad = result.gradient.transpose() * x_ +
                 l1_ * psi.unaryExpr([](double w) {
                   return static_cast<double>((w > 0) - (w < 0));
                 });
      optimizer.Step(Eigen::Map<Eigen::VectorXd>(grad.data(), grad.size()),
                     params_);
      return absl::OkStatus();
    }
    absl::StatusOr<std::optional<double>> Score() override {
      ndcg_ = criterion_(AsMatrix());
      return -ndcg_;
    }
    void KeepBest() override {
      best_ = AsMatrix();
      best_ndcg_ = ndcg_;
    }
    std::string EndEpoch(const EpochRecord& record) override {
      if (record.epoch == 0)
        return absl::StrFormat("NDCG@%d %.3f", ndcg_k_, ndcg_);
      return absl::StrFormat("loss %.4f  NDCG@%d %.3f", loss_, ndcg_k_, ndcg_);
    }

    Eigen::MatrixXd AsMatrix() const {
      return Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic,
                                            Eigen::Dynamic, Eigen::RowMajor>>(
          params_.data(), rows_, cols_);
    }
    Eigen::MatrixXd best_;
    double best_ndcg_ = 0;

   private:
    const Eigen::MatrixXd& x_;
    const Eigen::MatrixXd& u_;
    const Eigen::MatrixXd& correspondence_;
    const FgwOptions& fgw_;
    const double l1_;
    Eigen::VectorXd params_;
    const int rows_, cols_;
    const std::function<double(const Eigen::MatrixXd&)> criterion_;
    const int ndcg_k_;
    double loss_ = 0;
    double ndcg_ = 0;
  };
  MetabuSteps steps(x, u, correspondence, fgw, options.l1, std::move(params),
                    fit.dimension, static_cast<int>(num_features), criterion,
                    options.ndcg_k);
  TrainingLoopOptions loop;
  loop.epochs = options.max_steps;
  loop.learning_rate.initial = options.learning_rate;
  loop.patience = options.patience;
  loop.progress = progress;
  loop.log_every = 0;
  loop.unit = "metabu step";
  METAOPT_ASSIGN_OR_RETURN(
      TrainingLoopResult trained,
      RunTrainingLoop(loop, static_cast<int>(fit.dimension * num_features),
                      steps));
  fit.steps = trained.epochs_run;
  fit.best_step = trained.best_epoch;
  fit.ndcg = steps.best_ndcg_;
  Eigen::MatrixXd best = std::move(steps.best_);
  fit.projection = std::move(best);
  return fit;
}

}  // namespace metaopt::train
