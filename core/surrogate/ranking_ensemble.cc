#include "core/surrogate/ranking_ensemble.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/common/status_macros.h"
#include "core/space/random.h"

namespace metaopt::surrogate {
namespace {

// The q-quantile (lower nearest rank) of `values` (not empty).
double Quantile(std::vector<int64_t> values, double q) {
  const size_t k = static_cast<size_t>(
      std::floor(q * static_cast<double>(values.size() - 1)));
  std::nth_element(values.begin(), values.begin() + k, values.end());
  return static_cast<double>(values[k]);
}

}  // namespace

absl::StatusOr<gp::Prediction> LeaveOneOutPredictions(
    const gp::GaussianProcess& gp, const Eigen::MatrixXd& X,
    const Eigen::VectorXd& y) {
  METAOPT_RETURN_IF_ERROR(gp.ValidateData(X, &y, "LeaveOneOutPredictions"));
  if (X.rows() == 0) {
    return absl::InvalidArgumentError(
        "LeaveOneOutPredictions: needs at least one observation");
  }
  Eigen::MatrixXd K = gp.kernel().Matrix(X);
  K.diagonal().array() += gp.noise_variance();
  METAOPT_ASSIGN_OR_RETURN(gp::JitteredCholesky chol,
                           gp::CholeskyWithJitter(std::move(K)));
  const Eigen::VectorXd r = y.array() - gp.constant_mean();
  const Eigen::VectorXd alpha =
      chol.L.triangularView<Eigen::Lower>().transpose().solve(
          chol.L.triangularView<Eigen::Lower>().solve(r));
  const Eigen::VectorXd c = gp::InverseFromCholesky(chol.L).diagonal();
  // R&W Eq. 5.12: mu_i = y_i - alpha_i / c_i, sigma_i^2 = 1 / c_i, with
  // c_i = [K^-1]_ii.
  gp::Prediction loo;
  loo.mean = y.array() - alpha.array() / c.array();
  loo.variance = c.array().inverse();
  return loo;
}

int64_t RankingLoss(const Eigen::VectorXd& f, const Eigen::VectorXd& y) {
  int64_t loss = 0;
  const Eigen::Index n = y.size();
  for (Eigen::Index j = 0; j < n; ++j) {
    for (Eigen::Index k = j + 1; k < n; ++k) {
      loss += (f[j] < f[k]) != (y[j] < y[k]);
    }
  }
  return loss;
}

absl::StatusOr<Eigen::VectorXd> RankingWeights(
    const std::vector<gp::Prediction>& predictions, const Eigen::VectorXd& y,
    const RankingWeightOptions& options) {
  if (predictions.empty() || options.samples < 1 ||
      !(options.dilution_quantile >= 0.0 && options.dilution_quantile <= 1.0)) {
    return absl::InvalidArgumentError(
        "RankingWeights: needs at least one model, samples >= 1 and a "
        "dilution_quantile in [0, 1]");
  }
  if (!y.allFinite()) {
    return absl::InvalidArgumentError("RankingWeights: non-finite targets");
  }
  const Eigen::Index n = y.size();
  for (size_t m = 0; m < predictions.size(); ++m) {
    const gp::Prediction& p = predictions[m];
    if (p.mean.size() != n || p.variance.size() != n || !p.mean.allFinite() ||
        !p.variance.allFinite() || (p.variance.array() < 0.0).any()) {
      return absl::InvalidArgumentError(
          absl::StrCat("RankingWeights: model ", m, " needs ", n,
                       " finite means and non-negative finite variances"));
    }
  }
  const size_t models = predictions.size();
  Eigen::VectorXd weights = Eigen::VectorXd::Zero(models);
  if (n < 2) {
    weights[0] = 1.0;
    return weights;
  }
  // losses[m][s]: model m's ranking loss in draw s.
  std::vector<std::vector<int64_t>> losses(
      models, std::vector<int64_t>(options.samples));
  space::Rng rng(options.seed);
  Eigen::VectorXd f(n);
  for (int s = 0; s < options.samples; ++s) {
    for (size_t m = 0; m < models; ++m) {
      for (Eigen::Index i = 0; i < n; ++i) {
        f[i] = predictions[m].mean[i] + std::sqrt(predictions[m].variance[i]) *
                                            space::StandardNormal(rng);
      }
      losses[m][s] = RankingLoss(f, y);
    }
  }
  std::vector<bool> kept(models, true);
  const double target_quantile =
      Quantile(losses[models - 1], options.dilution_quantile);
  for (size_t m = 0; m + 1 < models; ++m) {
    kept[m] = Quantile(losses[m], 0.5) <= target_quantile;
  }
  for (int s = 0; s < options.samples; ++s) {
    int64_t best = -1;
    int tied = 0;
    for (size_t m = 0; m < models; ++m) {
      if (!kept[m]) continue;
      if (best < 0 || losses[m][s] < best) {
        best = losses[m][s];
        tied = 1;
      } else if (losses[m][s] == best) {
        ++tied;
      }
    }
    for (size_t m = 0; m < models; ++m) {
      if (kept[m] && losses[m][s] == best) weights[m] += 1.0 / tied;
    }
  }
  return weights / static_cast<double>(options.samples);
}

absl::StatusOr<std::unique_ptr<const RankingEnsembleSurrogate>>
RankingEnsembleSurrogate::Create(
    std::vector<std::shared_ptr<const Surrogate>> models,
    Eigen::VectorXd weights) {
  if (static_cast<size_t>(weights.size()) != models.size() ||
      std::any_of(models.begin(), models.end(),
                  [](const auto& m) { return m == nullptr; }) ||
      !weights.allFinite() || (weights.array() < 0.0).any() ||
      !(weights.sum() > 0.0)) {
    return absl::InvalidArgumentError(
        "RankingEnsembleSurrogate: needs one non-negative finite weight per "
        "model, at least one positive, and no null model");
  }
  // Only the models with weight are kept.
  std::vector<std::shared_ptr<const Surrogate>> kept;
  std::vector<double> kept_weights;
  for (size_t i = 0; i < models.size(); ++i) {
    if (weights[i] > 0.0) {
      kept.push_back(std::move(models[i]));
      kept_weights.push_back(weights[i]);
    }
  }
  return std::unique_ptr<const RankingEnsembleSurrogate>(
      new RankingEnsembleSurrogate(
          std::move(kept), Eigen::Map<const Eigen::VectorXd>(
                               kept_weights.data(), kept_weights.size())));
}

gp::Prediction RankingEnsembleSurrogate::Combine(
    const std::vector<gp::Prediction>& parts) const {
  gp::Prediction out;
  out.mean = Eigen::VectorXd::Zero(parts[0].mean.size());
  out.variance = Eigen::VectorXd::Zero(parts[0].mean.size());
  for (size_t i = 0; i < parts.size(); ++i) {
    out.mean += weights_[i] * parts[i].mean;
    out.variance += weights_[i] * weights_[i] * parts[i].variance;
  }
  return out;
}

absl::StatusOr<gp::Prediction> RankingEnsembleSurrogate::Predict(
    const Eigen::MatrixXd& X) const {
  std::vector<gp::Prediction> parts;
  parts.reserve(models_.size());
  for (const auto& model : models_) {
    METAOPT_ASSIGN_OR_RETURN(gp::Prediction p, model->Predict(X));
    parts.push_back(std::move(p));
  }
  return Combine(parts);
}

absl::StatusOr<std::unique_ptr<const Surrogate>>
RankingEnsembleSurrogate::WithFantasies(const Eigen::MatrixXd& X) const {
  std::vector<std::shared_ptr<const Surrogate>> fantasised;
  fantasised.reserve(models_.size());
  for (const auto& model : models_) {
    METAOPT_ASSIGN_OR_RETURN(std::unique_ptr<const Surrogate> f,
                             model->WithFantasies(X));
    fantasised.push_back(std::move(f));
  }
  return std::unique_ptr<const Surrogate>(
      new RankingEnsembleSurrogate(std::move(fantasised), weights_));
}

absl::StatusOr<std::optional<gp::Prediction>>
RankingEnsembleSurrogate::PredictScreening(const Eigen::MatrixXd& X) const {
  std::vector<gp::Prediction> parts;
  parts.reserve(models_.size());
  for (const auto& model : models_) {
    METAOPT_ASSIGN_OR_RETURN(std::optional<gp::Prediction> p,
                             model->PredictScreening(X));
    if (!p.has_value()) return std::nullopt;
    parts.push_back(*std::move(p));
  }
  return std::optional<gp::Prediction>(Combine(parts));
}

absl::StatusOr<std::unique_ptr<const UntriedAlgorithmSurrogate>>
UntriedAlgorithmSurrogate::Create(std::shared_ptr<const Surrogate> inner,
                                  std::vector<space::StageLayout> stages,
                                  double prior_variance,
                                  const Eigen::MatrixXd& observed) {
  Eigen::Index width = 0;
  for (const space::StageLayout& s : stages) {
    width = std::max<Eigen::Index>(width, s.offset + s.size);
  }
  if (inner == nullptr || !std::isfinite(prior_variance) ||
      !(prior_variance >= 0.0) ||
      (observed.rows() > 0 && observed.cols() < width)) {
    return absl::InvalidArgumentError(
        "UntriedAlgorithmSurrogate: needs a model, a finite non-negative prior "
        "variance and observed rows as wide as the stage layout");
  }
  Tried tried;
  for (const space::StageLayout& s : stages) tried.emplace_back(s.size, false);
  auto out =
      std::unique_ptr<UntriedAlgorithmSurrogate>(new UntriedAlgorithmSurrogate(
          std::move(inner), std::move(stages), prior_variance, Tried()));
  out->MarkTried(observed, &tried);
  out->tried_ = std::move(tried);
  return std::unique_ptr<const UntriedAlgorithmSurrogate>(std::move(out));
}

int UntriedAlgorithmSurrogate::Chosen(const Eigen::MatrixXd& X,
                                      Eigen::Index row, size_t s) const {
  Eigen::Index a = 0;
  X.row(row).segment(stages_[s].offset, stages_[s].size).maxCoeff(&a);
  return static_cast<int>(a);
}

void UntriedAlgorithmSurrogate::MarkTried(const Eigen::MatrixXd& X,
                                          Tried* tried) const {
  for (Eigen::Index i = 0; i < X.rows(); ++i) {
    for (size_t s = 0; s < stages_.size(); ++s) {
      (*tried)[s][Chosen(X, i, s)] = true;
    }
  }
}

bool UntriedAlgorithmSurrogate::ChoosesUntried(const Eigen::MatrixXd& X,
                                               Eigen::Index row) const {
  for (size_t s = 0; s < stages_.size(); ++s) {
    if (!tried_[s][Chosen(X, row, s)]) return true;
  }
  return false;
}

void UntriedAlgorithmSurrogate::RaiseUntried(const Eigen::MatrixXd& X,
                                             gp::Prediction* p) const {
  for (Eigen::Index i = 0; i < X.rows(); ++i) {
    if (ChoosesUntried(X, i)) {
      p->variance[i] = std::max(p->variance[i], prior_variance_);
    }
  }
}

absl::StatusOr<gp::Prediction> UntriedAlgorithmSurrogate::Predict(
    const Eigen::MatrixXd& X) const {
  METAOPT_ASSIGN_OR_RETURN(gp::Prediction p, inner_->Predict(X));
  RaiseUntried(X, &p);
  return p;
}

absl::StatusOr<std::unique_ptr<const Surrogate>>
UntriedAlgorithmSurrogate::WithFantasies(const Eigen::MatrixXd& X) const {
  METAOPT_ASSIGN_OR_RETURN(std::unique_ptr<const Surrogate> inner,
                           inner_->WithFantasies(X));
  Tried tried = tried_;
  MarkTried(X, &tried);
  return std::unique_ptr<const Surrogate>(new UntriedAlgorithmSurrogate(
      std::move(inner), stages_, prior_variance_, std::move(tried)));
}

absl::StatusOr<std::optional<gp::Prediction>>
UntriedAlgorithmSurrogate::PredictScreening(const Eigen::MatrixXd& X) const {
  METAOPT_ASSIGN_OR_RETURN(std::optional<gp::Prediction> p,
                           inner_->PredictScreening(X));
  if (p.has_value()) RaiseUntried(X, &*p);
  return p;
}

}  // namespace metaopt::surrogate
