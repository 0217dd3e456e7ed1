#include "core/objective/objective.h"

#include "gtest/gtest.h"

namespace metaopt::objective {
namespace {

TEST(BetterTest, FollowsTheGoal) {
  EXPECT_TRUE(Better(1, 2, v1::GOAL_MINIMIZE));
  EXPECT_FALSE(Better(2, 1, v1::GOAL_MINIMIZE));
  EXPECT_TRUE(Better(2, 1, v1::GOAL_MAXIMIZE));
  EXPECT_FALSE(Better(1, 1, v1::GOAL_MAXIMIZE));
  EXPECT_TRUE(Better(1, 2, v1::GOAL_UNSPECIFIED));  // minimised
}

TEST(MinimizedTest, NegatesOnlyUnderMaximize) {
  EXPECT_EQ(Minimized(3.5, v1::GOAL_MAXIMIZE), -3.5);
  EXPECT_EQ(Minimized(3.5, v1::GOAL_MINIMIZE), 3.5);
  EXPECT_EQ(Minimized(3.5, v1::GOAL_UNSPECIFIED), 3.5);
}

TEST(MinimizedTest, SmallerIsBetterWhateverTheGoal) {
  for (v1::Goal goal : {v1::GOAL_MAXIMIZE, v1::GOAL_MINIMIZE}) {
    EXPECT_EQ(Better(1, 2, goal), Minimized(1, goal) < Minimized(2, goal));
    EXPECT_EQ(Better(2, 1, goal), Minimized(2, goal) < Minimized(1, goal));
  }
}

TEST(BestTest, KeepsTheFirstOfEquals) {
  Best best(v1::GOAL_MAXIMIZE);
  EXPECT_FALSE(best.any());
  EXPECT_TRUE(best.Offer(1));
  EXPECT_TRUE(best.Offer(3));
  EXPECT_FALSE(best.Offer(3));  // equal: the first stays
  EXPECT_FALSE(best.Offer(2));
  EXPECT_TRUE(best.any());
  EXPECT_EQ(best.value(), 3);
}

TEST(BestTest, MinimizeTakesTheSmallest) {
  Best best(v1::GOAL_MINIMIZE);
  EXPECT_TRUE(best.Offer(5));  // the first is best, whatever its value
  EXPECT_TRUE(best.Offer(-1));
  EXPECT_FALSE(best.Offer(0));
  EXPECT_EQ(best.value(), -1);
}

}  // namespace
}  // namespace metaopt::objective
