// DeepPipe fine-tuning (defined in deeppipe_fine_tune.cc):
// DeepPipeModel::FineTune adapts a model to a study's observations by Adam on
// the per-point NLL of the standardised targets, over the GP hyperparameters
// (kKernel, the authors' transfer setting), the whole network (kFull) or the
// encoders partial binding added (kNewEncoders); the kernel scope runs on
// DeepPipeKernelObjective, which caches the embeddings' pairwise distances once
// per fine-tune.
#ifndef METAOPT_CORE_SURROGATE_DEEPPIPE_FINE_TUNE_H_
#define METAOPT_CORE_SURROGATE_DEEPPIPE_FINE_TUNE_H_

#include <utility>

#include "Eigen/Core"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/gp/gaussian_process.h"
#include "core/surrogate/deeppipe_objective.h"

namespace metaopt::surrogate {

enum class FineTuneScope {
  kKernel,  // GP hyperparameters only (the authors' transfer setting).
  kFull,    // Network and GP hyperparameters.
  // The encoders ForStudySpace added (new algorithms) and the GP
  // hyperparameters; the meta-learned encoders, the aggregator and the mean
  // head are frozen (the paper's Experiment 4). Without new encoders: kKernel.
  kNewEncoders,
};

// Adam on the per-point NLL of the standardised targets (as the authors'
// fine-tuning): starts from the model's parameters, stops after
// max_steps, when the time budget runs out, or when the loss changed by less
// than `tolerance` for more than `patience` consecutive steps, and returns the
// lowest-loss parameters seen.
struct DeepPipeFineTuneOptions {
  FineTuneScope scope = FineTuneScope::kKernel;
  int max_steps = 100;
  double learning_rate = 1e-3;
  absl::Duration time_budget = absl::InfiniteDuration();
  int patience = 16;  // 0: no early stopping.
  double tolerance = 1e-4;
  double max_gradient_norm = 0.0;  // 0: no clipping.
};

// The kernel-scope fine-tuning loss: the per-point GP negative log marginal
// likelihood of targets y at fixed embeddings Z as a function of the GP
// hyperparameters (DeepPipeModel::gp() layout), with its gradient and the
// leave-one-out NLL, numerically equal to gp::GaussianProcess's Matérn-5/2
// computation. Built once per fine-tune: the per-dimension squared
// differences of every pair of embeddings are cached, so a step costs one
// matrix-vector product for the distances, one Matérn profile over the n(n-1)/2
// pairs, a Cholesky factorisation and K^-1, instead of recomputing distances
// and profiles for the kernel and again for its gradient. Immutable;
// thread-safe.
class DeepPipeKernelObjective {
 public:
  // `gp` supplies the kernel (Matérn-5/2 ARD over Z.cols() dimensions) and
  // the noise floor. INVALID_ARGUMENT for a size mismatch, n = 0, non-finite
  // data or another kernel.
  static absl::StatusOr<DeepPipeKernelObjective> Create(
      const gp::GaussianProcess& gp, const Eigen::MatrixXd& Z,
      const Eigen::VectorXd& y);

  // Loss at hyperparameters h (value and loo divided by n). INTERNAL if the
  // Cholesky factorisation fails.
  absl::StatusOr<DeepPipeLoss> Evaluate(const Eigen::VectorXd& h) const;

 private:
  DeepPipeKernelObjective(Eigen::MatrixXd pair_d2, Eigen::VectorXd y,
                          double noise_floor)
      : pair_d2_(std::move(pair_d2)),
        y_(std::move(y)),
        noise_floor_(noise_floor) {}

  // Row p = pair (i, j), i > j, in column-major lower-triangle order:
  // (z_i - z_j)^2 per dimension.
  Eigen::MatrixXd pair_d2_;
  Eigen::VectorXd y_;
  double noise_floor_;
};

}  // namespace metaopt::surrogate

#endif  // METAOPT_CORE_SURROGATE_DEEPPIPE_FINE_TUNE_H_
