// DeepPipeModel::Loss, the meta-training objective (deeppipe_objective.h):
// the per-point GP NLL at the embeddings, plus for conditioned models the
// mean head's weighted regression error, and the gradient of both w.r.t.
// every parameter. Finite-difference checks: deeppipe_objective_test.cc.
#include <cmath>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/common/status_macros.h"
#include "core/surrogate/deeppipe_model.h"

namespace metaopt::surrogate {

absl::StatusOr<DeepPipeLoss> DeepPipeModel::Loss(
    const Eigen::MatrixXd& X, const Eigen::VectorXd& y, double mean_loss_weight,
    NetworkPrecision precision) const {
  METAOPT_RETURN_IF_ERROR(ValidateInputs(X, "Loss"));
  if (y.size() != X.rows() || X.rows() == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("DeepPipe Loss: ", X.rows(), " inputs and ", y.size(),
                     " targets (need the same number, at least 1)"));
  }
  if (!(mean_loss_weight >= 0.0) || !std::isfinite(mean_loss_weight)) {
    return absl::InvalidArgumentError(
        absl::StrCat("DeepPipe Loss: mean_loss_weight ", mean_loss_weight,
                     " is not finite and >= 0"));
  }
  const bool single = precision == NetworkPrecision::kFloat32;
  EmbedTrace<double> trace;
  EmbedTrace<float> trace_f;
  std::vector<nn::MlpF> encoders_f;
  std::optional<nn::MlpF> aggregator_f;
  Eigen::MatrixXd Z;
  if (single) {
    encoders_f.reserve(encoders_.size());
    for (const nn::Mlp& mlp : encoders_) {
      encoders_f.push_back(mlp.Cast<float>());
    }
    aggregator_f = aggregator_.Cast<float>();
    Z = EmbedWith<float>(encoders_f, *aggregator_f, X.cast<float>(), &trace_f)
            .cast<double>();
  } else {
    Z = EmbedImpl(X, &trace);
  }
  // A conditioned model's GP sees the residual y - Z w: its NLL depends on
  // Z also through the targets, and on w.
  const Eigen::VectorXd m = MeanOfEmbeddings(Z);
  METAOPT_ASSIGN_OR_RETURN(gp::NllResult nll, gp_.NegativeLogMarginalLikelihood(
                                                  Z, y - m,
                                                  /*with_input_gradient=*/true,
                                                  /*float_inverse=*/single));
  const double inv_n = 1.0 / static_cast<double>(X.rows());
  DeepPipeLoss loss;
  loss.value = nll.value * inv_n;
  loss.loo = nll.loo_nll * inv_n;
  loss.gradient = Eigen::VectorXd::Zero(num_parameters());
  loss.gradient.tail(num_kernel_parameters()) = nll.grad_hyper * inv_n;
  if (zero_mean())
    loss.gradient[num_network_parameters() + gp_.mean_index()] = 0;
  Eigen::MatrixXd dZ = nll.grad_inputs * inv_n;
  if (conditioned()) {
    // d loss / d m, then through m = Z w.
    Eigen::VectorXd dm = -nll.grad_targets * inv_n;
    if (mean_loss_weight > 0.0) {
      const int mean_index = num_network_parameters() + gp_.mean_index();
      const double c = gp_.hyperparameters()[gp_.mean_index()];
      const Eigen::VectorXd r = (y - m).array() - c;
      loss.value += mean_loss_weight * r.squaredNorm() * inv_n;
      const Eigen::VectorXd dr = -2.0 * mean_loss_weight * inv_n * r;
      dm += dr;
      loss.gradient[mean_index] += dr.sum();
    }
    dZ.noalias() += dm * mean_weights_.transpose();
    loss.gradient.segment(num_network_parameters() - mean_weights_.size(),
                          mean_weights_.size()) = Z.transpose() * dm;
  }
  if (single) {
    Eigen::VectorXf grad_f = Eigen::VectorXf::Zero(num_network_parameters());
    BackwardNetwork<float>(encoders_f, *aggregator_f, trace_f, dZ.cast<float>(),
                           grad_f);
    loss.gradient.head(num_network_parameters()) += grad_f.cast<double>();
  } else {
    BackwardNetwork<double>(encoders_, aggregator_, trace, dZ, loss.gradient);
  }
  return loss;
}

}  // namespace metaopt::surrogate
