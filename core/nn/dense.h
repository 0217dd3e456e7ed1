// A fully connected layer with an optional ReLU, batched over rows, with a
// hand-written backward pass.
//
//   Y = act(X W + 1 b'),   X: n x in (rows = samples), W: in x out, b: out.
//
// Parameters are flattened as [W (column-major, i.e. output unit by output
// unit), b]; the same order is used for gradients, so a Dense is trained by
// any optimizer that works on flat vectors (nn::Adam). Column-major W equals
// the row-major [out, in] matrix of PyTorch's nn.Linear, which is also the
// layout of the serialized tensor (see nn::Mlp).
//
// The scalar type is a template parameter: nn::Dense (double) is what models
// store and serve; nn::DenseF (float) is the single-precision copy that
// meta-training may run its forward and backward passes in (Cast converts
// either way).
#ifndef METAOPT_CORE_NN_DENSE_H_
#define METAOPT_CORE_NN_DENSE_H_

#include "Eigen/Core"
#include "core/space/random.h"

namespace metaopt::nn {

enum class Activation { kLinear, kRelu };

// Weight initialisation. Biases are zero except under kTorchDefault.
enum class InitScheme {
  // He (Kaiming) normal for ReLU layers, Glorot uniform for linear ones.
  kAuto,
  // W ~ N(0, 2 / fan_in).
  kHe,
  // W ~ U(+-sqrt(6 / (fan_in + fan_out))).
  kGlorot,
  // PyTorch's nn.Linear default: W and b ~ U(+-1 / sqrt(fan_in)).
  kTorchDefault,
};

// Thread-compatible: const methods may run concurrently; mutators need
// external synchronisation. A plain copyable value. Scalar is float or double
// (explicitly instantiated in dense.cc).
template <typename Scalar>
class BasicDense {
 public:
  using Matrix = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic>;
  using Vector = Eigen::Matrix<Scalar, Eigen::Dynamic, 1>;

  // input_dim may be 0 (then the layer is a learned constant act(b)).
  BasicDense(int input_dim, int output_dim, Activation activation);

  // This layer with its parameters rounded (or widened) to another scalar.
  template <typename To>
  BasicDense<To> Cast() const {
    BasicDense<To> out(input_dim(), output_dim(), activation_);
    out.mutable_weight() = weight_.template cast<To>();
    out.mutable_bias() = bias_.template cast<To>();
    return out;
  }

  int input_dim() const { return static_cast<int>(weight_.rows()); }
  int output_dim() const { return static_cast<int>(weight_.cols()); }
  Activation activation() const { return activation_; }
  int num_parameters() const { return (input_dim() + 1) * output_dim(); }

  const Matrix& weight() const { return weight_; }
  const Vector& bias() const { return bias_; }
  Matrix& mutable_weight() { return weight_; }
  Vector& mutable_bias() { return bias_; }

  // Draws fresh parameters from `rng` (fan_in is max(1, input_dim)), in
  // double and then rounded to Scalar (the same draws for both scalars).
  void Initialize(InitScheme scheme, space::Rng& rng);

  // Y for X (n x input_dim()).
  Matrix Forward(const Eigen::Ref<const Matrix>& X) const;

  // Given the layer's input X, its output Y = Forward(X) and dL/dY, adds
  // dL/d(parameters) to `grad` (num_parameters() entries, flat layout above)
  // and, when dX is not null, sets *dX = dL/dX. The ReLU derivative is
  // 1[Y > 0] (0 at the kink).
  void Backward(const Eigen::Ref<const Matrix>& X,
                const Eigen::Ref<const Matrix>& Y,
                const Eigen::Ref<const Matrix>& dY, Eigen::Ref<Vector> grad,
                Matrix* dX) const;
  // Backward's dL/dX alone (the same arithmetic, no parameter gradients), for
  // a frozen layer that gradients pass through.
  Matrix InputGradient(const Eigen::Ref<const Matrix>& Y,
                       const Eigen::Ref<const Matrix>& dY) const;

  // Flat parameters (num_parameters() entries, layout above).
  void GetParameters(Eigen::Ref<Vector> out) const;
  void SetParameters(const Eigen::Ref<const Vector>& params);

 private:
  // dL/d(pre-activation) given the output Y and dL/dY.
  Matrix PreActivationGradient(const Eigen::Ref<const Matrix>& Y,
                               const Eigen::Ref<const Matrix>& dY) const;

  Matrix weight_;
  Vector bias_;
  Activation activation_;
};

using Dense = BasicDense<double>;
using DenseF = BasicDense<float>;

}  // namespace metaopt::nn

#endif  // METAOPT_CORE_NN_DENSE_H_
