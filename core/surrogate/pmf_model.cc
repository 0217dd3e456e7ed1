#include "core/surrogate/pmf_model.h"

#include <cmath>
#include <string>
#include <utility>

#include "Eigen/Cholesky"
#include "Eigen/SVD"
#include "absl/strings/str_cat.h"
#include "core/common/status_macros.h"
#include "core/gp/kernel.h"

namespace metaopt::surrogate {
namespace {

constexpr double kLog2Pi = 1.8378770664093454835606594728112;

gp::RbfKernel MakeKernel(const PmfKernelParams& params) {
  gp::RbfKernel kernel(params.latent_dim());
  Eigen::VectorXd log_params(params.latent_dim() + 1);
  log_params << params.lengthscales().array().log().matrix(),
      std::log(params.signal_variance());
  // Finite by construction (softplus > 0); a failure would leave unit params.
  (void)kernel.set_log_params(log_params);
  return kernel;
}

const v1::Tensor* FindTensor(const v1::ModelArtifact& artifact,
                             const std::string& name) {
  for (const v1::Tensor& tensor : artifact.tensors()) {
    if (tensor.name() == name) return &tensor;
  }
  return nullptr;
}

void PutTensor(const std::string& name, std::vector<int64_t> shape,
               const double* values, int64_t size,
               v1::ModelArtifact* artifact) {
  v1::Tensor* tensor = nullptr;
  for (v1::Tensor& existing : *artifact->mutable_tensors()) {
    if (existing.name() == name) tensor = &existing;
  }
  if (tensor == nullptr) tensor = artifact->add_tensors();
  tensor->Clear();
  tensor->set_name(name);
  for (int64_t d : shape) tensor->add_shape(d);
  tensor->mutable_values()->Assign(values, values + size);
}

// The GP of the gp module with this kernel, noise w and constant mean 0. The
// noise is represented as floor + exp(log_noise) with floor = w / 1000.
absl::StatusOr<gp::GaussianProcess> MakeGp(const PmfKernelParams& params) {
  const double w = params.noise_variance();
  METAOPT_ASSIGN_OR_RETURN(
      gp::GaussianProcess process,
      gp::GaussianProcess::Create("rbf", params.latent_dim(), 1e-3 * w));
  Eigen::VectorXd h(params.latent_dim() + 3);
  h << params.lengthscales().array().log().matrix(),
      std::log(params.signal_variance()), std::log(w - 1e-3 * w), 0.0;
  METAOPT_RETURN_IF_ERROR(process.set_hyperparameters(h));
  return process;
}

}  // namespace

double Softplus(double u) {
  if (u > 30.0) return u;
  return std::log1p(std::exp(u));
}

double InverseSoftplus(double p) {
  if (p > 30.0) return p;
  return std::log(std::expm1(p));
}

double Sigmoid(double u) {
  if (u >= 0) return 1.0 / (1.0 + std::exp(-u));
  const double e = std::exp(u);
  return e / (1.0 + e);
}

PmfKernelParams PmfKernelParams::FromPositive(
    const Eigen::VectorXd& lengthscales, double signal_variance,
    double noise_variance) {
  PmfKernelParams params;
  params.raw_lengthscales.resize(lengthscales.size());
  for (Eigen::Index q = 0; q < lengthscales.size(); ++q) {
    params.raw_lengthscales[q] = InverseSoftplus(lengthscales[q]);
  }
  params.raw_signal_variance = InverseSoftplus(signal_variance);
  params.raw_noise_variance = InverseSoftplus(noise_variance);
  return params;
}

PmfKernelParams PmfKernelParams::FromRaw(
    const Eigen::Ref<const Eigen::VectorXd>& raw) {
  PmfKernelParams params;
  const Eigen::Index q = raw.size() - 2;
  params.raw_lengthscales = raw.head(q);
  params.raw_signal_variance = raw[q];
  params.raw_noise_variance = raw[q + 1];
  return params;
}

Eigen::VectorXd PmfKernelParams::Raw() const {
  Eigen::VectorXd raw(size());
  raw << raw_lengthscales, raw_signal_variance, raw_noise_variance;
  return raw;
}

Eigen::VectorXd PmfKernelParams::LogPositive() const {
  Eigen::VectorXd out(size());
  out << lengthscales().array().log().matrix(), std::log(signal_variance()),
      std::log(noise_variance());
  return out;
}

Eigen::VectorXd PmfKernelParams::lengthscales() const {
  return raw_lengthscales.unaryExpr([](double u) { return Softplus(u); });
}

double PmfKernelParams::signal_variance() const {
  return Softplus(raw_signal_variance);
}

double PmfKernelParams::noise_variance() const {
  return Softplus(raw_noise_variance);
}

absl::StatusOr<PmfNll> PmfNegativeLogLikelihood(const Eigen::MatrixXd& X,
                                                const Eigen::VectorXd& t,
                                                const PmfKernelParams& params,
                                                bool with_gradients) {
  if (X.rows() < 1 || X.rows() != t.size() || X.cols() != params.latent_dim()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "PMF likelihood: latents are ", X.rows(), " x ", X.cols(), ", ",
        t.size(), " targets, latent dimension ", params.latent_dim()));
  }
  if (!X.allFinite() || !t.allFinite() || !params.Raw().allFinite()) {
    return absl::InvalidArgumentError(
        "PMF likelihood: non-finite latents, targets or parameters");
  }
  const gp::RbfKernel kernel = MakeKernel(params);
  const double w = params.noise_variance();
  // K and, with gradients, what they need: computed once.
  gp::Kernel::Gram gram;
  if (with_gradients) {
    gram = kernel.TrainingGram(X);
  } else {
    gram.k = kernel.Matrix(X);
  }
  Eigen::MatrixXd C = std::move(gram.k);
  C.diagonal().array() += w;
  METAOPT_ASSIGN_OR_RETURN(gp::JitteredCholesky chol,
                           gp::CholeskyWithJitter(std::move(C)));
  const auto L = chol.L.triangularView<Eigen::Lower>();
  const auto Lt = chol.L.transpose().triangularView<Eigen::Upper>();
  Eigen::VectorXd alpha = L.solve(t);
  const double quad = alpha.squaredNorm();
  Lt.solveInPlace(alpha);
  PmfNll result;
  const double n = static_cast<double>(t.size());
  result.value = 0.5 * quad + chol.L.diagonal().array().log().sum() +
                 0.5 * n * kLog2Pi;
  if (!with_gradients) return result;

  // dNLL/dC = 0.5 (C^-1 - alpha alpha'); C^-1 from the factor.
  const Eigen::MatrixXd C_inv = gp::InverseFromCholesky(chol.L);
  Eigen::MatrixXd dL_dC = 0.5 * (C_inv - alpha * alpha.transpose());
  const Eigen::VectorXd kernel_grad = kernel.GradientHyper(gram, dL_dC);
  result.grad_log_params.resize(params.size());
  result.grad_log_params.head(params.latent_dim() + 1) = kernel_grad;
  // d/d log w = w tr(dL/dC).
  result.grad_log_params[params.latent_dim() + 1] = w * dL_dC.trace();
  result.grad_latents = kernel.GradientInputs(gram, dL_dC);
  return result;
}

Eigen::VectorXd RawGradient(const Eigen::VectorXd& grad_log_params,
                            const PmfKernelParams& params) {
  const Eigen::VectorXd raw = params.Raw();
  Eigen::VectorXd out(raw.size());
  for (Eigen::Index i = 0; i < raw.size(); ++i) {
    out[i] = grad_log_params[i] * Sigmoid(raw[i]) / Softplus(raw[i]);
  }
  return out;
}

absl::StatusOr<Eigen::MatrixXd> PcaLatents(const Eigen::MatrixXd& Y,
                                           int latent_dim) {
  if (Y.rows() < 1 || Y.cols() < 1 || latent_dim < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("PCA initialisation: matrix ", Y.rows(), " x ", Y.cols(),
                     ", latent dimension ", latent_dim));
  }
  Eigen::MatrixXd filled = Y;
  for (Eigen::Index d = 0; d < Y.cols(); ++d) {
    double sum = 0.0;
    int count = 0;
    for (Eigen::Index n = 0; n < Y.rows(); ++n) {
      const double v = Y(n, d);
      if (std::isnan(v)) continue;
      if (!std::isfinite(v)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "PCA initialisation: entry (", n, ", ", d, ") is infinite"));
      }
      sum += v;
      ++count;
    }
    const double mean = count > 0 ? sum / count : 0.0;
    for (Eigen::Index n = 0; n < Y.rows(); ++n) {
      // Imputed with the column mean, then centred: missing entries become 0.
      filled(n, d) = std::isnan(Y(n, d)) ? 0.0 : Y(n, d) - mean;
    }
    // Centre the column over all N rows (the imputed ones included).
    filled.col(d).array() -= filled.col(d).mean();
  }
  Eigen::BDCSVD<Eigen::MatrixXd> svd(filled, Eigen::ComputeThinU);
  const Eigen::VectorXd& s = svd.singularValues();
  const Eigen::Index rank = s.size();
  const double tolerance =
      (rank > 0 ? s[0] : 0.0) * 1e-10 * static_cast<double>(Y.rows());
  Eigen::MatrixXd latents = Eigen::MatrixXd::Zero(Y.rows(), latent_dim);
  for (Eigen::Index q = 0; q < std::min<Eigen::Index>(rank, latent_dim); ++q) {
    if (s[q] <= tolerance) break;
    latents.col(q) = svd.matrixU().col(q) * s[q];
  }
  return latents;
}

PmfModel::PmfModel(Eigen::MatrixXd latents, PmfKernelParams params,
                   double y_mean, double y_std)
    : latents_(std::move(latents)),
      params_(std::move(params)),
      y_mean_(y_mean),
      y_std_(y_std) {}

absl::StatusOr<PmfModel> PmfModel::Create(Eigen::MatrixXd latents,
                                          PmfKernelParams params,
                                          double y_mean, double y_std) {
  if (latents.rows() < 1 || latents.cols() < 1 ||
      latents.cols() != params.latent_dim()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "PMF model: latents are ", latents.rows(), " x ", latents.cols(),
        " for ", params.latent_dim(), " lengthscales"));
  }
  if (!latents.allFinite() || !params.Raw().allFinite() ||
      !std::isfinite(y_mean) || !std::isfinite(y_std) || y_std <= 0) {
    return absl::InvalidArgumentError(
        "PMF model: non-finite latents or parameters, or y_std <= 0");
  }
  return PmfModel(std::move(latents), std::move(params), y_mean, y_std);
}

absl::StatusOr<PmfModel> PmfModel::FromArtifact(
    const v1::ModelArtifact& artifact) {
  const v1::Tensor* latents = FindTensor(artifact, "latents");
  const v1::Tensor* lengthscales = FindTensor(artifact, "lengthscales");
  const v1::Tensor* signal = FindTensor(artifact, "signal_variance");
  const v1::Tensor* noise = FindTensor(artifact, "noise_variance");
  if (latents == nullptr || lengthscales == nullptr || signal == nullptr ||
      noise == nullptr) {
    return absl::InvalidArgumentError(
        "PMF artifact: tensors \"latents\", \"lengthscales\", "
        "\"signal_variance\" and \"noise_variance\" are required");
  }
  if (latents->shape_size() != 2 ||
      latents->shape(0) != artifact.catalogue_size() ||
      latents->shape(1) != lengthscales->values_size() ||
      signal->values_size() != 1 || noise->values_size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "PMF artifact: \"latents\" must be [catalogue size ",
        artifact.catalogue_size(), ", ", lengthscales->values_size(),
        "] with one signal and one noise variance"));
  }
  for (const v1::Tensor* t : {lengthscales, signal, noise}) {
    for (double v : t->values()) {
      if (!(v > 0)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "PMF artifact: \"", t->name(), "\" has a non-positive value"));
      }
    }
  }
  const auto y_mean = artifact.normalization().find("y_mean");
  const auto y_std = artifact.normalization().find("y_std");
  if (y_mean == artifact.normalization().end() ||
      y_std == artifact.normalization().end()) {
    return absl::InvalidArgumentError(
        "PMF artifact: normalization \"y_mean\" and \"y_std\" are required");
  }
  const Eigen::Index n = latents->shape(0);
  const Eigen::Index q = latents->shape(1);
  Eigen::MatrixXd X(n, q);
  for (Eigen::Index i = 0; i < n; ++i) {
    for (Eigen::Index j = 0; j < q; ++j) X(i, j) = latents->values(i * q + j);
  }
  const Eigen::Map<const Eigen::VectorXd> l(lengthscales->values().data(), q);
  return Create(std::move(X),
                PmfKernelParams::FromPositive(l, signal->values(0),
                                              noise->values(0)),
                y_mean->second, y_std->second);
}

void PmfModel::ToArtifact(v1::ModelArtifact* artifact) const {
  const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>
      rows = latents_;
  PutTensor("latents", {latents_.rows(), latents_.cols()}, rows.data(),
            rows.size(), artifact);
  const Eigen::VectorXd l = params_.lengthscales();
  PutTensor("lengthscales", {l.size()}, l.data(), l.size(), artifact);
  const double a = params_.signal_variance();
  const double w = params_.noise_variance();
  PutTensor("signal_variance", {1}, &a, 1, artifact);
  PutTensor("noise_variance", {1}, &w, 1, artifact);
  (*artifact->mutable_normalization())["y_mean"] = y_mean_;
  (*artifact->mutable_normalization())["y_std"] = y_std_;
  (*artifact->mutable_int_options())["latent_dim"] = latent_dim();
}

absl::StatusOr<PmfModel> PmfModel::WithParams(PmfKernelParams params) const {
  return Create(latents_, std::move(params), y_mean_, y_std_);
}

Eigen::MatrixXd PmfModel::Rows(const std::vector<int>& entries) const {
  Eigen::MatrixXd out(static_cast<Eigen::Index>(entries.size()), latent_dim());
  for (size_t i = 0; i < entries.size(); ++i) {
    out.row(static_cast<Eigen::Index>(i)) = latents_.row(entries[i]);
  }
  return out;
}

namespace {

absl::Status CheckEntries(const PmfModel& model,
                          const std::vector<int>& entries) {
  for (int e : entries) {
    if (e < 0 || e >= model.num_entries()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "PMF: catalogue index ", e, " is outside [0, ",
          model.num_entries(), ")"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<PmfSurrogate> PmfSurrogate::Create(
    std::shared_ptr<const PmfModel> model, const std::vector<int>& entries,
    const Eigen::VectorXd& losses) {
  if (model == nullptr) return absl::InvalidArgumentError("PMF: no model");
  if (static_cast<Eigen::Index>(entries.size()) != losses.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("PMF: ", entries.size(), " entries but ", losses.size(),
                     " losses"));
  }
  METAOPT_RETURN_IF_ERROR(CheckEntries(*model, entries));
  METAOPT_ASSIGN_OR_RETURN(gp::GaussianProcess process,
                           MakeGp(model->params()));
  gp::Standardization standardization;
  standardization.offset = model->y_mean();
  standardization.scale = model->y_std();
  METAOPT_ASSIGN_OR_RETURN(
      gp::GpPosterior posterior,
      gp::GpPosterior::Create(std::move(process), model->Rows(entries), losses,
                              standardization));
  return PmfSurrogate(std::move(model), std::move(posterior));
}

absl::StatusOr<gp::Prediction> PmfSurrogate::Predict(
    const Eigen::MatrixXd& X) const {
  return posterior_.Predict(X);
}

absl::StatusOr<gp::Prediction> PmfSurrogate::PredictEntries(
    const std::vector<int>& entries) const {
  METAOPT_RETURN_IF_ERROR(CheckEntries(*model_, entries));
  return posterior_.Predict(model_->Rows(entries));
}

absl::StatusOr<std::unique_ptr<const Surrogate>> PmfSurrogate::WithFantasies(
    const Eigen::MatrixXd& X) const {
  if (X.rows() == 0) {
    return std::unique_ptr<const Surrogate>(new PmfSurrogate(*this));
  }
  METAOPT_ASSIGN_OR_RETURN(gp::GpPosterior conditioned,
                           posterior_.WithFantasies(X));
  return std::unique_ptr<const Surrogate>(
      new PmfSurrogate(model_, std::move(conditioned)));
}

absl::StatusOr<PmfSurrogate> PmfSurrogate::WithFantasyEntries(
    const std::vector<int>& entries) const {
  METAOPT_RETURN_IF_ERROR(CheckEntries(*model_, entries));
  if (entries.empty()) return *this;
  METAOPT_ASSIGN_OR_RETURN(gp::GpPosterior conditioned,
                           posterior_.WithFantasies(model_->Rows(entries)));
  return PmfSurrogate(model_, std::move(conditioned));
}

}  // namespace metaopt::surrogate
