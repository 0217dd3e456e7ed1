#include "core/gp/gaussian_process.h"

#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"

namespace metaopt::gp {
namespace {

using ::metaopt::testing::StatusIs;
using ::testing::HasSubstr;

constexpr double kPi = 3.14159265358979323846;

Eigen::MatrixXd RandomMatrix(int rows, int cols, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  Eigen::MatrixXd m(rows, cols);
  for (int j = 0; j < cols; ++j) {
    for (int i = 0; i < rows; ++i) m(i, j) = u(rng);
  }
  return m;
}

GaussianProcess MakeGp(const std::string& kernel, int dim,
                       const Eigen::VectorXd& h) {
  auto gp = GaussianProcess::Create(kernel, dim);
  EXPECT_TRUE(gp.ok()) << gp.status();
  EXPECT_TRUE(gp->set_hyperparameters(h).ok());
  return std::move(gp).value();
}

// ---- The hand-computed 1-D case: Matérn-5/2, three points, fixed
// hyperparameters. ----------

constexpr double kL = 0.4, kS = 1.3, kNoise = 0.01, kMean = 0.2;

double Matern(double a, double b) {
  const double r = std::abs(a - b) / kL;
  const double s5 = std::sqrt(5.0);
  return kS * (1 + s5 * r + 5.0 / 3.0 * r * r) * std::exp(-s5 * r);
}

// Inverse and determinant of a 3x3 matrix by cofactors, independent of Eigen's
// factorisations.
double Inverse3(const double a[3][3], double inv[3][3]) {
  const double c00 = a[1][1] * a[2][2] - a[1][2] * a[2][1];
  const double c01 = a[1][2] * a[2][0] - a[1][0] * a[2][2];
  const double c02 = a[1][0] * a[2][1] - a[1][1] * a[2][0];
  const double det = a[0][0] * c00 + a[0][1] * c01 + a[0][2] * c02;
  inv[0][0] = c00 / det;
  inv[1][0] = c01 / det;
  inv[2][0] = c02 / det;
  inv[0][1] = (a[0][2] * a[2][1] - a[0][1] * a[2][2]) / det;
  inv[1][1] = (a[0][0] * a[2][2] - a[0][2] * a[2][0]) / det;
  inv[2][1] = (a[0][1] * a[2][0] - a[0][0] * a[2][1]) / det;
  inv[0][2] = (a[0][1] * a[1][2] - a[0][2] * a[1][1]) / det;
  inv[1][2] = (a[0][2] * a[1][0] - a[0][0] * a[1][2]) / det;
  inv[2][2] = (a[0][0] * a[1][1] - a[0][1] * a[1][0]) / det;
  return det;
}

class ThreePointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Eigen::VectorXd h(4);
    h << std::log(kL), std::log(kS), std::log(kNoise - 1e-6), kMean;
    gp_ = MakeGp("matern52", 1, h);
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 3; ++j) {
        k_[i][j] = Matern(x_[i], x_[j]) + (i == j ? kNoise : 0.0);
      }
    }
    det_ = Inverse3(k_, kinv_);
  }

  // Posterior mean and latent variance at q, in model units.
  void Expected(double q, double* mean, double* var) const {
    double ks[3], w[3] = {0, 0, 0}, v[3] = {0, 0, 0};
    for (int i = 0; i < 3; ++i) ks[i] = Matern(q, x_[i]);
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 3; ++j) {
        w[i] += kinv_[i][j] * (y_[j] - kMean);
        v[i] += kinv_[i][j] * ks[j];
      }
    }
    *mean = kMean;
    *var = kS;
    for (int i = 0; i < 3; ++i) {
      *mean += ks[i] * w[i];
      *var -= ks[i] * v[i];
    }
  }

  Eigen::MatrixXd X() const { return Eigen::Vector3d(x_[0], x_[1], x_[2]); }
  Eigen::VectorXd Y() const { return Eigen::Vector3d(y_[0], y_[1], y_[2]); }

  const double x_[3] = {0.0, 0.3, 1.0};
  const double y_[3] = {1.0, 2.0, 0.5};
  double k_[3][3], kinv_[3][3], det_;
  GaussianProcess gp_ = std::move(GaussianProcess::Create("rbf", 1)).value();
};

TEST_F(ThreePointTest, PosteriorMatchesHandComputation) {
  METAOPT_ASSERT_OK_AND_ASSIGN(
      GpPosterior post, GpPosterior::Create(gp_, X(), Y(), Standardization{}));
  Eigen::MatrixXd q(4, 1);
  q << 0.15, 0.3, 0.6, 2.0;
  METAOPT_ASSERT_OK_AND_ASSIGN(Prediction pred, post.Predict(q));
  for (int i = 0; i < 4; ++i) {
    double mean, var;
    Expected(q(i, 0), &mean, &var);
    EXPECT_NEAR(pred.mean[i], mean, 1e-10) << q(i, 0);
    EXPECT_NEAR(pred.variance[i], var, 1e-10) << q(i, 0);
  }
  EXPECT_NEAR(post.noise_variance(), kNoise, 1e-15);
}

TEST_F(ThreePointTest, StandardizationMapsBackToOriginalUnits) {
  const Standardization st{5.0, 3.0};
  // Targets in original units whose standardised values are y_.
  const Eigen::VectorXd y_orig = (Y().array() * 3.0 + 5.0).matrix();
  METAOPT_ASSERT_OK_AND_ASSIGN(GpPosterior post,
                               GpPosterior::Create(gp_, X(), y_orig, st));
  Eigen::MatrixXd q(2, 1);
  q << 0.45, -0.2;
  METAOPT_ASSERT_OK_AND_ASSIGN(Prediction pred, post.Predict(q));
  for (int i = 0; i < 2; ++i) {
    double mean, var;
    Expected(q(i, 0), &mean, &var);
    EXPECT_NEAR(pred.mean[i], 5.0 + 3.0 * mean, 1e-9);
    EXPECT_NEAR(pred.variance[i], 9.0 * var, 1e-9);
  }
  EXPECT_NEAR(post.noise_variance(), 9.0 * kNoise, 1e-12);
}

TEST_F(ThreePointTest, NegativeLogLikelihoodMatchesHandComputation) {
  METAOPT_ASSERT_OK_AND_ASSIGN(NllResult nll,
                               gp_.NegativeLogMarginalLikelihood(X(), Y()));
  double quad = 0.0;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) {
      quad += (y_[i] - kMean) * kinv_[i][j] * (y_[j] - kMean);
    }
  }
  const double expected =
      0.5 * quad + 0.5 * std::log(det_) + 1.5 * std::log(2 * kPi);
  EXPECT_NEAR(nll.value, expected, 1e-10);
}

TEST(StandardizationTest, FromTargets) {
  const Standardization s =
      Standardization::FromTargets(Eigen::Vector3d(1, 2, 6));
  EXPECT_DOUBLE_EQ(s.offset, 3.0);
  EXPECT_NEAR(s.scale, std::sqrt(7.0), 1e-14);  // (4 + 1 + 9) / 2
  const Standardization c = Standardization::FromTargets(Eigen::Vector2d(4, 4));
  EXPECT_DOUBLE_EQ(c.offset, 4.0);
  EXPECT_DOUBLE_EQ(c.scale, 1.0);  // constant targets: scale falls back to 1
  EXPECT_DOUBLE_EQ(Standardization::FromTargets(Eigen::VectorXd()).scale, 1.0);
}

TEST(ConditionTest, StandardizesTargets) {
  std::mt19937_64 rng(1);
  const Eigen::MatrixXd X = RandomMatrix(8, 2, rng);
  const Eigen::VectorXd y = 100.0 + 20.0 * X.col(0).array().sin();
  GaussianProcess gp =
      std::move(GaussianProcess::Create("matern52", 2)).value();
  METAOPT_ASSERT_OK_AND_ASSIGN(GpPosterior post, Condition(gp, X, y));
  const Standardization st = Standardization::FromTargets(y);
  EXPECT_DOUBLE_EQ(post.standardization().offset, st.offset);
  EXPECT_DOUBLE_EQ(post.standardization().scale, st.scale);
  METAOPT_ASSERT_OK_AND_ASSIGN(GpPosterior manual,
                               GpPosterior::Create(gp, X, y, st));
  const Eigen::MatrixXd q = RandomMatrix(5, 2, rng);
  METAOPT_ASSERT_OK_AND_ASSIGN(Prediction a, post.Predict(q));
  METAOPT_ASSERT_OK_AND_ASSIGN(Prediction b, manual.Predict(q));
  EXPECT_TRUE(a.mean.isApprox(b.mean, 1e-12));
  EXPECT_TRUE(a.variance.isApprox(b.variance, 1e-12));
}

// ---- Gradients of the NLL, over both kernels.
// ----------------------------------------------

class NllGradientTest : public ::testing::TestWithParam<std::string> {};

TEST_P(NllGradientTest, HyperAndInputGradientsMatchCentralDifferences) {
  std::mt19937_64 rng(17);
  constexpr int kDim = 3, kN = 9;
  Eigen::MatrixXd X = RandomMatrix(kN, kDim, rng);
  const Eigen::VectorXd y =
      (X.col(0).array() * 3).sin() + X.col(1).array().square() - 0.3;
  Eigen::VectorXd h(kDim + 3);
  h << std::log(0.5), std::log(0.8), std::log(1.4), std::log(1.2),
      std::log(0.05), 0.1;
  GaussianProcess gp = MakeGp(GetParam(), kDim, h);
  METAOPT_ASSERT_OK_AND_ASSIGN(NllResult nll,
                               gp.NegativeLogMarginalLikelihood(X, y, true));
  ASSERT_EQ(nll.grad_hyper.size(), h.size());
  ASSERT_EQ(nll.grad_inputs.rows(), kN);
  ASSERT_EQ(nll.grad_inputs.cols(), kDim);

  auto value = [&](const GaussianProcess& g, const Eigen::MatrixXd& x) {
    auto r = g.NegativeLogMarginalLikelihood(x, y);
    EXPECT_TRUE(r.ok());
    return r->value;
  };
  constexpr double eps = 1e-6;
  for (int k = 0; k < h.size(); ++k) {
    Eigen::VectorXd hp = h, hm = h;
    hp[k] += eps;
    hm[k] -= eps;
    const double fd = (value(MakeGp(GetParam(), kDim, hp), X) -
                       value(MakeGp(GetParam(), kDim, hm), X)) /
                      (2 * eps);
    EXPECT_NEAR(nll.grad_hyper[k], fd, 1e-5 * std::max(1.0, std::abs(fd)))
        << "hyperparameter " << k;
  }
  for (int i = 0; i < kN; ++i) {
    for (int d = 0; d < kDim; ++d) {
      Eigen::MatrixXd Xp = X, Xm = X;
      Xp(i, d) += eps;
      Xm(i, d) -= eps;
      const double fd = (value(gp, Xp) - value(gp, Xm)) / (2 * eps);
      EXPECT_NEAR(nll.grad_inputs(i, d), fd, 1e-5 * std::max(1.0, std::abs(fd)))
          << "x(" << i << "," << d << ")";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllKernels, NllGradientTest,
                         ::testing::ValuesIn(KernelNames()),
                         [](const auto& info) { return info.param; });

// ---- Fitting.
// ------------------------------------------------------------------------------

TEST(FitTest, ImprovesLikelihoodAndFindsRelevantDimension) {
  std::mt19937_64 rng(23);
  constexpr int kN = 40;
  const Eigen::MatrixXd X = RandomMatrix(kN, 2, rng);
  // Smooth in x0, independent of x1.
  const Eigen::VectorXd y = 3.0 * (10.0 * X.col(0).array()).sin() + 1.0;
  GaussianProcess gp =
      std::move(GaussianProcess::Create("matern52", 2)).value();
  const Standardization st = Standardization::FromTargets(y);
  METAOPT_ASSERT_OK_AND_ASSIGN(
      NllResult before, gp.NegativeLogMarginalLikelihood(X, st.Apply(y)));

  FitOptions options;
  options.seed = 5;
  FitReport report;
  METAOPT_ASSERT_OK_AND_ASSIGN(GpPosterior post,
                               Fit(gp, X, y, options, &report));
  METAOPT_ASSERT_OK_AND_ASSIGN(
      NllResult after,
      post.model().NegativeLogMarginalLikelihood(X, st.Apply(y)));
  EXPECT_LT(after.value, before.value - 10.0);
  EXPECT_LE(report.final_objective, report.initial_objective);
  EXPECT_EQ(report.starts, options.num_starts);
  EXPECT_GT(report.iterations, 0);

  const Eigen::VectorXd l = post.model().kernel().lengthscales();
  // sin(10 x) has a characteristic length of order 1/10: a lengthscale well
  // below 1 in x0 and a much longer one in the irrelevant x1.
  EXPECT_GT(l[0], 0.05);
  EXPECT_LT(l[0], 1.0);
  EXPECT_GT(l[1], 3.0 * l[0]);
  EXPECT_LT(post.model().noise_variance(), 1e-2);

  // Held-out accuracy.
  const Eigen::MatrixXd q = RandomMatrix(20, 2, rng);
  METAOPT_ASSERT_OK_AND_ASSIGN(Prediction pred, post.Predict(q));
  const Eigen::VectorXd truth = 3.0 * (10.0 * q.col(0).array()).sin() + 1.0;
  EXPECT_LT((pred.mean - truth).cwiseAbs().maxCoeff(), 0.1);
}

TEST(FitTest, IsDeterministicForASeed) {
  std::mt19937_64 rng(29);
  const Eigen::MatrixXd X = RandomMatrix(15, 3, rng);
  const Eigen::VectorXd y = X.rowwise().sum();
  GaussianProcess gp = std::move(GaussianProcess::Create("rbf", 3)).value();
  FitOptions options;
  options.seed = 9;
  METAOPT_ASSERT_OK_AND_ASSIGN(GpPosterior a, Fit(gp, X, y, options));
  METAOPT_ASSERT_OK_AND_ASSIGN(GpPosterior b, Fit(gp, X, y, options));
  EXPECT_EQ(a.model().hyperparameters(), b.model().hyperparameters());
}

TEST(FitTest, RespectsBoundsAndIterationLimits) {
  std::mt19937_64 rng(31);
  const Eigen::MatrixXd X = RandomMatrix(12, 1, rng);
  const Eigen::VectorXd y = X.col(0);
  GaussianProcess gp =
      std::move(GaussianProcess::Create("matern52", 1)).value();
  FitOptions options;
  options.num_starts = 1;
  options.max_iterations = 2;
  options.max_lengthscale = 2.0;
  FitReport report;
  METAOPT_ASSERT_OK_AND_ASSIGN(GpPosterior post,
                               Fit(gp, X, y, options, &report));
  EXPECT_LE(report.iterations, 2);
  EXPECT_LE(post.model().kernel().lengthscales()[0], 2.0 + 1e-12);
}

TEST(FitTest, WithoutDataConditionsOnNothing) {
  GaussianProcess gp =
      std::move(GaussianProcess::Create("matern52", 2)).value();
  METAOPT_ASSERT_OK_AND_ASSIGN(
      GpPosterior post,
      Fit(gp, Eigen::MatrixXd(0, 2), Eigen::VectorXd(0), FitOptions{}));
  EXPECT_EQ(post.num_points(), 0);
  METAOPT_ASSERT_OK_AND_ASSIGN(Prediction pred,
                               post.Predict(Eigen::MatrixXd::Zero(3, 2)));
  EXPECT_TRUE(pred.mean.isZero());
  EXPECT_TRUE(pred.variance.isApproxToConstant(1.0));
}

// ---- Failure paths.
// ------------------------------------------------------------------------

TEST(CholeskyWithJitterTest, IndefiniteMatrixIsInternalError) {
  Eigen::Matrix2d k;
  k << 1.0, 2.0, 2.0, 1.0;  // eigenvalues -1 and 3
  EXPECT_THAT(CholeskyWithJitter(k).status(),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("jitter")));
}

TEST(CholeskyWithJitterTest, NanMatrixIsInternalError) {
  Eigen::Matrix2d k;
  k << 1.0, std::nan(""), std::nan(""), 1.0;
  EXPECT_THAT(CholeskyWithJitter(k).status(),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("non-finite")));
}

TEST(CholeskyWithJitterTest, ReadsOnlyTheLowerTriangle) {
  // The upper triangle may be unset (DeepPipe's kernel objective fills only
  // the lower one): whatever it holds, NaN included, changes nothing.
  Eigen::MatrixXd k(3, 3);
  k << 4, 0, 0, 2, 5, 0, 1, 1, 6;
  METAOPT_ASSERT_OK_AND_ASSIGN(JitteredCholesky clean, CholeskyWithJitter(k));
  Eigen::MatrixXd dirty = k;
  dirty(0, 1) = std::numeric_limits<double>::quiet_NaN();
  dirty(0, 2) = std::numeric_limits<double>::infinity();
  dirty(1, 2) = 1e300;
  METAOPT_ASSERT_OK_AND_ASSIGN(JitteredCholesky same,
                               CholeskyWithJitter(dirty));
  EXPECT_EQ(same.L, clean.L);
  EXPECT_EQ(same.jitter, clean.jitter);
  dirty(2, 1) = std::numeric_limits<double>::quiet_NaN();  // lower: refused
  EXPECT_FALSE(CholeskyWithJitter(dirty).ok());
}

TEST(CholeskyWithJitterTest, SingularMatrixGetsJitter) {
  METAOPT_ASSERT_OK_AND_ASSIGN(JitteredCholesky chol,
                               CholeskyWithJitter(Eigen::Matrix3d::Ones()));
  EXPECT_GT(chol.jitter, 0.0);
  EXPECT_LE(chol.jitter, 1e-2);
  const Eigen::Matrix3d rebuilt = chol.L * chol.L.transpose();
  EXPECT_TRUE(rebuilt.isApprox(Eigen::Matrix3d::Ones() +
                               chol.jitter * Eigen::Matrix3d::Identity()));
}

// Sizes around the recursion's block (32) and odd splits below and above it.
TEST(InverseFromCholeskyTest, MatchesTheInverseFromTwoTriangularSolves) {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> normal;
  for (int n : {1, 2, 5, 31, 32, 33, 64, 97, 219}) {
    Eigen::MatrixXd A(n, n + 3);
    for (Eigen::Index i = 0; i < A.size(); ++i) A.data()[i] = normal(rng);
    Eigen::MatrixXd K = A * A.transpose() / double(n + 3);
    K.diagonal().array() += 0.05;
    absl::StatusOr<JitteredCholesky> chol = CholeskyWithJitter(K);
    ASSERT_TRUE(chol.ok()) << chol.status();
    const Eigen::MatrixXd inverse = InverseFromCholesky(chol->L);
    Eigen::MatrixXd expected = Eigen::MatrixXd::Identity(n, n);
    chol->L.triangularView<Eigen::Lower>().solveInPlace(expected);
    chol->L.transpose().triangularView<Eigen::Upper>().solveInPlace(expected);
    EXPECT_LE((inverse - expected).cwiseAbs().maxCoeff(),
              1e-10 * expected.cwiseAbs().maxCoeff())
        << "n = " << n;
    EXPECT_TRUE(inverse.isApprox(inverse.transpose(), 0.0)) << "n = " << n;
    EXPECT_TRUE((K * inverse).isApprox(Eigen::MatrixXd::Identity(n, n), 1e-8))
        << "n = " << n;
    // The float overload: the same blocked recursion, to float rounding
    // (this K's condition number is below 1e3).
    const Eigen::MatrixXd inverse_f =
        InverseFromCholesky(Eigen::MatrixXf(chol->L.cast<float>()))
            .cast<double>();
    EXPECT_LE((inverse_f - expected).cwiseAbs().maxCoeff(),
              1e-4 * expected.cwiseAbs().maxCoeff())
        << "float, n = " << n;
    EXPECT_TRUE(inverse_f.isApprox(inverse_f.transpose(), 0.0))
        << "float, n = " << n;
  }
}

TEST(GaussianProcessTest, DuplicatePointsWithoutNoiseUseJitter) {
  auto gp = GaussianProcess::Create("matern52", 1, /*noise_floor=*/1e-300);
  ASSERT_TRUE(gp.ok());
  Eigen::VectorXd h = gp->hyperparameters();
  h[gp->noise_index()] = -80.0;
  ASSERT_TRUE(gp->set_hyperparameters(h).ok());
  const Eigen::MatrixXd X = Eigen::Vector3d(0.5, 0.5, 0.5);
  METAOPT_ASSERT_OK_AND_ASSIGN(GpPosterior post,
                               Condition(*gp, X, Eigen::Vector3d(1, 2, 3)));
  EXPECT_GT(post.jitter(), 0.0);
}

TEST(GaussianProcessTest, NonFiniteDataIsInvalidArgument) {
  GaussianProcess gp =
      std::move(GaussianProcess::Create("matern52", 2)).value();
  Eigen::MatrixXd X = Eigen::MatrixXd::Zero(3, 2);
  X(1, 1) = std::nan("");
  EXPECT_THAT(Condition(gp, X, Eigen::Vector3d(1, 2, 3)).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("NaN")));
  EXPECT_THAT(
      gp.NegativeLogMarginalLikelihood(X, Eigen::Vector3d(1, 2, 3)).status(),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("NaN")));
  EXPECT_THAT(
      Condition(gp, Eigen::MatrixXd::Zero(2, 2),
                Eigen::Vector2d(1, std::numeric_limits<double>::infinity()))
          .status(),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("targets")));
  EXPECT_THAT(
      Condition(gp, Eigen::MatrixXd::Zero(2, 3), Eigen::Vector2d(1, 2))
          .status(),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("3 columns")));
  EXPECT_THAT(
      Condition(gp, Eigen::MatrixXd::Zero(2, 2), Eigen::Vector3d(1, 2, 3))
          .status(),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("3 targets")));
}

TEST(GaussianProcessTest, RejectsBadHyperparametersAndOptions) {
  GaussianProcess gp = std::move(GaussianProcess::Create("rbf", 2)).value();
  EXPECT_THAT(gp.set_hyperparameters(Eigen::VectorXd::Zero(3)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("5")));
  EXPECT_THAT(
      GaussianProcess::Create("rbf", 2, 0.0).status(),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("noise_floor")));
  EXPECT_THAT(GaussianProcess::Create("linear", 2).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unknown kernel")));
}

// ---- Prediction.
// ---------------------------------------------------------------------------

TEST(GpPosteriorTest, InterpolatesTrainingPointsWithSmallNoise) {
  std::mt19937_64 rng(37);
  const Eigen::MatrixXd X = RandomMatrix(10, 2, rng);
  const Eigen::VectorXd y = 5.0 * X.col(0).array().cos() + X.col(1).array();
  auto gp = GaussianProcess::Create("matern52", 2);
  ASSERT_TRUE(gp.ok());
  Eigen::VectorXd h = gp->hyperparameters();
  h[gp->noise_index()] = std::log(1e-8);
  ASSERT_TRUE(gp->set_hyperparameters(h).ok());
  METAOPT_ASSERT_OK_AND_ASSIGN(GpPosterior post, Condition(*gp, X, y));
  METAOPT_ASSERT_OK_AND_ASSIGN(Prediction pred, post.Predict(X));
  EXPECT_LT((pred.mean - y).cwiseAbs().maxCoeff(), 1e-3);
  EXPECT_LT(pred.variance.maxCoeff(), 1e-4);
  EXPECT_GE(pred.variance.minCoeff(), 0.0);
}

TEST(GpPosteriorTest, BlockedPredictMatchesPointwise) {
  std::mt19937_64 rng(41);
  const Eigen::MatrixXd X = RandomMatrix(30, 3, rng);
  const Eigen::VectorXd y = X.rowwise().squaredNorm();
  GaussianProcess gp = std::move(GaussianProcess::Create("rbf", 3)).value();
  METAOPT_ASSERT_OK_AND_ASSIGN(GpPosterior post, Condition(gp, X, y));
  const Eigen::MatrixXd q = RandomMatrix(600, 3, rng);  // several blocks
  METAOPT_ASSERT_OK_AND_ASSIGN(Prediction all, post.Predict(q));
  ASSERT_EQ(all.mean.size(), 600);
  for (int i : {0, 255, 256, 511, 599}) {
    METAOPT_ASSERT_OK_AND_ASSIGN(Prediction one, post.Predict(q.row(i)));
    EXPECT_NEAR(all.mean[i], one.mean[0], 1e-12);
    EXPECT_NEAR(all.variance[i], one.variance[0], 1e-12);
  }
  EXPECT_THAT(
      post.Predict(Eigen::MatrixXd::Zero(2, 4)).status(),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("columns")));
}

// The screening prediction: the exact mean, and the variance given the first
// points only, never below the exact one; all points give Predict itself.
TEST(GpPosteriorTest, VarianceBoundFromTheFirstPointsIsAnUpperBound) {
  std::mt19937_64 rng(43);
  const Eigen::MatrixXd X = RandomMatrix(80, 3, rng);
  const Eigen::VectorXd y = X.rowwise().squaredNorm();
  GaussianProcess gp =
      std::move(GaussianProcess::Create("matern52", 3)).value();
  METAOPT_ASSERT_OK_AND_ASSIGN(GpPosterior post, Condition(gp, X, y));
  const Eigen::MatrixXd q = RandomMatrix(300, 3, rng);
  METAOPT_ASSERT_OK_AND_ASSIGN(Prediction exact, post.Predict(q));
  METAOPT_ASSERT_OK_AND_ASSIGN(Prediction bound,
                               post.PredictWithVarianceBound(q, 20));
  EXPECT_EQ(bound.mean, exact.mean);
  EXPECT_TRUE((bound.variance.array() >= exact.variance.array() - 1e-12).all());
  EXPECT_GT((bound.variance - exact.variance).maxCoeff(), 1e-6);
  METAOPT_ASSERT_OK_AND_ASSIGN(Prediction all,
                               post.PredictWithVarianceBound(q, 1000));
  EXPECT_EQ(all.variance, exact.variance);
}

// The screen of catalogue rows through a CatalogueKernelCache: the screen
// above up to rounding, and bit for bit what a fresh cache gives, over a
// sequence of observations (one more per call, a replaced last one, new
// hyperparameters, another noise, fewer screening points).
TEST(GpPosteriorTest, CatalogueScreenFromTheCacheEqualsAFreshOneBitForBit) {
  std::mt19937_64 rng(47);
  const Eigen::MatrixXd catalogue = RandomMatrix(301, 3, rng);
  const Eigen::MatrixXd X_all = RandomMatrix(90, 3, rng);
  const Eigen::VectorXd y_all =
      X_all.rowwise().squaredNorm() + 0.3 * X_all.col(0);
  std::vector<int> rows;
  for (int i = 0; i < catalogue.rows(); i += 1 + i % 3) rows.push_back(i);
  GaussianProcess gp =
      std::move(GaussianProcess::Create("matern52", 3)).value();
  CatalogueKernelCache running;
  auto expect_screen = [&](const GpPosterior& post, int points,
                           const std::string& what) {
    METAOPT_ASSERT_OK_AND_ASSIGN(
        Prediction cached,
        post.PredictWithVarianceBound(catalogue, rows, points, running));
    CatalogueKernelCache fresh;
    METAOPT_ASSERT_OK_AND_ASSIGN(
        Prediction recomputed,
        post.PredictWithVarianceBound(catalogue, rows, points, fresh));
    EXPECT_EQ(cached.mean, recomputed.mean) << what;
    EXPECT_EQ(cached.variance, recomputed.variance) << what;
    Eigen::MatrixXd q(rows.size(), 3);
    for (size_t i = 0; i < rows.size(); ++i) q.row(i) = catalogue.row(rows[i]);
    METAOPT_ASSERT_OK_AND_ASSIGN(Prediction screen,
                                 post.PredictWithVarianceBound(q, points));
    METAOPT_ASSERT_OK_AND_ASSIGN(Prediction exact, post.Predict(q));
    EXPECT_LT((cached.mean - screen.mean).cwiseAbs().maxCoeff(), 1e-9) << what;
    EXPECT_LT((cached.variance - screen.variance).cwiseAbs().maxCoeff(), 1e-9)
        << what;
    EXPECT_TRUE(
        (cached.variance.array() >= exact.variance.array() - 1e-12).all())
        << what;
  };
  for (int n = 60; n <= 90; ++n) {
    METAOPT_ASSERT_OK_AND_ASSIGN(
        GpPosterior post, Condition(gp, X_all.topRows(n), y_all.head(n)));
    expect_screen(post, n / 4, "n = " + std::to_string(n));
    if (n % 10 == 5) {
      // Another last observation, then the hyperparameters of a refit.
      Eigen::MatrixXd X = X_all.topRows(n);
      X.row(n - 1) = X_all.row(0) * 0.5;
      METAOPT_ASSERT_OK_AND_ASSIGN(GpPosterior replaced,
                                   Condition(gp, X, y_all.head(n)));
      expect_screen(replaced, n / 4, "replaced, n = " + std::to_string(n));
      expect_screen(post, 7, "7 points, n = " + std::to_string(n));
      Eigen::VectorXd h = gp.hyperparameters();
      h[0] -= 0.1;
      h[gp.noise_index()] += 0.5;
      ASSERT_TRUE(gp.set_hyperparameters(h).ok());
    }
  }
  EXPECT_GT(running.bytes(), 90 * 301 * 8);
  EXPECT_GE(CatalogueKernelCache::ProcessBytes(), running.bytes());
}

// Without the budget for them, the columns live a chunk of catalogue rows at
// a time: the screen is still bit for bit the cached one, over a catalogue
// of several chunks (the last one partial and odd).
TEST(GpPosteriorTest, CatalogueScreenWithoutBudgetEqualsTheCachedOneBitForBit) {
  std::mt19937_64 rng(11);
  const Eigen::MatrixXd catalogue = RandomMatrix(1301, 4, rng);
  const Eigen::MatrixXd X_all = RandomMatrix(41, 4, rng);
  const Eigen::VectorXd y_all = X_all.col(0) - X_all.col(2).cwiseAbs2();
  std::vector<int> rows(catalogue.rows());
  std::iota(rows.begin(), rows.end(), 0);
  GaussianProcess gp =
      std::move(GaussianProcess::Create("matern52", 4)).value();
  const int64_t budget = CatalogueKernelCache::ProcessBudgetBytes();
  CatalogueKernelCache running;
  for (int n = 40; n <= 41; ++n) {
    METAOPT_ASSERT_OK_AND_ASSIGN(
        GpPosterior post, Condition(gp, X_all.topRows(n), y_all.head(n)));
    METAOPT_ASSERT_OK_AND_ASSIGN(
        Prediction cached,
        post.PredictWithVarianceBound(catalogue, rows, n / 4, running));
    EXPECT_GT(running.bytes(), 0);
    CatalogueKernelCache::SetProcessBudgetBytes(0);
    CatalogueKernelCache unkept;
    METAOPT_ASSERT_OK_AND_ASSIGN(
        Prediction chunked,
        post.PredictWithVarianceBound(catalogue, rows, n / 4, unkept));
    CatalogueKernelCache::SetProcessBudgetBytes(budget);
    EXPECT_EQ(unkept.bytes(), 0);
    EXPECT_EQ(cached.mean, chunked.mean) << "n = " << n;
    EXPECT_EQ(cached.variance, chunked.variance) << "n = " << n;
  }
}

TEST(GpPosteriorTest, CatalogueKernelCacheKeepsNothingBeyondTheBudget) {
  std::mt19937_64 rng(5);
  const Eigen::MatrixXd catalogue = RandomMatrix(50, 2, rng);
  const Eigen::MatrixXd X = RandomMatrix(20, 2, rng);
  GaussianProcess gp =
      std::move(GaussianProcess::Create("matern52", 2)).value();
  METAOPT_ASSERT_OK_AND_ASSIGN(GpPosterior post,
                               Condition(gp, X, X.col(0) - X.col(1)));
  const std::vector<int> rows = {0, 3, 49};
  const int64_t budget = CatalogueKernelCache::ProcessBudgetBytes();
  CatalogueKernelCache cache;
  METAOPT_ASSERT_OK_AND_ASSIGN(Prediction kept, post.PredictWithVarianceBound(
                                                    catalogue, rows, 5, cache));
  EXPECT_GT(cache.bytes(), 0);
  CatalogueKernelCache::SetProcessBudgetBytes(0);
  METAOPT_ASSERT_OK_AND_ASSIGN(
      Prediction dropped,
      post.PredictWithVarianceBound(catalogue, rows, 5, cache));
  CatalogueKernelCache::SetProcessBudgetBytes(budget);
  EXPECT_EQ(cache.bytes(), 0);
  EXPECT_EQ(kept.mean, dropped.mean);
  EXPECT_EQ(kept.variance, dropped.variance);
  EXPECT_THAT(post.PredictWithVarianceBound(catalogue, {50}, 5, cache).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("row")));
}

TEST(GpPosteriorTest, ConditionOnEqualsConditioningOnEverything) {
  std::mt19937_64 rng(43);
  const Eigen::MatrixXd X = RandomMatrix(12, 2, rng);
  const Eigen::VectorXd y = X.col(0) - 2.0 * X.col(1);
  GaussianProcess gp =
      std::move(GaussianProcess::Create("matern52", 2)).value();
  METAOPT_ASSERT_OK_AND_ASSIGN(GpPosterior post, Condition(gp, X, y));
  const Eigen::MatrixXd X_new = RandomMatrix(3, 2, rng);
  const Eigen::Vector3d y_new(0.1, -0.4, 2.0);
  METAOPT_ASSERT_OK_AND_ASSIGN(GpPosterior extended,
                               post.ConditionOn(X_new, y_new));
  Eigen::MatrixXd X_all(15, 2);
  X_all << X, X_new;
  Eigen::VectorXd y_all(15);
  y_all << y, y_new;
  METAOPT_ASSERT_OK_AND_ASSIGN(
      GpPosterior full,
      GpPosterior::Create(gp, X_all, y_all, post.standardization()));
  const Eigen::MatrixXd q = RandomMatrix(7, 2, rng);
  METAOPT_ASSERT_OK_AND_ASSIGN(Prediction a, extended.Predict(q));
  METAOPT_ASSERT_OK_AND_ASSIGN(Prediction b, full.Predict(q));
  EXPECT_LT((a.mean - b.mean).cwiseAbs().maxCoeff(), 1e-9);
  EXPECT_LT((a.variance - b.variance).cwiseAbs().maxCoeff(), 1e-9);
  EXPECT_EQ(extended.num_points(), 15);
  // The original posterior is untouched.
  EXPECT_EQ(post.num_points(), 12);
}

// Recondition against Condition on the same data: new rows appended, the last
// row replaced (a shorter shared prefix), nothing new, and too short a prefix
// (Condition itself).
TEST(GpPosteriorTest, ReconditionEqualsConditionToRounding) {
  std::mt19937_64 rng(47);
  const int dim = 4;
  Eigen::VectorXd h(dim + 3);
  h << Eigen::VectorXd::Constant(dim, std::log(0.4)), 0.2, std::log(1e-4), 0.1;
  const GaussianProcess gp = MakeGp("matern52", dim, h);
  const Eigen::MatrixXd X = RandomMatrix(300, dim, rng);
  Eigen::VectorXd y = X.rowwise().squaredNorm();
  y += 0.1 * (3 * X.col(0)).array().sin().matrix();
  METAOPT_ASSERT_OK_AND_ASSIGN(GpPosterior previous,
                               Condition(gp, X.topRows(250), y.head(250)));
  const Eigen::MatrixXd q = RandomMatrix(200, dim, rng);
  auto expect_equal = [&](const Eigen::MatrixXd& Xn, const Eigen::VectorXd& yn) {
    METAOPT_ASSERT_OK_AND_ASSIGN(GpPosterior fresh, Condition(gp, Xn, yn));
    METAOPT_ASSERT_OK_AND_ASSIGN(GpPosterior extended,
                                 previous.Recondition(Xn, yn));
    EXPECT_EQ(extended.num_points(), Xn.rows());
    EXPECT_EQ(extended.jitter(), fresh.jitter());
    EXPECT_EQ(extended.standardization().offset,
              fresh.standardization().offset);
    EXPECT_EQ(extended.standardization().scale, fresh.standardization().scale);
    METAOPT_ASSERT_OK_AND_ASSIGN(Prediction a, extended.Predict(q));
    METAOPT_ASSERT_OK_AND_ASSIGN(Prediction b, fresh.Predict(q));
    EXPECT_LT((a.mean - b.mean).cwiseAbs().maxCoeff(), 1e-9);
    EXPECT_LT((a.variance - b.variance).cwiseAbs().maxCoeff(), 1e-9);
    // At the training points too, where the variance is smallest.
    METAOPT_ASSERT_OK_AND_ASSIGN(Prediction c, extended.Predict(Xn));
    METAOPT_ASSERT_OK_AND_ASSIGN(Prediction d, fresh.Predict(Xn));
    EXPECT_LT((c.mean - d.mean).cwiseAbs().maxCoeff(), 1e-9);
    EXPECT_LT((c.variance - d.variance).cwiseAbs().maxCoeff(), 1e-9);
  };
  expect_equal(X.topRows(251), y.head(251));  // one more observation
  expect_equal(X, y);                          // fifty more
  expect_equal(X.topRows(250), y.head(250));  // the same rows
  Eigen::MatrixXd replaced = X.topRows(251);  // the last one replaced
  replaced.row(249) = X.row(250);
  Eigen::VectorXd replaced_y = y.head(251);
  replaced_y[249] = -1.0;
  expect_equal(replaced, replaced_y);
  expect_equal(X.bottomRows(100), y.tail(100));  // nothing shared
}

// A jittered factor is not extended: Recondition gives what Condition does.
TEST(GpPosteriorTest, ReconditionOfAJitteredPosteriorIsCondition) {
  auto gp = GaussianProcess::Create("matern52", 1, /*noise_floor=*/1e-300);
  ASSERT_TRUE(gp.ok());
  Eigen::VectorXd h = gp->hyperparameters();
  h[gp->noise_index()] = -80.0;
  ASSERT_TRUE(gp->set_hyperparameters(h).ok());
  const Eigen::MatrixXd X = Eigen::Vector3d(0.2, 0.2, 0.7);  // a repeat
  const Eigen::Vector3d y(1.0, 1.1, 0.0);
  METAOPT_ASSERT_OK_AND_ASSIGN(GpPosterior previous, Condition(*gp, X, y));
  ASSERT_GT(previous.jitter(), 0.0);
  const Eigen::MatrixXd X4 = Eigen::Vector4d(0.2, 0.2, 0.7, 0.9);
  const Eigen::Vector4d y4(1.0, 1.1, 0.0, 0.5);
  METAOPT_ASSERT_OK_AND_ASSIGN(GpPosterior fresh, Condition(*gp, X4, y4));
  METAOPT_ASSERT_OK_AND_ASSIGN(GpPosterior again, previous.Recondition(X4, y4));
  const Eigen::MatrixXd q = Eigen::Vector2d(0.1, 0.8);
  METAOPT_ASSERT_OK_AND_ASSIGN(Prediction a, again.Predict(q));
  METAOPT_ASSERT_OK_AND_ASSIGN(Prediction b, fresh.Predict(q));
  EXPECT_EQ(a.mean, b.mean);
  EXPECT_EQ(a.variance, b.variance);
  EXPECT_EQ(again.jitter(), fresh.jitter());
}

// ---- Fantasies for pending points.

GpPosterior OneDimensionalPosterior() {
  auto gp = GaussianProcess::Create("matern52", 1);
  EXPECT_TRUE(gp.ok());
  Eigen::VectorXd h = gp->hyperparameters();
  h[0] = std::log(0.2);
  EXPECT_TRUE(gp->set_hyperparameters(h).ok());
  const Eigen::MatrixXd X = Eigen::Vector4d(0.0, 0.1, 0.8, 1.0);
  auto post = Condition(*gp, X, Eigen::Vector4d(3.0, 2.0, 1.0, 4.0));
  EXPECT_TRUE(post.ok()) << post.status();
  return std::move(post).value();
}

TEST(FantasiesTest, ReduceVarianceAtThePendingPointAndKeepTheMean) {
  const GpPosterior post = OneDimensionalPosterior();
  Eigen::MatrixXd pending(2, 1);
  pending << 0.45, 0.5;
  METAOPT_ASSERT_OK_AND_ASSIGN(Prediction before, post.Predict(pending));
  METAOPT_ASSERT_OK_AND_ASSIGN(GpPosterior fantasised,
                               post.WithFantasies(pending));
  METAOPT_ASSERT_OK_AND_ASSIGN(Prediction after, fantasised.Predict(pending));
  EXPECT_EQ(fantasised.num_points(), 6);
  for (int i = 0; i < 2; ++i) {
    EXPECT_LT(after.variance[i], 0.05 * before.variance[i]) << i;
  }
  EXPECT_NEAR(after.mean[0], before.mean[0], 1e-6);
  // Hyperparameters and standardisation are those of the original posterior.
  EXPECT_EQ(fantasised.model().hyperparameters(),
            post.model().hyperparameters());
  EXPECT_EQ(fantasised.standardization().scale, post.standardization().scale);
}

TEST(FantasiesTest, NoPendingPointsLeavePosteriorUnchanged) {
  const GpPosterior post = OneDimensionalPosterior();
  METAOPT_ASSERT_OK_AND_ASSIGN(GpPosterior same,
                               post.WithFantasies(Eigen::MatrixXd(0, 1)));
  EXPECT_EQ(same.num_points(), post.num_points());
  EXPECT_THAT(
      post.WithFantasies(Eigen::MatrixXd::Zero(1, 2)).status(),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("columns")));
}

}  // namespace
}  // namespace metaopt::gp
