#include "core/acquisition/pareto_acquisition.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <vector>

#include "core/acquisition/acquisition.h"
#include "core/acquisition/hypervolume_improvement.h"
#include "core/common/parallel.h"
#include "core/common/status_macros.h"
#include "core/gp/gaussian_process.h"
#include "core/objective/pareto.h"
#include "core/surrogate/surrogate.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"

namespace metaopt::acquisition {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
using Points = std::vector<std::vector<double>>;

double Hypervolume(const Points& points, const std::vector<double>& reference) {
  return reference.size() == 2 ? objective::Hypervolume2D(points, reference)
                               : objective::Hypervolume3D(points, reference);
}

Points RandomPoints(int n, int dimension, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> unit(0, 1);
  Points points(n, std::vector<double>(dimension));
  for (auto& p : points) {
    for (double& x : p) x = unit(rng);
  }
  return points;
}

// The boxes cover exactly what a new point adds: its improvement equals the
// hypervolume gained, for random fronts and points in 2-D and 3-D.
TEST(NonDominatedBoxesTest, ImprovementIsTheHypervolumeGained) {
  std::mt19937_64 rng(7);
  for (const int dimension : {2, 3}) {
    for (int trial = 0; trial < 40; ++trial) {
      const Points front = RandomPoints(1 + trial % 9, dimension, rng);
      const std::vector<double> reference(dimension, 1.1);
      const NonDominatedBoxes boxes(front, reference);
      const double before = Hypervolume(front, reference);
      for (const auto& y : RandomPoints(5, dimension, rng)) {
        Points with = front;
        with.push_back(y);
        EXPECT_NEAR(boxes.Improvement(y), Hypervolume(with, reference) - before,
                    1e-12)
            << "dimension " << dimension << " trial " << trial;
      }
    }
  }
}

TEST(NonDominatedBoxesTest, KnownTwoObjectiveCase) {
  // Front (1, 3), (2, 1), reference (4, 4) dominates 3*1 + 2*3 - 2*1 = 7 of
  // the 16 below the reference: a point at (0, 0) adds the other 9.
  const NonDominatedBoxes boxes({{1, 3}, {2, 1}}, {4, 4});
  EXPECT_NEAR(boxes.Improvement({0, 0}), 9, 1e-12);
  EXPECT_NEAR(boxes.Improvement({1.5, 2}), 0.5 * 1, 1e-12);
  EXPECT_EQ(boxes.Improvement({3, 3.5}), 0);  // dominated
  EXPECT_EQ(boxes.Improvement({5, 0}), 0);    // beyond the reference
}

// EHVI is the mean improvement: compared with a Monte-Carlo average.
TEST(NonDominatedBoxesTest, ExpectedMatchesMonteCarlo) {
  std::mt19937_64 rng(11);
  std::normal_distribution<double> normal(0, 1);
  for (const int dimension : {2, 3}) {
    const Points front = RandomPoints(6, dimension, rng);
    const std::vector<double> reference(dimension, 1.2);
    const NonDominatedBoxes boxes(front, reference);
    const std::vector<double> mean(dimension, 0.45);
    std::vector<double> sd(dimension, 0.2);
    sd[0] = 0.3;
    constexpr int kSamples = 400000;
    double sum = 0;
    std::vector<double> y(dimension);
    for (int s = 0; s < kSamples; ++s) {
      for (int d = 0; d < dimension; ++d) y[d] = mean[d] + sd[d] * normal(rng);
      sum += boxes.Improvement(y);
    }
    const double expected = boxes.Expected(mean, sd);
    EXPECT_NEAR(expected, sum / kSamples, 0.01 * expected)
        << "dimension " << dimension;
  }
}

// Dominated points add no boxes: the boxes of a set are those of its
// non-dominated points, (k+1)^(D-1) for k of them, and EHVI is the same.
TEST(NonDominatedBoxesTest, DominatedPointsAddNoBoxes) {
  std::mt19937_64 rng(13);
  for (const int dimension : {2, 3}) {
    const Points all = RandomPoints(40, dimension, rng);
    Points front;
    for (int i : objective::NonDominated(all)) front.push_back(all[i]);
    ASSERT_LT(front.size(), all.size());
    const std::vector<double> reference(dimension, 1.1);
    const NonDominatedBoxes with(all, reference);
    const NonDominatedBoxes without(front, reference);
    const int k = static_cast<int>(front.size());
    EXPECT_EQ(with.size(), dimension == 2 ? k + 1 : (k + 1) * (k + 1));
    EXPECT_EQ(with.size(), without.size());
    for (const auto& mean : RandomPoints(20, dimension, rng)) {
      const std::vector<double> sd(dimension, 0.15);
      const double expected = without.Expected(mean, sd);
      EXPECT_NEAR(with.Expected(mean, sd), expected, 1e-12 * expected);
    }
  }
}

TEST(NonDominatedBoxesTest, OneObjectiveIsExpectedImprovement) {
  const NonDominatedBoxes boxes({{0.7}, {0.4}, {0.9}}, {kInf});
  EXPECT_NEAR(boxes.Expected({0.5}, {0.2}),
              ExpectedImprovement(0.5, 0.04, 0.4), 1e-12);
}

TEST(NonDominatedBoxesTest, NoVarianceIsTheImprovementOfTheMean) {
  const NonDominatedBoxes boxes({{1, 3}, {2, 1}}, {4, 4});
  EXPECT_NEAR(boxes.Expected({1.5, 2}, {0, 0}), 0.5, 1e-12);
}

// The shortcuts for the tails return what the formula computes, bit for
// bit, at and beyond their thresholds (and the formula is used between).
TEST(ExpectedShortfallTest, TailsEqualTheFormulaBitForBit) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> unit(-3.0, 3.0);
  std::uniform_real_distribution<double> log_sd(-12.0, 3.0);
  int in_tails = 0;
  for (int i = 0; i < 200000; ++i) {
    const double mean = unit(rng);
    const double sd = std::exp(log_sd(rng));
    const double c = unit(rng) * (i % 2 == 0 ? 1.0 : 20.0);
    const double z = (c - mean) / sd;
    const double formula = (c - mean) * NormalCdf(z) + sd * NormalPdf(z);
    const double shortfall = ExpectedShortfall(c, mean, sd);
    in_tails += z >= 10 || z <= -40;
    ASSERT_EQ(std::memcmp(&formula, &shortfall, sizeof(double)), 0)
        << "c " << c << " mean " << mean << " sd " << sd << " z " << z << ": "
        << formula << " against " << shortfall;
  }
  EXPECT_GT(in_tails, 50000);
  for (double z : {10.0, 10.5, 40.0, 1e3, -40.0, -40.5, -1e3}) {
    const double formula = z * NormalCdf(z) + NormalPdf(z);
    const double shortfall = ExpectedShortfall(z, 0.0, 1.0);
    EXPECT_EQ(std::memcmp(&formula, &shortfall, sizeof(double)), 0) << z;
  }
}

TEST(LogNormalCdfTest, MatchesLogPhiAndItsTail) {
  for (const double z : {-5.0, -1.0, 0.0, 2.0}) {
    EXPECT_NEAR(LogNormalCdf(z), std::log(NormalCdf(z)), 1e-12) << z;
  }
  // Continuous where the tail series takes over.
  EXPECT_NEAR(LogNormalCdf(-30.0001), LogNormalCdf(-29.9999), 1e-2);
  EXPECT_TRUE(std::isfinite(LogNormalCdf(-200)));
}

// A surrogate whose mean at x is slope * x[0] + offset, with variance 1
// everywhere (or 0 at inputs it was conditioned on: a crude believer).
class LinearSurrogate final : public surrogate::Surrogate {
 public:
  LinearSurrogate(double slope, double offset, std::vector<double> known = {})
      : slope_(slope), offset_(offset), known_(std::move(known)) {}

  absl::StatusOr<gp::Prediction> Predict(
      const Eigen::MatrixXd& X) const override {
    gp::Prediction p;
    p.mean.resize(X.rows());
    p.variance.resize(X.rows());
    for (Eigen::Index i = 0; i < X.rows(); ++i) {
      p.mean[i] = slope_ * X(i, 0) + offset_;
      p.variance[i] = 1;
      for (double k : known_) {
        if (k == X(i, 0)) p.variance[i] = 0;
      }
    }
    return p;
  }
  absl::StatusOr<std::unique_ptr<const surrogate::Surrogate>> WithFantasies(
      const Eigen::MatrixXd& X) const override {
    std::vector<double> known = known_;
    for (Eigen::Index i = 0; i < X.rows(); ++i) known.push_back(X(i, 0));
    return std::unique_ptr<const surrogate::Surrogate>(
        new LinearSurrogate(slope_, offset_, std::move(known)));
  }

 private:
  double slope_;
  double offset_;
  std::vector<double> known_;
};

gp::Prediction Fixed(const Eigen::VectorXd& mean, double variance) {
  gp::Prediction p;
  p.mean = mean;
  p.variance = Eigen::VectorXd::Constant(mean.size(), variance);
  return p;
}

TEST(ParetoAcquisitionTest, ConstraintsMultiplyByTheProbabilityOfFeasibility) {
  // One objective, one "at most 0" constraint whose mean is x: P(feasible) =
  // Phi(-x).
  ParetoAcquisition acquisition(
      {}, {{std::make_shared<LinearSurrogate>(1, 0), true, 0}}, {{0.0}},
      {kInf});
  Eigen::MatrixXd X(3, 1);
  X << -1, 0, 2;
  const gp::Prediction first = Fixed(Eigen::VectorXd::Constant(3, -0.5), 1);
  METAOPT_ASSERT_OK_AND_ASSIGN(Eigen::VectorXd score,
                               acquisition.Score(first, X));
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(score[i],
                LogExpectedImprovement(-0.5, 1, 0.0) + std::log(NormalCdf(-X(i, 0))),
                1e-9);
  }
}

TEST(ParetoAcquisitionTest, WithoutAFeasibleObservationOnlyFeasibilityCounts) {
  ParetoAcquisition acquisition(
      {}, {{std::make_shared<LinearSurrogate>(1, 0), false, 1}}, {}, {kInf});
  Eigen::MatrixXd X(2, 1);
  X << 0, 3;
  METAOPT_ASSERT_OK_AND_ASSIGN(
      Eigen::VectorXd score,
      acquisition.Score(Fixed(Eigen::VectorXd::Zero(2), 1), X));
  EXPECT_NEAR(score[0], std::log(NormalCdf(-1)), 1e-12);  // at least 1
  EXPECT_NEAR(score[1], std::log(NormalCdf(2)), 1e-12);
}

TEST(ParetoAcquisitionTest, TwoObjectivesScoreTheirEhvi) {
  // The second objective's mean is -x: a trade-off along x.
  const Points front = {{0.2, -0.8}, {0.8, -0.2}};
  const std::vector<double> reference = {1, 0};
  ParetoAcquisition acquisition({std::make_shared<LinearSurrogate>(-1, 0)}, {},
                                front, reference);
  Eigen::MatrixXd X(1, 1);
  X << 0.5;
  METAOPT_ASSERT_OK_AND_ASSIGN(
      Eigen::VectorXd score,
      acquisition.Score(Fixed(Eigen::VectorXd::Constant(1, 0.5), 0.04), X));
  const NonDominatedBoxes boxes(front, reference);
  EXPECT_NEAR(score[0], std::log(boxes.Expected({0.5, -0.5}, {0.2, 1.0})),
              1e-12);
}

// A catalogue's worth of rows runs on the compute threads: the same bits on
// 1 and 3 threads, and each row the EHVI of its own marginals.
TEST(ParetoAcquisitionTest, ManyRowsScoreTheSameOnAnyNumberOfThreads) {
  const Points front = {{0.2, -0.8}, {0.5, -0.6}, {0.8, -0.2}, {0.9, -0.1}};
  const std::vector<double> reference = {1, 0};
  ParetoAcquisition acquisition({std::make_shared<LinearSurrogate>(-1, 0)}, {},
                                front, reference);
  const int n = 6000;
  Eigen::MatrixXd X(n, 1);
  gp::Prediction first;
  first.mean.resize(n);
  first.variance.resize(n);
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (int i = 0; i < n; ++i) {
    X(i, 0) = unit(rng);
    first.mean[i] = unit(rng);
    first.variance[i] = 1e-4 + 0.1 * unit(rng);
  }
  const int threads = ComputeThreads();
  SetComputeThreads(1);
  METAOPT_ASSERT_OK_AND_ASSIGN(const Eigen::VectorXd one,
                               acquisition.Score(first, X));
  SetComputeThreads(3);
  METAOPT_ASSERT_OK_AND_ASSIGN(const Eigen::VectorXd three,
                               acquisition.Score(first, X));
  SetComputeThreads(threads);
  ASSERT_EQ(one.size(), n);
  EXPECT_EQ(std::memcmp(one.data(), three.data(), n * sizeof(double)), 0);
  const NonDominatedBoxes boxes(front, reference);
  for (int i : {0, 255, 256, 4097, n - 1}) {
    EXPECT_EQ(one[i], std::log(boxes.Expected(
                          {first.mean[i], -X(i, 0)},
                          {std::sqrt(first.variance[i]), 1.0})))
        << i;
  }
}

// LinearSurrogate whose screening prediction has the same mean and a
// variance `bound` (>= 1) above the exact one.
class ScreenedLinearSurrogate final : public surrogate::Surrogate {
 public:
  ScreenedLinearSurrogate(double slope, double offset, double bound)
      : exact_(slope, offset), bound_(bound) {}

  absl::StatusOr<gp::Prediction> Predict(
      const Eigen::MatrixXd& X) const override {
    return exact_.Predict(X);
  }
  absl::StatusOr<std::optional<gp::Prediction>> PredictScreening(
      const Eigen::MatrixXd& X) const override {
    METAOPT_ASSIGN_OR_RETURN(gp::Prediction p, exact_.Predict(X));
    p.variance.setConstant(bound_);
    return std::optional<gp::Prediction>(std::move(p));
  }
  absl::StatusOr<std::unique_ptr<const surrogate::Surrogate>> WithFantasies(
      const Eigen::MatrixXd& X) const override {
    return exact_.WithFantasies(X);
  }

 private:
  LinearSurrogate exact_;
  double bound_;
};

// ScoreBound, at variances above the exact ones (the first objective's and
// the other models' screening variances), is never below Score: for both
// sides of each constraint's bound and across the front.
TEST(ParetoAcquisitionTest, ScoreBoundBoundsTheScore) {
  const Points front = {{0.2, -0.8}, {0.8, -0.2}};
  ParetoAcquisition acquisition(
      {std::make_shared<ScreenedLinearSurrogate>(-1, 0, 3)},
      {{std::make_shared<ScreenedLinearSurrogate>(1, 0, 2), true, 0.5},
       {std::make_shared<ScreenedLinearSurrogate>(1, 0, 5), false, 0.1}},
      front, {1, 0});
  Eigen::MatrixXd X(9, 1);
  X << -1, -0.2, 0, 0.1, 0.3, 0.5, 0.7, 1, 1.5;
  for (const double variance : {0.01, 0.25, 1.0}) {
    const Eigen::VectorXd mean = X.col(0) * 0.8 + Eigen::VectorXd::Constant(9, 0.1);
    METAOPT_ASSERT_OK_AND_ASSIGN(Eigen::VectorXd exact,
                                 acquisition.Score(Fixed(mean, variance), X));
    METAOPT_ASSERT_OK_AND_ASSIGN(
        Eigen::VectorXd bound,
        acquisition.ScoreBound(Fixed(mean, 2 * variance), X));
    for (int i = 0; i < X.rows(); ++i) {
      EXPECT_GE(bound[i], exact[i] - 1e-12) << X(i, 0) << " " << variance;
    }
    // At the exact variances the bound differs only by the constraints met
    // by their means (log 1 in place of log P).
    METAOPT_ASSERT_OK_AND_ASSIGN(Eigen::VectorXd same,
                                 acquisition.ScoreBound(Fixed(mean, variance), X));
    EXPECT_GT((same - exact).maxCoeff(), 0);
  }
}

// A GP surrogate of `n` points of f over [0, 1]^2 (the first n of `X`).
std::shared_ptr<const surrogate::Surrogate> GpOf(
    const Eigen::MatrixXd& X, int n, double (*f)(double, double)) {
  Eigen::VectorXd y(n);
  for (int i = 0; i < n; ++i) y[i] = f(X(i, 0), X(i, 1));
  gp::GaussianProcess model = *gp::GaussianProcess::Create("matern52", 2);
  absl::StatusOr<gp::GpPosterior> posterior = gp::GpPosterior::Create(
      std::move(model), X.topRows(n), y, gp::Standardization::FromTargets(y));
  EXPECT_TRUE(posterior.ok()) << posterior.status();
  return std::make_shared<surrogate::GpSurrogate>(*std::move(posterior));
}

// Screening the further outputs of catalogue rows through kept kernels
// (ScoreCatalogueBound) gives ScoreBound's values, also at the next call
// with one more observation, when the caches hold the earlier points.
TEST(ParetoAcquisitionTest, CatalogueBoundThroughKeptKernelsEqualsScoreBound) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> unit(0, 1);
  Eigen::MatrixXd observed(81, 2);
  for (double& x : observed.reshaped()) x = unit(rng);
  Eigen::MatrixXd catalogue(300, 2);
  for (double& x : catalogue.reshaped()) x = unit(rng);
  std::vector<int> rows;
  for (int i = 0; i < catalogue.rows(); i += 2) rows.push_back(i);
  const Eigen::MatrixXd inputs = surrogate::RowsOf(catalogue, rows);
  Eigen::VectorXd mean(inputs.rows());
  for (double& m : mean) m = unit(rng);
  OutputKernelCaches caches;
  for (const int n : {80, 81}) {
    ParetoAcquisition acquisition(
        {GpOf(observed, n, [](double a, double b) { return a * a + b; })},
        {{GpOf(observed, n, [](double a, double b) { return std::sin(5 * a * b); }),
          true, 0.2}},
        {{0.3, 0.9}, {0.6, 0.4}, {0.9, 0.1}}, {1.1, 2.1});
    METAOPT_ASSERT_OK_AND_ASSIGN(
        Eigen::VectorXd bound, acquisition.ScoreBound(Fixed(mean, 0.05), inputs));
    METAOPT_ASSERT_OK_AND_ASSIGN(
        Eigen::VectorXd kept,
        acquisition.ScoreCatalogueBound(Fixed(mean, 0.05), inputs,
                                        {catalogue, rows, caches}));
    ASSERT_EQ(kept.size(), bound.size());
    for (Eigen::Index i = 0; i < bound.size(); ++i) {
      EXPECT_NEAR(kept[i], bound[i], 1e-9 * (1 + std::abs(bound[i])))
          << "n " << n << " row " << rows[i];
    }
    // Both outputs' kernels are kept (a process budget of 0 would keep none).
    EXPECT_GT(caches.ForOutput(0).bytes(), 0);
    EXPECT_GT(caches.ForOutput(1).bytes(), 0);
  }
}

TEST(ParetoAcquisitionTest, APickJoinsTheFrontAsBelieved) {
  ParetoAcquisition acquisition({std::make_shared<LinearSurrogate>(-1, 0)}, {},
                                {{0.9, -0.1}}, {1, 0});
  Eigen::MatrixXd pick(1, 1);
  pick << 0.5;
  METAOPT_ASSERT_OK_AND_ASSIGN(std::unique_ptr<const AcquisitionFunction> next,
                               acquisition.AfterPick(pick, 0.5));
  ASSERT_NE(next, nullptr);
  // The believed point (0.5, -0.5) is now on the front: a candidate with the
  // same certain means improves nothing.
  gp::Prediction same = Fixed(Eigen::VectorXd::Constant(1, 0.5), 0);
  METAOPT_ASSERT_OK_AND_ASSIGN(Eigen::VectorXd score, next->Score(same, pick));
  EXPECT_EQ(score[0], -kInf);
  METAOPT_ASSERT_OK_AND_ASSIGN(Eigen::VectorXd before,
                               acquisition.Score(same, pick));
  EXPECT_TRUE(std::isfinite(before[0]));
}

}  // namespace
}  // namespace metaopt::acquisition
