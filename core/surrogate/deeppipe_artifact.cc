// DeepPipe artifact I/O: DeepPipeModel::ToArtifact writes the model as a
// registry artifact (kind, search space, named tensors, int_options,
// normalization) and FromArtifact reads it back, rejecting a wrong kind,
// options outside the architecture limits (deeppipe_network.h) and missing,
// misshapen, non-finite or unexpected tensors.
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/common/status_macros.h"
#include "core/nn/tensor_io.h"
#include "core/surrogate/deeppipe_model.h"
#include "core/surrogate/output_head.h"

namespace metaopt::surrogate {
namespace {

using deeppipe_internal::kMaxAggregationLayers;
using deeppipe_internal::kMaxEmbedding;
using deeppipe_internal::kMaxEncoderLayers;
using deeppipe_internal::kMaxHidden;
using deeppipe_internal::kMaxWidthFactor;

// Tensor and option names (see ToArtifact).
constexpr char kAggregatorPrefix[] = "aggregator";
constexpr char kLogLengthscales[] = "gp.log_lengthscales";
constexpr char kLogOutputScale[] = "gp.log_output_scale";
constexpr char kLogNoise[] = "gp.log_noise";
constexpr char kMean[] = "gp.mean";
constexpr char kMeanHead[] = "mean_head.weight";

}  // namespace

std::string DeepPipeModel::EncoderPrefix(int block) const {
  const space::BlockLayout& b = structure_->encoder.layout().blocks[block];
  const v1::Stage& stage = structure_->proto.stages(b.stage);
  return absl::StrCat("encoder.", stage.name(), ".",
                      stage.algorithms(b.algorithm).name());
}

std::vector<v1::Tensor> DeepPipeModel::ToArtifactTensors() const {
  std::vector<v1::Tensor> tensors;
  for (size_t b = 0; b < encoders_.size(); ++b) {
    encoders_[b].AppendTensors(EncoderPrefix(static_cast<int>(b)), &tensors);
  }
  aggregator_.AppendTensors(kAggregatorPrefix, &tensors);
  if (conditioned()) {
    tensors.push_back(nn::MakeTensor(
        kMeanHead, {static_cast<int>(mean_weights_.size())}, mean_weights_));
  }
  const Eigen::VectorXd h = gp_.hyperparameters();
  const int z = architecture_.embedding;
  tensors.push_back(nn::MakeTensor(kLogLengthscales, {z}, h.head(z)));
  tensors.push_back(nn::MakeTensor(kLogOutputScale, {1}, h.segment(z, 1)));
  tensors.push_back(
      nn::MakeTensor(kLogNoise, {1}, h.segment(gp_.noise_index(), 1)));
  tensors.push_back(nn::MakeTensor(kMean, {1}, h.segment(gp_.mean_index(), 1)));
  return tensors;
}

void DeepPipeModel::ToArtifact(v1::ModelArtifact* artifact) const {
  artifact->set_kind(architecture_.gp == DeepKernelGp::kFsbo
                         ? v1::MODEL_KIND_FSBO
                         : v1::MODEL_KIND_DEEPPIPE);
  *artifact->mutable_search_space() = structure_->proto;
  artifact->clear_tensors();
  for (v1::Tensor& t : ToArtifactTensors()) {
    *artifact->add_tensors() = std::move(t);
  }
  auto& ints = *artifact->mutable_int_options();
  ints.clear();
  ints["encoder_layers"] = architecture_.encoder_layers;
  ints["aggregation_layers"] = architecture_.aggregation_layers;
  ints["width_factor"] = architecture_.width_factor;
  ints["hidden"] = architecture_.hidden;
  ints["embedding"] = architecture_.embedding;
  ints["input_dim"] = input_dim();
  ints["task_features"] = task_features().size();
  auto& norm = *artifact->mutable_normalization();
  norm.clear();
  norm["noise_floor"] = gp_.noise_floor();
  norm["target_standardization"] =
      architecture_.gp == DeepKernelGp::kFsbo && !standardize_fsbo_targets_
          ? 0.0
          : 1.0;
  task_features().WriteTo(&norm);
}

absl::StatusOr<DeepPipeModel> DeepPipeModel::FromArtifact(
    const v1::ModelArtifact& artifact) {
  if (artifact.kind() != v1::MODEL_KIND_DEEPPIPE &&
      artifact.kind() != v1::MODEL_KIND_FSBO) {
    return absl::InvalidArgumentError(
        absl::StrCat("artifact.kind: ", v1::ModelKind_Name(artifact.kind()),
                     ", expected MODEL_KIND_DEEPPIPE or MODEL_KIND_FSBO"));
  }
  DeepPipeArchitecture arch;
  if (artifact.kind() == v1::MODEL_KIND_FSBO) arch.gp = DeepKernelGp::kFsbo;
  METAOPT_ASSIGN_OR_RETURN(
      arch.encoder_layers,
      nn::ReadIntOption(artifact, "encoder_layers", 0, kMaxEncoderLayers));
  METAOPT_ASSIGN_OR_RETURN(arch.aggregation_layers,
                           nn::ReadIntOption(artifact, "aggregation_layers", 1,
                                             kMaxAggregationLayers));
  METAOPT_ASSIGN_OR_RETURN(
      arch.width_factor,
      nn::ReadIntOption(artifact, "width_factor", 1, kMaxWidthFactor));
  METAOPT_ASSIGN_OR_RETURN(
      arch.hidden, nn::ReadIntOption(artifact, "hidden", 1, kMaxHidden));
  METAOPT_ASSIGN_OR_RETURN(
      arch.embedding,
      nn::ReadIntOption(artifact, "embedding", 1, kMaxEmbedding));
  double noise_floor = kNoiseFloor;
  if (auto it = artifact.normalization().find("noise_floor");
      it != artifact.normalization().end()) {
    noise_floor = it->second;
  }
  // Absent (older artifacts): the kind's default.
  bool standardize = arch.gp == DeepKernelGp::kDeepPipe;
  if (auto it = artifact.normalization().find("target_standardization");
      it != artifact.normalization().end()) {
    if (it->second != 0.0 && it->second != 1.0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "artifact.normalization[\"target_standardization\"]: ", it->second,
          ", expected 0 or 1"));
    }
    if (it->second == 0.0 && arch.gp == DeepKernelGp::kDeepPipe) {
      return absl::InvalidArgumentError(
          "artifact.normalization[\"target_standardization\"]: 0, but a "
          "MODEL_KIND_DEEPPIPE model always standardises its targets");
    }
    standardize = it->second == 1.0;
  }
  METAOPT_ASSIGN_OR_RETURN(FeatureScaler task_features,
                           FeatureScaler::ReadFrom(artifact.normalization()));
  // Artifacts older than conditioning have no "task_features" option.
  if (artifact.int_options().contains("task_features")) {
    METAOPT_ASSIGN_OR_RETURN(
        int count,
        nn::ReadIntOption(artifact, "task_features", task_features.size(),
                          task_features.size()));
    (void)count;
  } else if (!task_features.empty()) {
    return absl::InvalidArgumentError(
        "artifact.int_options[\"task_features\"]: missing, but "
        "artifact.normalization holds meta-feature statistics");
  }
  METAOPT_ASSIGN_OR_RETURN(DeepPipeModel model,
                           Build(artifact.search_space(), arch, noise_floor,
                                 std::move(task_features)));
  METAOPT_ASSIGN_OR_RETURN(
      int input_dim, nn::ReadIntOption(artifact, "input_dim", model.input_dim(),
                                       model.input_dim()));
  (void)input_dim;

  METAOPT_ASSIGN_OR_RETURN(nn::TensorMap tensors,
                           nn::IndexTensors(artifact.tensors()));
  const std::vector<v1::Tensor> expected = model.ToArtifactTensors();
  absl::flat_hash_set<std::string> expected_names;
  for (const v1::Tensor& t : expected) expected_names.insert(t.name());
  for (const v1::Tensor& t : artifact.tensors()) {
    // Output heads (output_head.h) ride along; the policy reads them.
    if (!expected_names.contains(t.name()) &&
        !absl::StartsWith(t.name(), kOutputHeadPrefix)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "artifact.tensors: unexpected tensor \"", t.name(), "\""));
    }
  }
  for (size_t b = 0; b < model.encoders_.size(); ++b) {
    METAOPT_RETURN_IF_ERROR(model.encoders_[b].ReadTensors(
        model.EncoderPrefix(static_cast<int>(b)), tensors));
  }
  METAOPT_RETURN_IF_ERROR(
      model.aggregator_.ReadTensors(kAggregatorPrefix, tensors));
  const int z = arch.embedding;
  if (model.conditioned()) {
    METAOPT_ASSIGN_OR_RETURN(model.mean_weights_,
                             nn::ReadTensor(tensors, kMeanHead, {z}));
  }
  Eigen::VectorXd h(model.num_kernel_parameters());
  METAOPT_ASSIGN_OR_RETURN(h.head(z),
                           nn::ReadTensor(tensors, kLogLengthscales, {z}));
  METAOPT_ASSIGN_OR_RETURN(h.segment(z, 1),
                           nn::ReadTensor(tensors, kLogOutputScale, {1}));
  METAOPT_ASSIGN_OR_RETURN(h.segment(model.gp_.noise_index(), 1),
                           nn::ReadTensor(tensors, kLogNoise, {1}));
  METAOPT_ASSIGN_OR_RETURN(h.segment(model.gp_.mean_index(), 1),
                           nn::ReadTensor(tensors, kMean, {1}));
  METAOPT_RETURN_IF_ERROR(model.gp_.set_hyperparameters(h));
  if (arch.gp == DeepKernelGp::kFsbo) {
    model.standardize_fsbo_targets_ = standardize;
  }
  return model;
}

}  // namespace metaopt::surrogate
