// The DeepPipe network (deeppipe_network.h): building it for a search space
// within the architecture limits, initialising it, and running it forward
// (embeddings, with a trace on request) and backward (the network
// parameters' gradient from the embeddings' gradient), in double or float.
#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/common/status_macros.h"
#include "core/space/random.h"
#include "core/surrogate/deeppipe_model.h"

namespace metaopt::surrogate {

using deeppipe_internal::kFsboKernelName;
using deeppipe_internal::kKernelName;
using deeppipe_internal::kMaxAggregationLayers;
using deeppipe_internal::kMaxEmbedding;
using deeppipe_internal::kMaxEncoderLayers;
using deeppipe_internal::kMaxHidden;
using deeppipe_internal::kMaxNetworkParameters;
using deeppipe_internal::kMaxWidthFactor;

DeepPipeArchitecture FsboArchitecture() {
  DeepPipeArchitecture arch;
  arch.encoder_layers = 0;
  arch.aggregation_layers = 2;  // One hidden layer and the linear output.
  arch.hidden = 128;
  arch.embedding = 128;
  arch.gp = DeepKernelGp::kFsbo;
  return arch;
}

absl::StatusOr<DeepPipeModel> DeepPipeModel::Build(
    const v1::SearchSpace& space_proto, DeepPipeArchitecture arch,
    double noise_floor, FeatureScaler task_features,
    const std::vector<int>* fixed_slot_widths) {
  METAOPT_ASSIGN_OR_RETURN(
      space::SearchSpace space,
      space::SearchSpace::Create(space_proto, "deeppipe.search_space"));
  auto check = [](const char* name, int value, int low,
                  int high) -> absl::Status {
    if (value < low || value > high) {
      return absl::InvalidArgumentError(
          absl::StrCat("DeepPipe architecture: ", name, " ", value,
                       " is outside [", low, ", ", high, "]"));
    }
    return absl::OkStatus();
  };
  METAOPT_RETURN_IF_ERROR(
      check("encoder_layers", arch.encoder_layers, 0, kMaxEncoderLayers));
  METAOPT_RETURN_IF_ERROR(check("aggregation_layers", arch.aggregation_layers,
                                0, kMaxAggregationLayers));
  METAOPT_RETURN_IF_ERROR(
      check("width_factor", arch.width_factor, 1, kMaxWidthFactor));
  METAOPT_RETURN_IF_ERROR(check("hidden", arch.hidden, 0, kMaxHidden));
  METAOPT_RETURN_IF_ERROR(check("embedding", arch.embedding, 1, kMaxEmbedding));
  if (arch.aggregation_layers == 0) {
    arch.aggregation_layers = std::max(1, 4 - arch.encoder_layers);
  }

  const int task_inputs = task_features.size();
  auto structure = std::make_shared<const Structure>(space_proto, space,
                                                     std::move(task_features));
  const space::EncodingLayout& layout = structure->encoder.layout();
  const int num_stages = static_cast<int>(layout.stages.size());

  // L_i = max_j max(1, |block_ij|); stage slots of width F * L_i.
  std::vector<int> slot_offsets(num_stages), slot_widths(num_stages);
  int sum_l = 0;
  int slot_total = 0;
  for (int s = 0; s < num_stages; ++s) {
    int l = 1;
    for (int a = 0; a < layout.stages[s].size; ++a) {
      l = std::max(l, layout.block(s, a).size);
    }
    sum_l += l;
    slot_offsets[s] = slot_total;
    slot_widths[s] = fixed_slot_widths != nullptr ? (*fixed_slot_widths)[s]
                                                  : arch.width_factor * l;
    slot_total += slot_widths[s];
  }
  if (arch.hidden == 0) arch.hidden = std::max(arch.width_factor * sum_l, 24);
  METAOPT_RETURN_IF_ERROR(check("hidden", arch.hidden, 1, kMaxHidden));

  int64_t num_params = 0;
  std::vector<nn::Mlp> encoders;
  int aggregator_input = layout.dimension;
  if (arch.encoder_layers > 0) {
    encoders.reserve(layout.blocks.size());
    for (const space::BlockLayout& block : layout.blocks) {
      const int width = slot_widths[block.stage];
      METAOPT_ASSIGN_OR_RETURN(
          nn::Mlp mlp,
          nn::Mlp::Create(std::max(1, block.size),
                          std::vector<int>(arch.encoder_layers, width),
                          /*relu_on_output=*/true));
      num_params += mlp.num_parameters();
      encoders.push_back(std::move(mlp));
    }
    aggregator_input = slot_total;
  }
  aggregator_input += task_inputs;
  std::vector<int> widths(arch.aggregation_layers - 1, arch.hidden);
  widths.push_back(arch.embedding);
  METAOPT_ASSIGN_OR_RETURN(nn::Mlp aggregator,
                           nn::Mlp::Create(aggregator_input, widths));
  num_params += aggregator.num_parameters();
  if (task_inputs > 0) num_params += arch.embedding;
  if (num_params > kMaxNetworkParameters) {
    return absl::InvalidArgumentError(absl::StrCat(
        "DeepPipe architecture: ", num_params,
        " network parameters exceed the limit of ", kMaxNetworkParameters));
  }
  if (!(noise_floor > 0.0) || !std::isfinite(noise_floor)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "DeepPipe: noise floor ", noise_floor, " is not positive and finite"));
  }
  METAOPT_ASSIGN_OR_RETURN(
      gp::GaussianProcess gp,
      gp::GaussianProcess::Create(
          arch.gp == DeepKernelGp::kFsbo ? kFsboKernelName : kKernelName,
          arch.embedding, noise_floor));
  return DeepPipeModel(std::move(structure), arch, std::move(encoders),
                       std::move(slot_offsets), std::move(slot_widths),
                       std::move(aggregator), std::move(gp));
}

absl::StatusOr<DeepPipeModel> DeepPipeModel::Create(
    const v1::SearchSpace& space, const DeepPipeArchitecture& architecture,
    uint64_t seed, FeatureScaler task_features) {
  METAOPT_ASSIGN_OR_RETURN(
      DeepPipeModel model,
      Build(space, architecture, kNoiseFloor, std::move(task_features)));
  space::Rng rng(seed);
  for (nn::Mlp& mlp : model.encoders_)
    mlp.Initialize(nn::InitScheme::kAuto, rng);
  model.aggregator_.Initialize(nn::InitScheme::kAuto, rng);
  return model;
}

Eigen::MatrixXd DeepPipeModel::EmbedImpl(const Eigen::MatrixXd& X,
                                         EmbedTrace<double>* trace) const {
  return EmbedWith(encoders_, aggregator_, X, trace);
}

template <typename Scalar>
DeepPipeModel::MatrixT<Scalar> DeepPipeModel::EmbedWith(
    const std::vector<nn::BasicMlp<Scalar>>& encoders,
    const nn::BasicMlp<Scalar>& aggregator, const MatrixT<Scalar>& X,
    EmbedTrace<Scalar>* trace) const {
  using Matrix = MatrixT<Scalar>;
  typename nn::BasicMlp<Scalar>::Trace* aggregator_trace =
      trace != nullptr ? &trace->aggregator_trace : nullptr;
  const Eigen::Index n = X.rows();
  const Eigen::Index t = task_.size();
  const VectorT<Scalar> task = task_.cast<Scalar>();
  if (encoders.empty()) {
    if (t == 0) return aggregator.Forward(X, aggregator_trace);
    Matrix A(n, X.cols() + t);
    A << X, Matrix::Ones(n, 1) * task.transpose();
    return aggregator.Forward(A, aggregator_trace);
  }

  const space::EncodingLayout& layout = structure_->encoder.layout();
  const int num_blocks = static_cast<int>(layout.blocks.size());
  std::vector<std::vector<Eigen::Index>> rows(num_blocks);
  for (size_t s = 0; s < layout.stages.size(); ++s) {
    const space::StageLayout& stage = layout.stages[s];
    const int first = layout.block_start[s];
    for (Eigen::Index r = 0; r < n; ++r) {
      int active = 0;
      if (stage.size > 1) {
        X.row(r).segment(stage.offset, stage.size).maxCoeff(&active);
      }
      rows[first + active].push_back(r);
    }
  }

  Matrix A = Matrix::Zero(n, aggregator.input_dim());
  if (trace != nullptr) trace->encoder_traces.assign(num_blocks, {});
  for (int b = 0; b < num_blocks; ++b) {
    if (rows[b].empty()) continue;
    const space::BlockLayout& block = layout.blocks[b];
    const Eigen::Index m = static_cast<Eigen::Index>(rows[b].size());
    Matrix input;
    if (block.size > 0) {
      input = X(rows[b], Eigen::seqN(block.offset, block.size));
    } else {
      input = Matrix::Ones(m, 1);  // The dummy column.
    }
    const Matrix out = encoders[b].Forward(
        input, trace != nullptr ? &trace->encoder_traces[b] : nullptr);
    A(rows[b],
      Eigen::seqN(slot_offsets_[block.stage], slot_widths_[block.stage])) = out;
  }
  if (trace != nullptr) trace->rows = std::move(rows);
  if (t > 0) A.rightCols(t) = Matrix::Ones(n, 1) * task.transpose();
  return aggregator.Forward(A, aggregator_trace);
}

template <typename Scalar>
void DeepPipeModel::BackwardNetwork(
    const std::vector<nn::BasicMlp<Scalar>>& encoders,
    const nn::BasicMlp<Scalar>& aggregator, const EmbedTrace<Scalar>& trace,
    const MatrixT<Scalar>& dZ, Eigen::Ref<VectorT<Scalar>> grad) const {
  using Matrix = MatrixT<Scalar>;
  int offset = 0;
  std::vector<int> encoder_offsets(encoders.size());
  for (size_t b = 0; b < encoders.size(); ++b) {
    encoder_offsets[b] = offset;
    offset += encoders[b].num_parameters();
  }
  Matrix dA;
  aggregator.Backward(trace.aggregator_trace, dZ,
                      grad.segment(offset, aggregator.num_parameters()),
                      encoders.empty() ? nullptr : &dA);
  if (encoders.empty()) return;
  const space::EncodingLayout& layout = structure_->encoder.layout();
  for (size_t b = 0; b < encoders.size(); ++b) {
    if (trace.rows[b].empty()) continue;
    const space::BlockLayout& block = layout.blocks[b];
    const Matrix dOut =
        dA(trace.rows[b],
           Eigen::seqN(slot_offsets_[block.stage], slot_widths_[block.stage]));
    encoders[b].Backward(
        trace.encoder_traces[b], dOut,
        grad.segment(encoder_offsets[b], encoders[b].num_parameters()),
        nullptr);
  }
}

absl::StatusOr<Eigen::MatrixXd> DeepPipeModel::Embed(
    const Eigen::MatrixXd& X) const {
  METAOPT_RETURN_IF_ERROR(ValidateInputs(X, "Embed"));
  return EmbedImpl(X, nullptr);
}

// Loss runs the network in float (NetworkPrecision::kFloat32) and double.
template DeepPipeModel::MatrixT<float> DeepPipeModel::EmbedWith<float>(
    const std::vector<nn::BasicMlp<float>>&, const nn::BasicMlp<float>&,
    const MatrixT<float>&, EmbedTrace<float>*) const;
template DeepPipeModel::MatrixT<double> DeepPipeModel::EmbedWith<double>(
    const std::vector<nn::BasicMlp<double>>&, const nn::BasicMlp<double>&,
    const MatrixT<double>&, EmbedTrace<double>*) const;
template void DeepPipeModel::BackwardNetwork<float>(
    const std::vector<nn::BasicMlp<float>>&, const nn::BasicMlp<float>&,
    const EmbedTrace<float>&, const MatrixT<float>&,
    Eigen::Ref<VectorT<float>>) const;
template void DeepPipeModel::BackwardNetwork<double>(
    const std::vector<nn::BasicMlp<double>>&, const nn::BasicMlp<double>&,
    const EmbedTrace<double>&, const MatrixT<double>&,
    Eigen::Ref<VectorT<double>>) const;

}  // namespace metaopt::surrogate
