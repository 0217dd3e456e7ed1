// A multilayer perceptron: a sequence of Dense layers, ReLU after every layer
// except (optionally) the last, batched over rows, with a hand-written
// backward pass and (de)serialization as named tensors.
//
//   METAOPT_ASSIGN_OR_RETURN(nn::Mlp mlp, nn::Mlp::Create(8, {64, 64, 20}));
//   mlp.Initialize(nn::InitScheme::kAuto, rng);
//   nn::Mlp::Trace trace;
//   Eigen::MatrixXd Z = mlp.Forward(X, &trace);
//   Eigen::VectorXd grad = Eigen::VectorXd::Zero(mlp.num_parameters());
//   mlp.Backward(trace, dL_dZ, grad, /*dX=*/nullptr);
//
// Flat parameters are the layers' flat parameters (nn::Dense) in layer order.
// Serialized tensors: "<prefix>.layer<k>.weight" of shape [out, in] (PyTorch
// nn.Linear layout) and "<prefix>.layer<k>.bias" of shape [out].
//
// The scalar type is a template parameter, as for nn::BasicDense: nn::Mlp
// (double) is stored and served; nn::MlpF (float) is a single-precision copy
// (Cast) for meta-training's forward and backward passes. Serialization
// always writes and reads double values.
//
// Not a packaged library: Debian's libtorch-dev would bring hundreds of
// megabytes of dependencies for networks of a few thousand parameters trained
// on the CPU, and the deep kernel needs Eigen matrices in and out.
#ifndef METAOPT_CORE_NN_MLP_H_
#define METAOPT_CORE_NN_MLP_H_

#include <string>
#include <vector>

#include "Eigen/Core"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/nn/dense.h"
#include "core/nn/tensor_io.h"
#include "core/space/random.h"
#include "metaopt/v1/model.pb.h"

namespace metaopt::nn {

// Thread-compatible: const methods (Forward, Backward, serialization) may run
// concurrently; Initialize/SetParameters need external synchronisation. A
// plain copyable value. Scalar is float or double (explicitly instantiated in
// mlp.cc).
template <typename Scalar>
class BasicMlp {
 public:
  using Layer = BasicDense<Scalar>;
  using Matrix = typename Layer::Matrix;
  using Vector = typename Layer::Vector;

  // The activations of one forward pass, kept for Backward: outputs[0] is the
  // input, outputs[k + 1] the output of layer k.
  struct Trace {
    std::vector<Matrix> outputs;
  };

  // Layers input_dim -> widths[0] -> ... -> widths.back(); ReLU after every
  // layer, and after the last too iff relu_on_output. No layers (empty widths)
  // is the identity. INVALID_ARGUMENT for input_dim < 0 or a width < 1.
  static absl::StatusOr<BasicMlp> Create(int input_dim,
                                         const std::vector<int>& widths,
                                         bool relu_on_output = false);

  // This network with its parameters rounded (or widened) to another scalar.
  template <typename To>
  BasicMlp<To> Cast() const {
    std::vector<BasicDense<To>> layers;
    layers.reserve(layers_.size());
    for (const Layer& layer : layers_) {
      layers.push_back(layer.template Cast<To>());
    }
    return BasicMlp<To>(input_dim_, std::move(layers));
  }

  int input_dim() const { return input_dim_; }
  int output_dim() const;
  int num_layers() const { return static_cast<int>(layers_.size()); }
  int num_parameters() const;
  const std::vector<Layer>& layers() const { return layers_; }

  void Initialize(InitScheme scheme, space::Rng& rng);

  // The output for X (n x input_dim()); fills `trace` if not null.
  Matrix Forward(const Eigen::Ref<const Matrix>& X,
                 Trace* trace = nullptr) const;

  // Adds dL/d(parameters) to `grad` (num_parameters() entries) given the trace
  // of the forward pass and dL/d(output); sets *dX = dL/dX if dX is not null.
  void Backward(const Trace& trace, const Eigen::Ref<const Matrix>& dY,
                Eigen::Ref<Vector> grad, Matrix* dX) const;
  // Backward's dL/dX alone (the same arithmetic, no parameter gradients), for
  // a frozen network that gradients pass through.
  Matrix InputGradient(const Trace& trace,
                       const Eigen::Ref<const Matrix>& dY) const;

  void GetParameters(Eigen::Ref<Vector> out) const;
  // `params` must have num_parameters() entries (checked by the caller).
  void SetParameters(const Eigen::Ref<const Vector>& params);

  // Appends this network's tensors named "<prefix>.layer<k>.{weight,bias}".
  void AppendTensors(const std::string& prefix,
                     std::vector<v1::Tensor>* out) const;
  // Reads parameters from tensors written by AppendTensors for a network of
  // this shape. INVALID_ARGUMENT naming the tensor for a missing tensor, a
  // shape mismatch or a non-finite value; on error this network is unchanged.
  absl::Status ReadTensors(const std::string& prefix, const TensorMap& tensors);

 private:
  template <typename>
  friend class BasicMlp;

  BasicMlp(int input_dim, std::vector<Layer> layers)
      : input_dim_(input_dim), layers_(std::move(layers)) {}

  int input_dim_;
  std::vector<Layer> layers_;
};

using Mlp = BasicMlp<double>;
using MlpF = BasicMlp<float>;

}  // namespace metaopt::nn

#endif  // METAOPT_CORE_NN_MLP_H_
