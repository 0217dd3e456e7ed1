#include "core/meta_training/portfolio.h"

#include <string>
#include <vector>

#include "core/space/random.h"
#include "core/space/search_space.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"

namespace metaopt::train {
namespace {

using ::metaopt::testing::StatusIs;
using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pointwise;
using ::testing::UnorderedElementsAre;

// One stage "model" with one algorithm "m" and one categorical "c".
v1::SearchSpace CategoricalSpace(const std::vector<std::string>& values) {
  v1::SearchSpace space;
  v1::Algorithm* algorithm = space.add_stages()->add_algorithms();
  space.mutable_stages(0)->set_name("model");
  algorithm->set_name("m");
  v1::Parameter* parameter = algorithm->add_parameters();
  parameter->set_name("c");
  for (const std::string& v : values) {
    parameter->mutable_categorical_domain()->add_values(v);
  }
  return space;
}

// One stage "model" with one algorithm "m" and one float "x" in [0, 1].
v1::SearchSpace FloatSpace() {
  v1::SearchSpace space;
  space.add_stages()->set_name("model");
  v1::Algorithm* algorithm = space.mutable_stages(0)->add_algorithms();
  algorithm->set_name("m");
  v1::Parameter* parameter = algorithm->add_parameters();
  parameter->set_name("x");
  parameter->mutable_float_domain()->set_low(0);
  parameter->mutable_float_domain()->set_high(1);
  return space;
}

v1::Configuration Category(const std::string& value) {
  v1::Configuration c;
  v1::Assignment* a = c.add_assignments();
  a->set_stage("model");
  a->set_algorithm("m");
  (*a->mutable_parameters())["c"].set_category(value);
  return c;
}

v1::Configuration Number(double x) {
  v1::Configuration c;
  v1::Assignment* a = c.add_assignments();
  a->set_stage("model");
  a->set_algorithm("m");
  (*a->mutable_parameters())["x"].set_number(x);
  return c;
}

std::string Value(const v1::Configuration& c) {
  const v1::ParameterValue& v = c.assignments(0).parameters().begin()->second;
  return v.has_category() ? v.category() : std::to_string(v.number());
}

std::vector<std::string> Values(const std::vector<v1::Configuration>& cs) {
  std::vector<std::string> values;
  for (const v1::Configuration& c : cs) values.push_back(Value(c));
  return values;
}

meta::Task MakeTask(const std::string& id, const std::string& split,
                    const std::vector<v1::Configuration>& configurations,
                    const std::vector<double>& y) {
  meta::Task task;
  task.id = id;
  task.split = split;
  task.configurations = configurations;
  task.y = y;
  return task;
}

std::vector<const meta::Task*> Pointers(const meta::MetaDataset& data,
                                        const std::string& split) {
  std::vector<const meta::Task*> tasks;
  for (const meta::Task& task : data.tasks) {
    if (task.split == split) tasks.push_back(&task);
  }
  return tasks;
}

// 3 tasks x 4 configurations (minimize), normalised regrets:
//        a    b    c    d
//   t1   0    1   .6    1
//   t2   1    0   .5    1
//   t3   1    1   .4    0
// Greedy: c (sum 1.5, the best single configuration), then a (complements c
// where c is worst: .9 against b 1.0 and d 1.1), then b (.4 against .5), d.
meta::MetaDataset HandMadeTable(v1::Goal goal) {
  meta::MetaDataset data;
  data.name = "hand";
  data.space = CategoricalSpace({"a", "b", "c", "d"});
  data.objective.set_goal(goal);
  const std::vector<v1::Configuration> configs = {Category("a"), Category("b"),
                                                  Category("c"), Category("d")};
  const double sign = goal == v1::GOAL_MAXIMIZE ? -1 : 1;
  auto scaled = [&](std::vector<double> y) {
    for (double& v : y) v *= sign;
    return y;
  };
  data.tasks.push_back(
      MakeTask("t1", "train", configs, scaled({0, 10, 6, 10})));
  data.tasks.push_back(
      MakeTask("t2", "train", configs, scaled({10, 0, 5, 10})));
  data.tasks.push_back(
      MakeTask("t3", "train", configs, scaled({10, 10, 4, 0})));
  return data;
}

TEST(PortfolioTest, GreedyPicksTheBestSingleThenTheBestComplement) {
  const meta::MetaDataset data = HandMadeTable(v1::GOAL_MINIMIZE);
  PortfolioOptions options;
  options.size = 4;
  METAOPT_ASSERT_OK_AND_ASSIGN(
      PortfolioResult result,
      BuildPortfolio(data, Pointers(data, "train"), {}, options));
  EXPECT_THAT(Values(result.configurations), ElementsAre("c", "a", "b", "d"));
  EXPECT_THAT(result.train_regret,
              Pointwise(DoubleNear(1e-12), {0.5, 0.3, 0.4 / 3, 0.0}));
  EXPECT_EQ(result.match, PortfolioMatch::kExact);
  EXPECT_EQ(result.num_candidates, 4);
  EXPECT_DOUBLE_EQ(result.coverage, 1.0);
  EXPECT_TRUE(result.valid_regret.empty());
}

TEST(PortfolioTest, EvolutionarySearchFindsTheSetGreedyMisses) {
  // Size 3: greedy c, a, b leaves .4 on t3; {a, b, d} solves every task.
  const meta::MetaDataset data = HandMadeTable(v1::GOAL_MINIMIZE);
  PortfolioOptions options;
  options.size = 3;
  options.search = PortfolioSearch::kEvolutionary;
  options.evolutionary.steps = 500;
  METAOPT_ASSERT_OK_AND_ASSIGN(
      PortfolioResult result,
      BuildPortfolio(data, Pointers(data, "train"), {}, options));
  EXPECT_THAT(Values(result.configurations),
              UnorderedElementsAre("a", "b", "d"));
  EXPECT_DOUBLE_EQ(result.train_objective, 0.0);
  EXPECT_NEAR(result.greedy_train_objective, 0.4, 1e-12);
  EXPECT_THAT(result.train_regret,
              Pointwise(DoubleNear(1e-12), {2.0 / 3, 1.0 / 3, 0.0}));
  options.search = PortfolioSearch::kGreedy;
  METAOPT_ASSERT_OK_AND_ASSIGN(
      PortfolioResult greedy,
      BuildPortfolio(data, Pointers(data, "train"), {}, options));
  EXPECT_THAT(Values(greedy.configurations), ElementsAre("c", "a", "b"));
  EXPECT_NEAR(greedy.train_objective, 0.4, 1e-12);
  options.search = PortfolioSearch::kEvolutionary;
  options.evolutionary.steps = -5;
  EXPECT_THAT(
      BuildPortfolio(data, Pointers(data, "train"), {}, options),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("steps -5")));
}

TEST(PortfolioTest, ParsesSearchNames) {
  for (PortfolioSearch search :
       {PortfolioSearch::kGreedy, PortfolioSearch::kEvolutionary}) {
    METAOPT_ASSERT_OK_AND_ASSIGN(
        PortfolioSearch parsed,
        ParsePortfolioSearch(PortfolioSearchName(search)));
    EXPECT_EQ(parsed, search);
  }
  EXPECT_THAT(ParsePortfolioSearch("genetic"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("\"genetic\" is not one of greedy")));
}

TEST(PortfolioTest, MaximizeIsTheMirrorOfMinimize) {
  const meta::MetaDataset data = HandMadeTable(v1::GOAL_MAXIMIZE);
  PortfolioOptions options;
  options.size = 2;
  METAOPT_ASSERT_OK_AND_ASSIGN(
      PortfolioResult result,
      BuildPortfolio(data, Pointers(data, "train"), {}, options));
  EXPECT_THAT(Values(result.configurations), ElementsAre("c", "a"));
  EXPECT_THAT(result.train_regret, Pointwise(DoubleNear(1e-12), {0.5, 0.3}));
}

TEST(PortfolioTest, SizeBeyondTheCandidatesGivesEveryCandidate) {
  const meta::MetaDataset data = HandMadeTable(v1::GOAL_MINIMIZE);
  PortfolioOptions options;
  options.size = 10;
  METAOPT_ASSERT_OK_AND_ASSIGN(
      PortfolioResult result,
      BuildPortfolio(data, Pointers(data, "train"), {}, options));
  EXPECT_EQ(result.configurations.size(), 4u);
  EXPECT_EQ(result.train_regret.size(), 4u);
}

TEST(PortfolioTest, SolvedTasksFallBackToStandaloneRegret) {
  // One task: after the best configuration every pick ties at 0; the rest come
  // in order of their own regret, whatever the seed.
  meta::MetaDataset data;
  data.space = CategoricalSpace({"a", "b", "c", "d"});
  data.objective.set_goal(v1::GOAL_MINIMIZE);
  data.tasks.push_back(
      MakeTask("t", "train",
               {Category("a"), Category("b"), Category("c"), Category("d")},
               {3, 1, 2, 0}));
  for (uint64_t seed : {0, 1, 2, 3}) {
    PortfolioOptions options;
    options.size = 4;
    options.seed = seed;
    METAOPT_ASSERT_OK_AND_ASSIGN(
        PortfolioResult result,
        BuildPortfolio(data, Pointers(data, "train"), {}, options));
    EXPECT_THAT(Values(result.configurations), ElementsAre("d", "b", "c", "a"))
        << "seed " << seed;
  }
}

TEST(PortfolioTest, ExactTiesAreBrokenBySeedDeterministically) {
  // A constant task: every configuration has regret 0 alone and in any set.
  meta::MetaDataset data;
  data.space = CategoricalSpace({"a", "b", "c", "d", "e", "f"});
  data.objective.set_goal(v1::GOAL_MINIMIZE);
  std::vector<v1::Configuration> configs;
  for (const char* v : {"a", "b", "c", "d", "e", "f"}) {
    configs.push_back(Category(v));
  }
  data.tasks.push_back(
      MakeTask("t", "train", configs, std::vector<double>(6, 0.25)));
  std::vector<std::vector<std::string>> orders;
  for (uint64_t seed = 0; seed < 8; ++seed) {
    PortfolioOptions options;
    options.size = 6;
    options.seed = seed;
    METAOPT_ASSERT_OK_AND_ASSIGN(
        PortfolioResult first,
        BuildPortfolio(data, Pointers(data, "train"), {}, options));
    METAOPT_ASSERT_OK_AND_ASSIGN(
        PortfolioResult second,
        BuildPortfolio(data, Pointers(data, "train"), {}, options));
    EXPECT_EQ(Values(first.configurations), Values(second.configurations));
    EXPECT_THAT(first.train_regret, ::testing::Each(0.0));
    orders.push_back(Values(first.configurations));
  }
  bool any_different = false;
  for (const auto& order : orders) any_different |= order != orders[0];
  EXPECT_TRUE(any_different) << "the seed should decide exact ties";
}

TEST(PortfolioTest, ExactMatchingCountsUnevaluatedConfigurationsAsNoHelp) {
  // a only on t1, c only on t2, b on both (worst on both).
  meta::MetaDataset data;
  data.space = CategoricalSpace({"a", "b", "c"});
  data.objective.set_goal(v1::GOAL_MINIMIZE);
  data.tasks.push_back(
      MakeTask("t1", "train", {Category("a"), Category("b")}, {0, 1}));
  data.tasks.push_back(
      MakeTask("t2", "train", {Category("b"), Category("c")}, {1, 0}));
  PortfolioOptions options;
  options.size = 3;
  options.match = PortfolioMatch::kExact;
  METAOPT_ASSERT_OK_AND_ASSIGN(
      PortfolioResult result,
      BuildPortfolio(data, Pointers(data, "train"), {}, options));
  // The first pick solves one task; the other stays at regret 1.
  EXPECT_THAT(result.train_regret,
              Pointwise(DoubleNear(1e-12), {0.5, 0.0, 0.0}));
  std::vector<std::string> picks = Values(result.configurations);
  picks.resize(2);
  EXPECT_THAT(picks, UnorderedElementsAre("a", "c"));
}

// Two tasks evaluated at different points of x in [0, 1] (no configuration
// repeats): low x is good on both.
meta::MetaDataset RandomSearchTasks() {
  meta::MetaDataset data;
  data.space = FloatSpace();
  data.objective.set_goal(v1::GOAL_MINIMIZE);
  data.tasks.push_back(MakeTask(
      "t1", "train", {Number(0.1), Number(0.5), Number(0.9)}, {0, 0.5, 1}));
  data.tasks.push_back(
      MakeTask("t2", "train", {Number(0.28), Number(0.95)}, {0, 1}));
  data.tasks.push_back(
      MakeTask("v", "valid", {Number(0.2), Number(0.7)}, {1, 3}));
  return data;
}

TEST(PortfolioTest, AutoMatchesByNearestNeighbourWhenNothingRepeats) {
  const meta::MetaDataset data = RandomSearchTasks();
  PortfolioOptions options;
  options.size = 2;
  METAOPT_ASSERT_OK_AND_ASSIGN(
      PortfolioResult result, BuildPortfolio(data, Pointers(data, "train"),
                                             Pointers(data, "valid"), options));
  EXPECT_EQ(result.match, PortfolioMatch::kNearest);
  EXPECT_DOUBLE_EQ(result.coverage, 0.5);
  // 0.1 and 0.28 are each nearest to the other's best: one pick solves both.
  EXPECT_THAT(Values(result.configurations)[0],
              ::testing::AnyOf("0.100000", "0.280000"));
  EXPECT_THAT(result.train_regret, Pointwise(DoubleNear(1e-12), {0.0, 0.0}));
  // On the validation task the nearest of 0.1 / 0.28 is 0.2, its best.
  EXPECT_THAT(result.valid_regret, Pointwise(DoubleNear(1e-12), {0.0, 0.0}));

  options.match = PortfolioMatch::kExact;
  METAOPT_ASSERT_OK_AND_ASSIGN(
      PortfolioResult exact, BuildPortfolio(data, Pointers(data, "train"),
                                            Pointers(data, "valid"), options));
  EXPECT_THAT(exact.train_regret, Pointwise(DoubleNear(1e-12), {0.5, 0.0}));
  EXPECT_THAT(exact.valid_regret, Pointwise(DoubleNear(1e-12), {1.0, 1.0}));
}

TEST(PortfolioTest, NearestCandidatesAreTheBestOfEachTask) {
  const meta::MetaDataset data = RandomSearchTasks();
  PortfolioOptions options;
  options.size = 5;
  options.match = PortfolioMatch::kNearest;
  options.candidates_per_task = 1;
  METAOPT_ASSERT_OK_AND_ASSIGN(
      PortfolioResult result,
      BuildPortfolio(data, Pointers(data, "train"), {}, options));
  EXPECT_EQ(result.num_candidates, 2);
  EXPECT_THAT(Values(result.configurations),
              UnorderedElementsAre("0.100000", "0.280000"));
  options.candidates_per_task = 0;
  METAOPT_ASSERT_OK_AND_ASSIGN(
      result, BuildPortfolio(data, Pointers(data, "train"), {}, options));
  EXPECT_EQ(result.num_candidates, 5);
}

// A random grid meta-dataset: `tasks` tasks over the same `configs`
// configurations, y = a shared trend plus task noise.
meta::MetaDataset RandomGrid(int tasks, int configs, uint64_t seed) {
  meta::MetaDataset data;
  data.space = FloatSpace();
  data.objective.set_goal(v1::GOAL_MAXIMIZE);
  space::Rng rng(seed);
  std::vector<v1::Configuration> grid;
  for (int i = 0; i < configs; ++i) {
    grid.push_back(Number(static_cast<double>(i) / configs));
  }
  for (int t = 0; t < tasks; ++t) {
    std::vector<double> y;
    for (int i = 0; i < configs; ++i) {
      y.push_back(std::sin(3.0 * i / configs) + space::StandardNormal(rng));
    }
    data.tasks.push_back(MakeTask("t" + std::to_string(t),
                                  t % 4 == 3 ? "valid" : "train", grid, y));
  }
  return data;
}

TEST(PortfolioTest, CurvesDecreaseAndAgreeWithPortfolioRegretCurve) {
  const meta::MetaDataset data = RandomGrid(24, 40, 7);
  const auto train = Pointers(data, "train");
  const auto valid = Pointers(data, "valid");
  PortfolioOptions options;
  options.size = 8;
  METAOPT_ASSERT_OK_AND_ASSIGN(PortfolioResult result,
                               BuildPortfolio(data, train, valid, options));
  ASSERT_EQ(result.train_regret.size(), 8u);
  ASSERT_EQ(result.valid_regret.size(), 8u);
  for (size_t k = 1; k < 8; ++k) {
    EXPECT_LE(result.train_regret[k], result.train_regret[k - 1]);
    EXPECT_LE(result.valid_regret[k], result.valid_regret[k - 1]);
  }
  EXPECT_LT(result.train_regret.back(), result.train_regret.front());
  METAOPT_ASSERT_OK_AND_ASSIGN(
      std::vector<double> curve,
      PortfolioRegretCurve(data, train, result.configurations,
                           PortfolioMatch::kExact));
  EXPECT_THAT(curve, Pointwise(DoubleNear(1e-12), result.train_regret));
}

TEST(PortfolioTest, EveryPickIsTheBestNextCandidate) {
  const meta::MetaDataset data = RandomGrid(12, 25, 3);
  const auto train = Pointers(data, "train");
  PortfolioOptions options;
  options.size = 5;
  METAOPT_ASSERT_OK_AND_ASSIGN(PortfolioResult result,
                               BuildPortfolio(data, train, {}, options));
  for (size_t k = 0; k < result.configurations.size(); ++k) {
    std::vector<v1::Configuration> prefix(result.configurations.begin(),
                                          result.configurations.begin() + k);
    for (const v1::Configuration& candidate : data.tasks[0].configurations) {
      std::vector<v1::Configuration> trial = prefix;
      trial.push_back(candidate);
      METAOPT_ASSERT_OK_AND_ASSIGN(
          std::vector<double> curve,
          PortfolioRegretCurve(data, train, trial, PortfolioMatch::kExact));
      EXPECT_GE(curve.back(), result.train_regret[k] - 1e-12)
          << "pick " << k + 1 << " is beaten by " << Value(candidate);
    }
  }
}

TEST(PortfolioTest, RejectsBadInputs) {
  meta::MetaDataset data = HandMadeTable(v1::GOAL_MINIMIZE);
  const auto train = Pointers(data, "train");
  PortfolioOptions options;
  EXPECT_THAT(BuildPortfolio(data, {}, {}, options),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("no training tasks")));
  options.size = 0;
  EXPECT_THAT(BuildPortfolio(data, train, {}, options),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("portfolio size 0")));
  options.size = 4;
  options.candidates_per_task = -1;
  EXPECT_THAT(BuildPortfolio(data, train, {}, options),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("candidates per task -1")));
  options.candidates_per_task = 4;
  meta::Task empty = MakeTask("empty", "valid", {}, {});
  EXPECT_THAT(BuildPortfolio(data, train, {&empty}, options),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("task \"empty\" has no evaluations")));
  data.tasks[1].y.pop_back();
  EXPECT_THAT(BuildPortfolio(data, Pointers(data, "train"), {}, options),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("task \"t2\" has 4 configurations but 3")));
  EXPECT_THAT(
      PortfolioRegretCurve(data, train, {Category("a")}, PortfolioMatch::kAuto),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("auto")));
  EXPECT_THAT(ParsePortfolioMatch("closest"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("\"closest\" is not one of")));
  METAOPT_ASSERT_OK_AND_ASSIGN(PortfolioMatch match,
                               ParsePortfolioMatch("nearest"));
  EXPECT_EQ(match, PortfolioMatch::kNearest);
}

}  // namespace
}  // namespace metaopt::train
