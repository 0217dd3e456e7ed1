// PipelineForest: a RandomForest over space::Encoder encodings of pipelines
// that sets the parameters of unchosen algorithms to -1 instead of 0, so they
// cannot collide with real values at the bottom of a range (Mosaic's
// surrogate).
#ifndef METAOPT_CORE_SURROGATE_PIPELINE_FOREST_H_
#define METAOPT_CORE_SURROGATE_PIPELINE_FOREST_H_

#include <memory>

#include "Eigen/Core"
#include "absl/status/statusor.h"
#include "core/space/encoding.h"
#include "core/surrogate/random_forest.h"
#include "core/surrogate/surrogate.h"

namespace metaopt::surrogate {

// Immutable and thread-safe.
class PipelineForest final : public Surrogate {
 public:
  // Fits a RandomForest on MarkInactive(X) and y. INVALID_ARGUMENT as
  // RandomForest::Fit.
  static absl::StatusOr<std::unique_ptr<const PipelineForest>> Fit(
      std::shared_ptr<const space::EncodingLayout> layout,
      const Eigen::MatrixXd& X, const Eigen::VectorXd& y,
      const RandomForestOptions& options);

  // Rows of X (encodings under `layout`) with the blocks of unchosen
  // algorithms set to -1.
  static Eigen::MatrixXd MarkInactive(const space::EncodingLayout& layout,
                                      const Eigen::MatrixXd& X);

  absl::StatusOr<gp::Prediction> Predict(
      const Eigen::MatrixXd& X) const override;
  // The forest's kriging-believer refit (RandomForest::WithFantasies).
  absl::StatusOr<std::unique_ptr<const Surrogate>> WithFantasies(
      const Eigen::MatrixXd& X) const override;

 private:
  PipelineForest(std::shared_ptr<const space::EncodingLayout> layout,
                 std::unique_ptr<const Surrogate> forest)
      : layout_(std::move(layout)), forest_(std::move(forest)) {}

  std::shared_ptr<const space::EncodingLayout> layout_;
  std::unique_ptr<const Surrogate> forest_;
};

}  // namespace metaopt::surrogate

#endif  // METAOPT_CORE_SURROGATE_PIPELINE_FOREST_H_
