#include "core/surrogate/prior_mean_surrogate.h"

#include "absl/strings/str_cat.h"
#include "core/common/status_macros.h"

namespace metaopt::surrogate {

absl::StatusOr<gp::Prediction> PriorMeanSurrogate::Shifted(
    gp::Prediction prediction, const Eigen::MatrixXd& X) const {
  METAOPT_ASSIGN_OR_RETURN(Eigen::VectorXd m, mean_(X));
  if (m.size() != prediction.mean.size()) {
    return absl::InternalError(absl::StrCat("prior mean: ", m.size(),
                                            " values for ",
                                            prediction.mean.size(), " rows"));
  }
  prediction.mean += m;
  return prediction;
}

absl::StatusOr<std::optional<gp::Prediction>> PriorMeanSurrogate::Shifted(
    std::optional<gp::Prediction> prediction, const Eigen::MatrixXd& X) const {
  if (!prediction.has_value()) return std::nullopt;
  METAOPT_ASSIGN_OR_RETURN(gp::Prediction shifted,
                           Shifted(*std::move(prediction), X));
  return std::optional<gp::Prediction>(std::move(shifted));
}

absl::StatusOr<gp::Prediction> PriorMeanSurrogate::Predict(
    const Eigen::MatrixXd& X) const {
  METAOPT_ASSIGN_OR_RETURN(gp::Prediction p, residuals_->Predict(X));
  return Shifted(std::move(p), X);
}

absl::StatusOr<std::unique_ptr<const Surrogate>>
PriorMeanSurrogate::WithFantasies(const Eigen::MatrixXd& X) const {
  METAOPT_ASSIGN_OR_RETURN(std::unique_ptr<const Surrogate> with,
                           residuals_->WithFantasies(X));
  return std::unique_ptr<const Surrogate>(new PriorMeanSurrogate(
      std::shared_ptr<const Surrogate>(std::move(with)), mean_));
}

absl::StatusOr<std::optional<gp::Prediction>>
PriorMeanSurrogate::PredictScreening(const Eigen::MatrixXd& X) const {
  METAOPT_ASSIGN_OR_RETURN(std::optional<gp::Prediction> p,
                           residuals_->PredictScreening(X));
  return Shifted(std::move(p), X);
}

absl::StatusOr<std::optional<gp::Prediction>>
PriorMeanSurrogate::PredictCatalogueScreening(
    const Eigen::MatrixXd& catalogue, const std::vector<int>& rows,
    gp::CatalogueKernelCache& cache) const {
  METAOPT_ASSIGN_OR_RETURN(
      std::optional<gp::Prediction> p,
      residuals_->PredictCatalogueScreening(catalogue, rows, cache));
  if (!p.has_value()) return std::nullopt;
  return Shifted(std::move(p), RowsOf(catalogue, rows));
}

}  // namespace metaopt::surrogate
