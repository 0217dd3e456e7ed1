#include "core/gp/catalogue_kernel_cache.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <type_traits>

namespace metaopt::gp {
namespace {

std::atomic<int64_t> process_bytes{0};
std::atomic<int64_t> process_budget_bytes{int64_t{256} << 20};

int64_t BytesOf(const std::vector<Eigen::VectorXd>& vectors) {
  int64_t bytes = 0;
  for (const Eigen::VectorXd& v : vectors) bytes += v.size() * sizeof(double);
  return bytes;
}

// Calls f(j, size) for the entries [begin, end) in blocks of
// size = std::integral_constant<int, 8> (held in registers by a caller that
// accumulates into a fixed-size array), then one at a time (size 1). A
// caller's operations per entry are the same for both sizes, so the blocks
// change no result.
template <typename F>
void InBlocksOfEight(Eigen::Index begin, Eigen::Index end, F&& f) {
  Eigen::Index j = begin;
  for (; j + 8 <= end; j += 8) f(j, std::integral_constant<int, 8>());
  for (; j < end; ++j) f(j, std::integral_constant<int, 1>());
}

template <int kSize>
using Block = Eigen::Array<double, kSize, 1>;

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

CatalogueKernelCache::Screen CatalogueKernelCache::Compute(
    const Kernel& kernel, const Eigen::MatrixXd& X,
    const Eigen::VectorXd& alpha, double noise, int points,
    const Eigen::MatrixXd& catalogue) {
  MutexLock lock(&mu_);
  const Eigen::Index N = catalogue.rows();
  const size_t n = static_cast<size_t>(X.rows());
  const size_t r = std::min(n, static_cast<size_t>(std::max(points, 0)));
  // Whether this call's values may stay: at most what the cache would hold
  // after it (every column and r solved rows) within the process budget.
  // Otherwise nothing is kept and nothing of size n x N is allocated: the
  // columns and solved rows live one chunk at a time (same values).
  const int64_t most_bytes =
      static_cast<int64_t>(sizeof(double)) *
      ((static_cast<int64_t>(n) + static_cast<int64_t>(r)) * N +
       (2 * static_cast<int64_t>(n) + N) * catalogue.cols() +
       static_cast<int64_t>(r) * static_cast<int64_t>(r + 1) / 2 +
       kernel.log_params().size());
  const bool keep =
      process_bytes.load() - bytes_ + most_bytes <= process_budget_bytes.load();
  if (!keep) ClearLocked();
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
  const size_t first_new_point = kept;
  if (kept < n) {
    const Eigen::MatrixXd scaled =
        kernel.DividedByLengthscales(X.bottomRows(n - kept));
    for (size_t i = kept; i < n; ++i) {
      inputs_.push_back(X.row(i).transpose());
      scaled_inputs_.push_back(scaled.row(i - kept).transpose());
      if (keep) columns_.emplace_back(N);
    }
  }
  // The factor of the first `points` training points, a row at a time
  // (each row depends on the rows before it alone).
  const size_t first_new_row = factor_rows_.size();
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
    factor_rows_.push_back(std::move(row));
    if (keep) solved_.emplace_back(N);
  }
  const size_t rows = factor_rows_.size();
  const size_t used = std::min(r, rows);
  // A chunk of catalogue rows at a time (in cache), training point by
  // training point in order: its column (computed when new), its term of the
  // mean, and for a new factor row L^-1 times its column; then the explained
  // variance. Every entry's operations and their order are those of a
  // whole-column pass (sums over training points and dimensions in order),
  // so chunks change nothing. Without `keep`, a column and the solved rows
  // live in the chunk buffers below, overwritten by the next chunk.
  constexpr Eigen::Index kChunk = 512;
  Eigen::VectorXd chunk_column;
  Eigen::MatrixXd chunk_solved;
  if (!keep) {
    chunk_column.resize(std::min(kChunk, N));
    chunk_solved.resize(std::min(kChunk, N), static_cast<Eigen::Index>(rows));
  }
  Screen screen;
  screen.mean.resize(N);
  screen.variance.resize(N);
  Eigen::VectorXd r2;
  for (Eigen::Index start = 0; start < N; start += kChunk) {
    const Eigen::Index c = std::min(kChunk, N - start);
    const auto column = [&](size_t i) {
      return keep ? columns_[i].data() + start : chunk_column.data();
    };
    const auto solved = [&](size_t i) {
      return keep ? solved_[i].data() + start
                  : chunk_solved.col(static_cast<Eigen::Index>(i)).data();
    };
    auto mean = screen.mean.segment(start, c).array();
    mean.setZero();
    for (size_t i = 0; i < n; ++i) {
      double* const k_i = column(i);
      if (i >= first_new_point) {
        // Squared distances to point i, summed over the dimensions in order.
        const Eigen::VectorXd& z = scaled_inputs_[i];
        r2.resize(c);
        InBlocksOfEight(0, c, [&](Eigen::Index j, auto size) {
          constexpr int k = decltype(size)::value;
          Block<k> sum = Block<k>::Zero();
          for (Eigen::Index d = 0; d < scaled_catalogue_.cols(); ++d) {
            sum += (scaled_catalogue_.col(d)
                        .template segment<k>(start + j)
                        .array() -
                    z[d])
                       .square();
          }
          r2.template segment<k>(j) = sum.matrix();
        });
        Eigen::Map<Eigen::VectorXd>(k_i, c) = kernel.FromSquaredDistances(r2);
      }
      mean += alpha[i] * Eigen::Map<const Eigen::ArrayXd>(k_i, c);
      if (i < first_new_row || i >= rows) continue;
      // Forward substitution, over the earlier rows in order.
      const Eigen::VectorXd& row = factor_rows_[i];
      double* const s_i = solved(i);
      InBlocksOfEight(0, c, [&](Eigen::Index j, auto size) {
        constexpr int k = decltype(size)::value;
        using Segment = Eigen::Map<const Block<k>>;
        Block<k> sum = Segment(k_i + j);
        for (size_t l = 0; l < i; ++l) sum -= row[l] * Segment(solved(l) + j);
        Eigen::Map<Block<k>>(s_i + j) = sum / row[i];
      });
    }
    InBlocksOfEight(0, c, [&](Eigen::Index j, auto size) {
      constexpr int k = decltype(size)::value;
      Block<k> explained = Block<k>::Zero();
      for (size_t i = 0; i < used; ++i) {
        explained += Eigen::Map<const Block<k>>(solved(i) + j).square();
      }
      screen.variance.template segment<k>(start + j) =
          (kernel.output_scale() - explained).matrix();
    });
  }
  if (!keep) {
    ClearLocked();
    return screen;
  }
  AccountLocked();
  if (process_bytes.load() > process_budget_bytes.load()) ClearLocked();
  return screen;
}

}  // namespace metaopt::gp
