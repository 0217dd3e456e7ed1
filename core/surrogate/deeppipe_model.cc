// DeepPipeModel as a value: its parts, the flat parameter vector (layout in
// deeppipe_network.h), the task vector of conditioned models, and the input
// checks every entry point shares.
#include "core/surrogate/deeppipe_model.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/common/status_macros.h"

namespace metaopt::surrogate {

DeepPipeModel::DeepPipeModel(std::shared_ptr<const Structure> structure,
                             DeepPipeArchitecture architecture,
                             std::vector<nn::Mlp> encoders,
                             std::vector<int> slot_offsets,
                             std::vector<int> slot_widths, nn::Mlp aggregator,
                             gp::GaussianProcess gp)
    : structure_(std::move(structure)),
      architecture_(architecture),
      encoders_(std::move(encoders)),
      slot_offsets_(std::move(slot_offsets)),
      slot_widths_(std::move(slot_widths)),
      aggregator_(std::move(aggregator)),
      mean_weights_(Eigen::VectorXd::Zero(
          structure_->task_features.empty() ? 0 : architecture.embedding)),
      task_(Eigen::VectorXd::Zero(structure_->task_features.size())),
      gp_(std::move(gp)) {}

const space::Encoder& DeepPipeModel::encoder() const {
  return structure_->encoder;
}

const v1::SearchSpace& DeepPipeModel::search_space() const {
  return structure_->proto;
}

int DeepPipeModel::input_dim() const { return structure_->encoder.dimension(); }

bool DeepPipeModel::conditioned() const {
  return !structure_->task_features.empty();
}

const FeatureScaler& DeepPipeModel::task_features() const {
  return structure_->task_features;
}

absl::Status DeepPipeModel::set_task(const Eigen::VectorXd& task) {
  if (task.size() != task_.size() || !task.allFinite()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "DeepPipe task vector: ", task.size(), " entries, expected ",
        task_.size(), " finite ones (one per meta-feature the model reads)"));
  }
  task_ = task;
  return absl::OkStatus();
}

Eigen::VectorXd DeepPipeModel::MeanOfEmbeddings(
    const Eigen::MatrixXd& Z) const {
  if (!conditioned()) return Eigen::VectorXd::Zero(Z.rows());
  return Z * mean_weights_;
}

int DeepPipeModel::num_network_parameters() const {
  int n = aggregator_.num_parameters() + static_cast<int>(mean_weights_.size());
  for (const nn::Mlp& mlp : encoders_) n += mlp.num_parameters();
  return n;
}

int DeepPipeModel::num_parameters() const {
  return num_network_parameters() + num_kernel_parameters();
}

Eigen::VectorXd DeepPipeModel::parameters() const {
  Eigen::VectorXd p(num_parameters());
  int offset = 0;
  for (const nn::Mlp& mlp : encoders_) {
    mlp.GetParameters(p.segment(offset, mlp.num_parameters()));
    offset += mlp.num_parameters();
  }
  aggregator_.GetParameters(p.segment(offset, aggregator_.num_parameters()));
  offset += aggregator_.num_parameters();
  p.segment(offset, mean_weights_.size()) = mean_weights_;
  p.tail(num_kernel_parameters()) = gp_.hyperparameters();
  return p;
}

absl::Status DeepPipeModel::set_parameters(
    const Eigen::Ref<const Eigen::VectorXd>& params) {
  if (params.size() != num_parameters()) {
    return absl::InvalidArgumentError(
        absl::StrCat("DeepPipe parameters: ", params.size(),
                     " entries, expected ", num_parameters()));
  }
  if (!params.allFinite()) {
    return absl::InvalidArgumentError(
        "DeepPipe parameters: non-finite entries");
  }
  METAOPT_RETURN_IF_ERROR(
      gp_.set_hyperparameters(params.tail(num_kernel_parameters())));
  int offset = 0;
  for (nn::Mlp& mlp : encoders_) {
    mlp.SetParameters(params.segment(offset, mlp.num_parameters()));
    offset += mlp.num_parameters();
  }
  aggregator_.SetParameters(
      params.segment(offset, aggregator_.num_parameters()));
  offset += aggregator_.num_parameters();
  mean_weights_ = params.segment(offset, mean_weights_.size());
  return absl::OkStatus();
}

void DeepPipeModel::ClampKernelParameters(
    Eigen::Ref<Eigen::VectorXd> kernel_params) const {
  const int kp = gp_.kernel().num_params();
  kernel_params.head(kp) =
      kernel_params.head(kp).cwiseMax(-10.0).cwiseMin(10.0);
  double& log_noise = kernel_params[gp_.noise_index()];
  log_noise = std::clamp(log_noise, -30.0, 5.0);
  double& mean = kernel_params[gp_.mean_index()];
  mean = zero_mean() ? 0.0 : std::clamp(mean, -10.0, 10.0);
}

gp::Standardization DeepPipeModel::TargetStandardization(
    const Eigen::VectorXd& y) const {
  if (architecture_.gp == DeepKernelGp::kFsbo && !standardize_fsbo_targets_) {
    return gp::Standardization();
  }
  return gp::Standardization::FromTargets(y);
}

absl::Status DeepPipeModel::ValidateInputs(const Eigen::MatrixXd& X,
                                           const char* what) const {
  if (X.cols() != input_dim()) {
    return absl::InvalidArgumentError(
        absl::StrCat("DeepPipe ", what, ": inputs have ", X.cols(),
                     " columns, expected ", input_dim()));
  }
  if (!X.allFinite()) {
    return absl::InvalidArgumentError(
        absl::StrCat("DeepPipe ", what, ": non-finite inputs"));
  }
  return absl::OkStatus();
}

}  // namespace metaopt::surrogate
