#include "core/objective/parego.h"

#include <cmath>
#include <set>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace metaopt::objective {
namespace {

using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::Pointwise;

TEST(ParegoDivisionsTest, ThePapersLattices) {
  EXPECT_EQ(ParegoDivisions(1), 1);
  EXPECT_EQ(ParegoDivisions(2), 10);
  EXPECT_EQ(ParegoDivisions(3), 4);
}

TEST(SimplexLatticeTest, TwoObjectivesElevenVectorsInOrder) {
  const std::vector<Point> lattice = SimplexLattice(2, 10);
  ASSERT_EQ(lattice.size(), 11u);
  for (int i = 0; i <= 10; ++i) {
    EXPECT_THAT(lattice[i], Pointwise(DoubleNear(1e-15),
                                      {(10 - i) / 10.0, i / 10.0}))
        << i;
  }
}

TEST(SimplexLatticeTest, ThreeObjectivesFifteenDistinctVectorsOnTheSimplex) {
  const std::vector<Point> lattice = SimplexLattice(3, 4);
  ASSERT_EQ(lattice.size(), 15u);  // C(6, 2)
  EXPECT_THAT(lattice.front(), ElementsAre(1.0, 0.0, 0.0));
  EXPECT_THAT(lattice[1], ElementsAre(0.75, 0.25, 0.0));
  EXPECT_THAT(lattice.back(), ElementsAre(0.0, 0.0, 1.0));
  std::set<std::vector<int>> seen;
  for (const Point& w : lattice) {
    ASSERT_EQ(w.size(), 3u);
    std::vector<int> numerators;
    double sum = 0;
    for (double x : w) {
      EXPECT_GE(x, 0.0);
      const double n = x * 4;
      EXPECT_NEAR(n, std::round(n), 1e-12);
      numerators.push_back(static_cast<int>(std::round(n)));
      sum += x;
    }
    EXPECT_NEAR(sum, 1.0, 1e-12);
    EXPECT_TRUE(seen.insert(numerators).second);
  }
}

TEST(SimplexLatticeTest, DegenerateSizes) {
  EXPECT_THAT(SimplexLattice(1, 1), ElementsAre(ElementsAre(1.0)));
  EXPECT_TRUE(SimplexLattice(0, 4).empty());
  EXPECT_TRUE(SimplexLattice(2, 0).empty());
}

TEST(AugmentedTchebycheffTest, KnownValues) {
  // max(0.5*0.2, 0.5*0.8) + 0.05 (0.1 + 0.4) = 0.4 + 0.025.
  EXPECT_DOUBLE_EQ(AugmentedTchebycheff({0.2, 0.8}, {0.5, 0.5}), 0.425);
  // A weight of 0 leaves only the augmentation of the other objective.
  EXPECT_DOUBLE_EQ(AugmentedTchebycheff({0.3, 1.0}, {1.0, 0.0}), 0.315);
  EXPECT_DOUBLE_EQ(AugmentedTchebycheff({0.3, 1.0}, {1.0, 0.0}, 0.0), 0.3);
  // Three objectives.
  EXPECT_DOUBLE_EQ(AugmentedTchebycheff({1.0, 0.5, 0.0}, {0.25, 0.5, 0.25}),
                   0.25 + 0.05 * 0.5);
}

TEST(AugmentedTchebycheffTest, TheAugmentationBreaksTiesOfTheMaximumByDominance) {
  // Equal maxima: the dominating point scalarises strictly lower.
  const std::vector<double> w = {0.5, 0.5};
  EXPECT_LT(AugmentedTchebycheff({0.1, 0.6}, w),
            AugmentedTchebycheff({0.5, 0.6}, w));
}

TEST(NormalizeByRangeTest, ScalesEachCoordinateToTheUnitInterval) {
  const std::vector<Point> points = {{2, 10}, {4, 10}, {3, 10}};
  EXPECT_THAT(NormalizeByRange(points),
              ElementsAre(ElementsAre(0.0, 0.0), ElementsAre(1.0, 0.0),
                          ElementsAre(0.5, 0.0)));
  EXPECT_TRUE(NormalizeByRange(std::vector<Point>{}).empty());
}

TEST(ParegoScalarizeTest, SmallCase) {
  // Runtime in seconds spanning orders of magnitude: normalised by range.
  const std::vector<Point> points = {{0.1, 1000}, {0.3, 1}, {0.2, 0}};
  // Normalised: (0, 1), (1, 0.001), (0.5, 0).
  const std::vector<double> w = {0.7, 0.3};
  EXPECT_THAT(ParegoScalarize(points, w),
              Pointwise(DoubleNear(1e-12),
                        {0.3 + 0.05 * 0.3, 0.7 + 0.05 * (0.7 + 0.0003),
                         0.35 + 0.05 * 0.35}));
}

TEST(ParegoScalarizeTest, MinimisersOfEveryWeightAreOnTheFront) {
  // A front (0, 1), (0.25, 0.5), (0.5, 0.25), (1, 0) and a dominated point:
  // every lattice weight's minimiser is on the front, and the extreme
  // weights pick the extreme points.
  const std::vector<Point> points = {
      {0, 1}, {0.25, 0.5}, {0.5, 0.25}, {1, 0}, {0.6, 0.6}};
  std::set<int> chosen;
  for (const Point& w : SimplexLattice(2, 10)) {
    const std::vector<double> s = ParegoScalarize(points, w);
    int best = 0;
    for (int i = 1; i < static_cast<int>(s.size()); ++i) {
      if (s[i] < s[best]) best = i;
    }
    EXPECT_NE(best, 4);
    chosen.insert(best);
  }
  EXPECT_EQ(chosen, (std::set<int>{0, 1, 2, 3}));
}

}  // namespace
}  // namespace metaopt::objective
