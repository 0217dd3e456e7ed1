#include "core/meta_training/evolutionary_portfolio.h"

#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include "core/space/random.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"

namespace metaopt::train {
namespace {

using ::metaopt::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAreArray;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A tasks x candidates table of uniform regrets, each task's best 0 and worst
// 1 (as min-max normalisation gives).
Eigen::MatrixXd RandomTable(int tasks, int candidates, uint64_t seed) {
  space::Rng rng(seed);
  Eigen::MatrixXd table(tasks, candidates);
  for (int t = 0; t < tasks; ++t) {
    for (int j = 0; j < candidates; ++j) table(t, j) = space::Uniform01(rng);
    const double lo = table.row(t).minCoeff();
    const double hi = table.row(t).maxCoeff();
    table.row(t) = (table.row(t).array() - lo) / (hi - lo);
  }
  return table;
}

// The least L over every set of `size` columns, by enumeration.
double BruteForceBest(const Eigen::MatrixXd& table, int size) {
  double best = std::numeric_limits<double>::infinity();
  std::vector<int64_t> set;
  std::function<void(int64_t)> visit = [&](int64_t next) {
    if (static_cast<int>(set.size()) == size) {
      best = std::min(best, SetLoss(table, set));
      return;
    }
    for (int64_t j = next; j < table.cols(); ++j) {
      set.push_back(j);
      visit(j + 1);
      set.pop_back();
    }
  };
  visit(0);
  return best;
}

TEST(EvolutionaryPortfolioTest, SetLossIsSumOfMinimaWithUnknownAsOne) {
  Eigen::MatrixXd table(3, 3);
  table << 0.2, 0.5, kNaN,  //
      0.9, 0.1, kNaN,       //
      kNaN, kNaN, kNaN;
  EXPECT_DOUBLE_EQ(SetLoss(table, {0, 1}), 0.2 + 0.1 + 1.0);
  EXPECT_DOUBLE_EQ(SetLoss(table, {2}), 3.0);
  EXPECT_DOUBLE_EQ(SetLoss(table, {}), 3.0);
}

TEST(EvolutionaryPortfolioTest, FindsTheBruteForceOptimum) {
  // 12 tasks, 14 candidates, sets of 3: 364 sets to enumerate.
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    const Eigen::MatrixXd table = RandomTable(12, 14, seed);
    const double optimum = BruteForceBest(table, 3);
    EvolutionarySearch search;
    search.steps = 5000;
    METAOPT_ASSERT_OK_AND_ASSIGN(EvolutionaryResult result,
                                 EvolutionaryPortfolio(table, 3, seed, search));
    EXPECT_EQ(result.members.size(), 3u);
    EXPECT_NEAR(result.loss, optimum, 1e-12) << "table seed " << seed;
    EXPECT_DOUBLE_EQ(SetLoss(table, result.members), result.loss);
  }
}

TEST(EvolutionaryPortfolioTest, BeatsGreedyWhereGreedyIsSuboptimal) {
  // Candidate 0 is fair everywhere (greedy's first pick: 4 x 0.3 = 1.2), 1 and
  // 2 each solve half of the tasks (2.0 alone). Greedy: {0, 1} = 0.6; the
  // optimum {1, 2} = 0. Candidates 3..7 are bad everywhere.
  Eigen::MatrixXd table = Eigen::MatrixXd::Constant(4, 8, 0.9);
  table.col(0).setConstant(0.3);
  table.col(1) << 0, 0, 1, 1;
  table.col(2) << 1, 1, 0, 0;
  EvolutionarySearch search;
  search.steps = 2000;
  METAOPT_ASSERT_OK_AND_ASSIGN(EvolutionaryResult result,
                               EvolutionaryPortfolio(table, 2, 7, search));
  EXPECT_DOUBLE_EQ(result.loss, 0.0);
  EXPECT_THAT(result.members, UnorderedElementsAreArray({1, 2}));
  EXPECT_LT(result.loss, SetLoss(table, {0, 1}));
  EXPECT_GE(result.improvements, 0);
}

TEST(EvolutionaryPortfolioTest, OrdersTheWinnerGreedily) {
  // The optimum is all three columns; column 2 helps most alone, then 0.
  Eigen::MatrixXd table(3, 4);
  table << 0.0, 1.0, 0.5, 1.0,  //
      1.0, 0.0, 0.5, 1.0,       //
      1.0, 1.0, 0.0, 1.0;
  EvolutionarySearch search;
  search.steps = 500;
  METAOPT_ASSERT_OK_AND_ASSIGN(EvolutionaryResult result,
                               EvolutionaryPortfolio(table, 3, 0, search));
  EXPECT_DOUBLE_EQ(result.loss, 0.0);
  EXPECT_THAT(result.members, ElementsAre(2, 0, 1));
}

TEST(EvolutionaryPortfolioTest, SameSeedSameSetAndProgressReported) {
  const Eigen::MatrixXd table = RandomTable(30, 200, 11);
  EvolutionarySearch search;
  search.steps = 3000;
  std::vector<int64_t> steps;
  std::vector<double> best;
  search.progress = [&](int64_t step, double loss) {
    steps.push_back(step);
    best.push_back(loss);
  };
  METAOPT_ASSERT_OK_AND_ASSIGN(EvolutionaryResult a,
                               EvolutionaryPortfolio(table, 5, 42, search));
  EXPECT_THAT(steps, ElementsAre(1000, 2000, 3000));
  EXPECT_GE(best[0], best[1]);
  EXPECT_GE(best[1], best[2]);
  EXPECT_DOUBLE_EQ(best[2], a.loss);
  search.progress = nullptr;
  METAOPT_ASSERT_OK_AND_ASSIGN(EvolutionaryResult b,
                               EvolutionaryPortfolio(table, 5, 42, search));
  EXPECT_EQ(a.members, b.members);
  EXPECT_EQ(a.loss, b.loss);
  // Another seed searches differently (the draws differ from the first step).
  METAOPT_ASSERT_OK_AND_ASSIGN(EvolutionaryResult c,
                               EvolutionaryPortfolio(table, 5, 43, search));
  EXPECT_EQ(c.members.size(), 5u);
}

TEST(EvolutionaryPortfolioTest, MoreStepsNeverWorse) {
  const Eigen::MatrixXd table = RandomTable(25, 300, 3);
  EvolutionarySearch search;
  search.steps = 0;
  METAOPT_ASSERT_OK_AND_ASSIGN(EvolutionaryResult initial,
                               EvolutionaryPortfolio(table, 5, 9, search));
  search.steps = 20000;
  METAOPT_ASSERT_OK_AND_ASSIGN(EvolutionaryResult searched,
                               EvolutionaryPortfolio(table, 5, 9, search));
  // The same seed gives the same initial population, and the best is kept.
  EXPECT_LT(searched.loss, initial.loss);
  EXPECT_GT(searched.improvements, 0);
}

TEST(EvolutionaryPortfolioTest, InitialSetsJoinThePopulation) {
  // 4 tasks, 3000 candidates; column 10 + t is the only 0 on task t.
  Eigen::MatrixXd table = RandomTable(4, 3000, 5).cwiseMax(0.01);
  for (int t = 0; t < 4; ++t) table(t, 10 + t) = 0;
  EvolutionarySearch search;
  search.steps = 0;
  METAOPT_ASSERT_OK_AND_ASSIGN(EvolutionaryResult drawn,
                               EvolutionaryPortfolio(table, 4, 1, search));
  EXPECT_GT(drawn.loss, 0.0);
  search.initial_sets = {{13, 11, 12, 10}};
  METAOPT_ASSERT_OK_AND_ASSIGN(EvolutionaryResult seeded,
                               EvolutionaryPortfolio(table, 4, 1, search));
  EXPECT_DOUBLE_EQ(seeded.loss, 0.0);
  EXPECT_THAT(seeded.members, UnorderedElementsAreArray({10, 11, 12, 13}));
  search.steps = 2000;  // The best is kept.
  METAOPT_ASSERT_OK_AND_ASSIGN(seeded,
                               EvolutionaryPortfolio(table, 4, 1, search));
  EXPECT_DOUBLE_EQ(seeded.loss, 0.0);
}

TEST(EvolutionaryPortfolioTest, SizeAtLeastCandidatesTakesEveryColumn) {
  Eigen::MatrixXd table(2, 3);
  table << 0.5, 0.0, 1.0,  //
      0.5, 1.0, 0.0;
  EvolutionarySearch search;
  METAOPT_ASSERT_OK_AND_ASSIGN(EvolutionaryResult result,
                               EvolutionaryPortfolio(table, 10, 0, search));
  EXPECT_THAT(result.members, UnorderedElementsAreArray({0, 1, 2}));
  EXPECT_DOUBLE_EQ(result.loss, 0.0);
}

TEST(EvolutionaryPortfolioTest, UnknownEntriesNeverHelp) {
  // Column 0 is unknown on task 1; column 1 is known and fair on both.
  Eigen::MatrixXd table(2, 3);
  table << 0.0, 0.4, 1.0,  //
      kNaN, 0.4, 1.0;
  EvolutionarySearch search;
  search.steps = 200;
  METAOPT_ASSERT_OK_AND_ASSIGN(EvolutionaryResult result,
                               EvolutionaryPortfolio(table, 1, 0, search));
  EXPECT_THAT(result.members, ElementsAre(1));
  EXPECT_DOUBLE_EQ(result.loss, 0.8);
}

TEST(EvolutionaryPortfolioTest, RejectsInvalidInputsNamingFieldValueRule) {
  const Eigen::MatrixXd table = RandomTable(3, 5, 1);
  EvolutionarySearch ok;
  EXPECT_THAT(EvolutionaryPortfolio(table, 0, 0, ok),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("size 0"), HasSubstr("at least 1"))));
  EXPECT_THAT(EvolutionaryPortfolio(Eigen::MatrixXd(0, 4), 1, 0, ok),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("regrets is 0 x 4")));
  Eigen::MatrixXd bad = table;
  bad(1, 2) = 1.5;
  EXPECT_THAT(
      EvolutionaryPortfolio(bad, 1, 0, ok),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("regrets(1, 2) = 1.5"), HasSubstr("[0, 1]"))));
  EvolutionarySearch search = ok;
  search.steps = -1;
  EXPECT_THAT(EvolutionaryPortfolio(table, 1, 0, search),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("steps -1"), HasSubstr(">= 0"))));
  search = ok;
  search.population = 0;
  EXPECT_THAT(
      EvolutionaryPortfolio(table, 1, 0, search),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("population 0"), HasSubstr("at least 1"))));
  search = ok;
  search.parents = 0;
  EXPECT_THAT(EvolutionaryPortfolio(table, 1, 0, search),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("parents 0"), HasSubstr("at least 1"))));
  search = ok;
  search.mutation_probability = 1.5;
  EXPECT_THAT(EvolutionaryPortfolio(table, 1, 0, search),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("mutation_probability 1.5"),
                             HasSubstr("[0, 1]"))));
  for (const std::vector<int64_t>& set :
       std::vector<std::vector<int64_t>>{{0, 1}, {0, 0, 1}, {0, 1, 5}}) {
    search = ok;
    search.initial_sets = {{0, 1, 2}, set};
    EXPECT_THAT(EvolutionaryPortfolio(table, 3, 0, search),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         AllOf(HasSubstr("initial_sets[1]"),
                               HasSubstr("3 distinct columns in [0, 5)"))));
  }
  search = ok;
  search.progress_every = 0;
  EXPECT_THAT(
      EvolutionaryPortfolio(table, 1, 0, search),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("progress_every 0"), HasSubstr("at least 1"))));
}

}  // namespace
}  // namespace metaopt::train
