#include "core/surrogate/pipeline_forest.h"

#include <utility>

#include "core/common/status_macros.h"

namespace metaopt::surrogate {

absl::StatusOr<std::unique_ptr<const PipelineForest>> PipelineForest::Fit(
    std::shared_ptr<const space::EncodingLayout> layout,
    const Eigen::MatrixXd& X, const Eigen::VectorXd& y,
    const RandomForestOptions& options) {
  METAOPT_ASSIGN_OR_RETURN(
      std::unique_ptr<const RandomForest> forest,
      RandomForest::Fit(MarkInactive(*layout, X), y, options));
  return std::unique_ptr<const PipelineForest>(
      new PipelineForest(std::move(layout), std::move(forest)));
}

Eigen::MatrixXd PipelineForest::MarkInactive(
    const space::EncodingLayout& layout, const Eigen::MatrixXd& X) {
  Eigen::MatrixXd out = X;
  for (const space::BlockLayout& block : layout.blocks) {
    if (block.size == 0) continue;
    const int hot = layout.stages[block.stage].offset + block.algorithm;
    for (Eigen::Index i = 0; i < X.rows(); ++i) {
      if (X(i, hot) < 0.5)
        out.row(i).segment(block.offset, block.size).setConstant(-1.0);
    }
  }
  return out;
}

absl::StatusOr<gp::Prediction> PipelineForest::Predict(
    const Eigen::MatrixXd& X) const {
  return forest_->Predict(MarkInactive(*layout_, X));
}

absl::StatusOr<std::unique_ptr<const Surrogate>> PipelineForest::WithFantasies(
    const Eigen::MatrixXd& X) const {
  METAOPT_ASSIGN_OR_RETURN(std::unique_ptr<const Surrogate> forest,
                           forest_->WithFantasies(MarkInactive(*layout_, X)));
  return std::unique_ptr<const Surrogate>(
      new PipelineForest(layout_, std::move(forest)));
}

}  // namespace metaopt::surrogate
