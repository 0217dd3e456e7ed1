#include "core/surrogate/prior_mean_surrogate.h"

#include <memory>
#include <optional>
#include <vector>

#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"

namespace metaopt::surrogate {
namespace {

using ::metaopt::testing::IsOk;

// m(x) = 3 x0 - 1.
absl::StatusOr<Eigen::VectorXd> Line(const Eigen::MatrixXd& X) {
  return (3.0 * X.col(0).array() - 1.0).matrix().eval();
}

class PriorMeanSurrogateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    X_ = Eigen::MatrixXd(6, 1);
    X_ << 0.0, 0.2, 0.4, 0.6, 0.8, 1.0;
    residuals_ = Eigen::VectorXd(6);
    residuals_ << 0.1, -0.2, 0.05, 0.3, -0.1, 0.0;
    auto prior = gp::GaussianProcess::Create("matern52", 1);
    ASSERT_THAT(prior, IsOk());
    auto posterior = gp::Condition(*prior, X_, residuals_);
    ASSERT_THAT(posterior, IsOk());
    inner_ = std::make_shared<const GpSurrogate>(*std::move(posterior));
    shifted_ = std::make_unique<PriorMeanSurrogate>(inner_, Line);
  }

  Eigen::MatrixXd X_;
  Eigen::VectorXd residuals_;
  std::shared_ptr<const Surrogate> inner_;
  std::unique_ptr<PriorMeanSurrogate> shifted_;
};

TEST_F(PriorMeanSurrogateTest, PredictionsAddTheMeanToTheResidualModel) {
  Eigen::MatrixXd at(3, 1);
  at << 0.1, 0.5, 2.0;
  absl::StatusOr<gp::Prediction> inner = inner_->Predict(at);
  absl::StatusOr<gp::Prediction> outer = shifted_->Predict(at);
  ASSERT_THAT(inner, IsOk());
  ASSERT_THAT(outer, IsOk());
  for (int i = 0; i < 3; ++i) {
    EXPECT_DOUBLE_EQ(outer->mean[i], inner->mean[i] + 3 * at(i, 0) - 1);
    EXPECT_DOUBLE_EQ(outer->variance[i], inner->variance[i]);
  }
  // Far from the data the residual model reverts to its mean: the line.
  EXPECT_NEAR(outer->mean[2], 3 * 2.0 - 1, 0.35);
}

TEST_F(PriorMeanSurrogateTest, ScreeningIsShiftedAlike) {
  Eigen::MatrixXd at(2, 1);
  at << 0.3, 0.9;
  absl::StatusOr<std::optional<gp::Prediction>> inner =
      inner_->PredictScreening(at);
  absl::StatusOr<std::optional<gp::Prediction>> outer =
      shifted_->PredictScreening(at);
  ASSERT_THAT(inner, IsOk());
  ASSERT_THAT(outer, IsOk());
  ASSERT_EQ(inner->has_value(), outer->has_value());
  if (inner->has_value()) {
    for (int i = 0; i < 2; ++i) {
      EXPECT_DOUBLE_EQ((**outer).mean[i], (**inner).mean[i] + 3 * at(i, 0) - 1);
    }
  }
  gp::CatalogueKernelCache cache;
  absl::StatusOr<std::optional<gp::Prediction>> rows =
      shifted_->PredictCatalogueScreening(X_, {4, 1}, cache);
  ASSERT_THAT(rows, IsOk());
  if (rows->has_value()) {
    absl::StatusOr<gp::Prediction> exact = shifted_->Predict(RowsOf(X_, {4, 1}));
    ASSERT_THAT(exact, IsOk());
    EXPECT_NEAR((**rows).mean[0], exact->mean[0], 1e-9);
    EXPECT_NEAR((**rows).mean[1], exact->mean[1], 1e-9);
  }
}

TEST_F(PriorMeanSurrogateTest, FantasiesKeepTheMeanAndShrinkTheVariance) {
  Eigen::MatrixXd pending(1, 1);
  pending << 1.7;
  absl::StatusOr<std::unique_ptr<const Surrogate>> with =
      shifted_->WithFantasies(pending);
  ASSERT_THAT(with, IsOk());
  absl::StatusOr<gp::Prediction> before = shifted_->Predict(pending);
  absl::StatusOr<gp::Prediction> after = (*with)->Predict(pending);
  ASSERT_THAT(before, IsOk());
  ASSERT_THAT(after, IsOk());
  EXPECT_NEAR(after->mean[0], before->mean[0], 1e-9);
  EXPECT_LT(after->variance[0], 0.5 * before->variance[0]);
}

}  // namespace
}  // namespace metaopt::surrogate
