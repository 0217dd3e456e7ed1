#include "core/nn/dense.h"

#include <algorithm>
#include <cmath>

namespace metaopt::nn {

template <typename Scalar>
BasicDense<Scalar>::BasicDense(int input_dim, int output_dim,
                               Activation activation)
    : weight_(Matrix::Zero(std::max(0, input_dim), std::max(0, output_dim))),
      bias_(Vector::Zero(std::max(0, output_dim))),
      activation_(activation) {}

template <typename Scalar>
void BasicDense<Scalar>::Initialize(InitScheme scheme, space::Rng& rng) {
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
          weight_(i, j) = static_cast<Scalar>(sd * space::StandardNormal(rng));
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
          weight_(i, j) =
              static_cast<Scalar>(bound * (2.0 * space::Uniform01(rng) - 1.0));
        }
      }
      if (scheme == InitScheme::kTorchDefault) {
        for (Eigen::Index j = 0; j < bias_.size(); ++j) {
          bias_[j] =
              static_cast<Scalar>(bound * (2.0 * space::Uniform01(rng) - 1.0));
        }
      }
      break;
    }
    case InitScheme::kAuto:
      break;  // Resolved above.
  }
}

template <typename Scalar>
typename BasicDense<Scalar>::Matrix BasicDense<Scalar>::Forward(
    const Eigen::Ref<const Matrix>& X) const {
  Matrix Y(X.rows(), output_dim());
  if (input_dim() > 0) {
    Y.noalias() = X * weight_;
  } else {
    Y.setZero();
  }
  Y.rowwise() += bias_.transpose();
  if (activation_ == Activation::kRelu) Y = Y.cwiseMax(Scalar(0));
  return Y;
}

template <typename Scalar>
typename BasicDense<Scalar>::Matrix BasicDense<Scalar>::PreActivationGradient(
    const Eigen::Ref<const Matrix>& Y,
    const Eigen::Ref<const Matrix>& dY) const {
  Matrix dA = dY;
  if (activation_ == Activation::kRelu) {
    dA = (Y.array() > Scalar(0)).select(dA, Scalar(0));
  }
  return dA;
}

template <typename Scalar>
void BasicDense<Scalar>::Backward(const Eigen::Ref<const Matrix>& X,
                                  const Eigen::Ref<const Matrix>& Y,
                                  const Eigen::Ref<const Matrix>& dY,
                                  Eigen::Ref<Vector> grad, Matrix* dX) const {
  const Matrix dA = PreActivationGradient(Y, dY);
  const Eigen::Index in = input_dim();
  const Eigen::Index out = output_dim();
  if (in > 0) {
    Eigen::Map<Matrix> dW(grad.data(), in, out);
    dW.noalias() += X.transpose() * dA;
  }
  grad.segment(in * out, out) += dA.colwise().sum().transpose();
  if (dX != nullptr) {
    if (in > 0) {
      *dX = dA * weight_.transpose();
    } else {
      *dX = Matrix(X.rows(), 0);
    }
  }
}

template <typename Scalar>
typename BasicDense<Scalar>::Matrix BasicDense<Scalar>::InputGradient(
    const Eigen::Ref<const Matrix>& Y,
    const Eigen::Ref<const Matrix>& dY) const {
  if (input_dim() == 0) return Matrix(Y.rows(), 0);
  const Matrix dA = PreActivationGradient(Y, dY);
  return dA * weight_.transpose();
}

template <typename Scalar>
void BasicDense<Scalar>::GetParameters(Eigen::Ref<Vector> out) const {
  const Eigen::Index w = weight_.size();
  out.head(w) = Eigen::Map<const Vector>(weight_.data(), w);
  out.segment(w, bias_.size()) = bias_;
}

template <typename Scalar>
void BasicDense<Scalar>::SetParameters(const Eigen::Ref<const Vector>& params) {
  const Eigen::Index w = weight_.size();
  Eigen::Map<Vector>(weight_.data(), w) = params.head(w);
  bias_ = params.segment(w, bias_.size());
}

template class BasicDense<double>;
template class BasicDense<float>;

}  // namespace metaopt::nn
