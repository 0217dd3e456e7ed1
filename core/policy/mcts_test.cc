#include "core/policy/mcts.h"

#include <cmath>
#include <map>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"

namespace metaopt::policy {
namespace {

using ::testing::ElementsAre;

TEST(MctsTest, MedianOfOddAndEvenCounts) {
  EXPECT_DOUBLE_EQ(Median({3.0}), 3.0);
  EXPECT_DOUBLE_EQ(Median({5.0, 1.0, 4.0}), 4.0);
  EXPECT_DOUBLE_EQ(Median({4.0, 1.0, 0.0, 10.0}), 2.5);
  // Robust to a heavily failed run, unlike the mean.
  EXPECT_DOUBLE_EQ(Median({0.9, 0.8, 0.0}), 0.8);
}

TEST(MctsTest, SoftmaxPriorsNormaliseAndKeepTheOrder) {
  std::vector<double> p = SoftmaxPriors({0.2, 0.8, 0.5}, 1.0);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_NEAR(p[0] + p[1] + p[2], 1.0, 1e-12);
  EXPECT_GT(p[1], p[2]);
  EXPECT_GT(p[2], p[0]);
  EXPECT_NEAR(p[1] / p[0], std::exp(0.6), 1e-12);
  // A lower temperature sharpens; huge values do not overflow.
  std::vector<double> sharp = SoftmaxPriors({0.2, 0.8, 0.5}, 0.1);
  EXPECT_GT(sharp[1], p[1]);
  std::vector<double> big = SoftmaxPriors({1000.0, 1001.0}, 1.0);
  EXPECT_NEAR(big[1], 1.0 / (1.0 + std::exp(-1.0)), 1e-12);
  EXPECT_TRUE(SoftmaxPriors({}, 1.0).empty());
}

TEST(MctsTest, ProgressiveWideningWithExponentPointSix) {
  // floor(n^0.6) children with at least one: 1 for n = 1-3, 2 for 4-6, 3 for
  // 7-10, 4 from 11.
  const int expected[] = {1, 1, 1, 1, 2, 2, 2, 3, 3, 3, 3, 4};
  for (int n = 0; n <= 11; ++n) {
    EXPECT_EQ(AllowedChildren(n, 0.6), expected[n]) << n;
  }
  EXPECT_EQ(AllowedChildren(32, 0.6), 8);  // exact power
  EXPECT_EQ(AllowedChildren(100, 0.5), 10);
}

TEST(MctsTest, PuctScoreIsTheThesisForm) {
  // sqrt(n(s) / (1 + n(s.a))) = sqrt(16 / 4) = 2 (AlphaGo Zero's: 4 / 4 = 1).
  EXPECT_NEAR(PuctScore(0.5, 0.25, 16, 3, 1.3), 0.5 + 1.3 * 0.25 * 2.0, 1e-12);
  EXPECT_NEAR(PuctScore(0.5, 0.25, 0, 0, 1.3), 0.5, 1e-12);
}

TEST(MctsTest, SelectPuctTradesValueForPriorAndFewVisits) {
  std::vector<MctsChild> children = {
      {/*action=*/0, /*value=*/0.6, /*prior=*/0.5, /*visits=*/10},
      {/*action=*/1, /*value=*/0.5, /*prior=*/0.5, /*visits=*/0}};
  // 0.6 + 1.3*0.5*sqrt(10/11) = 1.22 < 0.5 + 1.3*0.5*sqrt(10) = 2.56.
  EXPECT_EQ(SelectPuct(children, 10, 1.3), 1);
  // Without exploration the value decides.
  EXPECT_EQ(SelectPuct(children, 10, 0.0), 0);
  // Ties go to the first.
  children[1] = children[0];
  EXPECT_EQ(SelectPuct(children, 10, 1.3), 0);
}

// A toy environment: visits, values and estimates from tables; every action
// of `width` is valid unless listed as exhausted.
class ToyEnvironment : public MctsEnvironment {
 public:
  explicit ToyEnvironment(int width) : width_(width) {}
  std::vector<int> ValidActions(const MctsPath& path) override {
    std::vector<int> valid;
    for (int a = 0; a < width_; ++a) {
      MctsPath child = path;
      child.push_back(a);
      if (!exhausted.count(child)) valid.push_back(a);
    }
    return valid;
  }
  int64_t Visits(const MctsPath& path) override {
    auto it = visits.find(path);
    return it == visits.end() ? 0 : it->second;
  }
  std::optional<double> Value(const MctsPath& path) override {
    auto it = values.find(path);
    if (it == values.end()) return std::nullopt;
    return it->second;
  }
  double Estimate(const MctsPath& path) override {
    ++estimate_calls;
    auto it = estimates.find(path);
    return it == estimates.end() ? 0.0 : it->second;
  }

  std::map<MctsPath, int64_t> visits;
  std::map<MctsPath, double> values;
  std::map<MctsPath, double> estimates;
  std::map<MctsPath, bool> exhausted;
  int estimate_calls = 0;

 private:
  int width_;
};

TEST(MctsTreeTest, WalkSelectsByPuctThenExpandsTheBestEstimate) {
  MctsTree tree(2);
  ToyEnvironment env(3);
  env.visits = {{{}, 9}, {{0}, 3}, {{1}, 3}, {{2}, 3}};
  env.values = {{{0}, 0.2}, {{1}, 0.9}, {{2}, 0.3}};
  env.estimates = {{{1, 0}, 0.1}, {{1, 1}, 0.7}, {{1, 2}, 0.4}};
  // Root: all three first-level children exist; child 1 has the best median
  // with equal visits and priors, so it is entered; it has no child yet and
  // may have one (3^0.6 -> 1): the best estimate, [1, 1], is added.
  METAOPT_ASSERT_OK_AND_ASSIGN(MctsWalk walk, tree.Walk(env, MctsOptions()));
  EXPECT_THAT(walk.path, ElementsAre(1, 1));
  EXPECT_TRUE(walk.expanded);
  EXPECT_TRUE(tree.Contains({1, 1}));
  EXPECT_FALSE(tree.Contains({1, 2}));
  ASSERT_EQ(tree.added().size(), 1u);

  // Still 3 visits at [1]: no widening, the walk descends to the leaf [1, 1].
  METAOPT_ASSERT_OK_AND_ASSIGN(walk, tree.Walk(env, MctsOptions()));
  EXPECT_THAT(walk.path, ElementsAre(1, 1));
  EXPECT_FALSE(walk.expanded);

  // 4 visits at [1] allow a second child: the next best estimate, [1, 2].
  env.visits[{1}] = 4;
  METAOPT_ASSERT_OK_AND_ASSIGN(walk, tree.Walk(env, MctsOptions()));
  EXPECT_THAT(walk.path, ElementsAre(1, 2));
  EXPECT_TRUE(walk.expanded);
  EXPECT_THAT(tree.added(), ElementsAre(MctsPath{1, 1}, MctsPath{1, 2}));
}

TEST(MctsTreeTest, PriorsFromEstimatesSteerUnevaluatedChildren) {
  MctsTree tree(1);
  ToyEnvironment env(3);
  env.visits = {{{}, 4}};
  // No evaluations yet: values fall back to the estimates, and the softmax
  // priors favour the same child.
  env.estimates = {{{0}, 0.2}, {{1}, 0.3}, {{2}, 0.8}};
  METAOPT_ASSERT_OK_AND_ASSIGN(MctsWalk walk, tree.Walk(env, MctsOptions()));
  EXPECT_THAT(walk.path, ElementsAre(2));
  // Once child 2 is visited often and disappoints, exploration moves on.
  env.visits = {{{}, 40}, {{2}, 38}, {{0}, 1}, {{1}, 1}};
  env.values = {{{2}, 0.1}, {{0}, 0.2}, {{1}, 0.2}};
  METAOPT_ASSERT_OK_AND_ASSIGN(walk, tree.Walk(env, MctsOptions()));
  EXPECT_THAT(walk.path, ElementsAre(1));
}

TEST(MctsTreeTest, ExhaustedActionsAreSkipped) {
  MctsTree tree(2);
  ToyEnvironment env(2);
  env.visits = {{{}, 10}, {{0}, 5}, {{1}, 5}};
  env.values = {{{0}, 0.9}, {{1}, 0.1}};
  env.estimates = {{{0, 0}, 0.9}, {{0, 1}, 0.1}};
  env.exhausted[{0, 0}] = true;
  METAOPT_ASSERT_OK_AND_ASSIGN(MctsWalk walk, tree.Walk(env, MctsOptions()));
  EXPECT_THAT(walk.path, ElementsAre(0, 1));
  // With both of [0]'s children exhausted, [0] is no longer valid at the root.
  env.exhausted[{0}] = true;
  METAOPT_ASSERT_OK_AND_ASSIGN(walk, tree.Walk(env, MctsOptions()));
  EXPECT_EQ(walk.path[0], 1);
  env.exhausted[{1}] = true;
  EXPECT_THAT(tree.Walk(env, MctsOptions()),
              testing::StatusIs(absl::StatusCode::kNotFound,
                                ::testing::HasSubstr("no structure")));
}

TEST(MctsTreeTest, WithoutLevelsTheRootIsTheLeaf) {
  MctsTree tree(0);
  ToyEnvironment env(0);
  METAOPT_ASSERT_OK_AND_ASSIGN(MctsWalk walk, tree.Walk(env, MctsOptions()));
  EXPECT_TRUE(walk.path.empty());
  EXPECT_FALSE(walk.expanded);
}

TEST(MctsTreeTest, AddChecksThePath) {
  MctsTree tree(2);
  EXPECT_TRUE(tree.Contains({}));
  EXPECT_TRUE(tree.Contains({5}));
  EXPECT_FALSE(tree.Contains({5, 0}));
  METAOPT_EXPECT_OK(tree.Add({5, 0}));
  EXPECT_TRUE(tree.Contains({5, 0}));
  EXPECT_THAT(tree.Add({1, 2, 3}),
              testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                ::testing::HasSubstr("2 levels")));
  EXPECT_THAT(tree.Add({-1}),
              testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                ::testing::HasSubstr("not a path")));
  MctsTree deep(3);
  EXPECT_THAT(deep.Add({0, 1, 2}),
              testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                ::testing::HasSubstr("no parent")));
}

}  // namespace
}  // namespace metaopt::policy
