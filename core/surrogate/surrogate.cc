#include "core/surrogate/surrogate.h"

#include "core/common/status_macros.h"

namespace metaopt::surrogate {

Eigen::MatrixXd RowsOf(const Eigen::MatrixXd& X, const std::vector<int>& rows) {
  Eigen::MatrixXd out(rows.size(), X.cols());
  for (size_t r = 0; r < rows.size(); ++r) out.row(r) = X.row(rows[r]);
  return out;
}

absl::StatusOr<std::optional<gp::Prediction>>
Surrogate::PredictCatalogueScreening(const Eigen::MatrixXd& catalogue,
                                     const std::vector<int>& rows,
                                     gp::CatalogueKernelCache& cache) const {
  (void)cache;
  return PredictScreening(RowsOf(catalogue, rows));
}

absl::StatusOr<gp::Prediction> GpSurrogate::Predict(
    const Eigen::MatrixXd& X) const {
  return posterior_.Predict(X);
}

absl::StatusOr<std::unique_ptr<const Surrogate>> GpSurrogate::WithFantasies(
    const Eigen::MatrixXd& X) const {
  if (X.rows() == 0) return std::make_unique<const GpSurrogate>(posterior_);
  METAOPT_ASSIGN_OR_RETURN(gp::GpPosterior conditioned,
                           posterior_.WithFantasies(X));
  return std::make_unique<const GpSurrogate>(std::move(conditioned));
}

absl::StatusOr<std::optional<gp::Prediction>> GpSurrogate::PredictScreening(
    const Eigen::MatrixXd& X) const {
  const int points = ScreeningPoints(posterior_.num_points());
  if (points == 0) return std::nullopt;
  return posterior_.PredictWithVarianceBound(X, points);
}

absl::StatusOr<std::optional<gp::Prediction>>
GpSurrogate::PredictCatalogueScreening(const Eigen::MatrixXd& catalogue,
                                       const std::vector<int>& rows,
                                       gp::CatalogueKernelCache& cache) const {
  const int points = ScreeningPoints(posterior_.num_points());
  if (points == 0) return std::nullopt;
  return posterior_.PredictWithVarianceBound(catalogue, rows, points, cache);
}

}  // namespace metaopt::surrogate
