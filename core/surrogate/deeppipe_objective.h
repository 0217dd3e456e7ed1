// The DeepPipe meta-training objective: DeepPipeModel::Loss (defined in
// deeppipe_objective.cc), the GP negative log marginal likelihood of a batch's
// targets at the network's embeddings, per point, with its gradient w.r.t.
// every parameter (through the kernel's input gradient into the aggregator and
// the encoders; for conditioned models also through the mean head), in double
// or float arithmetic (NetworkPrecision). Meta-training ("Deep Pipeline
// Embeddings for AutoML", Algorithm 1) and full fine-tuning minimise it.
#ifndef METAOPT_CORE_SURROGATE_DEEPPIPE_OBJECTIVE_H_
#define METAOPT_CORE_SURROGATE_DEEPPIPE_OBJECTIVE_H_

#include "Eigen/Core"

namespace metaopt::surrogate {

// The arithmetic of Loss's forward and backward passes. The parameters, the
// GP's kernel matrix, its Cholesky factorisation, the NLL value and alpha
// stay double either way.
enum class NetworkPrecision {
  kFloat64,
  // The encoders and the aggregator run in float on a float copy of their
  // weights (made per call); embeddings are widened to double for the GP and
  // the embedding gradient rounded to float for backpropagation; the K^-1
  // that the gradients need comes from a float copy of the Cholesky factor
  // (gp::GaussianProcess::NegativeLogMarginalLikelihood's float_inverse).
  // Twice the SIMD width; gradients agree with kFloat64 to about 1e-4
  // relative (DeepPipeGradientTest checks 1e-3 against finite differences).
  kFloat32,
};

// Per-point negative log marginal likelihood and its gradient w.r.t.
// parameters() (same layout).
struct DeepPipeLoss {
  double value = 0.0;
  Eigen::VectorXd gradient;
  // The leave-one-out predictive NLL divided by n (gp::NllResult::loo_nll).
  double loo = 0.0;
};

}  // namespace metaopt::surrogate

#endif  // METAOPT_CORE_SURROGATE_DEEPPIPE_OBJECTIVE_H_
