#include "core/gp/kernel.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace metaopt::gp {
namespace {

constexpr double kSqrt5 = 2.2360679774997896964;

// n rounded up to a multiple of kSimdDoubles: a length whose every entry
// takes the vectorised path.
Eigen::Index PaddedToSimd(Eigen::Index n) {
  return (n + kSimdDoubles - 1) / kSimdDoubles * kSimdDoubles;
}

}  // namespace

Kernel::Kernel(int input_dim)
    : input_dim_(input_dim),
      log_params_(Eigen::VectorXd::Zero(input_dim + 1)) {}

absl::Status Kernel::set_log_params(
    const Eigen::Ref<const Eigen::VectorXd>& log_params) {
  if (log_params.size() != num_params()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "kernel '", std::string(name()), "': expected ", num_params(),
        " log-hyperparameters, got ", log_params.size()));
  }
  if (!log_params.allFinite()) {
    return absl::InvalidArgumentError(
        absl::StrCat("kernel '", std::string(name()),
                     "': log-hyperparameters must be finite"));
  }
  log_params_ = log_params;
  return absl::OkStatus();
}

Eigen::VectorXd Kernel::lengthscales() const {
  return log_params_.head(input_dim_).array().exp();
}

double Kernel::output_scale() const {
  return std::exp(log_params_[input_dim_]);
}

Eigen::MatrixXd Kernel::Scaled(const Eigen::Ref<const Eigen::MatrixXd>& X,
                               const Eigen::RowVectorXd& shift) const {
  const Eigen::RowVectorXd inv_l =
      (-log_params_.head(input_dim_).array()).exp().matrix().transpose();
  return ((X.rowwise() - shift).array().rowwise() * inv_l.array()).matrix();
}

Eigen::MatrixXd Kernel::Matrix(
    const Eigen::Ref<const Eigen::MatrixXd>& X1,
    const Eigen::Ref<const Eigen::MatrixXd>& X2) const {
  Eigen::RowVectorXd shift = Eigen::RowVectorXd::Zero(input_dim_);
  if (X2.rows() > 0) shift = X2.colwise().mean();
  const Eigen::MatrixXd Z1 = Scaled(X1, shift);
  const Eigen::MatrixXd Z2 = Scaled(X2, shift);
  const Eigen::Index n = X1.rows();
  const Eigen::Index m = X2.rows();
  Eigen::MatrixXd k(n, m);
  if (n == 0 || m == 0) return k;
  k.noalias() = -2.0 * Z1 * Z2.transpose();
  const Eigen::ArrayXd sq1 = Z1.rowwise().squaredNorm().array();
  const Eigen::ArrayXd sq2 = Z2.rowwise().squaredNorm().array();
  for (Eigen::Index j = 0; j < m; ++j) {
    k.col(j) = (k.col(j).array() + sq1 + sq2[j]).max(0.0).matrix();
  }
  ProfileInChunks(k.data(), n, m, k.data());
  return k;
}

void Kernel::ProfileInChunks(const double* r2, Eigen::Index n, Eigen::Index m,
                             double* k) const {
  if (n == 0 || m == 0) return;
  // About kChunkEntries entries at a time, in cache, instead of whole-matrix
  // temporaries per step (memory-bound from a few hundred rows on). Each
  // chunk's columns are padded to a multiple of kSimdDoubles, so that every
  // entry goes through the vectorised path that one evaluation of the whole
  // matrix takes, except its scalar entries (the last n m % kSimdDoubles),
  // which are evaluated alone: the result equals Profile of the whole matrix
  // bit for bit.
  constexpr Eigen::Index kChunkEntries = 4096;
  const Eigen::Index rows = PaddedToSimd(n);
  const Eigen::Index chunk = std::max<Eigen::Index>(1, kChunkEntries / rows);
  const double scale = output_scale();
  // The scalar entries' squared distances (r2 may be k, which the chunks
  // overwrite).
  const Eigen::Index scalar_from = n * m - (n * m) % kSimdDoubles;
  const Eigen::ArrayXd scalar_r2 =
      Eigen::Map<const Eigen::ArrayXd>(r2 + scalar_from, n * m - scalar_from);
  Eigen::ArrayXXd block;
  Eigen::MatrixXd profile;
  for (Eigen::Index start = 0; start < m; start += chunk) {
    const Eigen::Index c = std::min(chunk, m - start);
    block.resize(rows, c);
    for (Eigen::Index j = 0; j < c; ++j) {
      block.col(j).head(n) =
          Eigen::Map<const Eigen::ArrayXd>(r2 + (start + j) * n, n);
      block.col(j).tail(rows - n).setZero();
    }
    Profile(block, scale, &profile, nullptr, nullptr);
    for (Eigen::Index j = 0; j < c; ++j) {
      Eigen::Map<Eigen::VectorXd>(k + (start + j) * n, n) =
          profile.col(j).head(n);
    }
  }
  Eigen::ArrayXXd last(1, 1);
  for (Eigen::Index i = 0; i < scalar_r2.size(); ++i) {
    last(0, 0) = scalar_r2[i];
    Profile(last, scale, &profile, nullptr, nullptr);
    k[scalar_from + i] = profile(0, 0);
  }
}

Eigen::ArrayXXd Kernel::SquaredDistances(
    const Eigen::Ref<const Eigen::MatrixXd>& X, Eigen::MatrixXd* scaled) const {
  const Eigen::Index n = X.rows();
  Eigen::RowVectorXd shift = Eigen::RowVectorXd::Zero(input_dim_);
  if (n > 0) shift = X.colwise().mean();
  *scaled = Scaled(X, shift);
  const Eigen::MatrixXd& Z = *scaled;
  Eigen::ArrayXXd r2(n, n);
  r2.matrix().setZero();
  // Eigen's rank update of an empty matrix binds a reference to its null data
  // (undefined behaviour that UBSan reports); there is nothing to add anyway.
  if (n > 0 && Z.cols() > 0) {
    r2.matrix().selfadjointView<Eigen::Lower>().rankUpdate(Z, -2.0);
  }
  const Eigen::ArrayXd sq = Z.rowwise().squaredNorm().array();
  for (Eigen::Index j = 0; j < n; ++j) {
    r2(j, j) = 0.0;
    for (Eigen::Index i = j + 1; i < n; ++i) {
      const double v = std::max(0.0, r2(i, j) + sq[i] + sq[j]);
      r2(i, j) = v;
      r2(j, i) = v;
    }
  }
  return r2;
}

Eigen::MatrixXd Kernel::Matrix(
    const Eigen::Ref<const Eigen::MatrixXd>& X) const {
  Eigen::MatrixXd Z;
  const Eigen::ArrayXXd r2 = SquaredDistances(X, &Z);
  Eigen::MatrixXd k(X.rows(), X.rows());
  ProfileInChunks(r2.data(), r2.rows(), r2.cols(), k.data());
  return k;
}

Eigen::VectorXd Kernel::Diagonal(
    const Eigen::Ref<const Eigen::MatrixXd>& X) const {
  return Eigen::VectorXd::Constant(X.rows(), output_scale());
}

Eigen::MatrixXd Kernel::DividedByLengthscales(
    const Eigen::Ref<const Eigen::MatrixXd>& X) const {
  return Scaled(X, Eigen::RowVectorXd::Zero(input_dim_));
}

Eigen::VectorXd Kernel::FromSquaredDistances(const Eigen::VectorXd& r2) const {
  // Padded to a multiple of kSimdDoubles, so that every entry takes the
  // vectorised path.
  const Eigen::Index n = r2.size();
  Eigen::ArrayXXd padded = Eigen::ArrayXXd::Zero(PaddedToSimd(n), 1);
  padded.col(0).head(n) = r2.array();
  Eigen::MatrixXd k;
  Profile(padded, output_scale(), &k, nullptr, nullptr);
  return k.col(0).head(n);
}

Kernel::Gram Kernel::TrainingGram(
    const Eigen::Ref<const Eigen::MatrixXd>& X) const {
  Gram gram;
  const Eigen::ArrayXXd r2 = SquaredDistances(X, &gram.scaled);
  Profile(r2, output_scale(), &gram.k, &gram.dk_dr2, &gram.dk_dlog_scale);
  return gram;
}

Eigen::VectorXd Kernel::GradientHyper(
    const Eigen::Ref<const Eigen::MatrixXd>& X,
    const Eigen::Ref<const Eigen::MatrixXd>& dL_dK) const {
  return GradientHyper(TrainingGram(X), dL_dK);
}

Eigen::VectorXd Kernel::GradientHyper(
    const Gram& gram, const Eigen::Ref<const Eigen::MatrixXd>& dL_dK) const {
  const Eigen::MatrixXd& Z = gram.scaled;
  Eigen::VectorXd grad(num_params());
  grad[input_dim_] = (dL_dK.array() * gram.dk_dlog_scale.array()).sum();
  // d r2_ij / d log l_d = -2 (z_id - z_jd)^2, so with W = dL/dK o s phi'(r2):
  // dL/d log l_d = -2 sum_ij W_ij (z_id^2 + z_jd^2 - 2 z_id z_jd).
  const Eigen::MatrixXd W = (dL_dK.array() * gram.dk_dr2.array()).matrix();
  const Eigen::VectorXd w_rows = W.rowwise().sum();
  const Eigen::VectorXd w_cols = W.colwise().sum().transpose();
  const Eigen::MatrixXd WZ = W * Z;
  const Eigen::ArrayXXd Z2 = Z.array().square();
  for (int d = 0; d < input_dim_; ++d) {
    const double quad = (Z2.col(d) * (w_rows + w_cols).array()).sum() -
                        2.0 * Z.col(d).dot(WZ.col(d));
    grad[d] = -2.0 * quad;
  }
  return grad;
}

Eigen::MatrixXd Kernel::GradientInputs(
    const Eigen::Ref<const Eigen::MatrixXd>& X,
    const Eigen::Ref<const Eigen::MatrixXd>& dL_dK) const {
  return GradientInputs(TrainingGram(X), dL_dK);
}

Eigen::MatrixXd Kernel::GradientInputs(
    const Gram& gram, const Eigen::Ref<const Eigen::MatrixXd>& dL_dK) const {
  const Eigen::MatrixXd& Z = gram.scaled;
  // x_i enters K_ij and K_ji; d r2_ij / d x_id = 2 (z_id - z_jd) / l_d.
  Eigen::MatrixXd S = (dL_dK.array() * gram.dk_dr2.array()).matrix();
  S += S.transpose().eval();
  const Eigen::VectorXd s_rows = S.rowwise().sum();
  Eigen::MatrixXd grad = Z.array().colwise() * s_rows.array();
  grad.noalias() -= S * Z;
  const Eigen::RowVectorXd inv_l =
      (-log_params_.head(input_dim_).array()).exp().matrix().transpose();
  grad.array().rowwise() *= 2.0 * inv_l.array();
  return grad;
}

std::unique_ptr<Kernel> Matern52Kernel::Clone() const {
  return std::make_unique<Matern52Kernel>(*this);
}

void Matern52Kernel::Profile(const Eigen::ArrayXXd& r2, double scale,
                             Eigen::MatrixXd* k, Eigen::MatrixXd* dk_dr2,
                             Eigen::MatrixXd* dk_dlog_scale) const {
  const Eigen::ArrayXXd sr = kSqrt5 * r2.sqrt();
  const Eigen::ArrayXXd e = (-sr).exp();
  *k = (scale * (1.0 + sr + (5.0 / 3.0) * r2) * e).matrix();
  if (dk_dr2 == nullptr && dk_dlog_scale == nullptr) return;
  // The gradients multiply by s e first (their rounding since the kernel's
  // first version: fitted hyperparameters stay the same bit for bit).
  const Eigen::ArrayXXd scaled_e = scale * e;
  if (dk_dlog_scale != nullptr) {
    *dk_dlog_scale = ((1.0 + sr + (5.0 / 3.0) * r2) * scaled_e).matrix();
  }
  // dphi/dr = -5/3 r (1 + sqrt5 r) e; divided by dr2/dr = 2r this is finite at
  // r = 0.
  if (dk_dr2 != nullptr) {
    *dk_dr2 = ((-5.0 / 6.0) * (1.0 + sr) * scaled_e).matrix();
  }
}

std::unique_ptr<Kernel> RbfKernel::Clone() const {
  return std::make_unique<RbfKernel>(*this);
}

void RbfKernel::Profile(const Eigen::ArrayXXd& r2, double scale,
                        Eigen::MatrixXd* k, Eigen::MatrixXd* dk_dr2,
                        Eigen::MatrixXd* dk_dlog_scale) const {
  *k = (scale * (-0.5 * r2).exp()).matrix();
  if (dk_dr2 != nullptr) *dk_dr2 = -0.5 * *k;
  if (dk_dlog_scale != nullptr) *dk_dlog_scale = *k;
}

absl::StatusOr<std::unique_ptr<Kernel>> CreateKernel(std::string_view name,
                                                     int input_dim) {
  if (input_dim < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("kernel input_dim must be >= 1, got ", input_dim));
  }
  if (name == "matern52") return std::make_unique<Matern52Kernel>(input_dim);
  if (name == "rbf") return std::make_unique<RbfKernel>(input_dim);
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown kernel '", std::string(name), "' (known: matern52, rbf)"));
}

std::vector<std::string> KernelNames() { return {"matern52", "rbf"}; }

}  // namespace metaopt::gp
