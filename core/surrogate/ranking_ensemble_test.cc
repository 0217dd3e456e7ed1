#include "core/surrogate/ranking_ensemble.h"

#include <memory>
#include <vector>

#include "Eigen/Cholesky"
#include "core/common/status_macros.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"

namespace metaopt::surrogate {
namespace {

using ::metaopt::testing::StatusIs;

gp::GaussianProcess MakeGp(double lengthscale, double noise_excess) {
  absl::StatusOr<gp::GaussianProcess> gp =
      gp::GaussianProcess::Create("matern52", 2);
  EXPECT_TRUE(gp.ok());
  Eigen::VectorXd h = gp->hyperparameters();
  h[0] = h[1] = std::log(lengthscale);
  h[gp->noise_index()] = std::log(noise_excess);
  h[gp->mean_index()] = 0.3;
  EXPECT_TRUE(gp->set_hyperparameters(h).ok());
  return *std::move(gp);
}

Eigen::MatrixXd Inputs() {
  Eigen::MatrixXd X(6, 2);
  X << 0.1, 0.2, 0.4, 0.9, 0.7, 0.3, 0.2, 0.6, 0.9, 0.8, 0.5, 0.5;
  return X;
}

// A prediction with the given means and a tiny variance.
gp::Prediction Sharp(Eigen::VectorXd mean) {
  gp::Prediction p;
  p.variance = Eigen::VectorXd::Constant(mean.size(), 1e-12);
  p.mean = std::move(mean);
  return p;
}

// Each closed-form leave-one-out prediction equals the GP conditioned on the
// other points, evaluated at the left-out one (noise included).
TEST(LeaveOneOutPredictionsTest, MatchesRefittingWithoutThePoint) {
  const gp::GaussianProcess gp = MakeGp(0.4, 0.05);
  const Eigen::MatrixXd X = Inputs();
  Eigen::VectorXd y(6);
  y << 0.5, -1.0, 0.2, 1.3, -0.4, 0.0;
  METAOPT_ASSERT_OK_AND_ASSIGN(gp::Prediction loo,
                               LeaveOneOutPredictions(gp, X, y));
  for (int i = 0; i < 6; ++i) {
    std::vector<int> rest;
    for (int j = 0; j < 6; ++j) {
      if (j != i) rest.push_back(j);
    }
    const Eigen::MatrixXd Xr = X(rest, Eigen::all);
    const Eigen::VectorXd yr = y(rest);
    Eigen::MatrixXd K = gp.kernel().Matrix(Xr);
    K.diagonal().array() += gp.noise_variance();
    const Eigen::MatrixXd k = gp.kernel().Matrix(Xr, X.row(i));
    const Eigen::LLT<Eigen::MatrixXd> llt(K);
    const double mean =
        gp.constant_mean() +
        (k.transpose() * llt.solve((yr.array() - gp.constant_mean()).matrix()))(
            0, 0);
    const double variance = gp.kernel().output_scale() + gp.noise_variance() -
                            (k.transpose() * llt.solve(k))(0, 0);
    EXPECT_NEAR(loo.mean[i], mean, 1e-9) << i;
    EXPECT_NEAR(loo.variance[i], variance, 1e-9) << i;
  }
  EXPECT_THAT(
      LeaveOneOutPredictions(gp, Eigen::MatrixXd(0, 2), Eigen::VectorXd(0)),
      StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
  EXPECT_THAT(LeaveOneOutPredictions(gp, X, Eigen::VectorXd::Zero(5)),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
}

TEST(RankingLossTest, CountsMisorderedPairs) {
  Eigen::VectorXd y(4);
  y << 1.0, 2.0, 3.0, 4.0;
  EXPECT_EQ(RankingLoss(y, y), 0);
  EXPECT_EQ(RankingLoss(2.0 * y.array() + 5.0, y), 0);  // order only
  EXPECT_EQ(RankingLoss(-y, y), 6);                     // every pair
  Eigen::VectorXd f(4);
  f << 1.0, 3.0, 2.0, 4.0;  // one swapped pair
  EXPECT_EQ(RankingLoss(f, y), 1);
}

// The model that ranks the observations perfectly takes the weight, the one
// that reverses them loses it, whichever is the target.
TEST(RankingWeightsTest, TheModelThatRanksBestGetsTheWeight) {
  Eigen::VectorXd y(6);
  y << 0.3, -1.2, 0.8, 2.0, -0.1, 0.5;
  const gp::Prediction right = Sharp(y);
  const gp::Prediction wrong = Sharp(-y);
  RankingWeightOptions options;
  options.samples = 64;
  METAOPT_ASSERT_OK_AND_ASSIGN(Eigen::VectorXd base_right,
                               RankingWeights({right, wrong}, y, options));
  EXPECT_DOUBLE_EQ(base_right[0], 1.0);
  EXPECT_DOUBLE_EQ(base_right[1], 0.0);
  METAOPT_ASSERT_OK_AND_ASSIGN(Eigen::VectorXd base_wrong,
                               RankingWeights({wrong, right}, y, options));
  EXPECT_DOUBLE_EQ(base_wrong[0], 0.0);
  EXPECT_DOUBLE_EQ(base_wrong[1], 1.0);
  // Equal rankings split every draw.
  METAOPT_ASSERT_OK_AND_ASSIGN(Eigen::VectorXd tie,
                               RankingWeights({right, right}, y, options));
  EXPECT_DOUBLE_EQ(tie[0], 0.5);
  EXPECT_DOUBLE_EQ(tie[1], 0.5);
}

// Uncertain predictions share the weight by how often each ranks best (a
// tie splits the draw); the weights are a deterministic function of the seed.
TEST(RankingWeightsTest, UncertainModelsShareByProbability) {
  Eigen::VectorXd y(4);
  y << 0.0, 1.0, 2.0, 3.0;
  gp::Prediction noisy = Sharp(y);
  noisy.variance.setConstant(0.5);  // often swaps neighbours
  gp::Prediction good = Sharp(y);
  good.variance.setConstant(0.1);  // rarely does
  RankingWeightOptions options;
  options.samples = 512;
  options.dilution_quantile = 1.0;  // both kept
  METAOPT_ASSERT_OK_AND_ASSIGN(Eigen::VectorXd w,
                               RankingWeights({noisy, good}, y, options));
  EXPECT_NEAR(w.sum(), 1.0, 1e-12);
  EXPECT_GT(w[0], 0.05);  // ties: draws where the noisy one ranks right
  EXPECT_LT(w[0], 0.5);
  METAOPT_ASSERT_OK_AND_ASSIGN(Eigen::VectorXd again,
                               RankingWeights({noisy, good}, y, options));
  EXPECT_EQ(w, again);
  options.seed = 1;
  METAOPT_ASSERT_OK_AND_ASSIGN(Eigen::VectorXd other,
                               RankingWeights({noisy, good}, y, options));
  EXPECT_NE(w, other);
}

// The dilution guard drops a base model whose median loss is above the given
// quantile of the target's losses: it then gets no weight, not even from the
// draws it would win.
TEST(RankingWeightsTest, DilutionGuardDropsAWorseBaseModel) {
  Eigen::VectorXd y(8);
  y << 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0;
  gp::Prediction base = Sharp(y);
  base.variance.setConstant(1.5);
  gp::Prediction target = Sharp(y);
  target.variance.setConstant(1.0);
  RankingWeightOptions options;
  options.samples = 256;
  options.dilution_quantile = 0.95;  // the paper's: kept
  METAOPT_ASSERT_OK_AND_ASSIGN(Eigen::VectorXd kept,
                               RankingWeights({base, target}, y, options));
  EXPECT_GT(kept[0], 0.1);
  options.dilution_quantile = 0.0;  // the target's best draw: dropped
  METAOPT_ASSERT_OK_AND_ASSIGN(Eigen::VectorXd dropped,
                               RankingWeights({base, target}, y, options));
  EXPECT_EQ(dropped[0], 0.0);
  EXPECT_EQ(dropped[1], 1.0);
}

TEST(RankingWeightsTest, FewObservationsAndInvalidInputs) {
  Eigen::VectorXd one(1);
  one << 2.0;
  METAOPT_ASSERT_OK_AND_ASSIGN(
      Eigen::VectorXd w, RankingWeights({Sharp(one), Sharp(one)}, one, {}));
  EXPECT_EQ(w[0], 1.0);  // nothing to rank: the first (base) model
  EXPECT_EQ(w[1], 0.0);
  Eigen::VectorXd y(3);
  y << 1.0, 2.0, 3.0;
  EXPECT_THAT(RankingWeights({}, y, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
  EXPECT_THAT(RankingWeights({Sharp(one)}, y, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
  gp::Prediction negative = Sharp(y);
  negative.variance[1] = -1.0;
  EXPECT_THAT(RankingWeights({negative}, y, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
  RankingWeightOptions bad;
  bad.samples = 0;
  EXPECT_THAT(RankingWeights({Sharp(y)}, y, bad),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
  bad.samples = 4;
  bad.dilution_quantile = 1.5;
  EXPECT_THAT(RankingWeights({Sharp(y)}, y, bad),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
}

// Ensemble mean sum w_i mu_i and variance sum w_i^2 sigma_i^2; a zero weight
// drops its model; fantasies keep the weights.
TEST(RankingEnsembleSurrogateTest, CombinesMembersByWeight) {
  const Eigen::MatrixXd X = Inputs();
  Eigen::VectorXd y(6);
  y << 0.5, -1.0, 0.2, 1.3, -0.4, 0.0;
  METAOPT_ASSERT_OK_AND_ASSIGN(gp::GpPosterior a,
                               gp::Condition(MakeGp(0.3, 0.01), X, y));
  METAOPT_ASSERT_OK_AND_ASSIGN(gp::GpPosterior b,
                               gp::Condition(MakeGp(1.5, 0.2), X, -y));
  auto sa = std::make_shared<const GpSurrogate>(a);
  auto sb = std::make_shared<const GpSurrogate>(b);
  Eigen::MatrixXd Q(2, 2);
  Q << 0.3, 0.3, 0.8, 0.1;
  METAOPT_ASSERT_OK_AND_ASSIGN(gp::Prediction pa, sa->Predict(Q));
  METAOPT_ASSERT_OK_AND_ASSIGN(gp::Prediction pb, sb->Predict(Q));
  Eigen::VectorXd w(2);
  w << 0.25, 0.75;
  METAOPT_ASSERT_OK_AND_ASSIGN(auto ensemble,
                               RankingEnsembleSurrogate::Create({sa, sb}, w));
  METAOPT_ASSERT_OK_AND_ASSIGN(gp::Prediction p, ensemble->Predict(Q));
  for (int i = 0; i < 2; ++i) {
    EXPECT_NEAR(p.mean[i], 0.25 * pa.mean[i] + 0.75 * pb.mean[i], 1e-12);
    EXPECT_NEAR(p.variance[i],
                0.0625 * pa.variance[i] + 0.5625 * pb.variance[i], 1e-12);
  }
  METAOPT_ASSERT_OK_AND_ASSIGN(auto fantasised, ensemble->WithFantasies(Q));
  METAOPT_ASSERT_OK_AND_ASSIGN(gp::Prediction pf, fantasised->Predict(Q));
  EXPECT_NEAR(pf.mean[0], p.mean[0], 1e-9);
  EXPECT_LT(pf.variance[0], p.variance[0]);

  w << 1.0, 0.0;
  METAOPT_ASSERT_OK_AND_ASSIGN(auto only_a,
                               RankingEnsembleSurrogate::Create({sa, sb}, w));
  EXPECT_EQ(only_a->weights().size(), 1);
  METAOPT_ASSERT_OK_AND_ASSIGN(gp::Prediction p1, only_a->Predict(Q));
  EXPECT_EQ(p1.mean, pa.mean);
  EXPECT_EQ(p1.variance, pa.variance);

  EXPECT_THAT(RankingEnsembleSurrogate::Create({sa, sb}, Eigen::Vector2d(0, 0)),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
  EXPECT_THAT(RankingEnsembleSurrogate::Create({sa}, Eigen::Vector2d(1, 1)),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
  EXPECT_THAT(
      RankingEnsembleSurrogate::Create({sa, nullptr}, Eigen::Vector2d(1, 1)),
      StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
}

// Rows of two stages' one-hots: stage 0 (2 algorithms) at columns 0-1,
// stage 1 (3 algorithms) at columns 2-4.
Eigen::RowVectorXd Choice(int a0, int a1) {
  Eigen::RowVectorXd x = Eigen::RowVectorXd::Zero(5);
  x[a0] = 1.0;
  x[2 + a1] = 1.0;
  return x;
}

// A GP surrogate (Matérn-5/2, default hyperparameters) conditioned on
// `observed` with targets 0.2, 0.7, ... (two rows here).
absl::StatusOr<std::shared_ptr<const GpSurrogate>> ObservedGp(
    const Eigen::MatrixXd& observed) {
  Eigen::VectorXd y = Eigen::VectorXd::LinSpaced(observed.rows(), 0.2, 0.7);
  METAOPT_ASSIGN_OR_RETURN(
      gp::GaussianProcess gp,
      gp::GaussianProcess::Create("matern52",
                                  static_cast<int>(observed.cols())));
  METAOPT_ASSIGN_OR_RETURN(gp::GpPosterior posterior,
                           gp::Condition(gp, observed, y));
  return std::make_shared<const GpSurrogate>(std::move(posterior));
}

// An untried algorithm keeps at least the prior variance; tried ones and the
// mean are the inner model's; a fantasy counts as tried.
TEST(UntriedAlgorithmSurrogateTest, RaisesTheVarianceOfUntriedAlgorithms) {
  const std::vector<space::StageLayout> stages = {{0, 0, 2}, {1, 2, 3}};
  Eigen::MatrixXd observed(2, 5);
  observed << Choice(0, 0), Choice(0, 1);
  METAOPT_ASSERT_OK_AND_ASSIGN(std::shared_ptr<const GpSurrogate> inner,
                               ObservedGp(observed));
  const double prior = 50.0;  // above any posterior variance here
  METAOPT_ASSERT_OK_AND_ASSIGN(
      auto wrapped,
      UntriedAlgorithmSurrogate::Create(inner, stages, prior, observed));
  Eigen::MatrixXd Q(4, 5);
  Q << Choice(0, 0), Choice(0, 1), Choice(1, 0), Choice(0, 2);
  METAOPT_ASSERT_OK_AND_ASSIGN(gp::Prediction p, wrapped->Predict(Q));
  METAOPT_ASSERT_OK_AND_ASSIGN(gp::Prediction q, inner->Predict(Q));
  EXPECT_EQ(p.mean, q.mean);
  EXPECT_EQ(p.variance[0], q.variance[0]);
  EXPECT_EQ(p.variance[1], q.variance[1]);
  EXPECT_EQ(p.variance[2], prior);  // stage 0's second algorithm
  EXPECT_EQ(p.variance[3], prior);  // stage 1's third algorithm
  EXPECT_FALSE(wrapped->ChoosesUntried(Q, 0));
  EXPECT_TRUE(wrapped->ChoosesUntried(Q, 2));

  // Pending (1, 2) tries both: every query is then the inner fantasy's.
  METAOPT_ASSERT_OK_AND_ASSIGN(auto fantasised,
                               wrapped->WithFantasies(Choice(1, 2)));
  METAOPT_ASSERT_OK_AND_ASSIGN(auto inner_fantasised,
                               inner->WithFantasies(Choice(1, 2)));
  METAOPT_ASSERT_OK_AND_ASSIGN(gp::Prediction f, fantasised->Predict(Q));
  METAOPT_ASSERT_OK_AND_ASSIGN(gp::Prediction g, inner_fantasised->Predict(Q));
  EXPECT_EQ(f.variance, g.variance);

  EXPECT_THAT(UntriedAlgorithmSurrogate::Create(nullptr, stages, 1, observed),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
  EXPECT_THAT(UntriedAlgorithmSurrogate::Create(inner, stages, -1, observed),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
  EXPECT_THAT(UntriedAlgorithmSurrogate::Create(inner, stages, 1,
                                                Eigen::MatrixXd::Zero(1, 3)),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
}

}  // namespace
}  // namespace metaopt::surrogate
