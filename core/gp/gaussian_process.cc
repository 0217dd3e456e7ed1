#include "core/gp/gaussian_process.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <utility>

#include "Eigen/Cholesky"
#include "absl/strings/str_cat.h"
#include "core/common/parallel.h"
#include "core/common/status_macros.h"
#include "core/gp/lbfgs.h"

namespace metaopt::gp {
namespace {

constexpr double kLog2Pi = 1.8378770664093454836;
constexpr Eigen::Index kPredictBlock = GpPosterior::kPredictBlock;
// A Predict's triangular solves (points^2 x queries multiply-adds) above which
// its blocks spread over ComputeThreads(): about 1 ms of work (at n = 100 a
// Suggest was no faster on 2 threads; at 300 and 1,000 it is).
constexpr double kParallelPredictFlops = 3e7;

bool FactorOk(const Eigen::LLT<Eigen::MatrixXd>& llt) {
  if (llt.info() != Eigen::Success) return false;
  const auto diag = llt.matrixLLT().diagonal();
  return diag.allFinite() && (diag.array() > 0.0).all();
}

// Weak priors and box of FitOptions, in hyperparameter layout.
struct FitGeometry {
  Eigen::VectorXd lower;
  Eigen::VectorXd upper;
  double log_lengthscale_mean = 0.0;
};

FitGeometry MakeGeometry(const GaussianProcess& model,
                         const FitOptions& options) {
  const int dim = model.input_dim();
  const int p = model.num_hyperparameters();
  FitGeometry g;
  g.lower.resize(p);
  g.upper.resize(p);
  g.lower.head(dim).setConstant(std::log(options.min_lengthscale));
  g.upper.head(dim).setConstant(std::log(options.max_lengthscale));
  g.lower[dim] = std::log(options.min_output_scale);
  g.upper[dim] = std::log(options.max_output_scale);
  g.lower[model.noise_index()] = std::log(1e-9);
  g.upper[model.noise_index()] = std::log(options.max_noise_variance);
  g.lower[model.mean_index()] = -options.max_abs_mean;
  g.upper[model.mean_index()] = options.max_abs_mean;
  g.log_lengthscale_mean = std::log(options.lengthscale_prior_median *
                                    std::sqrt(static_cast<double>(dim)));
  return g;
}

// Negative log prior (up to a constant); adds its gradient into *grad.
double NegativeLogPrior(const Eigen::VectorXd& h, int dim,
                        const FitOptions& options, const FitGeometry& geometry,
                        Eigen::VectorXd* grad) {
  if (!options.use_priors) return 0.0;
  const double vl =
      options.lengthscale_prior_log_std * options.lengthscale_prior_log_std;
  const Eigen::ArrayXd dl = h.head(dim).array() - geometry.log_lengthscale_mean;
  double value = 0.5 * dl.square().sum() / vl;
  grad->head(dim).array() += dl / vl;
  const double vs =
      options.output_scale_prior_log_std * options.output_scale_prior_log_std;
  value += 0.5 * h[dim] * h[dim] / vs;
  (*grad)[dim] += h[dim] / vs;
  return value;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Cholesky and standardisation.

absl::StatusOr<JitteredCholesky> CholeskyWithJitter(Eigen::MatrixXd K) {
  // Only the lower triangle is read: callers may leave the upper one unset
  // (DeepPipe's kernel objective does), and its contents must not decide the
  // result.
  bool finite = true;
  for (Eigen::Index j = 0; j < K.cols() && finite; ++j) {
    finite = K.col(j).tail(K.rows() - j).allFinite();
  }
  if (!finite) {
    return absl::InternalError(
        "Cholesky: covariance matrix has non-finite entries");
  }
  JitteredCholesky out;
  if (K.rows() == 0) return out;
  Eigen::LLT<Eigen::MatrixXd> llt(K);
  if (FactorOk(llt)) {
    out.L = llt.matrixL();
    return out;
  }
  const double diag_mean = std::max(K.diagonal().cwiseAbs().mean(),
                                    std::numeric_limits<double>::min());
  double previous = 0.0;
  for (double rel = 1e-8; rel <= 1.0001e-2; rel *= 10.0) {
    const double jitter = rel * diag_mean;
    K.diagonal().array() += jitter - previous;
    previous = jitter;
    llt.compute(K);
    if (FactorOk(llt)) {
      out.L = llt.matrixL();
      out.jitter = jitter;
      return out;
    }
  }
  return absl::InternalError(
      absl::StrCat("Cholesky failed for a ", K.rows(), "x", K.cols(),
                   " covariance matrix even with jitter 1e-2 * mean diagonal (",
                   previous, ")"));
}

namespace {

// Below this size the blocked recursions below end in plain Eigen calls.
constexpr Eigen::Index kInverseBlock = 32;

// The lower triangle of lower-triangular M (strictly upper part zero) becomes
// that of M^-1: [A 0; B C]^-1 = [A^-1 0; -C^-1 B A^-1  C^-1].
template <typename Matrix>
void InvertLowerTriangularInPlace(Eigen::Ref<Matrix> M) {
  const Eigen::Index n = M.rows();
  if (n <= kInverseBlock) {
    Matrix inverse = Matrix::Identity(n, n);
    M.template triangularView<Eigen::Lower>().solveInPlace(inverse);
    M = inverse;
    return;
  }
  const Eigen::Index h = n / 2;
  InvertLowerTriangularInPlace<Matrix>(M.topLeftCorner(h, h));
  InvertLowerTriangularInPlace<Matrix>(M.bottomRightCorner(n - h, n - h));
  const Matrix c_inv_b = M.bottomRightCorner(n - h, n - h)
                             .template triangularView<Eigen::Lower>() *
                         M.bottomLeftCorner(n - h, h);
  const Matrix product =
      c_inv_b * M.topLeftCorner(h, h).template triangularView<Eigen::Lower>();
  M.bottomLeftCorner(n - h, h) = -product;
}

// The lower triangle of lower-triangular M becomes that of M' M:
// [A 0; B C]' [A 0; B C] = [A'A + B'B  .; C'B  C'C] (LAPACK's LAUUM order, so
// that each block is read before it is overwritten).
template <typename Matrix>
void LowerTransposeTimesSelfInPlace(Eigen::Ref<Matrix> M) {
  const Eigen::Index n = M.rows();
  if (n <= kInverseBlock) {
    const Matrix product =
        M.template triangularView<Eigen::Lower>().transpose() *
        M.template triangularView<Eigen::Lower>().toDenseMatrix();
    M.template triangularView<Eigen::Lower>() = product;
    return;
  }
  const Eigen::Index h = n / 2;
  LowerTransposeTimesSelfInPlace<Matrix>(M.topLeftCorner(h, h));
  M.topLeftCorner(h, h).template selfadjointView<Eigen::Lower>().rankUpdate(
      M.bottomLeftCorner(n - h, h).transpose());
  const Matrix ct_b = M.bottomRightCorner(n - h, n - h)
                          .template triangularView<Eigen::Lower>()
                          .transpose() *
                      M.bottomLeftCorner(n - h, h);
  M.bottomLeftCorner(n - h, h) = ct_b;
  LowerTransposeTimesSelfInPlace<Matrix>(M.bottomRightCorner(n - h, n - h));
}

template <typename Matrix>
Matrix InverseFromCholeskyImpl(const Matrix& L) {
  Matrix inverse = L.template triangularView<Eigen::Lower>();
  InvertLowerTriangularInPlace<Matrix>(inverse);
  LowerTransposeTimesSelfInPlace<Matrix>(inverse);
  inverse.template triangularView<Eigen::StrictlyUpper>() = inverse.transpose();
  return inverse;
}

}  // namespace

Eigen::MatrixXd InverseFromCholesky(const Eigen::MatrixXd& L) {
  return InverseFromCholeskyImpl(L);
}

Eigen::MatrixXf InverseFromCholesky(const Eigen::MatrixXf& L) {
  return InverseFromCholeskyImpl(L);
}

Standardization Standardization::FromTargets(const Eigen::VectorXd& y) {
  Standardization s;
  const Eigen::Index n = y.size();
  if (n == 0) return s;
  s.offset = y.mean();
  if (n > 1) {
    const double sd =
        std::sqrt((y.array() - s.offset).square().sum() / double(n - 1));
    if (std::isfinite(sd) && sd > 1e-8 * std::max(1.0, std::abs(s.offset))) {
      s.scale = sd;
    }
  }
  return s;
}

Eigen::VectorXd Standardization::Apply(const Eigen::VectorXd& y) const {
  return (y.array() - offset) / scale;
}

// ---------------------------------------------------------------------------------------------
// GaussianProcess.

GaussianProcess::GaussianProcess(std::unique_ptr<Kernel> kernel,
                                 double noise_floor)
    : kernel_(std::move(kernel)),
      noise_floor_(noise_floor),
      log_noise_(std::log(1e-3)) {}

GaussianProcess::GaussianProcess(const GaussianProcess& other)
    : kernel_(other.kernel_->Clone()),
      noise_floor_(other.noise_floor_),
      log_noise_(other.log_noise_),
      mean_(other.mean_) {}

GaussianProcess& GaussianProcess::operator=(const GaussianProcess& other) {
  if (this != &other) {
    kernel_ = other.kernel_->Clone();
    noise_floor_ = other.noise_floor_;
    log_noise_ = other.log_noise_;
    mean_ = other.mean_;
  }
  return *this;
}

absl::StatusOr<GaussianProcess> GaussianProcess::Create(
    std::string_view kernel_name, int input_dim, double noise_floor) {
  if (!(noise_floor > 0.0) || !std::isfinite(noise_floor)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "noise_floor must be positive and finite, got ", noise_floor));
  }
  METAOPT_ASSIGN_OR_RETURN(std::unique_ptr<Kernel> kernel,
                           CreateKernel(kernel_name, input_dim));
  Eigen::VectorXd p = Eigen::VectorXd::Zero(kernel->num_params());
  p.head(input_dim).setConstant(
      std::log(0.5 * std::sqrt(static_cast<double>(input_dim))));
  METAOPT_RETURN_IF_ERROR(kernel->set_log_params(p));
  return GaussianProcess(std::move(kernel), noise_floor);
}

Eigen::VectorXd GaussianProcess::hyperparameters() const {
  Eigen::VectorXd h(num_hyperparameters());
  h.head(kernel_->num_params()) = kernel_->log_params();
  h[noise_index()] = log_noise_;
  h[mean_index()] = mean_;
  return h;
}

absl::Status GaussianProcess::set_hyperparameters(
    const Eigen::Ref<const Eigen::VectorXd>& h) {
  if (h.size() != num_hyperparameters()) {
    return absl::InvalidArgumentError(
        absl::StrCat("GP: expected ", num_hyperparameters(),
                     " hyperparameters, got ", h.size()));
  }
  if (!h.allFinite()) {
    return absl::InvalidArgumentError("GP: hyperparameters must be finite");
  }
  METAOPT_RETURN_IF_ERROR(
      kernel_->set_log_params(h.head(kernel_->num_params())));
  log_noise_ = h[noise_index()];
  mean_ = h[mean_index()];
  return absl::OkStatus();
}

double GaussianProcess::noise_variance() const {
  return noise_floor_ + std::exp(log_noise_);
}

absl::Status GaussianProcess::ValidateData(const Eigen::MatrixXd& X,
                                           const Eigen::VectorXd* y,
                                           std::string_view what) const {
  if (X.cols() != input_dim()) {
    return absl::InvalidArgumentError(absl::StrCat(
        std::string(what), ": inputs have ", X.cols(), " columns, the GP has ",
        input_dim(), " input dimensions"));
  }
  if (y != nullptr && y->size() != X.rows()) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(what), ": ",
                                                   X.rows(), " input rows but ",
                                                   y->size(), " targets"));
  }
  if (!X.allFinite()) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(what), ": inputs contain NaN or infinity"));
  }
  if (y != nullptr && !y->allFinite()) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(what), ": targets contain NaN or infinity"));
  }
  return absl::OkStatus();
}

absl::StatusOr<NllResult> GaussianProcess::NegativeLogMarginalLikelihood(
    const Eigen::MatrixXd& X, const Eigen::VectorXd& y,
    bool with_input_gradient, bool float_inverse) const {
  METAOPT_RETURN_IF_ERROR(ValidateData(X, &y, "NegativeLogMarginalLikelihood"));
  const Eigen::Index n = X.rows();
  NllResult result;
  result.grad_hyper = Eigen::VectorXd::Zero(num_hyperparameters());
  if (with_input_gradient)
    result.grad_inputs = Eigen::MatrixXd::Zero(n, X.cols());
  result.grad_targets = Eigen::VectorXd::Zero(n);
  if (n == 0) return result;

  Kernel::Gram gram = kernel_->TrainingGram(X);
  Eigen::MatrixXd K = std::move(gram.k);
  K.diagonal().array() += noise_variance();
  METAOPT_ASSIGN_OR_RETURN(JitteredCholesky chol,
                           CholeskyWithJitter(std::move(K)));
  const auto L = chol.L.triangularView<Eigen::Lower>();
  const auto Lt = chol.L.transpose().triangularView<Eigen::Upper>();
  const Eigen::VectorXd r = y.array() - mean_;
  Eigen::VectorXd alpha = L.solve(r);
  Lt.solveInPlace(alpha);
  result.value = 0.5 * r.dot(alpha) + chol.L.diagonal().array().log().sum() +
                 0.5 * double(n) * kLog2Pi;

  // G = dNLL/dK = 0.5 (K^-1 - alpha alpha').
  Eigen::MatrixXd G =
      float_inverse ? Eigen::MatrixXd(InverseFromCholesky(
                                          Eigen::MatrixXf(chol.L.cast<float>()))
                                          .cast<double>())
                    : InverseFromCholesky(chol.L);
  // LOO (R&W Eq. 5.10-5.12): with c_i = [K^-1]_ii, the held-out mean error
  // is alpha_i / c_i and the variance 1 / c_i.
  for (Eigen::Index i = 0; i < n; ++i) {
    const double c = G(i, i);  // [K^-1]_ii, before alpha alpha' is taken off
    result.loo_nll += 0.5 * (kLog2Pi - std::log(c) + alpha[i] * alpha[i] / c);
  }
  G.noalias() -= alpha * alpha.transpose();
  G *= 0.5;

  const int kp = kernel_->num_params();
  result.grad_hyper.head(kp) = kernel_->GradientHyper(gram, G);
  result.grad_hyper[noise_index()] = G.trace() * std::exp(log_noise_);
  result.grad_hyper[mean_index()] = -alpha.sum();
  if (with_input_gradient)
    result.grad_inputs = kernel_->GradientInputs(gram, G);
  result.grad_targets = std::move(alpha);
  return result;
}

// ---------------------------------------------------------------------------------------------
// Fitting.

absl::StatusOr<FitReport> FitHyperparameters(const Eigen::MatrixXd& X,
                                             const Eigen::VectorXd& y,
                                             const FitOptions& options,
                                             GaussianProcess* model) {
  METAOPT_RETURN_IF_ERROR(model->ValidateData(X, &y, "FitHyperparameters"));
  if (options.num_starts < 1 || options.max_iterations < 0) {
    return absl::InvalidArgumentError(
        "FitOptions: num_starts must be >= 1 and max_iterations >= 0");
  }
  FitReport report;
  if (X.rows() == 0) return report;

  const int dim = model->input_dim();
  const FitGeometry geometry = MakeGeometry(*model, options);
  GaussianProcess work = *model;
  const ObjectiveFunction objective = [&](const Eigen::VectorXd& h,
                                          Eigen::VectorXd* grad) -> double {
    if (!work.set_hyperparameters(h).ok()) {
      return std::numeric_limits<double>::infinity();
    }
    absl::StatusOr<NllResult> nll = work.NegativeLogMarginalLikelihood(X, y);
    if (!nll.ok()) return std::numeric_limits<double>::infinity();
    *grad = nll->grad_hyper;
    return nll->value + NegativeLogPrior(h, dim, options, geometry, grad);
  };

  const absl::Time deadline = absl::Now() + options.time_budget;
  const Eigen::VectorXd h0 = model->hyperparameters()
                                 .cwiseMax(geometry.lower)
                                 .cwiseMin(geometry.upper);
  Eigen::VectorXd scratch(h0.size());
  report.initial_objective = objective(h0, &scratch);

  std::mt19937_64 rng(options.seed);
  std::normal_distribution<double> normal(0.0, options.restart_log_std);
  Eigen::VectorXd best_h = h0;
  double best_value = report.initial_objective;
  absl::Status last_error = absl::OkStatus();
  for (int start = 0; start < options.num_starts; ++start) {
    const absl::Duration remaining = deadline - absl::Now();
    if (remaining <= absl::ZeroDuration()) {
      report.time_budget_exhausted = true;
      break;
    }
    Eigen::VectorXd h = h0;
    if (start > 0) {
      for (int i = 0; i <= model->noise_index(); ++i) h[i] += normal(rng);
      h = h.cwiseMax(geometry.lower).cwiseMin(geometry.upper);
    }
    LbfgsOptions lbfgs;
    lbfgs.max_iterations = options.max_iterations;
    lbfgs.time_budget = remaining;
    lbfgs.lower = geometry.lower;
    lbfgs.upper = geometry.upper;
    lbfgs.gradient_tolerance = options.gradient_tolerance;
    lbfgs.relative_function_tolerance = options.relative_function_tolerance;
    absl::StatusOr<LbfgsResult> run = MinimizeLbfgs(objective, h, lbfgs);
    ++report.starts;
    if (!run.ok()) {  // Infeasible random start: skip it.
      last_error = run.status();
      continue;
    }
    report.iterations += run->iterations;
    report.evaluations += run->evaluations;
    if (run->termination == LbfgsTermination::kTimeBudget) {
      report.time_budget_exhausted = true;
    }
    if (run->value < best_value || !std::isfinite(best_value)) {
      best_value = run->value;
      best_h = run->x;
    }
  }
  if (!std::isfinite(best_value)) {
    return absl::InternalError(
        absl::StrCat("FitHyperparameters: no start produced a finite "
                     "objective; last error: ",
                     last_error.ToString()));
  }
  METAOPT_RETURN_IF_ERROR(model->set_hyperparameters(best_h));
  report.final_objective = best_value;
  return report;
}

// ---------------------------------------------------------------------------------------------
// GpPosterior.

GpPosterior::GpPosterior(GaussianProcess model, Eigen::MatrixXd X,
                         Eigen::VectorXd y, Standardization standardization,
                         JitteredCholesky chol)
    : model_(std::move(model)),
      X_(std::move(X)),
      y_(std::move(y)),
      standardization_(standardization),
      L_(std::move(chol.L)),
      jitter_(chol.jitter) {
  alpha_ = standardization_.Apply(y_).array() - model_.constant_mean();
  if (alpha_.size() > 0) {
    L_.triangularView<Eigen::Lower>().solveInPlace(alpha_);
    L_.transpose().triangularView<Eigen::Upper>().solveInPlace(alpha_);
  }
}

absl::StatusOr<GpPosterior> GpPosterior::Create(
    GaussianProcess model, Eigen::MatrixXd X, Eigen::VectorXd y,
    Standardization standardization) {
  METAOPT_RETURN_IF_ERROR(model.ValidateData(X, &y, "GpPosterior"));
  if (!(standardization.scale > 0.0) || !std::isfinite(standardization.scale) ||
      !std::isfinite(standardization.offset)) {
    return absl::InvalidArgumentError(
        "GpPosterior: standardization needs a finite offset and a positive "
        "scale");
  }
  Eigen::MatrixXd K = model.kernel().Matrix(X);
  K.diagonal().array() += model.noise_variance();
  METAOPT_ASSIGN_OR_RETURN(JitteredCholesky chol,
                           CholeskyWithJitter(std::move(K)));
  return GpPosterior(std::move(model), std::move(X), std::move(y),
                     standardization, std::move(chol));
}

absl::StatusOr<Prediction> GpPosterior::Predict(
    const Eigen::MatrixXd& Xq) const {
  return PredictWithVarianceBound(Xq, static_cast<int>(X_.rows()));
}

absl::StatusOr<Prediction> GpPosterior::PredictWithVarianceBound(
    const Eigen::MatrixXd& Xq, int points) const {
  METAOPT_RETURN_IF_ERROR(model_.ValidateData(Xq, nullptr, "Predict"));
  const Eigen::Index m = Xq.rows();
  const Eigen::Index r = std::clamp<Eigen::Index>(points, 0, X_.rows());
  const Kernel& kernel = model_.kernel();
  Prediction out;
  out.mean.resize(m);
  out.variance.resize(m);
  const bool exact = r == X_.rows();
  const auto L = L_.triangularView<Eigen::Lower>();
  const auto L_r = L_.topLeftCorner(r, r).triangularView<Eigen::Lower>();
  const int blocks = static_cast<int>((m + kPredictBlock - 1) / kPredictBlock);
  // Blocks write disjoint rows, so how they are spread over threads changes
  // no bit. Below kParallelPredictFlops the solve is shorter than starting
  // a thread.
  const double solve_flops = static_cast<double>(r) * r * m;
  const int threads =
      solve_flops >= kParallelPredictFlops ? ComputeThreads() : 1;
  ParallelFor(blocks, threads, [&](int block) {
    const Eigen::Index start = block * kPredictBlock;
    const Eigen::Index b = std::min(kPredictBlock, m - start);
    const auto Xb = Xq.middleRows(start, b);
    if (X_.rows() == 0) {
      out.mean.segment(start, b).setZero();
      out.variance.segment(start, b) = kernel.Diagonal(Xb);
      return;
    }
    // n x b: cross-covariances, then L^-1 times them.
    Eigen::MatrixXd V = kernel.Matrix(X_, Xb);
    out.mean.segment(start, b).noalias() = V.transpose() * alpha_;
    if (exact) {
      L.solveInPlace(V);
      out.variance.segment(start, b) =
          kernel.Diagonal(Xb) - V.colwise().squaredNorm().transpose();
    } else {
      auto top = V.topRows(r);
      L_r.solveInPlace(top);
      out.variance.segment(start, b) =
          kernel.Diagonal(Xb) - top.colwise().squaredNorm().transpose();
    }
  });
  const double scale = standardization_.scale;
  out.mean = ((out.mean.array() + model_.constant_mean()) * scale +
              standardization_.offset)
                 .matrix();
  out.variance = (out.variance.array().max(0.0) * (scale * scale)).matrix();
  return out;
}

absl::StatusOr<Prediction> GpPosterior::PredictWithVarianceBound(
    const Eigen::MatrixXd& catalogue, const std::vector<int>& rows, int points,
    CatalogueKernelCache& cache) const {
  METAOPT_RETURN_IF_ERROR(model_.ValidateData(catalogue, nullptr, "Predict"));
  for (int row : rows) {
    if (row < 0 || row >= catalogue.rows()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "catalogue row ", row, " outside [0, ", catalogue.rows(), ")"));
    }
  }
  const CatalogueKernelCache::Screen screen =
      cache.Compute(model_.kernel(), X_, alpha_,
                    model_.noise_variance() + jitter_, points, catalogue);
  const double scale = standardization_.scale;
  Prediction out;
  out.mean.resize(rows.size());
  out.variance.resize(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    out.mean[i] = (screen.mean[rows[i]] + model_.constant_mean()) * scale +
                  standardization_.offset;
    out.variance[i] = std::max(screen.variance[rows[i]], 0.0) * (scale * scale);
  }
  return out;
}

absl::StatusOr<GpPosterior> GpPosterior::ConditionOn(
    const Eigen::MatrixXd& X_new, const Eigen::VectorXd& y_new) const {
  METAOPT_RETURN_IF_ERROR(model_.ValidateData(X_new, &y_new, "ConditionOn"));
  const Eigen::Index n = X_.rows();
  const Eigen::Index k = X_new.rows();
  Eigen::MatrixXd X(n + k, X_.cols());
  X << X_, X_new;
  Eigen::VectorXd y(n + k);
  y << y_, y_new;
  if (n == 0 || k == 0) {
    return Create(model_, std::move(X), std::move(y), standardization_);
  }
  const Kernel& kernel = model_.kernel();
  // [L 0; B' C] with B = L^-1 K(X, X_new), C = chol(K_new - B'B).
  Eigen::MatrixXd B = kernel.Matrix(X_, X_new);
  L_.triangularView<Eigen::Lower>().solveInPlace(B);
  Eigen::MatrixXd S = kernel.Matrix(X_new);
  S.diagonal().array() += model_.noise_variance() + jitter_;
  S.noalias() -= B.transpose() * B;
  Eigen::LLT<Eigen::MatrixXd> llt(S);
  if (!FactorOk(
          llt)) {  // Lost definiteness (e.g. repeats at tiny noise): refactor.
    return Create(model_, std::move(X), std::move(y), standardization_);
  }
  JitteredCholesky chol;
  chol.jitter = jitter_;
  chol.L = Eigen::MatrixXd::Zero(n + k, n + k);
  chol.L.topLeftCorner(n, n) = L_;
  chol.L.bottomLeftCorner(k, n) = B.transpose();
  chol.L.bottomRightCorner(k, k) = llt.matrixL();
  return GpPosterior(model_, std::move(X), std::move(y), standardization_,
                     std::move(chol));
}

absl::StatusOr<GpPosterior> GpPosterior::Recondition(
    const Eigen::MatrixXd& X, const Eigen::VectorXd& y) const {
  METAOPT_RETURN_IF_ERROR(model_.ValidateData(X, &y, "Condition"));
  const Eigen::Index n = X.rows();
  Eigen::Index p = 0;
  const Eigen::Index shared = std::min<Eigen::Index>(n, X_.rows());
  while (p < shared && X.row(p) == X_.row(p)) ++p;
  if (jitter_ != 0.0 || p == 0 || 2 * p < n) return Condition(model_, X, y);
  const Eigen::Index k = n - p;
  JitteredCholesky chol;
  chol.L.resize(n, n);
  chol.L.topLeftCorner(p, p) = L_.topLeftCorner(p, p);  // upper part zero
  chol.L.topRightCorner(p, k).setZero();
  if (k > 0) {
    // [L_p 0; B' C] with B = L_p^-1 K(X_p, X_new), C = chol(K_new - B'B).
    const Kernel& kernel = model_.kernel();
    Eigen::MatrixXd B = kernel.Matrix(X.topRows(p), X.bottomRows(k));
    L_.topLeftCorner(p, p).triangularView<Eigen::Lower>().solveInPlace(B);
    Eigen::MatrixXd S = kernel.Matrix(X.bottomRows(k));
    S.diagonal().array() += model_.noise_variance();
    S.noalias() -= B.transpose() * B;
    Eigen::LLT<Eigen::MatrixXd> llt(S);
    if (!FactorOk(llt)) return Condition(model_, X, y);
    chol.L.bottomLeftCorner(k, p) = B.transpose();
    chol.L.bottomRightCorner(k, k) = llt.matrixL();
  }
  return GpPosterior(model_, X, y, Standardization::FromTargets(y),
                     std::move(chol));
}

absl::StatusOr<GpPosterior> GpPosterior::WithFantasies(
    const Eigen::MatrixXd& X) const {
  METAOPT_RETURN_IF_ERROR(model_.ValidateData(X, nullptr, "pending points"));
  if (X.rows() == 0) return *this;
  METAOPT_ASSIGN_OR_RETURN(Prediction prediction, Predict(X));
  return ConditionOn(X, prediction.mean);
}

double GpPosterior::noise_variance() const {
  return model_.noise_variance() * standardization_.scale *
         standardization_.scale;
}

absl::StatusOr<GpPosterior> Condition(const GaussianProcess& model,
                                      const Eigen::MatrixXd& X,
                                      const Eigen::VectorXd& y) {
  METAOPT_RETURN_IF_ERROR(model.ValidateData(X, &y, "Condition"));
  return GpPosterior::Create(model, X, y, Standardization::FromTargets(y));
}

absl::StatusOr<GpPosterior> Fit(const GaussianProcess& model,
                                const Eigen::MatrixXd& X,
                                const Eigen::VectorXd& y,
                                const FitOptions& options, FitReport* report) {
  METAOPT_RETURN_IF_ERROR(model.ValidateData(X, &y, "Fit"));
  const Standardization standardization = Standardization::FromTargets(y);
  GaussianProcess fitted = model;
  METAOPT_ASSIGN_OR_RETURN(
      FitReport fit_report,
      FitHyperparameters(X, standardization.Apply(y), options, &fitted));
  if (report != nullptr) *report = fit_report;
  return GpPosterior::Create(std::move(fitted), X, y, standardization);
}

}  // namespace metaopt::gp
