#include "core/acquisition/acquisition_function.h"

#include "core/acquisition/acquisition.h"

namespace metaopt::acquisition {

absl::StatusOr<Eigen::VectorXd> LogExpectedImprovementFunction::Score(
    const gp::Prediction& prediction, const Eigen::MatrixXd& inputs) const {
  (void)inputs;
  return LogExpectedImprovement(prediction.mean, prediction.variance, best_);
}

}  // namespace metaopt::acquisition
