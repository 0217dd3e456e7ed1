// Exact Gaussian-process regression: constant mean, Gaussian noise, a
// stationary ARD kernel.
//
//   y = m + f(x) + eps,   f ~ GP(0, k),   eps ~ N(0, sigma^2),
//   sigma^2 = noise_floor + exp(log_noise).
//
// The hyperparameter vector is [kernel log-params (log l_1..log l_D, log s),
// log_noise, m]. The noise is parameterised as an excess over a fixed floor
// (default 1e-6 on the standardised scale), so the noise variance can never
// fall below the floor and the map stays smooth.
//
// Three layers:
//   * GaussianProcess: the prior (kernel + noise + mean) and the negative log
//   marginal likelihood
//     with its analytic gradient w.r.t. all hyperparameters and w.r.t. the
//     inputs. It works on whatever targets it is given ("model units");
//     DeepPipe calls it directly on embeddings.
//   * Fit / Condition: standardise raw targets (Standardization), optionally
//   fit hyperparameters
//     (MAP with weak priors, L-BFGS with restarts), and condition.
//   * GpPosterior: immutable, thread-safe; batch Predict in original target
//   units, and
//     ConditionOn for fantasies (pending points) or new observations without
//     refitting.
#ifndef METAOPT_CORE_GP_GAUSSIAN_PROCESS_H_
#define METAOPT_CORE_GP_GAUSSIAN_PROCESS_H_

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "Eigen/Core"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/gp/catalogue_kernel_cache.h"
#include "core/gp/kernel.h"

namespace metaopt::gp {

// A batch of posterior marginals, one entry per query row.
struct Prediction {
  Eigen::VectorXd mean;
  // Variance of the latent f (no observation noise); add
  // GpPosterior::noise_variance() for the variance of a new noisy observation.
  Eigen::VectorXd variance;
};

// Negative log marginal likelihood and its gradients.
struct NllResult {
  // 0.5 r' K^-1 r + 0.5 log|K| + 0.5 n log(2 pi), r = y - m 1, K = K_f +
  // sigma^2 I. Not divided by n.
  double value = 0.0;
  // d value / d hyperparameters (same layout as
  // GaussianProcess::hyperparameters()).
  Eigen::VectorXd grad_hyper;
  // d value / d X (n x D); empty unless requested.
  Eigen::MatrixXd grad_inputs;
  // d value / d y = K^-1 (y - m 1) (n entries), for callers whose targets
  // depend on parameters (a learned mean function subtracted from y).
  Eigen::VectorXd grad_targets;
  // Leave-one-out predictive negative log likelihood, summed over the points:
  // for each i, -log N(y_i | mean and variance of the GP (noise included)
  // conditioned on the other n - 1 points), in closed form from K^-1
  // (Rasmussen & Williams §5.4.2). A held-out loss at no extra cost.
  double loo_nll = 0.0;
};

// Lower Cholesky factor of K + jitter * I.
struct JitteredCholesky {
  Eigen::MatrixXd L;
  // The absolute jitter added to the diagonal (0 if none was needed).
  double jitter = 0.0;
};

// Factorises a symmetric matrix (only the lower triangle is read). On failure
// retries with jitter 1e-8, 1e-7, ..., 1e-2 times the mean diagonal. INTERNAL
// if the matrix has non-finite entries or is not positive definite even with
// the largest jitter. Never aborts.
absl::StatusOr<JitteredCholesky> CholeskyWithJitter(Eigen::MatrixXd K);

// K^-1 (both triangles) from the lower Cholesky factor L of K = L L' (only L's
// lower triangle is read): L^-1 and then L^-T L^-1, each by recursive 2 x 2
// blocking into triangular products, about 2n^3/3 flops against 2n^3 for two
// triangular solves against the identity. The gradients of a GP's marginal
// likelihood need it; it is their largest cost.
Eigen::MatrixXd InverseFromCholesky(const Eigen::MatrixXd& L);
// The same in float (twice the SIMD width; relative error about
// sqrt(cond(K)) * 6e-8), for gradients that tolerate it.
Eigen::MatrixXf InverseFromCholesky(const Eigen::MatrixXf& L);

// Affine map from original target units to model units: y_model = (y - offset)
// / scale.
struct Standardization {
  double offset = 0.0;
  double scale = 1.0;

  // Mean and (n - 1) standard deviation of y; scale falls back to 1 when the
  // standard deviation is below 1e-8 * max(1, |mean|) (constant targets, a
  // single point). Identity for empty y.
  static Standardization FromTargets(const Eigen::VectorXd& y);
  Eigen::VectorXd Apply(const Eigen::VectorXd& y) const;
};

// The GP prior. Thread-compatible: const methods may run concurrently;
// set_hyperparameters needs external synchronisation. Copyable (deep-copies the
// kernel).
class GaussianProcess {
 public:
  static constexpr double kDefaultNoiseFloor = 1e-6;

  // kernel_name as in CreateKernel. Initial hyperparameters: lengthscales 0.5 *
  // sqrt(D) (the median of the default lengthscale prior, for inputs scaled to
  // [0, 1]), output scale 1, noise excess 1e-3, mean 0. INVALID_ARGUMENT for an
  // unknown kernel, input_dim < 1 or a noise floor that is not positive and
  // finite.
  static absl::StatusOr<GaussianProcess> Create(
      std::string_view kernel_name, int input_dim,
      double noise_floor = kDefaultNoiseFloor);

  GaussianProcess(const GaussianProcess& other);
  GaussianProcess& operator=(const GaussianProcess& other);
  GaussianProcess(GaussianProcess&&) = default;
  GaussianProcess& operator=(GaussianProcess&&) = default;

  const Kernel& kernel() const { return *kernel_; }
  int input_dim() const { return kernel_->input_dim(); }
  int num_hyperparameters() const { return kernel_->num_params() + 2; }
  // Index of log_noise and of the mean in hyperparameters().
  int noise_index() const { return kernel_->num_params(); }
  int mean_index() const { return kernel_->num_params() + 1; }

  // [kernel log-params, log_noise, constant mean].
  Eigen::VectorXd hyperparameters() const;
  // INVALID_ARGUMENT on a size mismatch or non-finite entries (then nothing
  // changes).
  absl::Status set_hyperparameters(
      const Eigen::Ref<const Eigen::VectorXd>& hyperparameters);

  double noise_floor() const { return noise_floor_; }
  double log_noise() const { return log_noise_; }
  // noise_floor + exp(log_noise).
  double noise_variance() const;
  double constant_mean() const { return mean_; }

  // NLL of targets y (model units) at inputs X (n x D) and its gradient w.r.t.
  // the hyperparameters, plus w.r.t. X when with_input_gradient.
  // With float_inverse, the K^-1 that the gradients (and loo_nll) need comes
  // from a float copy of the Cholesky factor (InverseFromCholesky's float
  // overload); the value, the factorisation and alpha stay double.
  // INVALID_ARGUMENT for shape mismatches or non-finite data; INTERNAL if the
  // Cholesky fails. O(n^3).
  absl::StatusOr<NllResult> NegativeLogMarginalLikelihood(
      const Eigen::MatrixXd& X, const Eigen::VectorXd& y,
      bool with_input_gradient = false, bool float_inverse = false) const;

  // INVALID_ARGUMENT unless X has input_dim() columns, y (if given) has
  // X.rows() entries and everything is finite. `what` names the data in the
  // message.
  absl::Status ValidateData(const Eigen::MatrixXd& X, const Eigen::VectorXd* y,
                            std::string_view what) const;

 private:
  GaussianProcess(std::unique_ptr<Kernel> kernel, double noise_floor);

  std::unique_ptr<Kernel> kernel_;
  double noise_floor_;
  double log_noise_;
  double mean_ = 0.0;
};

// Options for hyperparameter fitting (maximum a posteriori on the standardised
// targets).
//
// Priors (weak, and only used here, not by NegativeLogMarginalLikelihood):
//   log l_d ~ N(log(lengthscale_prior_median * sqrt(D)),
//   lengthscale_prior_log_std^2): inputs are
//     expected in [0, 1]; the sqrt(D) keeps the prior r of two random points
//     roughly constant as D grows (Hvarfner et al. 2024 make the same
//     argument).
//   log s ~ N(0, output_scale_prior_log_std^2): the standardised targets have
//   unit variance. noise and mean: flat within their bounds.
// Bounds (box constraints of the L-BFGS): lengthscales in [min_lengthscale,
// max_lengthscale], output scale in [min_output_scale, max_output_scale], noise
// excess in [1e-9, max_noise_variance], mean in [-max_abs_mean, max_abs_mean].
struct FitOptions {
  // Number of L-BFGS starts: the first from the model's current
  // hyperparameters, the others from those plus N(0, restart_log_std^2) on
  // every kernel log-parameter and on log_noise.
  int num_starts = 3;
  int max_iterations = 100;  // per start
  // L-BFGS stopping rules: projected-gradient infinity norm, and relative
  // objective decrease per iteration (the objective is O(n); changes of 1e-8
  // relative do not move predictions).
  double gradient_tolerance = 1e-4;
  double relative_function_tolerance = 1e-8;
  // Wall time for all starts together; the best point found so far is kept.
  absl::Duration time_budget = absl::Seconds(10);
  uint64_t seed = 0;
  double restart_log_std = 1.0;

  bool use_priors = true;
  double lengthscale_prior_median = 0.5;
  double lengthscale_prior_log_std = 1.5;
  double output_scale_prior_log_std = 2.0;

  double min_lengthscale = 1e-3;
  double max_lengthscale = 1e3;
  double min_output_scale = 1e-3;
  double max_output_scale = 1e2;
  double max_noise_variance = 2.0;
  double max_abs_mean = 10.0;
};

struct FitReport {
  // MAP objective (NLL + negative log prior) at the initial hyperparameters and
  // at the result.
  double initial_objective = 0.0;
  double final_objective = 0.0;
  int starts = 0;
  int iterations = 0;
  int evaluations = 0;
  bool time_budget_exhausted = false;
};

// Fits model's hyperparameters to (X, y) in model units (no standardisation
// here), starting from its current values. On error the model is unchanged.
// With no data it returns at once.
absl::StatusOr<FitReport> FitHyperparameters(const Eigen::MatrixXd& X,
                                             const Eigen::VectorXd& y,
                                             const FitOptions& options,
                                             GaussianProcess* model);

// Immutable posterior of a GaussianProcess conditioned on data. Thread-safe:
// every method is const and keeps no caches, so one instance can be shared
// (e.g. as shared_ptr<const GpPosterior>) by any number of readers.
class GpPosterior {
 public:
  // Conditions `model` on X (n x D, n may be 0) and targets y in original
  // units, mapped to model units by `standardization`.
  static absl::StatusOr<GpPosterior> Create(GaussianProcess model,
                                            Eigen::MatrixXd X,
                                            Eigen::VectorXd y,
                                            Standardization standardization);

  // Queries per Predict block (256 x n doubles stay cache-friendly for n in
  // the low thousands). A query's prediction depends on the rows of its block
  // (the kernel centres each block): Predict of rows [s, s + b) of Xq, with
  // s a multiple of kPredictBlock and b one too or s + b = m, equals those
  // rows of Predict of the whole bit for bit.
  static constexpr Eigen::Index kPredictBlock = 256;

  // Posterior mean and latent variance at each row of Xq, in original target
  // units. Works in blocks of queries: one cross-kernel block and one
  // multi-right-hand-side triangular solve per block, O(m n D + m n^2) time,
  // O(block n) extra memory. INVALID_ARGUMENT for a column mismatch or
  // non-finite queries.
  absl::StatusOr<Prediction> Predict(const Eigen::MatrixXd& Xq) const;

  // For screening many queries: the exact posterior mean, and as variance an
  // upper bound on the latent variance, the variance given only the first
  // min(points, n) training points (fewer observations never shrink it more).
  // The leading block of the Cholesky factor is the factor of those points,
  // so this costs O(m n D + m points^2) instead of O(m n^2).
  absl::StatusOr<Prediction> PredictWithVarianceBound(const Eigen::MatrixXd& Xq,
                                                      int points) const;
  // The same for the rows `rows` of `catalogue`, from `cache`, which keeps
  // the kernel between the catalogue and the training points from one call
  // to the next (CatalogueKernelCache: after one new observation a call
  // evaluates N kernel values instead of n N). Equal to the above up to
  // rounding, and a function of the arguments alone (not of what the cache
  // held), with entries in the order of `rows`.
  absl::StatusOr<Prediction> PredictWithVarianceBound(
      const Eigen::MatrixXd& catalogue, const std::vector<int>& rows,
      int points, CatalogueKernelCache& cache) const;

  // The posterior after also observing (X_new, y_new) (original units), with
  // the same hyperparameters and standardisation: for fantasies of pending
  // points or cheap updates between refits.
  // Extends the Cholesky factor by a block, O(n^2 k + k^3); falls back to a
  // full factorisation with jitter if needed.
  absl::StatusOr<GpPosterior> ConditionOn(const Eigen::MatrixXd& X_new,
                                          const Eigen::VectorXd& y_new) const;

  // Condition(model(), X, y): the same hyperparameters, y standardised by
  // its own mean and deviation, where X's first rows repeat the first p rows
  // of inputs(). When p >= n / 2 and nothing was jittered, the leading p x p
  // block of this posterior's Cholesky factor is the factor of those rows
  // and is extended by the other n - p (O(p^2 (n - p) + (n - p)^3) instead of
  // O(n^3), the kernel of the new rows only); otherwise, or if the extension
  // loses definiteness, Condition. Equal to Condition up to rounding.
  absl::StatusOr<GpPosterior> Recondition(const Eigen::MatrixXd& X,
                                          const Eigen::VectorXd& y) const;

  // Fantasies for pending points (rows of X): the posterior after also
  // "observing" its own mean at X (kriging believer), with the same
  // hyperparameters and standardisation (no refit). The mean is unchanged, the
  // variance shrinks around X; conditioning jointly or one point at a time
  // gives the same result. INVALID_ARGUMENT for a column mismatch or
  // non-finite points.
  absl::StatusOr<GpPosterior> WithFantasies(const Eigen::MatrixXd& X) const;

  const GaussianProcess& model() const { return model_; }
  const Eigen::MatrixXd& inputs() const { return X_; }
  // Targets in original units.
  const Eigen::VectorXd& targets() const { return y_; }
  const Standardization& standardization() const { return standardization_; }
  int num_points() const { return static_cast<int>(X_.rows()); }
  // Observation-noise variance in original units.
  double noise_variance() const;
  // Jitter (model units) that was added to the diagonal to factorise.
  double jitter() const { return jitter_; }

 private:
  GpPosterior(GaussianProcess model, Eigen::MatrixXd X, Eigen::VectorXd y,
              Standardization standardization, JitteredCholesky chol);

  GaussianProcess model_;
  Eigen::MatrixXd X_;
  Eigen::VectorXd y_;
  Standardization standardization_;
  Eigen::MatrixXd L_;
  double jitter_;
  // K^-1 (y_model - m).
  Eigen::VectorXd alpha_;
};

// Conditions without fitting, standardising y by its own mean and standard
// deviation.
absl::StatusOr<GpPosterior> Condition(const GaussianProcess& model,
                                      const Eigen::MatrixXd& X,
                                      const Eigen::VectorXd& y);

// Standardises y, fits the hyperparameters (starting from model's), and
// conditions. The fitted model is posterior.model(). `report` may be null.
absl::StatusOr<GpPosterior> Fit(const GaussianProcess& model,
                                const Eigen::MatrixXd& X,
                                const Eigen::VectorXd& y,
                                const FitOptions& options,
                                FitReport* report = nullptr);

}  // namespace metaopt::gp

#endif  // METAOPT_CORE_GP_GAUSSIAN_PROCESS_H_
