#include "core/policy/policy.h"

#include <set>
#include <string>
#include <vector>

#include "core/policy/gp_policy.h"
#include "core/policy/model_based.h"
#include "core/policy/random_policy.h"
#include "core/space/search_space.h"
#include "core/space/encoding.h"
#include "gtest/gtest.h"

namespace metaopt::policy {
namespace {

v1::Configuration Point(double x) {
  v1::Configuration c;
  v1::Assignment* a = c.add_assignments();
  a->set_stage("model");
  a->set_algorithm("f");
  (*a->mutable_parameters())["x"].set_number(x);
  return c;
}

class PortfolioForStudyTest : public ::testing::Test {
 protected:
  PortfolioForStudyTest() {
    auto* p = spec_.mutable_search_space()->add_stages();
    p->set_name("model");
    auto* f = p->add_algorithms();
    f->set_name("f");
    auto* x = f->add_parameters();
    x->set_name("x");
    x->mutable_float_domain()->set_low(0);
    x->mutable_float_domain()->set_high(1);
  }
  space::SearchSpace Space() {
    return *space::SearchSpace::Create(spec_.search_space());
  }
  v1::StudySpec spec_;
  v1::ModelArtifact model_;
};

TEST_F(PortfolioForStudyTest, KeepsOrderAndDropsEntriesOutsideTheSpace) {
  for (double x : {0.7, 1.5, 0.2, 0.7}) *model_.add_portfolio() = Point(x);
  std::vector<v1::Configuration> portfolio =
      PortfolioForStudy(&model_, spec_, Space());
  ASSERT_EQ(portfolio.size(), 2u);  // 1.5 is out of range, 0.7 repeats
  EXPECT_EQ(portfolio[0].assignments(0).parameters().at("x").number(), 0.7);
  EXPECT_EQ(portfolio[1].assignments(0).parameters().at("x").number(), 0.2);
  EXPECT_TRUE(PortfolioForStudy(nullptr, spec_, Space()).empty());
}

TEST_F(PortfolioForStudyTest, MapsEntriesToTheNearestCatalogueEntry) {
  for (double x : {0.0, 0.5, 1.0}) *spec_.add_candidates() = Point(x);
  for (double x : {0.45, 0.9, 1.0, 0.55}) *model_.add_portfolio() = Point(x);
  std::vector<v1::Configuration> portfolio =
      PortfolioForStudy(&model_, spec_, Space());
  // 0.45 -> 0.5, 0.9 -> 1.0, 1.0 (already taken), 0.55 -> 0.5 (taken).
  ASSERT_EQ(portfolio.size(), 2u);
  EXPECT_EQ(portfolio[0].assignments(0).parameters().at("x").number(), 0.5);
  EXPECT_EQ(portfolio[1].assignments(0).parameters().at("x").number(), 1.0);
}

// A STOPPED trial is an observation with its (last reported) value, like a
// COMPLETED one, and holds its configuration; other states are not.
TEST_F(PortfolioForStudyTest, StoppedTrialsAreObservations) {
  spec_.mutable_objective()->set_goal(v1::GOAL_MAXIMIZE);
  std::vector<v1::Trial> trials;
  const struct {
    v1::TrialState state;
    double x;
    bool has_value;
  } rows[] = {{v1::TRIAL_STATE_COMPLETED, 0.1, true},
              {v1::TRIAL_STATE_STOPPED, 0.2, true},
              {v1::TRIAL_STATE_ACTIVE, 0.3, false},
              {v1::TRIAL_STATE_FAILED, 0.4, false},
              {v1::TRIAL_STATE_STOPPED, 0.5, false}};
  for (const auto& row : rows) {
    v1::Trial& t = trials.emplace_back();
    t.set_id(static_cast<int64_t>(trials.size()));
    t.set_state(row.state);
    *t.mutable_configuration() = Point(row.x);
    if (row.has_value) t.set_value(row.x * 10);
  }
  EXPECT_TRUE(IsObservation(trials[0]));
  EXPECT_TRUE(IsObservation(trials[1]));
  EXPECT_FALSE(IsObservation(trials[2]));
  EXPECT_FALSE(IsObservation(trials[3]));
  EXPECT_FALSE(IsObservation(trials[4]));  // no value
  EXPECT_TRUE(HoldsConfiguration(v1::TRIAL_STATE_STOPPED));
  const space::SearchSpace space = Space();
  const space::Encoder encoder(space);
  const StudyView view{&spec_, &space, &trials};
  const TrainingData data = CollectTrainingData(view, encoder);
  ASSERT_EQ(data.y.size(), 2);
  // Maximized values are negated into minimization targets.
  EXPECT_DOUBLE_EQ(data.y[0], -1.0);
  EXPECT_DOUBLE_EQ(data.y[1], -2.0);
  // Best first: the stopped trial's 2.0 beats the completed 1.0.
  EXPECT_EQ(data.best_first[0].assignments(0).parameters().at("x").number(),
            0.2);
}


// RandomPolicy says it does not read the view's trials (the engine then
// passes none and keeps the study compact): its suggestions from the held
// keys alone are those from the trials themselves. A model-based policy
// reads them.
TEST_F(PortfolioForStudyTest, RandomPolicySuggestsFromTheHeldKeysAlone) {
  for (double x : {0.0, 0.25, 0.5, 0.75, 1.0}) *spec_.add_candidates() = Point(x);
  std::vector<v1::Trial> trials;
  for (double x : {0.25, 0.75}) {
    v1::Trial& t = trials.emplace_back();
    t.set_id(static_cast<int64_t>(trials.size()));
    t.set_state(v1::TRIAL_STATE_COMPLETED);
    *t.mutable_configuration() = Point(x);
    t.set_value(x);
  }
  const space::SearchSpace space = Space();
  HeldKeys scratch;
  const HeldKeys& held =
      HeldConfigurationKeys(StudyView{&spec_, &space, &trials}, &scratch);
  ASSERT_EQ(held.size(), 2u);
  const std::vector<v1::Trial> no_trials;
  const StudyView with_trials{&spec_, &space, &trials, nullptr, &held};
  const StudyView keys_only{&spec_, &space, &no_trials, nullptr, &held};

  const RandomPolicy random;
  EXPECT_FALSE(random.ReadsTrials());
  space::Rng rng_a(7), rng_b(7);
  auto a = random.Suggest(with_trials, 3, rng_a);
  auto b = random.Suggest(keys_only, 3, rng_b);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->configurations.size(), 3u);
  ASSERT_EQ(b->configurations.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    const std::string key = space::ConfigurationKey(a->configurations[i]);
    EXPECT_EQ(key, space::ConfigurationKey(b->configurations[i]));
    EXPECT_FALSE(held.contains(key));  // never a tried entry
  }
  auto gp = GpPolicy::Create(spec_, std::nullopt);
  ASSERT_TRUE(gp.ok());
  EXPECT_TRUE((*gp)->ReadsTrials());
}

// A catalogue of 40 entries of algorithm "f" and one of "g".
v1::StudySpec UnevenCatalogue() {
  v1::StudySpec spec;
  auto* stage = spec.mutable_search_space()->add_stages();
  stage->set_name("model");
  for (const char* name : {"f", "g"}) {
    auto* algorithm = stage->add_algorithms();
    algorithm->set_name(name);
    auto* x = algorithm->add_parameters();
    x->set_name("x");
    x->mutable_float_domain()->set_low(0);
    x->mutable_float_domain()->set_high(1);
  }
  for (int i = 0; i < 40; ++i) *spec.add_candidates() = Point(i / 40.0);
  v1::Configuration g = Point(0.5);
  g.mutable_assignments(0)->set_algorithm("g");
  *spec.add_candidates() = g;
  return spec;
}

TEST(SampleStructuresTest, DrawsTheStructureUniformlyThenAnEntry) {
  const v1::StudySpec spec = UnevenCatalogue();
  const space::SearchSpace space =
      *space::SearchSpace::Create(spec.search_space());
  const std::vector<v1::Trial> trials;
  const StudyView study{&spec, &space, &trials};
  const HeldConfigurations held(study);
  int by_structure = 0;
  int by_entry = 0;
  for (uint64_t seed = 0; seed < 400; ++seed) {
    space::Rng rng(seed);
    const std::vector<v1::Configuration> one =
        RandomPolicy::SampleStructures(study, held, 1, rng);
    ASSERT_EQ(one.size(), 1u);
    by_structure += one[0].assignments(0).algorithm() == "g";
    space::Rng other(seed);
    by_entry += RandomPolicy::Sample(study, held, 1, other)[0]
                    .assignments(0)
                    .algorithm() == "g";
  }
  // About half of the draws against about 1 in 41.
  EXPECT_GT(by_structure, 150);
  EXPECT_LT(by_structure, 250);
  EXPECT_LT(by_entry, 40);
}

TEST(SampleStructuresTest, WithoutReplacementAndNeverHeld) {
  const v1::StudySpec spec = UnevenCatalogue();
  const space::SearchSpace space =
      *space::SearchSpace::Create(spec.search_space());
  std::vector<v1::Trial> trials(1);
  trials[0].set_id(1);
  trials[0].set_state(v1::TRIAL_STATE_COMPLETED);
  *trials[0].mutable_configuration() = spec.candidates(40);  // "g"
  const StudyView study{&spec, &space, &trials};
  HeldConfigurations held(study);
  held.Add({spec.candidates(0)});
  space::Rng rng(7);
  const std::vector<v1::Configuration> all =
      RandomPolicy::SampleStructures(study, held, 100, rng);
  ASSERT_EQ(all.size(), 39u);
  std::set<std::string> keys;
  for (const v1::Configuration& c : all) {
    EXPECT_EQ(c.assignments(0).algorithm(), "f");
    EXPECT_TRUE(keys.insert(space::ConfigurationKey(c)).second);
    EXPECT_FALSE(held.contains(space::ConfigurationKey(c)));
  }
}

}  // namespace
}  // namespace metaopt::policy
