// Ranking-weighted ensembles of surrogates ("Scalable Meta-Learning for
// Bayesian Optimization using Ranking-Weighted Gaussian Process Ensembles",
// Feurer, Letham & Bakshy): each model is weighted by the probability that it
// orders the study's own observations best, so a meta-learned model that
// mis-ranks a study's data hands its weight to a model of that data alone.
#ifndef METAOPT_CORE_SURROGATE_RANKING_ENSEMBLE_H_
#define METAOPT_CORE_SURROGATE_RANKING_ENSEMBLE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "Eigen/Core"
#include "absl/status/statusor.h"
#include "core/gp/gaussian_process.h"
#include "core/space/encoding.h"
#include "core/surrogate/surrogate.h"

namespace metaopt::surrogate {

// Leave-one-out predictive mean and variance (observation noise included) of
// `gp` at each row of X given the other rows, for targets y in the GP's units
// (Rasmussen & Williams, "Gaussian Processes for Machine Learning", Eq.
// 5.12), with the GP's hyperparameters as they are. O(n^3). INVALID_ARGUMENT
// for misshapen or non-finite data or n = 0, INTERNAL if the Cholesky
// factorisation fails.
absl::StatusOr<gp::Prediction> LeaveOneOutPredictions(
    const gp::GaussianProcess& gp, const Eigen::MatrixXd& X,
    const Eigen::VectorXd& y);

// The number of pairs j < k that f orders otherwise than y:
// (f_j < f_k) != (y_j < y_k). f and y have equal sizes.
int64_t RankingLoss(const Eigen::VectorXd& f, const Eigen::VectorXd& y);

struct RankingWeightOptions {
  // Joint draws of every model's predictions (>= 1).
  int samples = 256;
  // Weight dilution guard (the paper's): a base model whose median ranking
  // loss exceeds this quantile of the target model's loss draws is dropped
  // (weight 0). In [0, 1]; the paper's 0.95.
  double dilution_quantile = 0.95;
  uint64_t seed = 0;
};

// RGPE weights (non-negative, summing to 1) of M >= 1 models from their
// predictions at the study's n observations `y`: predictions[m] holds the
// per-point mean and variance of model m (independent marginals, e.g.
// leave-one-out ones, so that no model scores on points it interpolates);
// the last model is the target model (the study's data alone), the others
// base models. In each draw every model's predictions are sampled and the
// models with the lowest RankingLoss share the draw (ties split equally); a
// model's weight is its share of the draws. Base models dropped by the
// dilution guard take no part. With n < 2 nothing can be ranked: all weight on
// the first model. Deterministic given options.seed. INVALID_ARGUMENT for
// mismatched sizes, negative or non-finite values or invalid options.
absl::StatusOr<Eigen::VectorXd> RankingWeights(
    const std::vector<gp::Prediction>& predictions, const Eigen::VectorXd& y,
    const RankingWeightOptions& options);

// The weighted ensemble of surrogates over the same inputs: mean
// sum_i w_i mu_i, variance sum_i w_i^2 sigma_i^2 (the paper's). Models with
// weight 0 are not evaluated. Immutable and thread-safe (as its members).
class RankingEnsembleSurrogate final : public Surrogate {
 public:
  // INVALID_ARGUMENT unless there is one weight per non-null model, the weights
  // are non-negative and finite and at least one is positive.
  static absl::StatusOr<std::unique_ptr<const RankingEnsembleSurrogate>> Create(
      std::vector<std::shared_ptr<const Surrogate>> models,
      Eigen::VectorXd weights);

  absl::StatusOr<gp::Prediction> Predict(
      const Eigen::MatrixXd& X) const override;
  absl::StatusOr<std::unique_ptr<const Surrogate>> WithFantasies(
      const Eigen::MatrixXd& X) const override;
  // The exact mean and sum_i w_i^2 bound_i when every member screens;
  // nullopt otherwise.
  absl::StatusOr<std::optional<gp::Prediction>> PredictScreening(
      const Eigen::MatrixXd& X) const override;

  const Eigen::VectorXd& weights() const { return weights_; }

 private:
  RankingEnsembleSurrogate(std::vector<std::shared_ptr<const Surrogate>> models,
                           Eigen::VectorXd weights)
      : models_(std::move(models)), weights_(std::move(weights)) {}

  // Combines per-model predictions (one per positive weight, in order).
  gp::Prediction Combine(const std::vector<gp::Prediction>& parts) const;

  std::vector<std::shared_ptr<const Surrogate>> models_;
  Eigen::VectorXd weights_;
};

// A meta-learned model's belief about an algorithm the study has never tried
// comes only from how algorithms' scores moved together on other tasks; on a
// task that contradicts them it is confidently wrong, and EI never tries the
// algorithm. This wrapper keeps `inner`'s mean and raises its variance to at
// least `prior_variance` (objective units) at every row that chooses, in some
// stage, an algorithm no row of `observed` chose: an untried algorithm is as
// uncertain as the prior says until the study tries it. Fantasies count as
// tried. Rows are encoded by an encoder with `layout` (each stage's one-hot of
// its chosen algorithm). Immutable and thread-safe (as `inner`).
class UntriedAlgorithmSurrogate final : public Surrogate {
 public:
  // INVALID_ARGUMENT for a null model, a prior variance that is negative or
  // not finite, or rows of `observed` narrower than the layout.
  static absl::StatusOr<std::unique_ptr<const UntriedAlgorithmSurrogate>>
  Create(std::shared_ptr<const Surrogate> inner,
         std::vector<space::StageLayout> stages, double prior_variance,
         const Eigen::MatrixXd& observed);

  absl::StatusOr<gp::Prediction> Predict(
      const Eigen::MatrixXd& X) const override;
  absl::StatusOr<std::unique_ptr<const Surrogate>> WithFantasies(
      const Eigen::MatrixXd& X) const override;
  absl::StatusOr<std::optional<gp::Prediction>> PredictScreening(
      const Eigen::MatrixXd& X) const override;

  // Whether row `row` of X chooses an algorithm no observed row chose.
  bool ChoosesUntried(const Eigen::MatrixXd& X, Eigen::Index row) const;

 private:
  // Each stage's algorithms that have been tried: [stage][algorithm].
  using Tried = std::vector<std::vector<bool>>;

  UntriedAlgorithmSurrogate(std::shared_ptr<const Surrogate> inner,
                            std::vector<space::StageLayout> stages,
                            double prior_variance, Tried tried)
      : inner_(std::move(inner)),
        stages_(std::move(stages)),
        prior_variance_(prior_variance),
        tried_(std::move(tried)) {}

  // The chosen algorithm of stage `s` in row `row` (the one-hot's argmax).
  int Chosen(const Eigen::MatrixXd& X, Eigen::Index row, size_t s) const;
  // Marks every row of X as tried in `tried`.
  void MarkTried(const Eigen::MatrixXd& X, Tried* tried) const;
  void RaiseUntried(const Eigen::MatrixXd& X, gp::Prediction* p) const;

  std::shared_ptr<const Surrogate> inner_;
  std::vector<space::StageLayout> stages_;
  double prior_variance_;
  Tried tried_;
};

}  // namespace metaopt::surrogate

#endif  // METAOPT_CORE_SURROGATE_RANKING_ENSEMBLE_H_
