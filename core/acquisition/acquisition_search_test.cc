#include "core/acquisition/acquisition_search.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "core/common/parallel.h"
#include "core/common/status_macros.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"
#include "tests/testutil/test_specs.h"

namespace metaopt::acquisition {
namespace {

using ::metaopt::testing::CatalogueSpec;
using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;

// A deterministic model (variance 0) of (x - 0.3)^2, x the encoded column
// `column`, as a random forest's prediction can be; its fantasies change
// nothing. With best = -1 nothing improves: every log-EI is -inf, a tie.
class Parabola final : public surrogate::Surrogate {
 public:
  explicit Parabola(int column) : column_(column) {}
  absl::StatusOr<gp::Prediction> Predict(
      const Eigen::MatrixXd& X) const override {
    gp::Prediction p;
    p.mean = (X.col(column_).array() - 0.3).square().matrix();
    p.variance = Eigen::VectorXd::Zero(X.rows());
    return p;
  }
  absl::StatusOr<std::unique_ptr<const surrogate::Surrogate>> WithFantasies(
      const Eigen::MatrixXd&) const override {
    return std::unique_ptr<const surrogate::Surrogate>(new Parabola(column_));
  }

 private:
  int column_;
};

const LogExpectedImprovementFunction kNothingImproves(-1);

// Prefers low predicted values with certain predictions: -mean - variance,
// which falls as the variance grows.
class LowVarianceFirst final : public AcquisitionFunction {
 public:
  absl::StatusOr<Eigen::VectorXd> Score(
      const gp::Prediction& prediction,
      const Eigen::MatrixXd& /*inputs*/) const override {
    return Eigen::VectorXd(-prediction.mean - prediction.variance);
  }
  bool GrowsWithVariance() const override { return false; }
};

// x of a CatalogueSpec configuration.
double X(const v1::Configuration& c) {
  return c.assignments(0).parameters().at("x").number();
}

class AcquisitionSearchTest : public ::testing::Test {
 protected:
  AcquisitionSearchTest()
      : spec_(CatalogueSpec(11)),
        space_(*space::SearchSpace::Create(spec_.search_space())),
        encoder_(space_),
        catalogue_(EncodeCatalogue(spec_, encoder_)),
        model_(encoder_.layout().parameters[0].offset) {}

  // The canonical configuration with this x.
  v1::Configuration Point(double x) const {
    v1::Configuration c = spec_.candidates(0);
    (*c.mutable_assignments(0)->mutable_parameters())["x"].set_number(x);
    return *space_.Canonicalize(c, "point");
  }

  const v1::StudySpec spec_;  // x in [0, 1]; catalogue x = 0, 0.1, ..., 1
  const space::SearchSpace space_;
  const space::Encoder encoder_;
  const std::shared_ptr<const EncodedCatalogue> catalogue_;
  const Parabola model_;
};

TEST_F(AcquisitionSearchTest, TiesInLogEiGoToTheFirstOrToTheLowerMean) {
  const std::string held = catalogue_->keys[3];  // x = 0.3
  auto is_held = [&](const std::string& key) { return key == held; };
  METAOPT_ASSERT_OK_AND_ASSIGN(
      std::vector<int> rows,
      MaximizeOverCatalogue(model_, *catalogue_, is_held, kNothingImproves, 2));
  EXPECT_THAT(rows, ElementsAre(0, 1));
  const std::vector<int> all = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  METAOPT_ASSERT_OK_AND_ASSIGN(
      rows, MaximizeOverCatalogue(model_, *catalogue_, all, is_held,
                                  kNothingImproves, 2, Ties::kLowerMean));
  EXPECT_THAT(rows, UnorderedElementsAre(2, 4));
}

TEST_F(AcquisitionSearchTest, CatalogueRowsAreOnlyTheGivenOnesInTheirOrder) {
  const std::string held = catalogue_->keys[3];
  auto is_held = [&](const std::string& key) { return key == held; };
  const std::vector<int> rows = {7, 5, 3};
  METAOPT_ASSERT_OK_AND_ASSIGN(
      std::vector<int> picks,
      MaximizeOverCatalogue(model_, *catalogue_, rows, is_held,
                            kNothingImproves, 5));
  EXPECT_THAT(picks, ElementsAre(7, 5));
  METAOPT_ASSERT_OK_AND_ASSIGN(
      picks, MaximizeOverCatalogue(model_, *catalogue_, rows, is_held,
                                   kNothingImproves, 5, Ties::kLowerMean));
  EXPECT_THAT(picks, ElementsAre(5, 7));
}

// The search restricted to x >= 0.6 by its sampler and its neighbours (as a
// Mosaic playout keeps one structure) climbs from the incumbent at 0.95 to
// the subspace's best point, 0.6.
TEST_F(AcquisitionSearchTest, SamplerNeighboursAndClimbKeepToASubspace) {
  SearchOptions options;
  options.random_samples = 20;
  options.sample = [this](space::Rng& rng) {
    return Point(0.6 + 0.4 * space::Uniform01(rng));
  };
  options.neighbors = [this](const v1::Configuration& c, space::Rng&) {
    std::vector<v1::Configuration> out;
    for (double x : {X(c) - 0.05, X(c) + 0.05}) {
      if (x >= 0.6 - 1e-12 && x <= 1) out.push_back(Point(std::max(x, 0.6)));
    }
    return out;
  };
  options.incumbents = 1;
  options.incumbent_steps = 20;
  options.refine_top = 0;
  options.ties = Ties::kLowerMean;
  const v1::Configuration incumbent = Point(0.95);
  const std::string held = space::ConfigurationKey(incumbent);
  auto is_held = [&](const std::string& key) { return key == held; };
  space::Rng rng(1);
  METAOPT_ASSERT_OK_AND_ASSIGN(
      std::vector<v1::Configuration> picks,
      MaximizeOverSpace(model_, space_, encoder_, is_held, kNothingImproves,
                        {incumbent}, 3, options, rng));
  ASSERT_EQ(picks.size(), 3u);
  EXPECT_NEAR(X(picks[0]), 0.6, 1e-9);
  absl::flat_hash_set<std::string> keys;
  for (const v1::Configuration& c : picks) {
    EXPECT_GE(X(c), 0.6);
    EXPECT_NE(space::ConfigurationKey(c), held);
    EXPECT_TRUE(keys.insert(space::ConfigurationKey(c)).second);
  }
}

// A GP Suggest over a space spreads its exact variances and its refinement
// chains over ComputeThreads(): the picks are the same on 1 thread or 3
// (300 observations: the Predict of the pool is large enough to split).
TEST(SpaceSearchThreadsTest, PicksAreTheSameOnAnyNumberOfThreads) {
  const space::SearchSpace space =
      *space::SearchSpace::Create(testing::HpoSpace());
  const space::Encoder encoder(space);
  space::Rng data_rng(11);
  std::vector<v1::Configuration> observed;
  for (int i = 0; i < 300; ++i) observed.push_back(space.Sample(data_rng));
  const Eigen::MatrixXd X = encoder.EncodeBatch(observed);
  Eigen::VectorXd y(X.rows());
  for (Eigen::Index i = 0; i < X.rows(); ++i) {
    y[i] = std::sin(5 * X(i, 0)) + (X(i, 1) - 0.4) * (X(i, 1) - 0.4);
  }
  METAOPT_ASSERT_OK_AND_ASSIGN(
      gp::GaussianProcess prior,
      gp::GaussianProcess::Create("matern52", static_cast<int>(X.cols())));
  METAOPT_ASSERT_OK_AND_ASSIGN(gp::GpPosterior posterior,
                               gp::Condition(prior, X, y));
  const surrogate::GpSurrogate model(posterior);
  std::vector<int> order(observed.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](int a, int b) { return y[a] < y[b]; });
  std::vector<v1::Configuration> incumbents;
  absl::flat_hash_set<std::string> held;
  for (int i : order) {
    if (incumbents.size() < 5) incumbents.push_back(observed[i]);
    held.insert(space::ConfigurationKey(observed[i]));
  }
  auto is_held = [&](const std::string& key) { return held.contains(key); };
  const LogExpectedImprovementFunction acquisition(y.minCoeff());
  // 1,200 queries: five blocks of GpPosterior::kPredictBlock.
  const Eigen::MatrixXd queries =
      X.topRows(200).replicate(6, 1) +
      Eigen::MatrixXd::Constant(1200, X.cols(), 1e-3);
  auto run = [&](int threads) {
    SetComputeThreads(threads);
    space::Rng rng(7);
    absl::StatusOr<std::vector<v1::Configuration>> picks =
        MaximizeOverSpace(model, space, encoder, is_held, acquisition,
                          incumbents, 3, SearchOptions(), rng);
    std::vector<std::string> keys;
    if (picks.ok()) {
      for (const v1::Configuration& c : *picks) {
        keys.push_back(space::ConfigurationKey(c));
      }
    }
    absl::StatusOr<gp::Prediction> prediction = posterior.Predict(queries);
    SetComputeThreads(1);
    EXPECT_TRUE(picks.ok()) << picks.status();
    EXPECT_TRUE(prediction.ok()) << prediction.status();
    return std::make_pair(keys, *std::move(prediction));
  };
  const auto [one_keys, one_prediction] = run(1);
  const auto [three_keys, three_prediction] = run(3);
  EXPECT_EQ(one_keys.size(), 3u);
  EXPECT_EQ(one_keys, three_keys);
  EXPECT_EQ(one_prediction.mean, three_prediction.mean);
  EXPECT_EQ(one_prediction.variance, three_prediction.variance);
}

// The GP surrogate of a large study without its screening bound.
class ExactOnly final : public surrogate::Surrogate {
 public:
  explicit ExactOnly(std::unique_ptr<const surrogate::Surrogate> inner)
      : inner_(std::move(inner)) {}
  absl::StatusOr<gp::Prediction> Predict(
      const Eigen::MatrixXd& X) const override {
    return inner_->Predict(X);
  }
  absl::StatusOr<std::unique_ptr<const surrogate::Surrogate>> WithFantasies(
      const Eigen::MatrixXd& X) const override {
    METAOPT_ASSIGN_OR_RETURN(auto inner, inner_->WithFantasies(X));
    return std::unique_ptr<const surrogate::Surrogate>(
        new ExactOnly(std::move(inner)));
  }

 private:
  std::unique_ptr<const surrogate::Surrogate> inner_;
};

// From kScreeningMinPoints observations on the catalogue search scores
// exactly only the candidates whose log-EI bound can win, and picks what
// exact scores of every candidate pick (bounds from n / 4 points below 256
// observations, from 128 beyond).
class CatalogueScreeningTest : public ::testing::TestWithParam<int> {};

INSTANTIATE_TEST_SUITE_P(Sizes, CatalogueScreeningTest,
                         ::testing::Values(surrogate::kScreeningMinPoints,
                                           surrogate::kScreeningMinPoints + 44,
                                           300));

TEST_P(CatalogueScreeningTest, PicksWhatExactScoringPicks) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const int n = GetParam();
  auto random_matrix = [&](int rows) {
    Eigen::MatrixXd m(rows, 3);
    for (int i = 0; i < rows; ++i) {
      for (int j = 0; j < 3; ++j) m(i, j) = u(rng);
    }
    return m;
  };
  const Eigen::MatrixXd X = random_matrix(n);
  Eigen::VectorXd y(n);
  for (int i = 0; i < n; ++i) {
    y[i] = std::sin(6 * X(i, 0)) + (X(i, 1) - 0.4) * (X(i, 1) - 0.4) +
           0.1 * X(i, 2);
  }
  METAOPT_ASSERT_OK_AND_ASSIGN(gp::GaussianProcess prior,
                               gp::GaussianProcess::Create("matern52", 3));
  Eigen::VectorXd h = prior.hyperparameters();
  h.head(3).setConstant(std::log(0.3));
  ASSERT_TRUE(prior.set_hyperparameters(h).ok());
  METAOPT_ASSERT_OK_AND_ASSIGN(gp::GpPosterior posterior,
                               gp::Condition(prior, X, y));
  const surrogate::GpSurrogate screened(posterior);
  METAOPT_ASSERT_OK_AND_ASSIGN(auto bound, screened.PredictScreening(X));
  ASSERT_TRUE(bound.has_value());
  const ExactOnly exact(
      std::make_unique<const surrogate::GpSurrogate>(posterior));
  EncodedCatalogue catalogue;
  catalogue.X = random_matrix(3000);
  for (int i = 0; i < 3000; ++i) catalogue.keys.push_back(std::to_string(i));
  auto held = [](const std::string& key) { return key == "7"; };
  for (double incumbent : {y.minCoeff(), y.minCoeff() - 0.5, 0.0}) {
    const LogExpectedImprovementFunction best(incumbent);
    METAOPT_ASSERT_OK_AND_ASSIGN(
        std::vector<int> fast,
        MaximizeOverCatalogue(screened, catalogue, held, best, 3));
    METAOPT_ASSERT_OK_AND_ASSIGN(
        std::vector<int> slow,
        MaximizeOverCatalogue(exact, catalogue, held, best, 3));
    EXPECT_EQ(fast, slow) << incumbent;
    // The screen of the whole catalogue computed ahead gives the same picks.
    METAOPT_ASSERT_OK_AND_ASSIGN(CatalogueScreen screen,
                                 ScreenCatalogue(screened, catalogue, held));
    ASSERT_TRUE(screen.bound.has_value());
    EXPECT_EQ(screen.rows.size(), 2999u);
    METAOPT_ASSERT_OK_AND_ASSIGN(
        std::vector<int> ahead,
        MaximizeOverCatalogue(screened, catalogue, held, best, 3, &screen));
    EXPECT_EQ(ahead, slow) << incumbent;
    // A screen of other rows is not read.
    auto more_held = [](const std::string& key) {
      return key == "7" || key == "8";
    };
    METAOPT_ASSERT_OK_AND_ASSIGN(
        std::vector<int> other,
        MaximizeOverCatalogue(screened, catalogue, more_held, best, 3,
                              &screen));
    METAOPT_ASSERT_OK_AND_ASSIGN(
        std::vector<int> plain,
        MaximizeOverCatalogue(screened, catalogue, more_held, best, 3));
    EXPECT_EQ(other, plain) << incumbent;
  }
  // An acquisition function that falls as the variance grows is never
  // screened (a bounded variance bounds nothing then): its picks are those of
  // exact predictions.
  const LowVarianceFirst certain_first;
  METAOPT_ASSERT_OK_AND_ASSIGN(
      std::vector<int> fast,
      MaximizeOverCatalogue(screened, catalogue, held, certain_first, 3));
  METAOPT_ASSERT_OK_AND_ASSIGN(
      std::vector<int> slow,
      MaximizeOverCatalogue(exact, catalogue, held, certain_first, 3));
  EXPECT_EQ(fast, slow);
}

}  // namespace
}  // namespace metaopt::acquisition
