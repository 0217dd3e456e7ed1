// DeepPipeModel::Posterior and the Surrogates it returns
// (deeppipe_surrogate.h): the GP posterior over embeddings, predictions with
// the mean head added back, screening and fantasies.
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "core/common/status_macros.h"
#include "core/surrogate/deeppipe_model.h"

namespace metaopt::surrogate {

absl::StatusOr<std::shared_ptr<const DeepPipeSurrogate>>
DeepPipeModel::Posterior(const Eigen::MatrixXd& X,
                         const Eigen::VectorXd& y) const {
  METAOPT_RETURN_IF_ERROR(ValidateInputs(X, "Posterior"));
  METAOPT_ASSIGN_OR_RETURN(Eigen::MatrixXd Z, Embed(X));
  const gp::Standardization standardization = TargetStandardization(y);
  // The GP models the residual of the mean head (in the study's units).
  Eigen::VectorXd residual = y;
  if (conditioned()) residual -= standardization.scale * MeanOfEmbeddings(Z);
  METAOPT_ASSIGN_OR_RETURN(
      gp::GpPosterior posterior,
      gp::GpPosterior::Create(gp_, std::move(Z), residual, standardization));
  return std::make_shared<const DeepPipeSurrogate>(
      std::make_shared<const DeepPipeModel>(*this), std::move(posterior));
}

absl::StatusOr<gp::Prediction> DeepPipeSurrogate::Predict(
    const Eigen::MatrixXd& X) const {
  METAOPT_ASSIGN_OR_RETURN(Eigen::MatrixXd Z, model_->Embed(X));
  return PredictEmbedded(Z);
}

absl::StatusOr<gp::Prediction> DeepPipeSurrogate::PredictEmbedded(
    const Eigen::MatrixXd& Z) const {
  METAOPT_ASSIGN_OR_RETURN(gp::Prediction prediction, posterior_.Predict(Z));
  if (model_->conditioned()) {
    prediction.mean +=
        posterior_.standardization().scale * model_->MeanOfEmbeddings(Z);
  }
  return prediction;
}

absl::StatusOr<std::optional<gp::Prediction>>
DeepPipeSurrogate::PredictEmbeddedScreening(const Eigen::MatrixXd& Z) const {
  const int points = ScreeningPoints(posterior_.num_points());
  if (points == 0) return std::nullopt;
  METAOPT_ASSIGN_OR_RETURN(gp::Prediction prediction,
                           posterior_.PredictWithVarianceBound(Z, points));
  if (model_->conditioned()) {
    prediction.mean +=
        posterior_.standardization().scale * model_->MeanOfEmbeddings(Z);
  }
  return prediction;
}

absl::StatusOr<std::optional<gp::Prediction>>
DeepPipeSurrogate::PredictSpaceScreening(const Eigen::MatrixXd& X) const {
  if (posterior_.num_points() < kLocalScreeningMinPoints) return std::nullopt;
  METAOPT_ASSIGN_OR_RETURN(Eigen::MatrixXd Z, model_->Embed(X));
  METAOPT_ASSIGN_OR_RETURN(
      gp::Prediction prediction,
      posterior_.PredictWithLocalVarianceBound(
          Z, kLocalScreeningNeighbors, ScreeningPoints(posterior_.num_points()),
          LocalScreeningShared(posterior_.num_points())));
  if (model_->conditioned()) {
    prediction.mean +=
        posterior_.standardization().scale * model_->MeanOfEmbeddings(Z);
  }
  return prediction;
}

absl::StatusOr<std::optional<gp::Prediction>>
DeepPipeSurrogate::PredictEmbeddedCatalogueScreening(
    const Eigen::MatrixXd& catalogue, const std::vector<int>& rows,
    gp::CatalogueKernelCache& cache) const {
  const int points = ScreeningPoints(posterior_.num_points());
  if (points == 0) return std::nullopt;
  METAOPT_ASSIGN_OR_RETURN(
      gp::Prediction prediction,
      posterior_.PredictWithVarianceBound(catalogue, rows, points, cache));
  if (model_->conditioned()) {
    prediction.mean += posterior_.standardization().scale *
                       model_->MeanOfEmbeddings(RowsOf(catalogue, rows));
  }
  return prediction;
}

absl::StatusOr<std::shared_ptr<const DeepPipeSurrogate>>
DeepPipeSurrogate::WithEmbeddedFantasies(const Eigen::MatrixXd& Z) const {
  if (Z.rows() == 0) {
    return std::make_shared<const DeepPipeSurrogate>(model_, posterior_);
  }
  // Fantasies take the posterior mean, so the residual GP conditions on its
  // own mean: the mean head's part needs no adjustment.
  METAOPT_ASSIGN_OR_RETURN(gp::GpPosterior conditioned,
                           posterior_.WithFantasies(Z));
  return std::make_shared<const DeepPipeSurrogate>(model_,
                                                   std::move(conditioned));
}

absl::StatusOr<std::unique_ptr<const Surrogate>>
DeepPipeEmbeddedSurrogate::WithFantasies(const Eigen::MatrixXd& Z) const {
  METAOPT_ASSIGN_OR_RETURN(std::shared_ptr<const DeepPipeSurrogate> conditioned,
                           surrogate_->WithEmbeddedFantasies(Z));
  return std::make_unique<const DeepPipeEmbeddedSurrogate>(
      std::move(conditioned));
}

absl::StatusOr<std::unique_ptr<const Surrogate>>
DeepPipeSurrogate::WithFantasies(const Eigen::MatrixXd& X) const {
  METAOPT_ASSIGN_OR_RETURN(Eigen::MatrixXd Z, model_->Embed(X));
  METAOPT_ASSIGN_OR_RETURN(std::shared_ptr<const DeepPipeSurrogate> conditioned,
                           WithEmbeddedFantasies(Z));
  return std::make_unique<const DeepPipeSurrogate>(*conditioned);
}

}  // namespace metaopt::surrogate
