// DeepPipe fine-tuning (deeppipe_fine_tune.h): the cached-distance kernel
// objective and DeepPipeModel::FineTune, Adam over the scope's parameters with
// early stopping, a time budget and the lowest-loss parameters kept.
#include <cmath>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/common/status_macros.h"
#include "core/nn/optimizer.h"
#include "core/surrogate/deeppipe_model.h"

namespace metaopt::surrogate {

using deeppipe_internal::kKernelName;

absl::StatusOr<DeepPipeKernelObjective> DeepPipeKernelObjective::Create(
    const gp::GaussianProcess& gp, const Eigen::MatrixXd& Z,
    const Eigen::VectorXd& y) {
  if (gp.kernel().name() != kKernelName || Z.cols() != gp.input_dim() ||
      Z.rows() != y.size() || Z.rows() == 0 || !Z.allFinite() ||
      !y.allFinite()) {
    return absl::InvalidArgumentError(
        absl::StrCat("DeepPipe kernel objective: need a ", kKernelName,
                     " GP over ", gp.input_dim(),
                     " dimensions and as many finite targets as "
                     "embeddings (got ",
                     Z.rows(), " x ", Z.cols(), " and ", y.size(), ")"));
  }
  const Eigen::Index n = Z.rows();
  Eigen::MatrixXd pair_d2(n * (n - 1) / 2, Z.cols());
  Eigen::Index p = 0;
  for (Eigen::Index j = 0; j < n; ++j) {
    for (Eigen::Index i = j + 1; i < n; ++i, ++p) {
      pair_d2.row(p) = (Z.row(i) - Z.row(j)).array().square();
    }
  }
  return DeepPipeKernelObjective(std::move(pair_d2), y, gp.noise_floor());
}

absl::StatusOr<DeepPipeLoss> DeepPipeKernelObjective::Evaluate(
    const Eigen::VectorXd& h) const {
  constexpr double kSqrt5 = 2.2360679774997896964;
  constexpr double kLog2Pi = 1.8378770664093454836;
  const Eigen::Index n = y_.size();
  const Eigen::Index z = pair_d2_.cols();
  if (h.size() != z + 3 || !h.allFinite()) {
    return absl::InvalidArgumentError(
        absl::StrCat("DeepPipe kernel objective: ", h.size(),
                     " hyperparameters (need ", z + 3, ", finite)"));
  }
  const Eigen::VectorXd inv_l2 = (-2.0 * h.head(z)).array().exp();
  const double scale = std::exp(h[z]);
  const double noise_excess = std::exp(h[z + 1]);
  const double mean = h[z + 2];
  // Matérn-5/2 profile and its derivative w.r.t. r^2 over the pairs.
  const Eigen::ArrayXd r2 = (pair_d2_ * inv_l2).array().max(0.0);
  const Eigen::ArrayXd sr = kSqrt5 * r2.sqrt();
  const Eigen::ArrayXd e = scale * (-sr).exp();
  const Eigen::ArrayXd k = (1.0 + sr + (5.0 / 3.0) * r2) * e;
  const Eigen::ArrayXd dk = (-5.0 / 6.0) * (1.0 + sr) * e;

  Eigen::MatrixXd K(n, n);
  Eigen::Index p = 0;
  for (Eigen::Index j = 0; j < n; ++j) {
    K(j, j) = scale + noise_floor_ + noise_excess;
    for (Eigen::Index i = j + 1; i < n; ++i, ++p) K(i, j) = k[p];
  }
  METAOPT_ASSIGN_OR_RETURN(gp::JitteredCholesky chol,
                           gp::CholeskyWithJitter(std::move(K)));
  const auto L = chol.L.triangularView<Eigen::Lower>();
  const Eigen::VectorXd r = y_.array() - mean;
  Eigen::VectorXd alpha = L.solve(r);
  chol.L.transpose().triangularView<Eigen::Upper>().solveInPlace(alpha);
  const Eigen::MatrixXd k_inv = gp::InverseFromCholesky(chol.L);

  const double inv_n = 1.0 / static_cast<double>(n);
  DeepPipeLoss loss;
  loss.value = (0.5 * r.dot(alpha) + chol.L.diagonal().array().log().sum() +
                0.5 * static_cast<double>(n) * kLog2Pi) *
               inv_n;
  // G = 0.5 (K^-1 - alpha alpha'); the kernel gradients need G_ij for the
  // pairs (twice, by symmetry) and the diagonal.
  Eigen::VectorXd w(pair_d2_.rows());
  double grad_scale = 0.0;
  double trace = 0.0;
  double loo = 0.0;
  p = 0;
  for (Eigen::Index j = 0; j < n; ++j) {
    const double c = k_inv(j, j);
    const double g_jj = 0.5 * (c - alpha[j] * alpha[j]);
    trace += g_jj;
    grad_scale += g_jj * scale;
    loo += 0.5 * (kLog2Pi - std::log(c) + alpha[j] * alpha[j] / c);
    for (Eigen::Index i = j + 1; i < n; ++i, ++p) {
      const double g = 0.5 * (k_inv(i, j) - alpha[i] * alpha[j]);
      grad_scale += 2.0 * g * k[p];
      w[p] = 2.0 * g * dk[p];
    }
  }
  loss.gradient.resize(z + 3);
  // d r2_ij / d log l_d = -2 (z_id - z_jd)^2 / l_d^2.
  loss.gradient.head(z) =
      -2.0 * (pair_d2_.transpose() * w).cwiseProduct(inv_l2) * inv_n;
  loss.gradient[z] = grad_scale * inv_n;
  loss.gradient[z + 1] = trace * noise_excess * inv_n;
  loss.gradient[z + 2] = -alpha.sum() * inv_n;
  loss.loo = loo * inv_n;
  return loss;
}

absl::StatusOr<DeepPipeFineTuneResult> DeepPipeModel::FineTune(
    const Eigen::MatrixXd& X, const Eigen::VectorXd& y,
    const DeepPipeFineTuneOptions& options) const {
  const absl::Time start = absl::Now();
  METAOPT_RETURN_IF_ERROR(ValidateInputs(X, "FineTune"));
  if (y.size() != X.rows() || X.rows() == 0 || !y.allFinite()) {
    return absl::InvalidArgumentError(
        absl::StrCat("DeepPipe FineTune: ", X.rows(), " inputs and ", y.size(),
                     " targets (need the same number, at least 1, finite)"));
  }
  if (options.max_steps < 0 || options.patience < 0 ||
      !(options.learning_rate > 0.0) || !std::isfinite(options.learning_rate) ||
      !(options.tolerance >= 0.0) || !(options.max_gradient_norm >= 0.0)) {
    return absl::InvalidArgumentError(
        "DeepPipe FineTune: need max_steps >= 0, patience >= 0, a positive "
        "finite learning rate, tolerance >= 0 and max_gradient_norm >= 0");
  }
  const Eigen::VectorXd ys = TargetStandardization(y).Apply(y);
  const bool full = options.scope == FineTuneScope::kFull;
  // The new encoders and the kernel: a subset of parameters() trained
  // through the whole network's loss (NewEncoderObjective).
  const bool subset =
      options.scope == FineTuneScope::kNewEncoders && num_new_encoders() > 0;
  const std::vector<Eigen::Index> trained =
      subset ? NewEncoderParameterIndices() : std::vector<Eigen::Index>();
  const int kp = num_kernel_parameters();
  // DeepPipeKernelObjective is Matérn-5/2's: another kernel's kernel scope
  // takes the kernel part of the whole model's Loss.
  const bool kernel_via_loss =
      !full && !subset && gp_.kernel().name() != kKernelName;

  Eigen::VectorXd all = parameters();
  Eigen::VectorXd p = full     ? all
                      : subset ? Eigen::VectorXd(all(trained))
                               : Eigen::VectorXd(all.tail(kp));
  DeepPipeModel work = *this;
  std::optional<DeepPipeKernelObjective> kernel_objective;
  std::function<absl::StatusOr<DeepPipeLoss>(const Eigen::VectorXd&)>
      new_encoder_objective;
  if (subset) new_encoder_objective = NewEncoderObjective(X, ys);
  if (!full && !subset && !kernel_via_loss) {
    const Eigen::MatrixXd Z_fixed = EmbedImpl(X, nullptr);
    METAOPT_ASSIGN_OR_RETURN(kernel_objective,
                             DeepPipeKernelObjective::Create(
                                 gp_, Z_fixed, ys - MeanOfEmbeddings(Z_fixed)));
  }

  // Loss and gradient w.r.t. p.
  auto evaluate =
      [&](const Eigen::VectorXd& q) -> absl::StatusOr<DeepPipeLoss> {
    if (full) {
      METAOPT_RETURN_IF_ERROR(work.set_parameters(q));
      return work.Loss(X, ys);
    }
    if (subset) return new_encoder_objective(q);
    if (kernel_via_loss) {
      all.tail(kp) = q;
      METAOPT_RETURN_IF_ERROR(work.set_parameters(all));
      METAOPT_ASSIGN_OR_RETURN(DeepPipeLoss loss, work.Loss(X, ys));
      loss.gradient = Eigen::VectorXd(loss.gradient.tail(kp));
      return loss;
    }
    return kernel_objective->Evaluate(q);
  };

  METAOPT_ASSIGN_OR_RETURN(DeepPipeLoss current, evaluate(p));
  DeepPipeFineTuneResult result{*this};
  result.loss_before = current.value;
  double best = current.value;
  Eigen::VectorXd best_p = p;
  double previous = current.value;
  int calm = 0;
  nn::Adam adam(static_cast<int>(p.size()));
  while (result.steps_run < options.max_steps) {
    if (absl::Now() - start >= options.time_budget) break;
    nn::ClipGradientNorm(current.gradient, options.max_gradient_norm);
    adam.Step(current.gradient, options.learning_rate, p);
    ClampKernelParameters(p.tail(kp));
    ++result.steps_run;
    absl::StatusOr<DeepPipeLoss> next = evaluate(p);
    if (!next.ok() || !std::isfinite(next->value)) break;
    current = *std::move(next);
    if (current.value < best) {
      best = current.value;
      best_p = p;
    }
    if (options.patience > 0) {
      calm =
          std::abs(current.value - previous) < options.tolerance ? calm + 1 : 0;
      if (calm > options.patience) {
        result.early_stopped = true;
        break;
      }
    }
    previous = current.value;
  }
  if (full) {
    all = best_p;
  } else if (subset) {
    all(trained) = best_p;
  } else {
    all.tail(kp) = best_p;
  }
  METAOPT_RETURN_IF_ERROR(result.model.set_parameters(all));
  result.loss_after = best;
  result.elapsed = absl::Now() - start;
  return result;
}

}  // namespace metaopt::surrogate
