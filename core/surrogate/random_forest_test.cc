#include "core/surrogate/random_forest.h"

#include <cmath>

#include "core/space/random.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"

namespace metaopt::surrogate {
namespace {

// n points of a 2-D step function: 1 where x0 > 0.5, else 0; x1 is noise.
void StepData(int n, uint64_t seed, Eigen::MatrixXd* X, Eigen::VectorXd* y) {
  space::Rng rng(seed);
  X->resize(n, 2);
  y->resize(n);
  for (int i = 0; i < n; ++i) {
    (*X)(i, 0) = space::Uniform01(rng);
    (*X)(i, 1) = space::Uniform01(rng);
    (*y)[i] = (*X)(i, 0) > 0.5 ? 1.0 : 0.0;
  }
}

TEST(RandomForestTest, FitsAStepFunction) {
  Eigen::MatrixXd X;
  Eigen::VectorXd y;
  StepData(200, 1, &X, &y);
  METAOPT_ASSERT_OK_AND_ASSIGN(auto forest,
                               RandomForest::Fit(X, y, RandomForestOptions()));
  Eigen::MatrixXd Q(4, 2);
  Q << 0.1, 0.5, 0.4, 0.2, 0.6, 0.8, 0.9, 0.3;
  METAOPT_ASSERT_OK_AND_ASSIGN(gp::Prediction p, forest->Predict(Q));
  EXPECT_NEAR(p.mean[0], 0.0, 0.05);
  EXPECT_NEAR(p.mean[1], 0.0, 0.05);
  EXPECT_NEAR(p.mean[2], 1.0, 0.05);
  EXPECT_NEAR(p.mean[3], 1.0, 0.05);
  for (int i = 0; i < 4; ++i) EXPECT_LT(p.variance[i], 0.02) << i;
}

TEST(RandomForestTest, VarianceIsLargerAwayFromTheData) {
  // Data only in x0 < 0.3 and x0 > 0.7, with different levels there; the gap
  // is where the trees disagree on where the step lies.
  space::Rng rng(4);
  const int n = 60;
  Eigen::MatrixXd X(n, 1);
  Eigen::VectorXd y(n);
  for (int i = 0; i < n; ++i) {
    const double u = space::Uniform01(rng);
    X(i, 0) = i % 2 == 0 ? 0.3 * u : 0.7 + 0.3 * u;
    y[i] = (X(i, 0) < 0.5 ? 0.0 : 1.0) + 0.01 * space::StandardNormal(rng);
  }
  METAOPT_ASSERT_OK_AND_ASSIGN(auto forest,
                               RandomForest::Fit(X, y, RandomForestOptions()));
  Eigen::MatrixXd Q(3, 1);
  Q << 0.15, 0.5, 0.85;
  METAOPT_ASSERT_OK_AND_ASSIGN(gp::Prediction p, forest->Predict(Q));
  EXPECT_GT(p.variance[1], 10 * p.variance[0]);
  EXPECT_GT(p.variance[1], 10 * p.variance[2]);
  EXPECT_GT(p.variance[1], 0.01);
}

TEST(RandomForestTest, DeterministicGivenTheSeed) {
  Eigen::MatrixXd X;
  Eigen::VectorXd y;
  StepData(50, 2, &X, &y);
  y += 0.3 * X.col(1);
  RandomForestOptions options;
  options.seed = 17;
  METAOPT_ASSERT_OK_AND_ASSIGN(auto a, RandomForest::Fit(X, y, options));
  METAOPT_ASSERT_OK_AND_ASSIGN(auto b, RandomForest::Fit(X, y, options));
  options.seed = 18;
  METAOPT_ASSERT_OK_AND_ASSIGN(auto c, RandomForest::Fit(X, y, options));
  Eigen::MatrixXd Q = Eigen::MatrixXd::Random(30, 2).cwiseAbs();
  METAOPT_ASSERT_OK_AND_ASSIGN(gp::Prediction pa, a->Predict(Q));
  METAOPT_ASSERT_OK_AND_ASSIGN(gp::Prediction pb, b->Predict(Q));
  METAOPT_ASSERT_OK_AND_ASSIGN(gp::Prediction pc, c->Predict(Q));
  EXPECT_EQ(pa.mean, pb.mean);
  EXPECT_EQ(pa.variance, pb.variance);
  EXPECT_NE(pa.mean, pc.mean);
}

TEST(RandomForestTest, WithoutBootstrapOrRandomFeaturesTreesAgree) {
  Eigen::MatrixXd X;
  Eigen::VectorXd y;
  StepData(40, 3, &X, &y);
  RandomForestOptions options;
  options.bootstrap = false;
  options.max_features_ratio = 1.0;
  options.min_samples_leaf = 1;
  options.min_samples_split = 2;
  METAOPT_ASSERT_OK_AND_ASSIGN(auto forest, RandomForest::Fit(X, y, options));
  METAOPT_ASSERT_OK_AND_ASSIGN(gp::Prediction p, forest->Predict(X));
  // Every tree is the same fully grown tree: it interpolates, with no spread.
  for (int i = 0; i < X.rows(); ++i) {
    EXPECT_NEAR(p.mean[i], y[i], 1e-12);
    EXPECT_NEAR(p.variance[i], 0.0, 1e-12);
  }
}

TEST(RandomForestTest, FantasiesShrinkTheVarianceThere) {
  space::Rng rng(5);
  Eigen::MatrixXd X(30, 1);
  Eigen::VectorXd y(30);
  for (int i = 0; i < 30; ++i) {
    X(i, 0) = i % 2 == 0 ? 0.3 * space::Uniform01(rng)
                         : 0.7 + 0.3 * space::Uniform01(rng);
    y[i] = X(i, 0) < 0.5 ? 0.0 : 1.0;
  }
  METAOPT_ASSERT_OK_AND_ASSIGN(auto forest,
                               RandomForest::Fit(X, y, RandomForestOptions()));
  Eigen::MatrixXd pending(4, 1);
  pending << 0.49, 0.5, 0.5, 0.51;
  METAOPT_ASSERT_OK_AND_ASSIGN(auto fantasised, forest->WithFantasies(pending));
  Eigen::MatrixXd Q(1, 1);
  Q << 0.5;
  METAOPT_ASSERT_OK_AND_ASSIGN(gp::Prediction before, forest->Predict(Q));
  METAOPT_ASSERT_OK_AND_ASSIGN(gp::Prediction after, fantasised->Predict(Q));
  EXPECT_LT(after.variance[0], before.variance[0]);
  EXPECT_NEAR(after.mean[0], before.mean[0], 0.25);
}

TEST(RandomForestTest, RejectsBadInput) {
  Eigen::MatrixXd X(2, 1);
  X << 0, 1;
  Eigen::VectorXd y(3);
  y << 0, 1, 2;
  EXPECT_THAT(RandomForest::Fit(X, y, RandomForestOptions()),
              testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                ::testing::HasSubstr("3 targets")));
  EXPECT_THAT(RandomForest::Fit(Eigen::MatrixXd(0, 1), Eigen::VectorXd(0),
                                RandomForestOptions()),
              testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                ::testing::HasSubstr("no training rows")));
  RandomForestOptions bad;
  bad.num_trees = 0;
  EXPECT_THAT(RandomForest::Fit(X, y.head(2), bad),
              testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                ::testing::HasSubstr("num_trees")));
  METAOPT_ASSERT_OK_AND_ASSIGN(
      auto forest, RandomForest::Fit(X, y.head(2), RandomForestOptions()));
  EXPECT_THAT(forest->Predict(Eigen::MatrixXd(1, 2)),
              testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                ::testing::HasSubstr("columns")));
}

}  // namespace
}  // namespace metaopt::surrogate
