// CatalogueKernelCache: the kernel between a GP's training points and the
// rows of a fixed query matrix (a study's candidate catalogue), kept from one
// screen of the catalogue to the next.
//
// Screening a catalogue of N rows (GpPosterior::PredictWithVarianceBound)
// needs the n x N cross-covariance for the exact means: 5 * 10^5 kernel
// evaluations at n = 100, N = 5,000, most of a Suggest. Between two Suggests
// of a study the training points usually grow by one observation and the
// hyperparameters stay (they are refitted on a schedule), so the cache keeps
// one column of N kernel values per training point and computes only the
// columns of points it has not seen, plus, for the variance bound, the
// factor of the first `points` training points and L^-1 times their columns.
//
// Every value it returns is a function of its arguments alone, never of
// what the cache held before: each column is computed by the same
// operations whatever else is cached (squared differences summed over the
// dimensions in order, the kernel's vectorised profile of one column),
// training points are matched by value (a prefix of the training rows equal
// to the cached rows bit for bit), and the sums over training points run in
// their order. So a cached screen equals the screen of an empty cache bit for
// bit: a restarted server suggests what the running one would.
//
// Memory: (n + points) * N doubles plus the scaled catalogue (40 MB at n =
// 1,000, N = 5,000). All caches of the process together hold at most
// ProcessBudgetBytes(); a call whose values could exceed it keeps nothing
// and computes its columns a chunk of rows at a time, without n x N
// temporaries (the next call recomputes, with the same results).
//
// Thread-safe: calls on one cache are serialised.
#ifndef METAOPT_CORE_GP_CATALOGUE_KERNEL_CACHE_H_
#define METAOPT_CORE_GP_CATALOGUE_KERNEL_CACHE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "Eigen/Core"
#include "core/common/mutex.h"
#include "core/gp/kernel.h"

namespace metaopt::gp {

class CatalogueKernelCache {
 public:
  // Mean and variance bound of every catalogue row, in model units before the
  // GP's constant mean and standardisation.
  struct Screen {
    // sum_i alpha_i k(x_i, q_j), over the training points in order.
    Eigen::VectorXd mean;
    // k(q_j, q_j) - |L_r^-1 k_r(q_j)|^2: the latent variance given only the
    // first r training points, r = `points` (fewer if the factor of those
    // points, with the noise added, loses definiteness at a point: then the
    // points before it). Conditioning on fewer points never lowers a
    // variance, so this bounds the exact one from above (up to rounding).
    Eigen::VectorXd variance;
  };

  CatalogueKernelCache() = default;
  ~CatalogueKernelCache();
  CatalogueKernelCache(const CatalogueKernelCache&) = delete;
  CatalogueKernelCache& operator=(const CatalogueKernelCache&) = delete;

  // The screen of every row of `catalogue` (N x D, the same matrix, unchanged,
  // at every call for the cache to be reused) for a GP with `kernel`
  // conditioned on `X` (n x D), alpha = K^-1 (y - m) (n entries) and diagonal
  // noise `noise` (noise variance plus jitter, model units).
  Screen Compute(const Kernel& kernel, const Eigen::MatrixXd& X,
                 const Eigen::VectorXd& alpha, double noise, int points,
                 const Eigen::MatrixXd& catalogue);

  // Bytes this cache holds.
  int64_t bytes() const;

  // Bytes all caches of the process hold, and their bound (default 256 MiB;
  // 0 keeps nothing between calls).
  static int64_t ProcessBytes();
  static int64_t ProcessBudgetBytes();
  static void SetProcessBudgetBytes(int64_t bytes);

 private:
  // Drops everything cached from training point `points` on (every point
  // and the factor when 0).
  void TruncateLocked(size_t points) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ClearLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void AccountLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable Mutex mu_;
  // The catalogue and kernel the cached values belong to.
  const double* catalogue_data_ ABSL_GUARDED_BY(mu_) = nullptr;
  Eigen::Index catalogue_rows_ ABSL_GUARDED_BY(mu_) = 0;
  Eigen::Index catalogue_cols_ ABSL_GUARDED_BY(mu_) = 0;
  std::string kernel_name_ ABSL_GUARDED_BY(mu_);
  Eigen::VectorXd log_params_ ABSL_GUARDED_BY(mu_);
  // The catalogue divided by the lengthscales (N x D).
  Eigen::MatrixXd scaled_catalogue_ ABSL_GUARDED_BY(mu_);
  // Per cached training point i: its input row, its scaled input, and its
  // kernel values against the catalogue (column i of the cross-covariance).
  std::vector<Eigen::VectorXd> inputs_ ABSL_GUARDED_BY(mu_);
  std::vector<Eigen::VectorXd> scaled_inputs_ ABSL_GUARDED_BY(mu_);
  std::vector<Eigen::VectorXd> columns_ ABSL_GUARDED_BY(mu_);
  // The factor of the first factor_rows_.size() training points with `noise_`
  // added (row i: L(i, 0..i)), and L^-1 times their columns (solved_[i]);
  // factor_failed_: the next point's pivot was not positive (the factor
  // stops there).
  double noise_ ABSL_GUARDED_BY(mu_) = 0.0;
  std::vector<Eigen::VectorXd> factor_rows_ ABSL_GUARDED_BY(mu_);
  std::vector<Eigen::VectorXd> solved_ ABSL_GUARDED_BY(mu_);
  bool factor_failed_ ABSL_GUARDED_BY(mu_) = false;
  int64_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace metaopt::gp

#endif  // METAOPT_CORE_GP_CATALOGUE_KERNEL_CACHE_H_
