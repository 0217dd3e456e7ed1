// Surrogate: a fitted probabilistic model of the objective over encoded
// configurations.
#ifndef METAOPT_CORE_SURROGATE_SURROGATE_H_
#define METAOPT_CORE_SURROGATE_SURROGATE_H_

#include <memory>
#include <optional>
#include <vector>

#include "Eigen/Core"
#include "absl/status/statusor.h"
#include "core/gp/gaussian_process.h"

namespace metaopt::surrogate {

// A fitted model of an objective to MINIMISE (callers negate maximised
// objectives), over configurations encoded by space::Encoder (rows of X).
// Immutable and thread-safe: every method is const and keeps no caches.
class Surrogate {
 public:
  virtual ~Surrogate() = default;

  // Posterior mean and latent variance at each row of X, in objective units.
  virtual absl::StatusOr<gp::Prediction> Predict(
      const Eigen::MatrixXd& X) const = 0;

  // The model after also "observing" its own posterior mean at the rows of X
  // (kriging-believer fantasies for pending trials): the mean is unchanged, the
  // variance shrinks around X.
  virtual absl::StatusOr<std::unique_ptr<const Surrogate>> WithFantasies(
      const Eigen::MatrixXd& X) const = 0;

  // For ranking many candidates: the exact posterior mean and an upper bound
  // on the latent variance at each row, cheaper than Predict; nullopt (the
  // default) when the model has no bound cheaper than Predict itself.
  virtual absl::StatusOr<std::optional<gp::Prediction>> PredictScreening(
      const Eigen::MatrixXd& X) const {
    (void)X;
    return std::nullopt;
  }

  // PredictScreening of the rows `rows` of `catalogue` (a study's encoded
  // catalogue: the same matrix, unchanged, at every call), for a model that
  // may keep values from one such call to the next in `cache` (one per
  // catalogue, thread-safe): the same mean and bound up to rounding, each a
  // function of the arguments alone, never of what the cache held. The
  // default screens RowsOf(catalogue, rows) and keeps nothing.
  virtual absl::StatusOr<std::optional<gp::Prediction>>
  PredictCatalogueScreening(const Eigen::MatrixXd& catalogue,
                            const std::vector<int>& rows,
                            gp::CatalogueKernelCache& cache) const;
};

// The rows `rows` of X, in their order.
Eigen::MatrixXd RowsOf(const Eigen::MatrixXd& X, const std::vector<int>& rows);

// GP surrogates screen with the variance given the first ScreeningPoints(n)
// of their n observations (GpPosterior::PredictWithVarianceBound): 128 from
// 256 observations on, n / 4 from kScreeningMinPoints on (exact variances of
// every candidate cost O(n^2) each against O(ScreeningPoints(n)^2)), and not
// below (0: score every candidate exactly).
inline constexpr int kScreeningMinPoints = 64;
inline int ScreeningPoints(int n) {
  if (n < kScreeningMinPoints) return 0;
  return n >= 256 ? 128 : n / 4;
}

// A Surrogate backed by an exact GP posterior over the encoded inputs (or over
// any fixed feature map applied before Predict).
class GpSurrogate final : public Surrogate {
 public:
  explicit GpSurrogate(gp::GpPosterior posterior)
      : posterior_(std::move(posterior)) {}

  absl::StatusOr<gp::Prediction> Predict(
      const Eigen::MatrixXd& X) const override;
  absl::StatusOr<std::unique_ptr<const Surrogate>> WithFantasies(
      const Eigen::MatrixXd& X) const override;
  absl::StatusOr<std::optional<gp::Prediction>> PredictScreening(
      const Eigen::MatrixXd& X) const override;
  absl::StatusOr<std::optional<gp::Prediction>> PredictCatalogueScreening(
      const Eigen::MatrixXd& catalogue, const std::vector<int>& rows,
      gp::CatalogueKernelCache& cache) const override;

  const gp::GpPosterior& posterior() const { return posterior_; }

 private:
  gp::GpPosterior posterior_;
};

}  // namespace metaopt::surrogate

#endif  // METAOPT_CORE_SURROGATE_SURROGATE_H_
