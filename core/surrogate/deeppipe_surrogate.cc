// DeepPipeModel::Posterior and the Surrogates it returns
// (deeppipe_surrogate.h): the GP posterior over embeddings, predictions with
// the mean head added back, screening and fantasies.
#include <algorithm>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "core/common/status_macros.h"
#include "core/gp/kernel.h"
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
  const Eigen::Index m = X.rows();
  // A flat network (no encoders: FSBO's) embeds a large query (a catalogue
  // whose network a fine-tune changed) in blocks of rows, in cache, instead
  // of whole m x width temporaries per layer, and predicts each block as
  // PredictEmbedded of the whole query would, bit for bit:
  // - the embedding: a block never has a single row (Eigen's matrix-vector
  //   product rounds otherwise than its matrix product, which gives a row
  //   the same value in any block);
  // - the GP: a block starts at a multiple of its prediction block and is one
  //   too, or ends the query (gp::GpPosterior::kPredictBlock), and is
  //   predicted with padding rows, so that every column of the block has the
  //   memory alignment it has in the whole query (the kernel centres
  //   each prediction block by its column means, a vectorised sum whose
  //   rounding follows the alignment).
  // With encoders a block could leave an algorithm one row: those embed whole.
  if (model_->architecture().encoder_layers > 0 || m <= kEmbedBlock + 1) {
    METAOPT_ASSIGN_OR_RETURN(Eigen::MatrixXd Z, model_->Embed(X));
    return PredictEmbedded(Z);
  }
  static_assert(kEmbedBlock % gp::GpPosterior::kPredictBlock == 0);
  gp::Prediction out;
  out.mean.resize(m);
  out.variance.resize(m);
  Eigen::MatrixXd Z;
  for (Eigen::Index start = 0, b = 0; start < m; start += b) {
    b = std::min(kEmbedBlock, m - start);
    if (m - start - b == 1) ++b;  // The last row joins this block.
    METAOPT_ASSIGN_OR_RETURN(Z, model_->Embed(X.middleRows(start, b)));
    // Rows up to b + pad = m modulo gp::kSimdDoubles (start is a multiple
    // of it already): each column of Z then starts where it does in the
    // whole query, modulo a vector register.
    const Eigen::Index pad =
        ((m - b) % gp::kSimdDoubles + gp::kSimdDoubles) % gp::kSimdDoubles;
    if (pad > 0) {
      Z.conservativeResize(b + pad, Eigen::NoChange);
      for (Eigen::Index r = b; r < b + pad; ++r) Z.row(r) = Z.row(b - 1);
    }
    METAOPT_ASSIGN_OR_RETURN(gp::Prediction block, PredictEmbedded(Z));
    out.mean.segment(start, b) = block.mean.head(b);
    out.variance.segment(start, b) = block.variance.head(b);
  }
  return out;
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
