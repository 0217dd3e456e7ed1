#include "core/nn/dense.h"

#include <algorithm>
#include <cmath>

namespace metaopt::nn {

Dense::Dense(int input_dim, int output_dim, Activation activation)
    : weight_(Eigen::MatrixXd::Zero(std::max(0, input_dim),
                                    std::max(0, output_dim))),
      bias_(Eigen::VectorXd::Zero(std::max(0, output_dim))),
      activation_(activation) {}

void Dense::Initialize(InitScheme scheme, space::Rng& rng) {
  const double fan_in = std::max(1, input_dim());
  const double fan_out = std::max(1, output_dim());
  if (scheme == InitScheme::kAuto) {
    scheme = activation_ == Activation::kRelu ? InitScheme::kHe
                                              : InitScheme::kGlorot;
  }
  bias_.setZero();
  switch (scheme) {
    case InitScheme::kHe: {
      const double sd = std::sqrt(2.0 / fan_in);
      for (Eigen::Index j = 0; j < weight_.cols(); ++j) {
        for (Eigen::Index i = 0; i < weight_.rows(); ++i) {
          weight_(i, j) = sd * space::StandardNormal(rng);
        }
      }
      break;
    }
    case InitScheme::kGlorot:
    case InitScheme::kTorchDefault: {
      const double bound = scheme == InitScheme::kGlorot
                               ? std::sqrt(6.0 / (fan_in + fan_out))
                               : 1.0 / std::sqrt(fan_in);
      for (Eigen::Index j = 0; j < weight_.cols(); ++j) {
        for (Eigen::Index i = 0; i < weight_.rows(); ++i) {
          weight_(i, j) = bound * (2.0 * space::Uniform01(rng) - 1.0);
        }
      }
      if (scheme == InitScheme::kTorchDefault) {
        for (Eigen::Index j = 0; j < bias_.size(); ++j) {
          bias_[j] = bound * (2.0 * space::Uniform01(rng) - 1.0);
        }
      }
      break;
    }
    case InitScheme::kAuto:
      break;  // Resolved above.
  }
}

Eigen::MatrixXd Dense::Forward(
    const Eigen::Ref<const Eigen::MatrixXd>& X) const {
  Eigen::MatrixXd Y(X.rows(), output_dim());
  if (input_dim() > 0) {
    Y.noalias() = X * weight_;
  } else {
    Y.setZero();
  }
  Y.rowwise() += bias_.transpose();
  if (activation_ == Activation::kRelu) Y = Y.cwiseMax(0.0);
  return Y;
}

void Dense::Backward(const Eigen::Ref<const Eigen::MatrixXd>& X,
                     const Eigen::Ref<const Eigen::MatrixXd>& Y,
                     const Eigen::Ref<const Eigen::MatrixXd>& dY,
                     Eigen::Ref<Eigen::VectorXd> grad,
                     Eigen::MatrixXd* dX) const {
  // dA = dL/d(pre-activation).
  Eigen::MatrixXd dA = dY;
  if (activation_ == Activation::kRelu) {
    dA = (Y.array() > 0.0).select(dA, 0.0);
  }
  const Eigen::Index in = input_dim();
  const Eigen::Index out = output_dim();
  if (in > 0) {
    Eigen::Map<Eigen::MatrixXd> dW(grad.data(), in, out);
    dW.noalias() += X.transpose() * dA;
  }
  grad.segment(in * out, out) += dA.colwise().sum().transpose();
  if (dX != nullptr) {
    if (in > 0) {
      *dX = dA * weight_.transpose();
    } else {
      *dX = Eigen::MatrixXd(X.rows(), 0);
    }
  }
}

void Dense::GetParameters(Eigen::Ref<Eigen::VectorXd> out) const {
  const Eigen::Index w = weight_.size();
  out.head(w) = Eigen::Map<const Eigen::VectorXd>(weight_.data(), w);
  out.segment(w, bias_.size()) = bias_;
}

void Dense::SetParameters(const Eigen::Ref<const Eigen::VectorXd>& params) {
  const Eigen::Index w = weight_.size();
  Eigen::Map<Eigen::VectorXd>(weight_.data(), w) = params.head(w);
  bias_ = params.segment(w, bias_.size());
}

}  // namespace metaopt::nn
