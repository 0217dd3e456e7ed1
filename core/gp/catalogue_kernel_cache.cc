#include "core/gp/catalogue_kernel_cache.h"

#include <algorithm>
#include <atomic>
#include <cmath>

namespace metaopt::gp {
namespace {

std::atomic<int64_t> process_bytes{0};
std::atomic<int64_t> process_budget_bytes{int64_t{256} << 20};

int64_t BytesOf(const std::vector<Eigen::VectorXd>& vectors) {
  int64_t bytes = 0;
  for (const Eigen::VectorXd& v : vectors) bytes += v.size() * sizeof(double);
  return bytes;
}

}  // namespace

CatalogueKernelCache::~CatalogueKernelCache() {
  MutexLock lock(&mu_);
  ClearLocked();
}

int64_t CatalogueKernelCache::bytes() const {
  MutexLock lock(&mu_);
  return bytes_;
}

int64_t CatalogueKernelCache::ProcessBytes() { return process_bytes.load(); }

int64_t CatalogueKernelCache::ProcessBudgetBytes() {
  return process_budget_bytes.load();
}

void CatalogueKernelCache::SetProcessBudgetBytes(int64_t bytes) {
  process_budget_bytes.store(std::max<int64_t>(0, bytes));
}

void CatalogueKernelCache::AccountLocked() {
  const int64_t bytes =
      BytesOf(inputs_) + BytesOf(scaled_inputs_) + BytesOf(columns_) +
      BytesOf(factor_rows_) + BytesOf(solved_) +
      (scaled_catalogue_.size() + log_params_.size()) * sizeof(double);
  process_bytes.fetch_add(bytes - bytes_);
  bytes_ = bytes;
}

void CatalogueKernelCache::TruncateLocked(size_t points) {
  if (inputs_.size() > points) {
    inputs_.resize(points);
    scaled_inputs_.resize(points);
    columns_.resize(points);
  }
  // A failed factor row belongs to the point after the factor's rows.
  if (factor_rows_.size() >= points) {
    factor_rows_.resize(points);
    solved_.resize(points);
    factor_failed_ = false;
  }
}

void CatalogueKernelCache::ClearLocked() {
  TruncateLocked(0);
  inputs_.shrink_to_fit();
  scaled_inputs_.shrink_to_fit();
  columns_.shrink_to_fit();
  factor_rows_.shrink_to_fit();
  solved_.shrink_to_fit();
  catalogue_data_ = nullptr;
  catalogue_rows_ = 0;
  catalogue_cols_ = 0;
  kernel_name_.clear();
  log_params_.resize(0);
  scaled_catalogue_.resize(0, 0);
  AccountLocked();
}

Eigen::VectorXd CatalogueKernelCache::CatalogueColumnLocked(
    const Kernel& kernel, const Eigen::VectorXd& z) const {
  // Squared differences summed over the dimensions in order: each entry is
  // computed alone (vectorised across rows), so it does not depend on the
  // other rows, as GEMM-expanded distances would.
  Eigen::VectorXd r2 = Eigen::VectorXd::Zero(scaled_catalogue_.rows());
  for (Eigen::Index d = 0; d < scaled_catalogue_.cols(); ++d) {
    r2.array() += (scaled_catalogue_.col(d).array() - z[d]).square();
  }
  return kernel.FromSquaredDistances(r2);
}

CatalogueKernelCache::Screen CatalogueKernelCache::Compute(
    const Kernel& kernel, const Eigen::MatrixXd& X,
    const Eigen::VectorXd& alpha, double noise, int points,
    const Eigen::MatrixXd& catalogue) {
  MutexLock lock(&mu_);
  const Eigen::Index N = catalogue.rows();
  const size_t n = static_cast<size_t>(X.rows());
  if (catalogue.data() != catalogue_data_ || N != catalogue_rows_ ||
      catalogue.cols() != catalogue_cols_ || kernel.name() != kernel_name_ ||
      kernel.log_params().size() != log_params_.size() ||
      kernel.log_params() != log_params_) {
    ClearLocked();
    catalogue_data_ = catalogue.data();
    catalogue_rows_ = N;
    catalogue_cols_ = catalogue.cols();
    kernel_name_ = std::string(kernel.name());
    log_params_ = kernel.log_params();
    scaled_catalogue_ = kernel.DividedByLengthscales(catalogue);
  }
  // The cached training points that are still the first ones, by value.
  size_t kept = 0;
  while (kept < inputs_.size() && kept < n &&
         (inputs_[kept].array() == X.row(kept).transpose().array()).all()) {
    ++kept;
  }
  TruncateLocked(kept);
  if (noise != noise_) {
    factor_rows_.clear();
    solved_.clear();
    factor_failed_ = false;
    noise_ = noise;
  }
  if (kept < n) {
    const Eigen::MatrixXd scaled =
        kernel.DividedByLengthscales(X.bottomRows(n - kept));
    for (size_t i = kept; i < n; ++i) {
      inputs_.push_back(X.row(i).transpose());
      scaled_inputs_.push_back(scaled.row(i - kept).transpose());
      columns_.push_back(CatalogueColumnLocked(kernel, scaled_inputs_.back()));
    }
  }
  // The factor of the first `points` training points, a row at a time
  // (each row depends on the rows before it alone), and L^-1 times their
  // columns.
  const size_t r = std::min(n, static_cast<size_t>(std::max(points, 0)));
  while (factor_rows_.size() < r && !factor_failed_) {
    const size_t i = factor_rows_.size();
    Eigen::VectorXd r2(i + 1);
    for (size_t l = 0; l <= i; ++l) {
      double sum = 0.0;
      for (Eigen::Index d = 0; d < X.cols(); ++d) {
        const double t = scaled_inputs_[l][d] - scaled_inputs_[i][d];
        sum += t * t;
      }
      r2[l] = sum;
    }
    const Eigen::VectorXd k = kernel.FromSquaredDistances(r2);
    Eigen::VectorXd row(i + 1);
    for (size_t j = 0; j < i; ++j) {
      double sum = k[j];
      for (size_t l = 0; l < j; ++l) sum -= row[l] * factor_rows_[j][l];
      row[j] = sum / factor_rows_[j][j];
    }
    double pivot = k[i] + noise;
    for (size_t l = 0; l < i; ++l) pivot -= row[l] * row[l];
    if (!(pivot > 0.0) || !std::isfinite(pivot)) {
      factor_failed_ = true;
      break;
    }
    row[i] = std::sqrt(pivot);
    Eigen::VectorXd solved = columns_[i];
    for (size_t l = 0; l < i; ++l) {
      solved.array() -= row[l] * solved_[l].array();
    }
    solved /= row[i];
    factor_rows_.push_back(std::move(row));
    solved_.push_back(std::move(solved));
  }
  Screen screen;
  screen.mean = Eigen::VectorXd::Zero(N);
  for (size_t i = 0; i < n; ++i) {
    screen.mean.array() += alpha[i] * columns_[i].array();
  }
  Eigen::VectorXd explained = Eigen::VectorXd::Zero(N);
  const size_t used = std::min(r, factor_rows_.size());
  for (size_t i = 0; i < used; ++i) {
    explained.array() += solved_[i].array().square();
  }
  screen.variance = (kernel.output_scale() - explained.array()).matrix();
  AccountLocked();
  if (process_bytes.load() > process_budget_bytes.load()) ClearLocked();
  return screen;
}

}  // namespace metaopt::gp
