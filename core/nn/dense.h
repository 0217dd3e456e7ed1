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
// external synchronisation. A plain copyable value.
class Dense {
 public:
  // input_dim may be 0 (then the layer is a learned constant act(b)).
  Dense(int input_dim, int output_dim, Activation activation);

  int input_dim() const { return static_cast<int>(weight_.rows()); }
  int output_dim() const { return static_cast<int>(weight_.cols()); }
  Activation activation() const { return activation_; }
  int num_parameters() const { return (input_dim() + 1) * output_dim(); }

  const Eigen::MatrixXd& weight() const { return weight_; }
  const Eigen::VectorXd& bias() const { return bias_; }
  Eigen::MatrixXd& mutable_weight() { return weight_; }
  Eigen::VectorXd& mutable_bias() { return bias_; }

  // Draws fresh parameters from `rng` (fan_in is max(1, input_dim)).
  void Initialize(InitScheme scheme, space::Rng& rng);

  // Y for X (n x input_dim()).
  Eigen::MatrixXd Forward(const Eigen::Ref<const Eigen::MatrixXd>& X) const;

  // Given the layer's input X, its output Y = Forward(X) and dL/dY, adds
  // dL/d(parameters) to `grad` (num_parameters() entries, flat layout above)
  // and, when dX is not null, sets *dX = dL/dX. The ReLU derivative is
  // 1[Y > 0] (0 at the kink).
  void Backward(const Eigen::Ref<const Eigen::MatrixXd>& X,
                const Eigen::Ref<const Eigen::MatrixXd>& Y,
                const Eigen::Ref<const Eigen::MatrixXd>& dY,
                Eigen::Ref<Eigen::VectorXd> grad, Eigen::MatrixXd* dX) const;

  // Flat parameters (num_parameters() entries, layout above).
  void GetParameters(Eigen::Ref<Eigen::VectorXd> out) const;
  void SetParameters(const Eigen::Ref<const Eigen::VectorXd>& params);

 private:
  Eigen::MatrixXd weight_;
  Eigen::VectorXd bias_;
  Activation activation_;
};

}  // namespace metaopt::nn

#endif  // METAOPT_CORE_NN_DENSE_H_
