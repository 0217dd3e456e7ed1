#include "core/surrogate/pmf_model.h"

#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include "Eigen/Cholesky"
#include "core/gp/gaussian_process.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"

namespace metaopt::surrogate {
namespace {

using ::metaopt::testing::StatusIs;
using ::testing::HasSubstr;

Eigen::MatrixXd RandomMatrix(int rows, int cols, uint64_t seed,
                             double scale = 1.0) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, scale);
  Eigen::MatrixXd m(rows, cols);
  for (int i = 0; i < rows; ++i) {
    for (int j = 0; j < cols; ++j) m(i, j) = normal(rng);
  }
  return m;
}

PmfKernelParams TestParams(int q) {
  Eigen::VectorXd l(q);
  for (int i = 0; i < q; ++i) l[i] = 0.7 + 0.3 * i;
  return PmfKernelParams::FromPositive(l, 1.3, 0.05);
}

TEST(PmfSoftplusTest, InverseRoundTripsAndSigmoidIsTheDerivative) {
  for (double p : {1e-6, 0.01, 0.5, 1.0, 3.0, 25.0, 40.0}) {
    EXPECT_NEAR(Softplus(InverseSoftplus(p)), p, 1e-9 * std::max(1.0, p));
  }
  for (double u : {-20.0, -1.0, 0.0, 2.0, 35.0}) {
    const double h = 1e-6;
    EXPECT_NEAR((Softplus(u + h) - Softplus(u - h)) / (2 * h), Sigmoid(u),
                1e-6);
  }
}

TEST(PmfNllTest, MatchesTheGpModuleWithZeroMean) {
  const int q = 3;
  const Eigen::MatrixXd X = RandomMatrix(12, q, 1);
  const Eigen::VectorXd t = RandomMatrix(12, 1, 2).col(0);
  const PmfKernelParams params = TestParams(q);
  METAOPT_ASSERT_OK_AND_ASSIGN(PmfNll nll,
                       PmfNegativeLogLikelihood(X, t, params, false));
  METAOPT_ASSERT_OK_AND_ASSIGN(gp::GaussianProcess process,
                       gp::GaussianProcess::Create("rbf", q, 1e-9));
  Eigen::VectorXd h(q + 3);
  h << params.lengthscales().array().log().matrix(),
      std::log(params.signal_variance()),
      std::log(params.noise_variance() - 1e-9), 0.0;
  METAOPT_ASSERT_OK(process.set_hyperparameters(h));
  METAOPT_ASSERT_OK_AND_ASSIGN(gp::NllResult reference,
                       process.NegativeLogMarginalLikelihood(X, t));
  EXPECT_NEAR(nll.value, reference.value, 1e-8);
}

// Central finite differences of the value against the analytic gradients.
TEST(PmfNllTest, GradientsMatchFiniteDifferences) {
  const int q = 4;
  const int n = 15;
  const Eigen::MatrixXd X = RandomMatrix(n, q, 3);
  const Eigen::VectorXd t = RandomMatrix(n, 1, 4).col(0);
  const PmfKernelParams params = TestParams(q);
  METAOPT_ASSERT_OK_AND_ASSIGN(PmfNll nll,
                       PmfNegativeLogLikelihood(X, t, params, true));
  const double h = 1e-5;
  auto value = [&](const Eigen::MatrixXd& x, const PmfKernelParams& p) {
    return PmfNegativeLogLikelihood(x, t, p, false)->value;
  };
  // Kernel parameters, in softplus (raw) space.
  const Eigen::VectorXd raw = params.Raw();
  const Eigen::VectorXd raw_grad = RawGradient(nll.grad_log_params, params);
  for (int i = 0; i < raw.size(); ++i) {
    Eigen::VectorXd plus = raw;
    Eigen::VectorXd minus = raw;
    plus[i] += h;
    minus[i] -= h;
    const double fd = (value(X, PmfKernelParams::FromRaw(plus)) -
                       value(X, PmfKernelParams::FromRaw(minus))) /
                      (2 * h);
    EXPECT_NEAR(raw_grad[i], fd, 1e-5 * std::max(1.0, std::abs(fd)))
        << "raw parameter " << i;
  }
  // Log-space parameters (used by FineTune).
  const Eigen::VectorXd logp = params.LogPositive();
  for (int i = 0; i < logp.size(); ++i) {
    Eigen::VectorXd plus = logp;
    Eigen::VectorXd minus = logp;
    plus[i] += h;
    minus[i] -= h;
    auto from_log = [&](const Eigen::VectorXd& v) {
      return PmfKernelParams::FromPositive(v.head(q).array().exp().matrix(),
                                           std::exp(v[q]), std::exp(v[q + 1]));
    };
    const double fd =
        (value(X, from_log(plus)) - value(X, from_log(minus))) / (2 * h);
    EXPECT_NEAR(nll.grad_log_params[i], fd, 1e-5 * std::max(1.0, std::abs(fd)))
        << "log parameter " << i;
  }
  // Latents.
  ASSERT_EQ(nll.grad_latents.rows(), n);
  ASSERT_EQ(nll.grad_latents.cols(), q);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < q; ++j) {
      Eigen::MatrixXd plus = X;
      Eigen::MatrixXd minus = X;
      plus(i, j) += h;
      minus(i, j) -= h;
      const double fd = (value(plus, params) - value(minus, params)) / (2 * h);
      EXPECT_NEAR(nll.grad_latents(i, j), fd,
                  1e-5 * std::max(1.0, std::abs(fd)))
          << "latent (" << i << ", " << j << ")";
    }
  }
}

TEST(PmfNllTest, RejectsShapeMismatches) {
  const PmfKernelParams params = TestParams(2);
  EXPECT_THAT(PmfNegativeLogLikelihood(Eigen::MatrixXd::Zero(3, 2),
                                       Eigen::VectorXd::Zero(4), params, false)
                  .status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("4 targets")));
}

TEST(PcaLatentsTest, RecoversTheColumnSpaceOfALowRankMatrix) {
  const int n = 40;
  const int d = 25;
  const int rank = 3;
  const Eigen::MatrixXd Y =
      RandomMatrix(n, rank, 5) * RandomMatrix(rank, d, 6) +
      Eigen::MatrixXd::Constant(n, d, 2.0);
  METAOPT_ASSERT_OK_AND_ASSIGN(Eigen::MatrixXd X, PcaLatents(Y, 5));
  ASSERT_EQ(X.rows(), n);
  ASSERT_EQ(X.cols(), 5);
  // Components beyond the rank are exactly zero.
  EXPECT_LT(X.rightCols(2).norm(), 1e-12);
  // The scores are centred, orthogonal, ordered by decreasing variance and
  // span the centred matrix: regressing it on them reproduces it.
  const Eigen::MatrixXd centred = Y.rowwise() - Y.colwise().mean();
  const Eigen::MatrixXd S = X.leftCols(rank);
  EXPECT_LT(S.colwise().sum().norm(), 1e-9);
  const Eigen::MatrixXd gram = S.transpose() * S;
  EXPECT_LT((gram - Eigen::MatrixXd(gram.diagonal().asDiagonal())).norm(),
            1e-8 * gram.norm());
  EXPECT_GE(gram(0, 0), gram(1, 1));
  EXPECT_GE(gram(1, 1), gram(2, 2));
  const Eigen::MatrixXd fit = S * gram.ldlt().solve(S.transpose() * centred);
  EXPECT_LT((fit - centred).norm(), 1e-8 * centred.norm());
  // The total variance is preserved.
  EXPECT_NEAR(S.squaredNorm(), centred.squaredNorm(),
              1e-8 * centred.squaredNorm());
}

TEST(PcaLatentsTest, ImputesMissingEntriesWithTheColumnMean) {
  Eigen::MatrixXd Y(4, 2);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Y << 1, 10,  //
      2, nan,  //
      3, 30,   //
      nan, 20;
  Eigen::MatrixXd imputed = Y;
  imputed(1, 1) = 20;
  imputed(3, 0) = 2;
  METAOPT_ASSERT_OK_AND_ASSIGN(Eigen::MatrixXd a, PcaLatents(Y, 2));
  METAOPT_ASSERT_OK_AND_ASSIGN(Eigen::MatrixXd b, PcaLatents(imputed, 2));
  // Equal up to the sign of each component.
  for (int q = 0; q < 2; ++q) {
    const double sign = a.col(q).dot(b.col(q)) >= 0 ? 1.0 : -1.0;
    EXPECT_LT((a.col(q) - sign * b.col(q)).norm(), 1e-9);
  }
  EXPECT_THAT(PcaLatents(Y, 0).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("latent")));
}

TEST(PmfModelTest, ArtifactRoundTrip) {
  const int q = 3;
  METAOPT_ASSERT_OK_AND_ASSIGN(
      PmfModel model,
      PmfModel::Create(RandomMatrix(5, q, 7), TestParams(q), 0.3, 0.1));
  v1::ModelArtifact artifact;
  for (int i = 0; i < 5; ++i) artifact.add_catalogue();
  model.ToArtifact(&artifact);
  model.ToArtifact(&artifact);  // replaces, does not duplicate
  EXPECT_EQ(artifact.tensors_size(), 4);
  METAOPT_ASSERT_OK_AND_ASSIGN(PmfModel read, PmfModel::FromArtifact(artifact));
  EXPECT_LT((read.latents() - model.latents()).norm(), 1e-15);
  EXPECT_LT((read.params().Raw() - model.params().Raw()).norm(), 1e-9);
  EXPECT_EQ(read.y_mean(), 0.3);
  EXPECT_EQ(read.y_std(), 0.1);
  artifact.add_catalogue();
  EXPECT_THAT(PmfModel::FromArtifact(artifact).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("catalogue size 6")));
}

TEST(PmfSurrogateTest, InterpolatesObservationsAndFantasiesShrinkVariance) {
  const int q = 2;
  Eigen::VectorXd l(q);
  l << 1.0, 1.0;
  METAOPT_ASSERT_OK_AND_ASSIGN(
      PmfModel model,
      PmfModel::Create(RandomMatrix(30, q, 8),
                       PmfKernelParams::FromPositive(l, 1.0, 1e-4), 0.5, 0.2));
  auto shared = std::make_shared<const PmfModel>(model);
  const std::vector<int> observed = {0, 3, 7};
  Eigen::VectorXd losses(3);
  losses << 0.4, 0.6, 0.5;
  METAOPT_ASSERT_OK_AND_ASSIGN(PmfSurrogate posterior,
                       PmfSurrogate::Create(shared, observed, losses));
  METAOPT_ASSERT_OK_AND_ASSIGN(gp::Prediction at_observed,
                       posterior.PredictEntries(observed));
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(at_observed.mean[i], losses[i], 1e-3);
    EXPECT_LT(at_observed.variance[i], 1e-3 * 0.04);
  }
  // The prior: mean y_mean, variance a * y_std^2.
  METAOPT_ASSERT_OK_AND_ASSIGN(PmfSurrogate prior,
                       PmfSurrogate::Create(shared, {}, Eigen::VectorXd()));
  METAOPT_ASSERT_OK_AND_ASSIGN(gp::Prediction p, prior.PredictEntries({5}));
  EXPECT_NEAR(p.mean[0], 0.5, 1e-12);
  EXPECT_NEAR(p.variance[0], 0.04, 1e-9);
  // Fantasies keep the mean and shrink the variance at the fantasised entry.
  METAOPT_ASSERT_OK_AND_ASSIGN(gp::Prediction before, posterior.PredictEntries({12}));
  METAOPT_ASSERT_OK_AND_ASSIGN(PmfSurrogate fantasised,
                       posterior.WithFantasyEntries({12}));
  METAOPT_ASSERT_OK_AND_ASSIGN(gp::Prediction after, fantasised.PredictEntries({12}));
  EXPECT_NEAR(after.mean[0], before.mean[0], 1e-9);
  EXPECT_LT(after.variance[0], 0.01 * before.variance[0]);
  EXPECT_THAT(posterior.PredictEntries({30}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("outside [0, 30)")));
}

}  // namespace
}  // namespace metaopt::surrogate
