#include "core/policy/gp_policy.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "core/policy/output_fit_cache.h"
#include "core/policy/policy_factory.h"
#include "core/policy/random_policy.h"
#include "core/space/encoding.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "tests/testutil/conditional_problem.h"
#include "tests/testutil/prepared_fit_check.h"
#include "tests/testutil/status_matchers.h"

namespace metaopt::policy {
namespace {

using ::metaopt::policy::conditional_test::Conditional;
using ::metaopt::policy::conditional_test::ConditionalSpec;
using ::metaopt::policy::conditional_test::Number;

using ::metaopt::testing::IsOk;

using Objective = std::function<double(const v1::Configuration&)>;

v1::StudySpec BoxSpec(int dim, double low, double high, uint64_t seed) {
  v1::StudySpec spec;
  auto* algorithm = spec.mutable_search_space()->add_stages()->add_algorithms();
  spec.mutable_search_space()->mutable_stages(0)->set_name("model");
  algorithm->set_name("f");
  for (int d = 0; d < dim; ++d) {
    auto* p = algorithm->add_parameters();
    p->set_name("x" + std::to_string(d));
    p->mutable_float_domain()->set_low(low);
    p->mutable_float_domain()->set_high(high);
  }
  spec.mutable_objective()->set_goal(v1::GOAL_MINIMIZE);
  spec.mutable_algorithm()->set_kind(v1::ALGORITHM_KIND_GP);
  spec.set_seed(seed);
  return spec;
}

// Branin on [-5, 10] x [0, 15] (x0 scaled from [0, 1]); minimum 0.397887.
double Branin(const v1::Configuration& c) {
  const double x1 = -5 + 15 * Number(c, 0, "x0");
  const double x2 = 15 * Number(c, 0, "x1");
  const double pi = M_PI;
  const double a = x2 - 5.1 / (4 * pi * pi) * x1 * x1 + 5 / pi * x1 - 6;
  return a * a + 10 * (1 - 1 / (8 * pi)) * std::cos(x1) + 10;
}

// `n` completed trials at samples of `space` drawn by `rng`, valued by Branin.
std::vector<v1::Trial> BraninTrials(const space::SearchSpace& space, int n,
                                    space::Rng& rng) {
  std::vector<v1::Trial> trials;
  for (int t = 0; t < n; ++t) {
    v1::Trial trial;
    trial.set_id(t + 1);
    *trial.mutable_configuration() = space.Sample(rng);
    trial.set_state(v1::TRIAL_STATE_COMPLETED);
    trial.set_value(Branin(trial.configuration()));
    trials.push_back(std::move(trial));
  }
  return trials;
}

// Hartmann-6 on [0, 1]^6; minimum -3.32237.
double Hartmann6(const v1::Configuration& c) {
  static const double kAlpha[4] = {1.0, 1.2, 3.0, 3.2};
  static const double kA[4][6] = {{10, 3, 17, 3.5, 1.7, 8},
                                  {0.05, 10, 17, 0.1, 8, 14},
                                  {3, 3.5, 1.7, 10, 17, 8},
                                  {17, 8, 0.05, 10, 0.1, 14}};
  static const double kP[4][6] = {
      {0.1312, 0.1696, 0.5569, 0.0124, 0.8283, 0.5886},
      {0.2329, 0.4135, 0.8307, 0.3736, 0.1004, 0.9991},
      {0.2348, 0.1451, 0.3522, 0.2883, 0.3047, 0.6650},
      {0.4047, 0.8828, 0.8732, 0.5743, 0.1091, 0.0381}};
  double total = 0;
  for (int i = 0; i < 4; ++i) {
    double inner = 0;
    for (int j = 0; j < 6; ++j) {
      const double d = Number(c, 0, "x" + std::to_string(j)) - kP[i][j];
      inner += kA[i][j] * d * d;
    }
    total -= kAlpha[i] * std::exp(-inner);
  }
  return total;
}

// Runs `budget` sequential suggest/observe steps; returns the best value.
double RunStudy(const v1::StudySpec& spec, const Objective& objective,
                int budget) {
  auto space = space::SearchSpace::Create(spec.search_space());
  EXPECT_TRUE(space.ok());
  auto policy = CreatePolicy(spec, std::nullopt);
  EXPECT_TRUE(policy.ok()) << policy.status();
  std::shared_ptr<const Policy> current = *policy;
  std::vector<v1::Trial> trials;
  double best = std::numeric_limits<double>::infinity();
  space::Rng rng(spec.seed());
  for (int t = 0; t < budget; ++t) {
    StudyView view{&spec, &*space, &trials};
    auto result = current->Suggest(view, 1, rng);
    EXPECT_TRUE(result.ok()) << result.status();
    if (!result.ok() || result->configurations.empty()) break;
    if (result->update.has_value()) current = result->update->policy;
    v1::Trial trial;
    trial.set_id(t + 1);
    *trial.mutable_configuration() = result->configurations[0];
    trial.set_state(v1::TRIAL_STATE_COMPLETED);
    trial.set_value(objective(trial.configuration()));
    best = std::min(best, trial.value());
    trials.push_back(std::move(trial));
  }
  return best;
}

double MedianBest(v1::StudySpec spec, v1::AlgorithmKind kind,
                  const Objective& objective, int budget, int seeds) {
  std::vector<double> bests;
  for (int s = 0; s < seeds; ++s) {
    spec.set_seed(1000 + s);
    spec.mutable_algorithm()->set_kind(kind);
    bests.push_back(RunStudy(spec, objective, budget));
  }
  std::sort(bests.begin(), bests.end());
  return bests[bests.size() / 2];
}

struct QualityCase {
  const char* name;
  std::function<v1::StudySpec()> spec;
  Objective objective;
  double optimum;
};

class GpQualityTest : public ::testing::TestWithParam<QualityCase> {};

// GP-BO's median best value after 40 trials over 5 seeds is clearly better
// than random search's: its median regret is at most half of random's.
TEST_P(GpQualityTest, BeatsRandomSearchAfter40Trials) {
  const QualityCase& c = GetParam();
  const double gp =
      MedianBest(c.spec(), v1::ALGORITHM_KIND_GP, c.objective, 40, 5);
  const double random =
      MedianBest(c.spec(), v1::ALGORITHM_KIND_RANDOM, c.objective, 40, 5);
  const double gp_regret = gp - c.optimum;
  const double random_regret = random - c.optimum;
  RecordProperty("gp_median_regret", std::to_string(gp_regret));
  RecordProperty("random_median_regret", std::to_string(random_regret));
  EXPECT_LT(gp_regret, 0.5 * random_regret)
      << c.name << ": gp median best " << gp << ", random " << random;
}

INSTANTIATE_TEST_SUITE_P(
    Functions, GpQualityTest,
    ::testing::Values(
        QualityCase{"branin", [] { return BoxSpec(2, 0, 1, 0); }, Branin,
                    0.397887},
        QualityCase{"hartmann6", [] { return BoxSpec(6, 0, 1, 0); }, Hartmann6,
                    -3.32237},
        QualityCase{"conditional",
                    [] { return ConditionalSpec(v1::ALGORITHM_KIND_GP, 0); },
                    Conditional, 0.0}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(GpPolicyTest, BatchOfEightIsDistinctAndSpread) {
  v1::StudySpec spec = BoxSpec(2, 0, 1, 5);
  auto space = space::SearchSpace::Create(spec.search_space());
  ASSERT_TRUE(space.ok());
  space::Encoder encoder(*space);
  METAOPT_ASSERT_OK_AND_ASSIGN(auto policy, CreatePolicy(spec, std::nullopt));
  space::Rng rng(11);
  // Ten observations of Branin, then a batch of 8.
  std::vector<v1::Trial> trials = BraninTrials(*space, 10, rng);
  StudyView view{&spec, &*space, &trials};
  METAOPT_ASSERT_OK_AND_ASSIGN(SuggestResult result,
                               policy->Suggest(view, 8, rng));
  ASSERT_EQ(result.configurations.size(), 8u);
  EXPECT_EQ(result.source, "gp/ei");
  absl::flat_hash_set<std::string> keys;
  double min_distance = std::numeric_limits<double>::infinity();
  Eigen::MatrixXd X = encoder.EncodeBatch(result.configurations);
  for (int i = 0; i < 8; ++i) {
    keys.insert(space::ConfigurationKey(result.configurations[i]));
    for (int j = 0; j < i; ++j) {
      min_distance = std::min(min_distance, (X.row(i) - X.row(j)).norm());
    }
  }
  EXPECT_EQ(keys.size(), 8u);
  // Non-clustered: no two picks closer than 2% of the unit square's side.
  EXPECT_GT(min_distance, 0.02);
}

TEST(GpPolicyTest, InitialDesignThenModelAndStateRoundTrip) {
  v1::StudySpec spec = BoxSpec(2, 0, 1, 9);
  spec.mutable_algorithm()->set_initial_trials(3);
  auto space = space::SearchSpace::Create(spec.search_space());
  ASSERT_TRUE(space.ok());
  METAOPT_ASSERT_OK_AND_ASSIGN(auto policy, CreatePolicy(spec, std::nullopt));
  std::vector<v1::Trial> trials;
  space::Rng rng(3);
  StudyView view{&spec, &*space, &trials};
  METAOPT_ASSERT_OK_AND_ASSIGN(SuggestResult first,
                               policy->Suggest(view, 3, rng));
  EXPECT_EQ(first.source, "gp/initial-design");
  EXPECT_FALSE(first.update.has_value());
  for (int t = 0; t < 3; ++t) {
    v1::Trial trial;
    trial.set_id(t + 1);
    *trial.mutable_configuration() = first.configurations[t];
    trial.set_state(v1::TRIAL_STATE_COMPLETED);
    trial.set_value(Branin(trial.configuration()));
    trials.push_back(trial);
  }
  METAOPT_ASSERT_OK_AND_ASSIGN(SuggestResult next,
                               policy->Suggest(view, 1, rng));
  EXPECT_EQ(next.source, "gp/ei");
  ASSERT_TRUE(next.update.has_value());
  // A policy restored from the stored state suggests exactly what the updated
  // one does.
  METAOPT_ASSERT_OK_AND_ASSIGN(auto restored,
                               CreatePolicy(spec, next.update->state));
  space::Rng rng_a(77), rng_b(77);
  METAOPT_ASSERT_OK_AND_ASSIGN(SuggestResult a,
                               next.update->policy->Suggest(view, 2, rng_a));
  METAOPT_ASSERT_OK_AND_ASSIGN(SuggestResult b,
                               restored->Suggest(view, 2, rng_b));
  ASSERT_EQ(a.configurations.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(space::ConfigurationKey(a.configurations[i]),
              space::ConfigurationKey(b.configurations[i]));
  }
}

// The other objective's GP keeps its hyperparameter fit across Suggests
// (OutputFitCache): a Suggest that reads the kept fit suggests what one that
// fits afresh does.
TEST(GpPolicyTest, KeptOutputFitsSuggestWhatAFreshFitDoes) {
  v1::StudySpec spec = BoxSpec(2, 0, 1, 9);
  spec.clear_objective();
  v1::Objective* branin = spec.add_objectives();
  branin->set_name("branin");
  branin->set_goal(v1::GOAL_MINIMIZE);
  v1::Objective* cost = spec.add_objectives();
  cost->set_name("cost");
  cost->set_goal(v1::GOAL_MINIMIZE);
  *spec.mutable_objective() = spec.objectives(0);
  auto space = space::SearchSpace::Create(spec.search_space());
  ASSERT_TRUE(space.ok());
  space::Rng sample_rng(5);
  std::vector<v1::Trial> trials = BraninTrials(*space, 30, sample_rng);
  for (v1::Trial& trial : trials) {
    (*trial.mutable_metrics())["branin"] = trial.value();
    (*trial.mutable_metrics())["cost"] =
        std::exp(2 * Number(trial.configuration(), 0, "x0"));
  }
  METAOPT_ASSERT_OK_AND_ASSIGN(auto policy, CreatePolicy(spec, std::nullopt));
  StudyView view{&spec, &*space, &trials};
  OutputFitCache::Global().Clear();
  space::Rng rng_a(77), rng_b(77);
  METAOPT_ASSERT_OK_AND_ASSIGN(SuggestResult fresh,
                               policy->Suggest(view, 2, rng_a));
  EXPECT_EQ(fresh.source, "gp/ehvi");
  METAOPT_ASSERT_OK_AND_ASSIGN(SuggestResult kept,
                               policy->Suggest(view, 2, rng_b));
  ASSERT_EQ(fresh.configurations.size(), 2u);
  ASSERT_EQ(kept.configurations.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(space::ConfigurationKey(fresh.configurations[i]),
              space::ConfigurationKey(kept.configurations[i]));
  }
  EXPECT_TRUE(rng_a == rng_b);
}

TEST(OutputFitCacheTest, FindsOnlyEqualKeysAndDropsTheOldest) {
  OutputFitCache cache;
  METAOPT_ASSERT_OK_AND_ASSIGN(gp::GaussianProcess model,
                               gp::GaussianProcess::Create("matern52", 2));
  OutputFitKey key{"matern52", Eigen::MatrixXd::Identity(2, 2),
                   Eigen::VectorXd::Ones(2), 7, 30};
  EXPECT_FALSE(cache.Find(key).has_value());
  cache.Insert(key, model);
  ASSERT_TRUE(cache.Find(key).has_value());
  EXPECT_EQ(cache.Find(key)->hyperparameters(), model.hyperparameters());
  OutputFitKey other = key;
  other.y[1] = std::nextafter(1.0, 2.0);
  EXPECT_FALSE(cache.Find(other).has_value());
  other = key;
  other.seed = 8;
  EXPECT_FALSE(cache.Find(other).has_value());
  for (size_t i = 0; i < OutputFitCache::kCapacity; ++i) {
    OutputFitKey filler = key;
    filler.seed = 100 + i;
    cache.Insert(filler, model);
  }
  EXPECT_FALSE(cache.Find(key).has_value());
}

TEST(GpPolicyTest, CatalogueStudiesPickUntriedEntries) {
  v1::StudySpec spec = BoxSpec(1, 0, 1, 4);
  for (int i = 0; i <= 20; ++i) {
    auto* a = spec.add_candidates()->add_assignments();
    a->set_stage("model");
    a->set_algorithm("f");
    (*a->mutable_parameters())["x0"].set_number(i / 20.0);
  }
  auto space = space::SearchSpace::Create(spec.search_space());
  ASSERT_TRUE(space.ok());
  METAOPT_ASSERT_OK_AND_ASSIGN(auto policy, CreatePolicy(spec, std::nullopt));
  std::vector<v1::Trial> trials;
  space::Rng rng(1);
  absl::flat_hash_set<std::string> seen;
  for (int t = 0; t < 21; ++t) {
    StudyView view{&spec, &*space, &trials};
    METAOPT_ASSERT_OK_AND_ASSIGN(SuggestResult r,
                                 policy->Suggest(view, 1, rng));
    ASSERT_EQ(r.configurations.size(), 1u) << "step " << t;
    if (r.update.has_value()) policy = r.update->policy;
    EXPECT_TRUE(
        seen.insert(space::ConfigurationKey(r.configurations[0])).second);
    v1::Trial trial;
    trial.set_id(t + 1);
    *trial.mutable_configuration() = r.configurations[0];
    trial.set_state(v1::TRIAL_STATE_COMPLETED);
    const double x = Number(trial.configuration(), 0, "x0");
    trial.set_value((x - 0.35) * (x - 0.35));
    trials.push_back(trial);
  }
  StudyView view{&spec, &*space, &trials};
  METAOPT_ASSERT_OK_AND_ASSIGN(SuggestResult r, policy->Suggest(view, 1, rng));
  EXPECT_TRUE(r.configurations.empty());
}

// A catalogue like oboe's: 27 entries of "forest", an algorithm of three
// parameters, and one entry each of "nb", "perceptron" and "stump", which have
// none; two objectives, error and seconds, minimised.
v1::StudySpec ManyAndParameterlessAlgorithms() {
  v1::StudySpec spec;
  auto* stage = spec.mutable_search_space()->add_stages();
  stage->set_name("model");
  auto* forest = stage->add_algorithms();
  forest->set_name("forest");
  for (const char* name : {"x", "y", "z"}) {
    auto* p = forest->add_parameters();
    p->set_name(name);
    p->mutable_float_domain()->set_low(0);
    p->mutable_float_domain()->set_high(1);
  }
  for (const char* name : {"nb", "perceptron", "stump"}) {
    stage->add_algorithms()->set_name(name);
  }
  for (int i = 0; i < 27; ++i) {
    auto* a = spec.add_candidates()->add_assignments();
    a->set_stage("model");
    a->set_algorithm("forest");
    (*a->mutable_parameters())["x"].set_number((i % 3) / 2.0);
    (*a->mutable_parameters())["y"].set_number((i / 3 % 3) / 2.0);
    (*a->mutable_parameters())["z"].set_number((i / 9) / 2.0);
  }
  for (const char* name : {"nb", "perceptron", "stump"}) {
    auto* a = spec.add_candidates()->add_assignments();
    a->set_stage("model");
    a->set_algorithm(name);
  }
  for (const char* name : {"error", "seconds"}) {
    v1::Objective* objective = spec.add_objectives();
    objective->set_name(name);
    objective->set_goal(v1::GOAL_MINIMIZE);
  }
  *spec.mutable_objective() = spec.objectives(0);
  spec.mutable_algorithm()->set_kind(v1::ALGORITHM_KIND_GP);
  spec.mutable_algorithm()->set_initial_trials(2);
  return spec;
}

// The parameterless algorithms are fast and less accurate: the fast end of
// the front.
v1::Trial ErrorAndSeconds(int id, const v1::Configuration& config) {
  v1::Trial trial;
  trial.set_id(id);
  *trial.mutable_configuration() = config;
  trial.set_state(v1::TRIAL_STATE_COMPLETED);
  const std::string& algorithm = config.assignments(0).algorithm();
  double error = 0.3;
  double seconds = 0.01;
  if (algorithm == "forest") {
    const double x = Number(config, 0, "x");
    const double y = Number(config, 0, "y");
    const double z = Number(config, 0, "z");
    error = 0.1 + 0.1 * (x - 0.5) * (x - 0.5) + 0.05 * y;
    seconds = 5 + 20 * z;
  } else if (algorithm == "perceptron") {
    error = 0.25;
    seconds = 0.05;
  }
  trial.set_value(error);
  (*trial.mutable_metrics())["error"] = error;
  (*trial.mutable_metrics())["seconds"] = seconds;
  return trial;
}

// With several objectives the GP tries every algorithm before it repeats
// one, under EHVI and ParEGO alike: by the acquisition alone it would keep to
// "forest", whose entries the encoding puts far from everything tried
// (docs/algorithms.md "Several objectives and constraints", "Untried
// algorithms first").
class SeveralObjectivesTest
    : public ::testing::TestWithParam<v1::MultiObjectiveAcquisition> {};

TEST_P(SeveralObjectivesTest, TryEveryAlgorithmFirst) {
  v1::StudySpec spec = ManyAndParameterlessAlgorithms();
  spec.mutable_algorithm()->set_multi_objective_acquisition(GetParam());
  const std::string source =
      GetParam() == v1::MULTI_OBJECTIVE_ACQUISITION_PAREGO ? "gp/parego"
                                                           : "gp/ehvi";
  auto space = space::SearchSpace::Create(spec.search_space());
  ASSERT_TRUE(space.ok());
  for (uint64_t seed = 0; seed < 10; ++seed) {
    METAOPT_ASSERT_OK_AND_ASSIGN(auto policy, CreatePolicy(spec, std::nullopt));
    std::vector<v1::Trial> trials;
    space::Rng rng(seed);
    std::set<std::string> tried;
    for (int t = 0; t < 6; ++t) {
      StudyView view{&spec, &*space, &trials};
      METAOPT_ASSERT_OK_AND_ASSIGN(SuggestResult r,
                                   policy->Suggest(view, 1, rng));
      if (r.update.has_value()) policy = r.update->policy;
      ASSERT_EQ(r.configurations.size(), 1u);
      const std::string algorithm =
          r.configurations[0].assignments(0).algorithm();
      if (t >= 2) {
        EXPECT_EQ(r.source, source);
        // A new algorithm while there is one; then the acquisition over all.
        EXPECT_EQ(tried.count(algorithm) == 0, tried.size() < 4)
            << "seed " << seed << ", trial " << t + 1 << ": " << algorithm;
      }
      tried.insert(algorithm);
      trials.push_back(ErrorAndSeconds(t + 1, r.configurations[0]));
    }
    EXPECT_EQ(tried.size(), 4u) << "seed " << seed;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Acquisitions, SeveralObjectivesTest,
    ::testing::Values(v1::MULTI_OBJECTIVE_ACQUISITION_EHVI,
                      v1::MULTI_OBJECTIVE_ACQUISITION_PAREGO),
    [](const ::testing::TestParamInfo<v1::MultiObjectiveAcquisition>& info) {
      return info.param == v1::MULTI_OBJECTIVE_ACQUISITION_PAREGO ? "ParEGO"
                                                                  : "EHVI";
    });

// A batch's picks are fantasies for the later ones: distinct untried
// algorithms while there are any.
TEST(GpPolicyTest, ABatchTriesDistinctUntriedAlgorithms) {
  const v1::StudySpec spec = ManyAndParameterlessAlgorithms();
  auto space = space::SearchSpace::Create(spec.search_space());
  ASSERT_TRUE(space.ok());
  METAOPT_ASSERT_OK_AND_ASSIGN(auto policy, CreatePolicy(spec, std::nullopt));
  // The design: two "forest" entries.
  std::vector<v1::Trial> trials = {ErrorAndSeconds(1, spec.candidates(0)),
                                   ErrorAndSeconds(2, spec.candidates(26))};
  StudyView view{&spec, &*space, &trials};
  space::Rng rng(3);
  METAOPT_ASSERT_OK_AND_ASSIGN(SuggestResult r, policy->Suggest(view, 4, rng));
  ASSERT_EQ(r.configurations.size(), 4u);
  std::set<std::string> algorithms;
  for (int i = 0; i < 3; ++i) {
    algorithms.insert(r.configurations[i].assignments(0).algorithm());
  }
  EXPECT_EQ(algorithms, (std::set<std::string>{"nb", "perceptron", "stump"}));
  EXPECT_EQ(r.configurations[3].assignments(0).algorithm(), "forest");
}

TEST(RowsOfAnUntriedAlgorithmTest, DrawsAnUntriedPairOfAnyStage) {
  // Two stages of two algorithms each, every combination once.
  v1::StudySpec spec;
  for (const char* stage_name : {"scale", "model"}) {
    auto* stage = spec.mutable_search_space()->add_stages();
    stage->set_name(stage_name);
    for (int a = 0; a < 2; ++a) {
      stage->add_algorithms()->set_name(std::string(stage_name) +
                                        std::to_string(a));
    }
  }
  for (int i = 0; i < 4; ++i) {
    v1::Configuration* c = spec.add_candidates();
    for (int s = 0; s < 2; ++s) {
      auto* a = c->add_assignments();
      a->set_stage(spec.search_space().stages(s).name());
      a->set_algorithm(
          spec.search_space().stages(s).algorithms((i >> s) & 1).name());
    }
  }
  auto space = space::SearchSpace::Create(spec.search_space());
  ASSERT_TRUE(space.ok());
  space::Encoder encoder(*space);
  const std::shared_ptr<const acquisition::EncodedCatalogue> catalogue =
      acquisition::EncodeCatalogue(spec, encoder);
  // Entry 0 (scale0, model0) tried: scale1 (entries 1, 3) or model1 (2, 3).
  absl::flat_hash_set<std::string> held = {catalogue->keys[0]};
  auto is_held = [&held](const std::string& key) { return held.contains(key); };
  std::set<std::vector<int>> drawn;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    space::Rng rng(seed);
    drawn.insert(RowsOfAnUntriedAlgorithm(*catalogue, is_held, rng));
  }
  EXPECT_EQ(drawn, (std::set<std::vector<int>>{{1, 3}, {2, 3}}));
  // Entry 3 (scale1, model1) too: every algorithm tried, nothing drawn.
  held.insert(catalogue->keys[3]);
  space::Rng rng(1);
  const space::Rng before = rng;
  EXPECT_TRUE(RowsOfAnUntriedAlgorithm(*catalogue, is_held, rng).empty());
  EXPECT_TRUE(rng == before);
}

TEST(AlgorithmBlockCentringTest, CentresEachChosenBlockOnItsEntries) {
  const v1::StudySpec spec = ManyAndParameterlessAlgorithms();
  auto space = space::SearchSpace::Create(spec.search_space());
  ASSERT_TRUE(space.ok());
  space::Encoder encoder(*space);
  const std::shared_ptr<const acquisition::EncodedCatalogue> catalogue =
      acquisition::EncodeCatalogue(spec, encoder);
  const AlgorithmBlockCentring centring(encoder.layout(), catalogue->X);
  const Eigen::MatrixXd centred = centring.Apply(catalogue->X);
  const space::BlockLayout& forest = encoder.layout().block(0, 0);
  // The forest entries' block has mean zero; their differences are kept.
  const Eigen::MatrixXd block =
      centred.topRows(27).middleCols(forest.offset, forest.size);
  EXPECT_LT(block.colwise().mean().norm(), 1e-12);
  EXPECT_NEAR((centred.row(5) - centred.row(17)).norm(),
              (catalogue->X.row(5) - catalogue->X.row(17)).norm(), 1e-12);
  // The parameterless entries are unchanged, and so is what is not a block.
  for (int i = 27; i < 30; ++i) {
    EXPECT_EQ(centred.row(i), catalogue->X.row(i)) << i;
  }
  const space::StageLayout& stage = encoder.layout().stages[0];
  EXPECT_EQ(centred.middleCols(stage.offset, stage.size),
            catalogue->X.middleCols(stage.offset, stage.size));
  // So a parameterless entry is as far from the forest entries' middle as
  // from each other: the spread of the forest's parameters no longer moves
  // "forest" away from the rest.
  const Eigen::VectorXd middle = centred.topRows(27).colwise().mean();
  EXPECT_NEAR((centred.row(27).transpose() - middle).norm(),
              (centred.row(27) - centred.row(28)).norm(), 1e-12);
}

TEST(GpPolicyTest, FineTuneNeedsDataAndLowersTheLoss) {
  v1::StudySpec spec = BoxSpec(2, 0, 1, 2);
  auto space = space::SearchSpace::Create(spec.search_space());
  ASSERT_TRUE(space.ok());
  METAOPT_ASSERT_OK_AND_ASSIGN(auto policy, CreatePolicy(spec, std::nullopt));
  std::vector<v1::Trial> trials;
  StudyView view{&spec, &*space, &trials};
  EXPECT_THAT(policy->FineTune(view, FineTuneOptions()),
              testing::StatusIs(absl::StatusCode::kFailedPrecondition,
                                ::testing::HasSubstr("at least 2")));
  space::Rng rng(5);
  trials = BraninTrials(*space, 15, rng);  // `view` reads `trials`
  METAOPT_ASSERT_OK_AND_ASSIGN(FineTuneResult tuned,
                               policy->FineTune(view, FineTuneOptions()));
  EXPECT_LT(tuned.loss_after, tuned.loss_before);
  EXPECT_GT(tuned.steps_run, 0);
  EXPECT_NE(tuned.update.policy, nullptr);
  EXPECT_FALSE(tuned.update.state.empty());
}

TEST(FitSampleTest, AllRowsUpToTheLimitThenASystematicSample) {
  TrainingData data;
  data.X = Eigen::MatrixXd::Zero(10, 2);
  data.y = Eigen::VectorXd::LinSpaced(10, 0, 9);
  data.X.col(0) = data.y;
  EXPECT_EQ(FitSample(data, 0).y, data.y);
  EXPECT_EQ(FitSample(data, 10).y, data.y);
  const TrainingData sample = FitSample(data, 4);
  // Rows floor(i * 10 / 4): 0, 2, 5, 7.
  EXPECT_EQ(sample.y, Eigen::Vector4d(0, 2, 5, 7));
  EXPECT_EQ(sample.X.col(0), sample.y);
  EXPECT_EQ(sample.X.cols(), 2);
}

TEST(GpPolicyTest, OptionsAreValidatedAndSuggestFitsStopOnSteps) {
  const GpPolicyOptions defaults;
  // No wall-clock limit by default: a loaded machine gives the same fit.
  EXPECT_EQ(defaults.full_fit.time_budget, absl::InfiniteDuration());
  EXPECT_EQ(defaults.quick_fit.time_budget, absl::InfiniteDuration());
  const v1::StudySpec spec = BoxSpec(2, 0, 1, 4);
  for (auto change : std::vector<std::function<void(GpPolicyOptions&)>>{
           [](GpPolicyOptions& o) { o.max_fit_points = 1; },
           [](GpPolicyOptions& o) { o.max_fit_points = -3; },
           [](GpPolicyOptions& o) { o.refit_growth = -0.1; },
           [](GpPolicyOptions& o) { o.quick_fit.num_starts = 0; },
           [](GpPolicyOptions& o) {
             o.full_fit.time_budget = absl::ZeroDuration();
           }}) {
    GpPolicyOptions options;
    change(options);
    EXPECT_THAT(
        GpPolicy::Create(spec, std::nullopt, nullptr, options),
        testing::StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
  }
}

// spec.algorithm.acquisition_samples is the search's random samples: the
// suggestion of a study asking for 300 is the one of a policy whose options
// say 300, and not the default's.
TEST(GpPolicyTest, TheStudysAcquisitionSamplesAreTheSearchBudget) {
  v1::StudySpec spec = BoxSpec(3, 0, 1, 9);
  const space::SearchSpace space =
      *space::SearchSpace::Create(spec.search_space());
  space::Rng history_rng(3);
  const std::vector<v1::Trial> trials = BraninTrials(space, 12, history_rng);
  auto suggest = [&](const v1::StudySpec& study, GpPolicyOptions options) {
    auto policy = GpPolicy::Create(study, std::nullopt, nullptr, options);
    EXPECT_THAT(policy.status(), IsOk());
    space::Rng rng(17);
    const StudyView study_view{&study, &space, &trials};
    auto result = (*policy)->Suggest(study_view, 1, rng);
    EXPECT_THAT(result.status(), IsOk());
    return space::ConfigurationKey(result->configurations.at(0));
  };
  const std::string by_default = suggest(spec, {});
  GpPolicyOptions three_hundred;
  three_hundred.search.random_samples = 300;
  const std::string by_options = suggest(spec, three_hundred);
  spec.mutable_algorithm()->set_acquisition_samples(300);
  EXPECT_EQ(suggest(spec, {}), by_options);
  EXPECT_NE(by_options, by_default);
}

// Beyond max_fit_points observations the Suggest-time fit reads the
// systematic sample (a bounded cost), runs its iterations without consulting
// the clock, and the posterior still conditions on every observation.
TEST(GpPolicyTest, LargeStudiesFitOnABoundedSample) {
  v1::StudySpec spec = BoxSpec(2, 0, 1, 6);
  auto space = space::SearchSpace::Create(spec.search_space());
  ASSERT_TRUE(space.ok());
  GpPolicyOptions options;
  options.max_fit_points = 12;
  METAOPT_ASSERT_OK_AND_ASSIGN(
      auto policy, GpPolicy::Create(spec, std::nullopt, nullptr, options));
  space::Rng sampler(8);
  const std::vector<v1::Trial> trials = BraninTrials(*space, 40, sampler);
  StudyView view{&spec, &*space, &trials};
  space::Rng rng(21);
  METAOPT_ASSERT_OK_AND_ASSIGN(SuggestResult result,
                               policy->Suggest(view, 1, rng));
  EXPECT_EQ(result.source, "gp/ei");
  ASSERT_TRUE(result.update.has_value());
  v1::PolicyState stored;
  ASSERT_TRUE(stored.ParseFromString(result.update->state));
  EXPECT_EQ(stored.gp().fitted_observations(), 40);

  // The same fit by hand: the full fit (first Suggest) on the sample, seeded
  // by the Suggest's first draw.
  const space::Encoder encoder(*space);
  const TrainingData sample =
      FitSample(CollectTrainingData(view, encoder), options.max_fit_points);
  ASSERT_EQ(sample.y.size(), 12);
  METAOPT_ASSERT_OK_AND_ASSIGN(
      gp::GaussianProcess prior,
      gp::GaussianProcess::Create("matern52", encoder.dimension()));
  gp::FitOptions fit = options.full_fit;
  fit.seed = space::Rng(21)();
  METAOPT_ASSERT_OK_AND_ASSIGN(gp::GpPosterior expected,
                               gp::Fit(prior, sample.X, sample.y, fit));
  const Eigen::VectorXd h = expected.model().hyperparameters();
  ASSERT_EQ(stored.gp().hyperparameters_size(), h.size());
  for (int i = 0; i < h.size(); ++i) {
    EXPECT_EQ(stored.gp().hyperparameters(i), h[i]) << i;
  }
}

// ExpectPreparedEqualsInline over Branin-valued trials.
int ExpectPreparedEqualsInline(std::shared_ptr<const Policy> policy,
                               const v1::StudySpec& spec, int trials,
                               int count) {
  return prepared_fit_test::ExpectPreparedEqualsInline(
      std::move(policy), spec, trials, count,
      [](int64_t id, const v1::Configuration& c) {
        v1::Trial trial;
        trial.set_id(id);
        *trial.mutable_configuration() = c;
        trial.set_state(v1::TRIAL_STATE_COMPLETED);
        trial.set_value(Branin(c));
        return trial;
      });
}

TEST(GpPreparedFitTest, PreparedSuggestsEqualInlineOnesContinuous) {
  const v1::StudySpec spec = BoxSpec(2, 0, 1, 7);
  METAOPT_ASSERT_OK_AND_ASSIGN(auto policy, CreatePolicy(spec, std::nullopt));
  // Sequential: every Suggest after the design uses its prepared fit (the
  // refits draw their seed from the same stream).
  EXPECT_GE(ExpectPreparedEqualsInline(policy, spec, 24, 1), 15);
  // Batches: the design's draws come before the fit in the first Suggests,
  // whose prepared fits then do not match; the results are still equal.
  EXPECT_GE(ExpectPreparedEqualsInline(policy, spec, 24, 3), 4);
}

TEST(GpPreparedFitTest, PreparedSuggestsEqualInlineOnesCatalogue) {
  v1::StudySpec spec = BoxSpec(2, 0, 1, 11);
  auto space = space::SearchSpace::Create(spec.search_space());
  space::Rng rng(3);
  for (int i = 0; i < 300; ++i) *spec.add_candidates() = space->Sample(rng);
  METAOPT_ASSERT_OK_AND_ASSIGN(auto policy, CreatePolicy(spec, std::nullopt));
  EXPECT_GE(ExpectPreparedEqualsInline(policy, spec, 30, 1), 20);
  EXPECT_GE(ExpectPreparedEqualsInline(policy, spec, 30, 2), 8);
}

TEST(GpPreparedFitTest, PreparedCatalogueScreenGivesTheInlinePicks) {
  // From surrogate::kScreeningMinPoints observations on, a prepared fit
  // carries the screen of the whole catalogue.
  v1::StudySpec spec = BoxSpec(3, 0, 1, 13);
  auto space = space::SearchSpace::Create(spec.search_space());
  space::Rng rng(4);
  for (int i = 0; i < 400; ++i) *spec.add_candidates() = space->Sample(rng);
  METAOPT_ASSERT_OK_AND_ASSIGN(auto policy, CreatePolicy(spec, std::nullopt));
  EXPECT_GE(ExpectPreparedEqualsInline(policy, spec, 80, 1), 60);
}

// The running policy's catalogue keeps the screen's kernel between Suggests
// (gp::CatalogueKernelCache); a restarted server recomputes it. Past
// surrogate::kScreeningMinPoints observations, through hyperparameter refits,
// sequential and in pairs (fantasies), both suggest the same.
TEST(GpPreparedFitTest, RestoredPolicySuggestsWhatTheRunningOneDoes) {
  v1::StudySpec spec = BoxSpec(3, 0, 1, 17);
  auto space = space::SearchSpace::Create(spec.search_space());
  space::Rng rng(6);
  for (int i = 0; i < 400; ++i) *spec.add_candidates() = space->Sample(rng);
  auto complete = [](int64_t id, const v1::Configuration& c) {
    v1::Trial trial;
    trial.set_id(id);
    *trial.mutable_configuration() = c;
    trial.set_state(v1::TRIAL_STATE_COMPLETED);
    trial.set_value(Branin(c));
    return trial;
  };
  auto restore = [&spec](const std::optional<std::string>& state) {
    return *CreatePolicy(spec, state);
  };
  for (int count : {1, 2}) {
    METAOPT_ASSERT_OK_AND_ASSIGN(auto policy, CreatePolicy(spec, std::nullopt));
    prepared_fit_test::ExpectRestoredEqualsRunning(policy, spec, 84, count,
                                                   complete, restore);
  }
}

// Over a space, between refits, a fit extends the Cholesky factor of the
// policy's last fit while something holds that fit (the study engine keeps
// it); a restored policy (a restarted server) refactors. Both suggest the same,
// step by step, through refits, sequential and in pairs.
TEST(GpPreparedFitTest, ExtendedFactorSuggestsWhatARefactorDoes) {
  const v1::StudySpec spec = BoxSpec(4, 0, 1, 19);
  auto space = space::SearchSpace::Create(spec.search_space());
  for (const int count : {1, 2}) {
    space::Rng sampler(23);
    std::vector<v1::Trial> history = BraninTrials(*space, 60, sampler);
    const StudyView view{&spec, &*space, &history};
    METAOPT_ASSERT_OK_AND_ASSIGN(std::shared_ptr<const Policy> policy,
                                 CreatePolicy(spec, std::nullopt));
    std::optional<std::string> state;
    std::optional<SuggestResult> kept;
    int reused = 0;
    for (int step = 0; step < 16; ++step) {
      const space::Rng start(3000 + step);
      space::Rng running_rng = start;
      METAOPT_ASSERT_OK_AND_ASSIGN(SuggestResult running,
                                   policy->Suggest(view, count, running_rng));
      space::Rng restored_rng = start;
      METAOPT_ASSERT_OK_AND_ASSIGN(
          SuggestResult restored,
          (*CreatePolicy(spec, state))->Suggest(view, count, restored_rng));
      EXPECT_TRUE(restored_rng == running_rng) << step;
      ASSERT_EQ(restored.configurations.size(), running.configurations.size());
      for (size_t i = 0; i < running.configurations.size(); ++i) {
        EXPECT_EQ(space::ConfigurationKey(restored.configurations[i]),
                  space::ConfigurationKey(running.configurations[i]))
            << "step " << step << " pick " << i;
      }
      for (const v1::Configuration& c : running.configurations) {
        v1::Trial trial;
        trial.set_id(static_cast<int64_t>(history.size()) + 1);
        *trial.mutable_configuration() = c;
        trial.set_state(v1::TRIAL_STATE_COMPLETED);
        trial.set_value(Branin(c));
        history.push_back(std::move(trial));
      }
      if (running.update.has_value()) {
        policy = running.update->policy;
        state = running.update->state;
      } else {
        ++reused;
      }
      kept = std::move(running);  // holds the fit, as the engine does
    }
    EXPECT_GE(reused, 8) << count;
  }
}

TEST(GpPreparedFitTest, AnotherPolicysOrAnotherStreamsFitIsNotUsed) {
  const v1::StudySpec spec = BoxSpec(2, 0, 1, 5);
  auto space = space::SearchSpace::Create(spec.search_space());
  space::Rng rng(2);
  std::vector<v1::Trial> trials = BraninTrials(*space, 12, rng);
  const StudyView view{&spec, &*space, &trials};
  METAOPT_ASSERT_OK_AND_ASSIGN(auto a, CreatePolicy(spec, std::nullopt));
  METAOPT_ASSERT_OK_AND_ASSIGN(auto b, CreatePolicy(spec, std::nullopt));
  EXPECT_TRUE(a->PreparesFits());
  const space::Rng start(17);
  METAOPT_ASSERT_OK_AND_ASSIGN(auto fit, a->PrepareFit(view, start));
  ASSERT_NE(fit, nullptr);
  space::Rng same = start;
  METAOPT_ASSERT_OK_AND_ASSIGN(auto used,
                               a->SuggestPrepared(view, 1, same, fit));
  EXPECT_TRUE(used.used_prepared_fit);
  // An equal policy of another instance: not used (its state may differ).
  space::Rng other = start;
  METAOPT_ASSERT_OK_AND_ASSIGN(auto by_b,
                               b->SuggestPrepared(view, 1, other, fit));
  EXPECT_FALSE(by_b.used_prepared_fit);
  // The first fit of a study draws its seed: another stream does not match.
  space::Rng another(18);
  METAOPT_ASSERT_OK_AND_ASSIGN(auto by_stream,
                               a->SuggestPrepared(view, 1, another, fit));
  EXPECT_FALSE(by_stream.used_prepared_fit);
  // Too few observations: nothing to prepare.
  std::vector<v1::Trial> one(trials.begin(), trials.begin() + 1);
  const StudyView small{&spec, &*space, &one};
  METAOPT_ASSERT_OK_AND_ASSIGN(auto none, a->PrepareFit(small, start));
  EXPECT_EQ(none, nullptr);
}

}  // namespace
}  // namespace metaopt::policy
