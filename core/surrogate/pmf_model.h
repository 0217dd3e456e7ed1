// Probabilistic matrix factorisation over a pipeline catalogue (Fusi, Sheth and
// Elibol, "Probabilistic Matrix Factorization for Automated Machine Learning",
// NeurIPS 2018; docs/pmf.md): a GP latent-variable model in which
// every catalogue entry (pipeline) n has a latent vector x_n in R^Q and every
// dataset d is an independent output of one zero-mean GP over the latents,
//
//   t_{n,d} = f_d(x_n) + eps,   f_d ~ GP(0, k),   eps ~ N(0, w),
//   k(x, x') = a exp(-1/2 sum_q (x_q - x'_q)^2 / l_q^2)    (RBF-ARD),
//
// plus the white-noise term w on the training covariance only. The positive
// parameters (l_1..l_Q, a, w) are stored raw and mapped through softplus,
// p = log(1 + e^u), as in the authors' code. Convention:
// l_q is a lengthscale that DIVIDES the distance (the paper's gamma_q is
// 1 / l_q^2). The paper's separate likelihood noise is folded into w (G5): the
// two only ever appear as their sum.
//
// Targets. t is a loss to MINIMISE in standardised units:
//   t = (loss - y_mean) / y_std,   loss = y (goal minimize) or -y (maximize),
// with y_mean and y_std taken over all training observations. The GP prior
// mean 0 is thus the training average (the paper feeds raw normalised
// accuracies, where 0 means chance; a generic objective has no such anchor).
//
// Layers:
//   * Softplus helpers, PmfKernelParams and PmfNegativeLogLikelihood: the
//     exact marginal likelihood of one dataset's observed entries with analytic
//     gradients w.r.t. the latents and the kernel parameters (training and
//     FineTune).
//   * PcaLatents: the PCA initialisation of the latents.
//   * PmfModel: the trained latents, kernel and normalisation; reads and writes
//     its part of a v1::ModelArtifact.
//   * PmfSurrogate: a new dataset's GP posterior over the frozen latents, a
//     Surrogate whose "encoding" of catalogue entry n is its latent row x_n.
#ifndef METAOPT_CORE_SURROGATE_PMF_MODEL_H_
#define METAOPT_CORE_SURROGATE_PMF_MODEL_H_

#include <memory>
#include <vector>

#include "Eigen/Core"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/gp/gaussian_process.h"
#include "core/surrogate/surrogate.h"
#include "metaopt/v1/model.pb.h"

namespace metaopt::surrogate {

// softplus(u) = log(1 + e^u), computed without overflow.
double Softplus(double u);
// The inverse for p > 0: log(e^p - 1).
double InverseSoftplus(double p);
// d softplus / du = 1 / (1 + e^-u).
double Sigmoid(double u);

// The kernel parameters in softplus space. A plain value.
struct PmfKernelParams {
  Eigen::VectorXd raw_lengthscales;  // Q entries
  double raw_signal_variance = 0.0;  // a
  double raw_noise_variance = 0.0;   // w

  // From positive values (lengthscales > 0, a > 0, w > 0).
  static PmfKernelParams FromPositive(const Eigen::VectorXd& lengthscales,
                                      double signal_variance,
                                      double noise_variance);
  // From the flat raw vector [u_l (Q), u_a, u_w].
  static PmfKernelParams FromRaw(const Eigen::Ref<const Eigen::VectorXd>& raw);

  int latent_dim() const { return static_cast<int>(raw_lengthscales.size()); }
  int size() const { return latent_dim() + 2; }
  // [u_l (Q), u_a, u_w].
  Eigen::VectorXd Raw() const;
  // [log l (Q), log a, log w].
  Eigen::VectorXd LogPositive() const;
  Eigen::VectorXd lengthscales() const;
  double signal_variance() const;
  double noise_variance() const;
};

// NLL_d of one dataset and its gradients.
struct PmfNll {
  // 0.5 t' C^-1 t + 0.5 log|C| + 0.5 n log(2 pi), C = K(X, X) + w I.
  double value = 0.0;
  // d value / d [log l (Q), log a, log w]. RawGradient maps it to softplus
  // space.
  Eigen::VectorXd grad_log_params;
  // d value / d X (n x Q): row i is the gradient w.r.t. the latent of the
  // entry in row i of X.
  Eigen::MatrixXd grad_latents;
};

// The exact negative log marginal likelihood of targets t (model units) at the
// latent rows X (n x Q, n >= 1) and, if with_gradients, its analytic gradients.
// INVALID_ARGUMENT for shape mismatches or non-finite data; INTERNAL if C is
// not positive definite even with jitter (gp::CholeskyWithJitter). O(n^3 +
// n^2 Q). Thread-safe.
absl::StatusOr<PmfNll> PmfNegativeLogLikelihood(const Eigen::MatrixXd& X,
                                                const Eigen::VectorXd& t,
                                                const PmfKernelParams& params,
                                                bool with_gradients);

// Chains d/d[log p] to d/d[raw u] (p = softplus(u)): g * sigmoid(u) / p.
Eigen::VectorXd RawGradient(const Eigen::VectorXd& grad_log_params,
                            const PmfKernelParams& params);

// PCA initialisation (as the authors' code does): Y is N x D (rows = entries,
// columns = datasets) with NaN for missing entries. Missing entries are
// imputed with their column's mean (0 for a column without observations),
// columns are centred, and the result is the matrix of the first Q principal
// component scores (U S of the thin SVD, unwhitened), N x Q. Components beyond
// the rank of the centred matrix are 0. INVALID_ARGUMENT for N < 1, D < 1,
// Q < 1 or infinite entries.
absl::StatusOr<Eigen::MatrixXd> PcaLatents(const Eigen::MatrixXd& Y,
                                           int latent_dim);

// The trained GP-LVM. Immutable after construction; thread-safe.
class PmfModel {
 public:
  // latents: N x Q (N >= 1, Q >= 1), finite; params.latent_dim() == Q;
  // y_std > 0. INVALID_ARGUMENT otherwise.
  static absl::StatusOr<PmfModel> Create(Eigen::MatrixXd latents,
                                         PmfKernelParams params, double y_mean,
                                         double y_std);

  // Reads the tensors "latents" [N, Q], "lengthscales" [Q],
  // "signal_variance" [1], "noise_variance" [1] and normalization "y_mean",
  // "y_std" of a PMF artifact, and checks N == catalogue_size().
  // INVALID_ARGUMENT naming what is missing or inconsistent.
  static absl::StatusOr<PmfModel> FromArtifact(
      const v1::ModelArtifact& artifact);
  // Writes those tensors and normalization constants (replacing tensors of
  // the same names) and int_options["latent_dim"].
  void ToArtifact(v1::ModelArtifact* artifact) const;

  int num_entries() const { return static_cast<int>(latents_.rows()); }
  int latent_dim() const { return static_cast<int>(latents_.cols()); }
  const Eigen::MatrixXd& latents() const { return latents_; }
  const PmfKernelParams& params() const { return params_; }
  double y_mean() const { return y_mean_; }
  double y_std() const { return y_std_; }

  // The same model with other kernel parameters (FineTune).
  absl::StatusOr<PmfModel> WithParams(PmfKernelParams params) const;

  // Model units <-> losses.
  double ToModelUnits(double loss) const { return (loss - y_mean_) / y_std_; }

  // Latent rows of the given entries (each in [0, num_entries())).
  Eigen::MatrixXd Rows(const std::vector<int>& entries) const;

 private:
  PmfModel(Eigen::MatrixXd latents, PmfKernelParams params, double y_mean,
           double y_std);

  Eigen::MatrixXd latents_;
  PmfKernelParams params_;
  double y_mean_;
  double y_std_;
};

// A new dataset's posterior (the paper's prediction step): exact GP regression over
// the frozen latents of its observed entries with the trained kernel, zero
// prior mean in model units, predictions in loss units. Predict(X) takes
// latent rows (PmfModel::Rows); PredictEntries takes catalogue indices. The
// variance is that of the latent f (a - k' C^-1 k; no observation noise), as
// acquisition::ExpectedImprovement expects. Immutable and thread-safe.
class PmfSurrogate final : public Surrogate {
 public:
  // Conditions `model` on the losses of `entries` (equal sizes; entries may
  // repeat; none is fine: the prior). INVALID_ARGUMENT for bad indices or
  // sizes, non-finite losses.
  static absl::StatusOr<PmfSurrogate> Create(
      std::shared_ptr<const PmfModel> model, const std::vector<int>& entries,
      const Eigen::VectorXd& losses);

  absl::StatusOr<gp::Prediction> Predict(
      const Eigen::MatrixXd& X) const override;
  absl::StatusOr<std::unique_ptr<const Surrogate>> WithFantasies(
      const Eigen::MatrixXd& X) const override;

  absl::StatusOr<gp::Prediction> PredictEntries(
      const std::vector<int>& entries) const;
  // The posterior after also observing its own mean at `entries`
  // (kriging-believer fantasies).
  absl::StatusOr<PmfSurrogate> WithFantasyEntries(
      const std::vector<int>& entries) const;

  const PmfModel& model() const { return *model_; }
  const gp::GpPosterior& posterior() const { return posterior_; }

 private:
  PmfSurrogate(std::shared_ptr<const PmfModel> model,
               gp::GpPosterior posterior)
      : model_(std::move(model)), posterior_(std::move(posterior)) {}

  std::shared_ptr<const PmfModel> model_;
  gp::GpPosterior posterior_;
};

}  // namespace metaopt::surrogate

#endif  // METAOPT_CORE_SURROGATE_PMF_MODEL_H_
