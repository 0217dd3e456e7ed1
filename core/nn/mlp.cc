#include "core/nn/mlp.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/common/status_macros.h"

namespace metaopt::nn {

template <typename Scalar>
absl::StatusOr<BasicMlp<Scalar>> BasicMlp<Scalar>::Create(
    int input_dim, const std::vector<int>& widths, bool relu_on_output) {
  if (input_dim < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("Mlp: input_dim ", input_dim, " < 0"));
  }
  std::vector<Layer> layers;
  layers.reserve(widths.size());
  int in = input_dim;
  for (size_t k = 0; k < widths.size(); ++k) {
    if (widths[k] < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("Mlp: width of layer ", k, " is ", widths[k], " < 1"));
    }
    const bool last = k + 1 == widths.size();
    layers.emplace_back(
        in, widths[k],
        last && !relu_on_output ? Activation::kLinear : Activation::kRelu);
    in = widths[k];
  }
  return BasicMlp(input_dim, std::move(layers));
}

template <typename Scalar>
int BasicMlp<Scalar>::output_dim() const {
  return layers_.empty() ? input_dim_ : layers_.back().output_dim();
}

template <typename Scalar>
int BasicMlp<Scalar>::num_parameters() const {
  int n = 0;
  for (const Layer& layer : layers_) n += layer.num_parameters();
  return n;
}

template <typename Scalar>
void BasicMlp<Scalar>::Initialize(InitScheme scheme, space::Rng& rng) {
  for (Layer& layer : layers_) layer.Initialize(scheme, rng);
}

template <typename Scalar>
typename BasicMlp<Scalar>::Matrix BasicMlp<Scalar>::Forward(
    const Eigen::Ref<const Matrix>& X, Trace* trace) const {
  if (trace != nullptr) {
    trace->outputs.clear();
    trace->outputs.reserve(layers_.size() + 1);
    trace->outputs.emplace_back(X);
    for (const Layer& layer : layers_) {
      trace->outputs.push_back(layer.Forward(trace->outputs.back()));
    }
    return trace->outputs.back();
  }
  Matrix H = X;
  for (const Layer& layer : layers_) H = layer.Forward(H);
  return H;
}

template <typename Scalar>
void BasicMlp<Scalar>::Backward(const Trace& trace,
                                const Eigen::Ref<const Matrix>& dY,
                                Eigen::Ref<Vector> grad, Matrix* dX) const {
  Matrix delta = dY;
  int end = num_parameters();
  for (int k = num_layers() - 1; k >= 0; --k) {
    const Layer& layer = layers_[k];
    const int np = layer.num_parameters();
    end -= np;
    Matrix d_input;
    const bool need_input_grad = k > 0 || dX != nullptr;
    layer.Backward(trace.outputs[k], trace.outputs[k + 1], delta,
                   grad.segment(end, np), need_input_grad ? &d_input : nullptr);
    if (need_input_grad) delta = std::move(d_input);
  }
  if (dX != nullptr) *dX = std::move(delta);
}

template <typename Scalar>
typename BasicMlp<Scalar>::Matrix BasicMlp<Scalar>::InputGradient(
    const Trace& trace, const Eigen::Ref<const Matrix>& dY) const {
  Matrix delta = dY;
  for (int k = num_layers() - 1; k >= 0; --k) {
    delta = layers_[k].InputGradient(trace.outputs[k + 1], delta);
  }
  return delta;
}

template <typename Scalar>
void BasicMlp<Scalar>::GetParameters(Eigen::Ref<Vector> out) const {
  int offset = 0;
  for (const Layer& layer : layers_) {
    layer.GetParameters(out.segment(offset, layer.num_parameters()));
    offset += layer.num_parameters();
  }
}

template <typename Scalar>
void BasicMlp<Scalar>::SetParameters(const Eigen::Ref<const Vector>& params) {
  int offset = 0;
  for (Layer& layer : layers_) {
    layer.SetParameters(params.segment(offset, layer.num_parameters()));
    offset += layer.num_parameters();
  }
}

template <typename Scalar>
void BasicMlp<Scalar>::AppendTensors(const std::string& prefix,
                                     std::vector<v1::Tensor>* out) const {
  for (int k = 0; k < num_layers(); ++k) {
    const Layer& layer = layers_[k];
    const std::string base = absl::StrCat(prefix, ".layer", k);
    out->push_back(MakeTensor(
        absl::StrCat(base, ".weight"), {layer.output_dim(), layer.input_dim()},
        Eigen::Map<const Vector>(layer.weight().data(), layer.weight().size())
            .template cast<double>()));
    out->push_back(MakeTensor(absl::StrCat(base, ".bias"), {layer.output_dim()},
                              layer.bias().template cast<double>()));
  }
}

template <typename Scalar>
absl::Status BasicMlp<Scalar>::ReadTensors(const std::string& prefix,
                                           const TensorMap& tensors) {
  Vector params(num_parameters());
  int offset = 0;
  for (int k = 0; k < num_layers(); ++k) {
    const Layer& layer = layers_[k];
    const std::string base = absl::StrCat(prefix, ".layer", k);
    METAOPT_ASSIGN_OR_RETURN(
        Eigen::VectorXd w, ReadTensor(tensors, absl::StrCat(base, ".weight"),
                                      {layer.output_dim(), layer.input_dim()}));
    METAOPT_ASSIGN_OR_RETURN(
        Eigen::VectorXd b,
        ReadTensor(tensors, absl::StrCat(base, ".bias"), {layer.output_dim()}));
    params.segment(offset, w.size()) = w.template cast<Scalar>();
    params.segment(offset + w.size(), b.size()) = b.template cast<Scalar>();
    offset += layer.num_parameters();
  }
  SetParameters(params);
  return absl::OkStatus();
}

template class BasicMlp<double>;
template class BasicMlp<float>;

}  // namespace metaopt::nn
