// A surrogate plus a known prior mean: the inner surrogate models the
// residuals y - m(x) of a fixed function m (for example a meta-learned
// linear head on the model inputs), and predictions add m back. The
// variance is the inner surrogate's. Immutable and thread-safe, as
// Surrogate; `mean` must be thread-safe too.
#ifndef METAOPT_CORE_SURROGATE_PRIOR_MEAN_SURROGATE_H_
#define METAOPT_CORE_SURROGATE_PRIOR_MEAN_SURROGATE_H_

#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "core/surrogate/surrogate.h"

namespace metaopt::surrogate {

// m at each row of X; an error if X has the wrong number of columns.
using PriorMean =
    std::function<absl::StatusOr<Eigen::VectorXd>(const Eigen::MatrixXd& X)>;

class PriorMeanSurrogate final : public Surrogate {
 public:
  PriorMeanSurrogate(std::shared_ptr<const Surrogate> residuals,
                     PriorMean mean)
      : residuals_(std::move(residuals)), mean_(std::move(mean)) {}

  absl::StatusOr<gp::Prediction> Predict(
      const Eigen::MatrixXd& X) const override;
  // Fantasies of the residual model at its own mean: the same belief.
  absl::StatusOr<std::unique_ptr<const Surrogate>> WithFantasies(
      const Eigen::MatrixXd& X) const override;
  absl::StatusOr<std::optional<gp::Prediction>> PredictScreening(
      const Eigen::MatrixXd& X) const override;
  absl::StatusOr<std::optional<gp::Prediction>> PredictCatalogueScreening(
      const Eigen::MatrixXd& catalogue, const std::vector<int>& rows,
      gp::CatalogueKernelCache& cache) const override;

 private:
  // `prediction` with m(X) added to its mean.
  absl::StatusOr<gp::Prediction> Shifted(gp::Prediction prediction,
                                         const Eigen::MatrixXd& X) const;
  absl::StatusOr<std::optional<gp::Prediction>> Shifted(
      std::optional<gp::Prediction> prediction,
      const Eigen::MatrixXd& X) const;

  std::shared_ptr<const Surrogate> residuals_;
  PriorMean mean_;
};

}  // namespace metaopt::surrogate

#endif  // METAOPT_CORE_SURROGATE_PRIOR_MEAN_SURROGATE_H_
