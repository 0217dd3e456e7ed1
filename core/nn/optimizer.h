// First-order training utilities on flat parameter vectors: Adam with bias
// correction, cosine learning-rate decay and gradient-norm clipping.
#ifndef METAOPT_CORE_NN_OPTIMIZER_H_
#define METAOPT_CORE_NN_OPTIMIZER_H_

#include <cstdint>

#include "Eigen/Core"

namespace metaopt::nn {

struct AdamOptions {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double epsilon = 1e-8;
};

// Adam (Kingma & Ba 2015) as in PyTorch: m = b1 m + (1 - b1) g,
// v = b2 v + (1 - b2) g^2, p -= lr * m_hat / (sqrt(v_hat) + eps) with
// m_hat = m / (1 - b1^t), v_hat = v / (1 - b2^t).
// Not thread-safe (one owner). A plain copyable value, so training can
// checkpoint it.
class Adam {
 public:
  explicit Adam(int num_parameters, AdamOptions options = {});

  // One update of `params` with gradient `grad` (same size) at learning rate
  // `learning_rate`. Entries whose gradient is exactly zero still decay their
  // moments (as PyTorch does).
  void Step(const Eigen::Ref<const Eigen::VectorXd>& grad, double learning_rate,
            Eigen::Ref<Eigen::VectorXd> params);

  int64_t steps() const { return steps_; }
  int num_parameters() const { return static_cast<int>(m_.size()); }
  void Reset();

 private:
  AdamOptions options_;
  Eigen::VectorXd m_;
  Eigen::VectorXd v_;
  int64_t steps_ = 0;
};

// Cosine annealing (Loshchilov & Hutter 2017, PyTorch's CosineAnnealingLR):
// min_lr + (base_lr - min_lr) (1 + cos(pi step / total_steps)) / 2 for step in
// [0, total_steps]; min_lr beyond; base_lr when total_steps <= 0.
double CosineLearningRate(double base_lr, double min_lr, int64_t step,
                          int64_t total_steps);

// Scales `grad` so that its Euclidean norm is at most max_norm (no-op when
// max_norm <= 0 or the norm is already within it) and returns the norm before
// clipping. A non-finite norm leaves grad unchanged (the caller decides).
double ClipGradientNorm(Eigen::Ref<Eigen::VectorXd> grad, double max_norm);

}  // namespace metaopt::nn

#endif  // METAOPT_CORE_NN_OPTIMIZER_H_
