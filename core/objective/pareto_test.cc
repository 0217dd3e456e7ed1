#include "core/objective/pareto.h"

#include <random>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace metaopt::objective {
namespace {

using ::testing::ElementsAre;

TEST(DominatesTest, NoWorseEverywhereAndBetterSomewhere) {
  EXPECT_TRUE(Dominates(Point{1, 2}, Point{2, 2}));
  EXPECT_TRUE(Dominates(Point{1, 1}, Point{2, 2}));
  EXPECT_FALSE(Dominates(Point{2, 2}, Point{1, 2}));
  EXPECT_FALSE(Dominates(Point{1, 3}, Point{2, 2}));  // a trade-off
  EXPECT_FALSE(Dominates(Point{1, 2}, Point{1, 2}));  // equal
}

TEST(NonDominatedTest, KeepsTheFrontAndEqualPoints) {
  const std::vector<Point> points = {{1, 4}, {2, 2}, {3, 3},
                                     {4, 1}, {2, 2}, {5, 5}};
  EXPECT_THAT(NonDominated(points), ElementsAre(0, 1, 3, 4));
  EXPECT_THAT(NonDominated(std::vector<Point>{}), ElementsAre());
}

TEST(Hypervolume2DTest, KnownAreas) {
  const Point reference = {4, 4};
  EXPECT_DOUBLE_EQ(Hypervolume2D(std::vector<Point>{}, reference), 0);
  EXPECT_DOUBLE_EQ(Hypervolume2D(std::vector<Point>{{1, 1}}, reference), 9);
  // A staircase: strips of 3x1, 2x1 and 1x1.
  const std::vector<Point> stairs = {{1, 3}, {2, 2}, {3, 1}};
  EXPECT_DOUBLE_EQ(Hypervolume2D(stairs, reference), 6);
}

TEST(Hypervolume2DTest, DominatedAndOutsidePointsAddNothing) {
  const Point reference = {4, 4};
  const std::vector<Point> front = {{1, 3}, {3, 1}};
  std::vector<Point> more = front;
  more.push_back({3, 3});  // dominated
  more.push_back({1, 3});  // repeated
  more.push_back({0, 4});  // on the reference's bound
  more.push_back({5, 0});  // beyond it
  EXPECT_DOUBLE_EQ(Hypervolume2D(front, reference), 5);
  EXPECT_DOUBLE_EQ(Hypervolume2D(more, reference), 5);
}

TEST(Hypervolume3DTest, KnownVolumes) {
  const Point reference = {2, 2, 2};
  EXPECT_DOUBLE_EQ(Hypervolume3D(std::vector<Point>{}, reference), 0);
  EXPECT_DOUBLE_EQ(Hypervolume3D(std::vector<Point>{{0, 0, 0}}, reference), 8);
  // Three boxes of volume 2, each pair and all three overlapping in the unit
  // cube (1,1,1)-(2,2,2): 6 - 3 + 1.
  const std::vector<Point> corners = {{0, 1, 1}, {1, 0, 1}, {1, 1, 0}};
  EXPECT_DOUBLE_EQ(Hypervolume3D(corners, reference), 4);
}

TEST(Hypervolume3DTest, FlatThirdCoordinateIsTheAreaTimesTheDepth) {
  const std::vector<Point> flat = {{1, 3, 0}, {2, 2, 0}, {3, 1, 0}};
  EXPECT_DOUBLE_EQ(Hypervolume3D(flat, {4, 4, 2.5}), 6 * 2.5);
  std::vector<Point> with_dominated = flat;
  with_dominated.push_back({3, 3, 1});
  EXPECT_DOUBLE_EQ(Hypervolume3D(with_dominated, {4, 4, 2.5}), 6 * 2.5);
}

// Integer points: the hypervolume is the number of unit cells of the box below
// the reference that some point dominates (its lower corner at or above it).
int DominatedCells(const std::vector<Point>& points, int size, int dimension) {
  int cells = 0;
  const int total = dimension == 2 ? size * size : size * size * size;
  for (int c = 0; c < total; ++c) {
    const Point cell = {static_cast<double>(c % size),
                        static_cast<double>(c / size % size),
                        static_cast<double>(c / size / size)};
    for (const Point& p : points) {
      bool below = true;
      for (int d = 0; d < dimension; ++d) below = below && p[d] <= cell[d];
      if (below) {
        ++cells;
        break;
      }
    }
  }
  return cells;
}

TEST(HypervolumeTest, MatchesCountedCellsOnRandomIntegerPoints) {
  constexpr int kSize = 6;
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> coordinate(0, kSize);  // kSize: outside
  for (int round = 0; round < 50; ++round) {
    std::vector<Point> points(1 + round % 9);
    for (Point& p : points) {
      p = {static_cast<double>(coordinate(rng)),
           static_cast<double>(coordinate(rng)),
           static_cast<double>(coordinate(rng))};
    }
    EXPECT_EQ(Hypervolume3D(points, {kSize, kSize, kSize}),
              DominatedCells(points, kSize, 3));
    std::vector<Point> projected;
    for (const Point& p : points) projected.push_back({p[0], p[1]});
    EXPECT_EQ(Hypervolume2D(projected, {kSize, kSize}),
              DominatedCells(points, kSize, 2));
  }
}

}  // namespace
}  // namespace metaopt::objective
