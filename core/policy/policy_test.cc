#include "core/policy/policy.h"

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

}  // namespace
}  // namespace metaopt::policy
