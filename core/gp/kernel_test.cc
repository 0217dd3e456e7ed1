#include "core/gp/kernel.h"

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "Eigen/Eigenvalues"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"

namespace metaopt::gp {
namespace {

using ::metaopt::testing::StatusIs;
using ::testing::HasSubstr;

Eigen::MatrixXd RandomMatrix(int rows, int cols, std::mt19937_64& rng,
                             double lo = 0.0, double hi = 1.0) {
  std::uniform_real_distribution<double> u(lo, hi);
  Eigen::MatrixXd m(rows, cols);
  for (int j = 0; j < cols; ++j) {
    for (int i = 0; i < rows; ++i) m(i, j) = u(rng);
  }
  return m;
}

// Expects |analytic - numeric| <= tol * max(1, |numeric|).
void ExpectClose(double analytic, double numeric, double tol,
                 const std::string& what) {
  EXPECT_NEAR(analytic, numeric, tol * std::max(1.0, std::abs(numeric)))
      << what;
}

class KernelTest : public ::testing::TestWithParam<std::string> {
 protected:
  std::unique_ptr<Kernel> Make(int dim) {
    auto kernel = CreateKernel(GetParam(), dim);
    EXPECT_TRUE(kernel.ok()) << kernel.status();
    return std::move(kernel).value();
  }
};

TEST_P(KernelTest, NameRoundTrips) { EXPECT_EQ(Make(2)->name(), GetParam()); }

TEST_P(KernelTest, GradientHyperMatchesCentralDifferences) {
  std::mt19937_64 rng(7);
  constexpr int kDim = 3;
  auto kernel = Make(kDim);
  Eigen::VectorXd p(kDim + 1);
  p << std::log(0.4), std::log(1.3), std::log(0.8), std::log(1.7);
  ASSERT_TRUE(kernel->set_log_params(p).ok());
  Eigen::MatrixXd X = RandomMatrix(7, kDim, rng);
  X.row(5) = X.row(2);  // a duplicate point: r = 0 off the diagonal
  const Eigen::MatrixXd G =
      RandomMatrix(7, 7, rng, -1.0, 1.0);  // not symmetric
  const Eigen::VectorXd analytic = kernel->GradientHyper(X, G);
  ASSERT_EQ(analytic.size(), kDim + 1);
  constexpr double h = 1e-6;
  for (int k = 0; k < kDim + 1; ++k) {
    Eigen::VectorXd pp = p, pm = p;
    pp[k] += h;
    pm[k] -= h;
    ASSERT_TRUE(kernel->set_log_params(pp).ok());
    const double lp = (G.array() * kernel->Matrix(X).array()).sum();
    ASSERT_TRUE(kernel->set_log_params(pm).ok());
    const double lm = (G.array() * kernel->Matrix(X).array()).sum();
    ExpectClose(analytic[k], (lp - lm) / (2 * h), 1e-5,
                "param " + std::to_string(k));
  }
}

TEST_P(KernelTest, GradientInputsMatchesCentralDifferences) {
  std::mt19937_64 rng(11);
  constexpr int kDim = 3;
  auto kernel = Make(kDim);
  Eigen::VectorXd p(kDim + 1);
  p << std::log(0.5), std::log(0.9), std::log(2.0), std::log(0.6);
  ASSERT_TRUE(kernel->set_log_params(p).ok());
  Eigen::MatrixXd X = RandomMatrix(6, kDim, rng);
  X.row(4) = X.row(1);
  const Eigen::MatrixXd G = RandomMatrix(6, 6, rng, -1.0, 1.0);
  const Eigen::MatrixXd analytic = kernel->GradientInputs(X, G);
  ASSERT_EQ(analytic.rows(), X.rows());
  ASSERT_EQ(analytic.cols(), X.cols());
  constexpr double h = 1e-6;
  for (int i = 0; i < X.rows(); ++i) {
    for (int d = 0; d < kDim; ++d) {
      Eigen::MatrixXd Xp = X, Xm = X;
      Xp(i, d) += h;
      Xm(i, d) -= h;
      const double lp = (G.array() * kernel->Matrix(Xp).array()).sum();
      const double lm = (G.array() * kernel->Matrix(Xm).array()).sum();
      ExpectClose(analytic(i, d), (lp - lm) / (2 * h), 1e-5,
                  "x(" + std::to_string(i) + "," + std::to_string(d) + ")");
    }
  }
}

TEST_P(KernelTest, CrossMatrixGradientAgreesWithTrainingMatrix) {
  // Matrix(X1, X2) and Matrix(X) are two code paths; they must agree.
  std::mt19937_64 rng(3);
  auto kernel = Make(4);
  const Eigen::MatrixXd X = RandomMatrix(9, 4, rng);
  EXPECT_LT((kernel->Matrix(X) - kernel->Matrix(X, X)).cwiseAbs().maxCoeff(),
            1e-12);
}

// The cross-covariance as one elementwise evaluation over the whole n x m
// matrix (what Kernel::Matrix(X1, X2) evaluates a chunk of columns at a time).
Eigen::MatrixXd WholeCrossMatrix(const Kernel& kernel,
                                 const Eigen::MatrixXd& X1,
                                 const Eigen::MatrixXd& X2) {
  const int d = kernel.input_dim();
  const Eigen::RowVectorXd shift = X2.colwise().mean();
  const Eigen::RowVectorXd inv_l =
      (-kernel.log_params().head(d).array()).exp().matrix().transpose();
  const Eigen::MatrixXd Z1 =
      ((X1.rowwise() - shift).array().rowwise() * inv_l.array()).matrix();
  const Eigen::MatrixXd Z2 =
      ((X2.rowwise() - shift).array().rowwise() * inv_l.array()).matrix();
  Eigen::ArrayXXd r2(X1.rows(), X2.rows());
  r2.matrix().noalias() = -2.0 * Z1 * Z2.transpose();
  const Eigen::ArrayXd sq1 = Z1.rowwise().squaredNorm().array();
  const Eigen::ArrayXd sq2 = Z2.rowwise().squaredNorm().array();
  for (Eigen::Index j = 0; j < r2.cols(); ++j) {
    r2.col(j) = (r2.col(j) + sq1 + sq2[j]).max(0.0);
  }
  const double s = kernel.output_scale();
  if (kernel.name() == "rbf") return (s * (-0.5 * r2).exp()).matrix();
  const Eigen::ArrayXXd sr = 2.2360679774997896964 * r2.sqrt();
  const Eigen::ArrayXXd e = (-sr).exp();
  return (s * (1.0 + sr + (5.0 / 3.0) * r2) * e).matrix();
}

TEST_P(KernelTest, CrossMatrixInChunksEqualsTheWholeMatrixBitForBit) {
  std::mt19937_64 rng(11);
  auto kernel = Make(5);
  Eigen::VectorXd log_params(6);
  log_params << -1.2, -0.4, 0.3, -2.0, 0.1, 0.7;
  ASSERT_TRUE(kernel->set_log_params(log_params).ok());
  // Odd and even sizes, one chunk and many, and the odd n x m whose last
  // entry a whole-matrix evaluation computes without vectorisation.
  for (const auto& [n, m] : std::vector<std::pair<int, int>>{{1, 1},
                                                             {3, 5},
                                                             {7, 1},
                                                             {1, 9},
                                                             {64, 256},
                                                             {101, 255},
                                                             {2001, 3},
                                                             {4097, 3}}) {
    const Eigen::MatrixXd X1 = RandomMatrix(n, 5, rng, -1.0, 2.0);
    const Eigen::MatrixXd X2 = RandomMatrix(m, 5, rng, -1.0, 2.0);
    const Eigen::MatrixXd got = kernel->Matrix(X1, X2);
    const Eigen::MatrixXd want = WholeCrossMatrix(*kernel, X1, X2);
    ASSERT_EQ(got.rows(), n);
    ASSERT_EQ(got.cols(), m);
    EXPECT_EQ((got.array() != want.array()).count(), 0) << n << " x " << m;
  }
  EXPECT_EQ(
      kernel->Matrix(Eigen::MatrixXd(0, 5), RandomMatrix(4, 5, rng)).size(), 0);
  // The training matrix, evaluated in chunks too, equals the whole-matrix
  // evaluation of TrainingGram.
  for (const int n : {1, 2, 7, 101, 300}) {
    const Eigen::MatrixXd X = RandomMatrix(n, 5, rng, -1.0, 2.0);
    const Eigen::MatrixXd k = kernel->Matrix(X);
    EXPECT_EQ((k.array() != kernel->TrainingGram(X).k.array()).count(), 0) << n;
  }
}

TEST_P(KernelTest, TrainingMatrixIsSymmetricPositiveSemiDefinite) {
  std::mt19937_64 rng(5);
  auto kernel = Make(2);
  Eigen::VectorXd p(3);
  p << std::log(0.3), std::log(0.7), std::log(2.5);
  ASSERT_TRUE(kernel->set_log_params(p).ok());
  const Eigen::MatrixXd X = RandomMatrix(40, 2, rng);
  const Eigen::MatrixXd K = kernel->Matrix(X);
  EXPECT_EQ((K - K.transpose()).cwiseAbs().maxCoeff(), 0.0);
  for (int i = 0; i < K.rows(); ++i) EXPECT_DOUBLE_EQ(K(i, i), 2.5);
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(K);
  EXPECT_GT(eig.eigenvalues().minCoeff(), -1e-10);
  EXPECT_TRUE(kernel->Diagonal(X).isApproxToConstant(2.5));
}

TEST_P(KernelTest, MatchesClosedFormAtUnitScaledDistance) {
  auto kernel = Make(1);
  Eigen::VectorXd p(2);
  p << std::log(2.0), std::log(3.0);  // l = 2, s = 3
  ASSERT_TRUE(kernel->set_log_params(p).ok());
  Eigen::MatrixXd a(1, 1), b(1, 1);
  a << 0.5;
  b << 2.5;  // r = |2.5 - 0.5| / 2 = 1
  const double k = kernel->Matrix(a, b)(0, 0);
  const double s5 = std::sqrt(5.0);
  const double expected = GetParam() == "matern52"
                              ? 3.0 * (1 + s5 + 5.0 / 3.0) * std::exp(-s5)
                              : 3.0 * std::exp(-0.5);
  EXPECT_NEAR(k, expected, 1e-14);
}

TEST_P(KernelTest, RejectsBadLogParams) {
  auto kernel = Make(2);
  EXPECT_THAT(kernel->set_log_params(Eigen::VectorXd::Zero(2)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("3")));
  Eigen::VectorXd nan = Eigen::VectorXd::Zero(3);
  nan[1] = std::nan("");
  EXPECT_THAT(
      kernel->set_log_params(nan),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("finite")));
  EXPECT_TRUE(kernel->log_params().isZero());
}

TEST_P(KernelTest, CloneIsDeep) {
  auto kernel = Make(2);
  auto copy = kernel->Clone();
  ASSERT_TRUE(copy->set_log_params(Eigen::VectorXd::Ones(3)).ok());
  EXPECT_TRUE(kernel->log_params().isZero());
  EXPECT_EQ(copy->name(), kernel->name());
}

INSTANTIATE_TEST_SUITE_P(AllKernels, KernelTest,
                         ::testing::ValuesIn(KernelNames()),
                         [](const auto& info) { return info.param; });

TEST(CreateKernelTest, RejectsUnknownNameAndBadDim) {
  EXPECT_THAT(CreateKernel("matern32", 2).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unknown kernel 'matern32'")));
  EXPECT_THAT(
      CreateKernel("rbf", 0).status(),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("input_dim")));
}

}  // namespace
}  // namespace metaopt::gp
