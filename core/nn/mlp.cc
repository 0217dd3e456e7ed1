#include "core/nn/mlp.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/common/status_macros.h"

namespace metaopt::nn {

absl::StatusOr<Mlp> Mlp::Create(int input_dim, const std::vector<int>& widths,
                                bool relu_on_output) {
  if (input_dim < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("Mlp: input_dim ", input_dim, " < 0"));
  }
  std::vector<Dense> layers;
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
  return Mlp(input_dim, std::move(layers));
}

int Mlp::output_dim() const {
  return layers_.empty() ? input_dim_ : layers_.back().output_dim();
}

int Mlp::num_parameters() const {
  int n = 0;
  for (const Dense& layer : layers_) n += layer.num_parameters();
  return n;
}

void Mlp::Initialize(InitScheme scheme, space::Rng& rng) {
  for (Dense& layer : layers_) layer.Initialize(scheme, rng);
}

Eigen::MatrixXd Mlp::Forward(const Eigen::Ref<const Eigen::MatrixXd>& X,
                             Trace* trace) const {
  if (trace != nullptr) {
    trace->outputs.clear();
    trace->outputs.reserve(layers_.size() + 1);
    trace->outputs.emplace_back(X);
    for (const Dense& layer : layers_) {
      trace->outputs.push_back(layer.Forward(trace->outputs.back()));
    }
    return trace->outputs.back();
  }
  Eigen::MatrixXd H = X;
  for (const Dense& layer : layers_) H = layer.Forward(H);
  return H;
}

void Mlp::Backward(const Trace& trace,
                   const Eigen::Ref<const Eigen::MatrixXd>& dY,
                   Eigen::Ref<Eigen::VectorXd> grad,
                   Eigen::MatrixXd* dX) const {
  Eigen::MatrixXd delta = dY;
  int end = num_parameters();
  for (int k = num_layers() - 1; k >= 0; --k) {
    const Dense& layer = layers_[k];
    const int np = layer.num_parameters();
    end -= np;
    Eigen::MatrixXd d_input;
    const bool need_input_grad = k > 0 || dX != nullptr;
    layer.Backward(trace.outputs[k], trace.outputs[k + 1], delta,
                   grad.segment(end, np), need_input_grad ? &d_input : nullptr);
    if (need_input_grad) delta = std::move(d_input);
  }
  if (dX != nullptr) *dX = std::move(delta);
}

void Mlp::GetParameters(Eigen::Ref<Eigen::VectorXd> out) const {
  int offset = 0;
  for (const Dense& layer : layers_) {
    layer.GetParameters(out.segment(offset, layer.num_parameters()));
    offset += layer.num_parameters();
  }
}

void Mlp::SetParameters(const Eigen::Ref<const Eigen::VectorXd>& params) {
  int offset = 0;
  for (Dense& layer : layers_) {
    layer.SetParameters(params.segment(offset, layer.num_parameters()));
    offset += layer.num_parameters();
  }
}

void Mlp::AppendTensors(const std::string& prefix,
                        std::vector<v1::Tensor>* out) const {
  for (int k = 0; k < num_layers(); ++k) {
    const Dense& layer = layers_[k];
    const std::string base = absl::StrCat(prefix, ".layer", k);
    out->push_back(MakeTensor(
        absl::StrCat(base, ".weight"), {layer.output_dim(), layer.input_dim()},
        Eigen::Map<const Eigen::VectorXd>(layer.weight().data(),
                                          layer.weight().size())));
    out->push_back(MakeTensor(absl::StrCat(base, ".bias"), {layer.output_dim()},
                              layer.bias()));
  }
}

absl::Status Mlp::ReadTensors(const std::string& prefix,
                              const TensorMap& tensors) {
  Eigen::VectorXd params(num_parameters());
  int offset = 0;
  for (int k = 0; k < num_layers(); ++k) {
    const Dense& layer = layers_[k];
    const std::string base = absl::StrCat(prefix, ".layer", k);
    METAOPT_ASSIGN_OR_RETURN(
        Eigen::VectorXd w, ReadTensor(tensors, absl::StrCat(base, ".weight"),
                                      {layer.output_dim(), layer.input_dim()}));
    METAOPT_ASSIGN_OR_RETURN(
        Eigen::VectorXd b,
        ReadTensor(tensors, absl::StrCat(base, ".bias"), {layer.output_dim()}));
    params.segment(offset, w.size()) = w;
    params.segment(offset + w.size(), b.size()) = b;
    offset += layer.num_parameters();
  }
  SetParameters(params);
  return absl::OkStatus();
}

}  // namespace metaopt::nn
