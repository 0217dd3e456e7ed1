#include "core/nn/optimizer.h"

#include <cmath>

namespace metaopt::nn {

Adam::Adam(int num_parameters, AdamOptions options)
    : options_(options),
      m_(Eigen::VectorXd::Zero(num_parameters)),
      v_(Eigen::VectorXd::Zero(num_parameters)) {}

void Adam::Step(const Eigen::Ref<const Eigen::VectorXd>& grad,
                double learning_rate, Eigen::Ref<Eigen::VectorXd> params) {
  ++steps_;
  const double b1 = options_.beta1;
  const double b2 = options_.beta2;
  m_ = b1 * m_ + (1.0 - b1) * grad;
  v_ = b2 * v_ + (1.0 - b2) * grad.cwiseAbs2();
  const double c1 = 1.0 - std::pow(b1, static_cast<double>(steps_));
  const double c2 = 1.0 - std::pow(b2, static_cast<double>(steps_));
  // PyTorch form: p -= lr / c1 * m / (sqrt(v) / sqrt(c2) + eps).
  params.array() -= (learning_rate / c1) * m_.array() /
                    (v_.array().sqrt() / std::sqrt(c2) + options_.epsilon);
}

void Adam::Reset() {
  m_.setZero();
  v_.setZero();
  steps_ = 0;
}

double CosineLearningRate(double base_lr, double min_lr, int64_t step,
                          int64_t total_steps) {
  if (total_steps <= 0) return base_lr;
  if (step >= total_steps) return min_lr;
  if (step <= 0) return base_lr;
  constexpr double kPi = 3.14159265358979323846;
  const double t = static_cast<double>(step) / static_cast<double>(total_steps);
  return min_lr + 0.5 * (base_lr - min_lr) * (1.0 + std::cos(kPi * t));
}

double ClipGradientNorm(Eigen::Ref<Eigen::VectorXd> grad, double max_norm) {
  const double norm = grad.norm();
  if (max_norm > 0.0 && std::isfinite(norm) && norm > max_norm) {
    grad *= max_norm / norm;
  }
  return norm;
}

}  // namespace metaopt::nn
