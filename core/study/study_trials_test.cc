// StudyTrials: the held configuration keys and ACTIVE ids kept by Put equal
// what a pass over the trials gives, after every kind of change and after a
// Load of the same trials (a restart).
#include "core/study/study_trials.h"

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "core/common/proto_time.h"
#include "core/policy/policy.h"
#include "core/space/random.h"
#include "core/space/search_space.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"

namespace metaopt::study {
namespace {

using ::metaopt::testing::IsOk;
using ::metaopt::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;
using ::testing::SizeIs;
using ::testing::UnorderedElementsAre;

v1::Configuration Point(double x) {
  v1::Configuration config;
  v1::Assignment* a = config.add_assignments();
  a->set_stage("model");
  a->set_algorithm("f");
  (*a->mutable_parameters())["x"].set_number(x);
  return config;
}

std::string Key(double x) { return space::ConfigurationKey(Point(x)); }

v1::Trial MakeTrial(int64_t id, double x, v1::TrialState state) {
  v1::Trial trial;
  trial.set_id(id);
  *trial.mutable_configuration() = Point(x);
  trial.set_state(state);
  return trial;
}

v1::Trial WithState(v1::Trial trial, v1::TrialState state) {
  trial.set_state(state);
  return trial;
}

// The held keys and ACTIVE ids by a pass over every trial.
policy::HeldKeys HeldFromScratch(const StudyTrials& trials) {
  v1::StudySpec spec;
  policy::StudyView view{&spec, nullptr, &trials.all()};
  policy::HeldKeys scratch;
  return policy::HeldConfigurationKeys(view, &scratch);
}

std::set<int64_t> ActiveFromScratch(const StudyTrials& trials) {
  std::set<int64_t> active;
  for (const v1::Trial& trial : trials.all()) {
    if (trial.state() == v1::TRIAL_STATE_ACTIVE) active.insert(trial.id());
  }
  return active;
}

// The indexes equal a pass over the trials, and those of a Load of them.
void ExpectConsistent(const StudyTrials& trials) {
  EXPECT_EQ(trials.held_keys(), HeldFromScratch(trials));
  EXPECT_EQ(trials.active_ids(), ActiveFromScratch(trials));
  auto loaded = StudyTrials::Load(trials.all(), "s");
  ASSERT_THAT(loaded, IsOk());
  EXPECT_EQ(loaded->held_keys(), trials.held_keys());
  EXPECT_EQ(loaded->active_ids(), trials.active_ids());
}

TEST(StudyTrialsTest, SuggestedTrialsHoldTheirConfigurations) {
  StudyTrials trials;
  trials.Put(MakeTrial(1, 0.25, v1::TRIAL_STATE_ACTIVE));
  trials.Put(MakeTrial(2, 0.5, v1::TRIAL_STATE_ACTIVE));
  EXPECT_EQ(trials.size(), 2);
  EXPECT_EQ(trials.Get(2).configuration().assignments(0).parameters().at("x")
                .number(),
            0.5);
  EXPECT_THAT(trials.held_keys(),
              UnorderedElementsAre(Pair(Key(0.25), 1), Pair(Key(0.5), 1)));
  EXPECT_THAT(trials.active_ids(), ElementsAre(1, 2));
  ExpectConsistent(trials);
}

TEST(StudyTrialsTest, StaleTrialReleasesItsConfiguration) {
  StudyTrials trials;
  trials.Put(MakeTrial(1, 0.25, v1::TRIAL_STATE_ACTIVE));
  trials.Put(WithState(trials.Get(1), v1::TRIAL_STATE_STALE));
  EXPECT_THAT(trials.held_keys(), IsEmpty());
  EXPECT_THAT(trials.active_ids(), IsEmpty());
  ExpectConsistent(trials);
}

TEST(StudyTrialsTest, ObservedTrialsKeepHoldingTheirConfigurations) {
  StudyTrials trials;
  trials.Put(MakeTrial(1, 0.1, v1::TRIAL_STATE_ACTIVE));
  trials.Put(MakeTrial(2, 0.2, v1::TRIAL_STATE_ACTIVE));
  trials.Put(MakeTrial(3, 0.3, v1::TRIAL_STATE_ACTIVE));
  trials.Put(WithState(trials.Get(1), v1::TRIAL_STATE_COMPLETED));
  trials.Put(WithState(trials.Get(2), v1::TRIAL_STATE_FAILED));
  trials.Put(WithState(trials.Get(3), v1::TRIAL_STATE_INFEASIBLE));
  // An external observation appends a completed trial.
  trials.Put(MakeTrial(4, 0.4, v1::TRIAL_STATE_COMPLETED));
  EXPECT_EQ(trials.held_keys().size(), 4u);
  EXPECT_THAT(trials.active_ids(), IsEmpty());
  ExpectConsistent(trials);
}

// A stale trial's configuration is suggested again; its late observation then
// holds it a second time, so the re-suggested trial's expiry keeps it held.
TEST(StudyTrialsTest, AConfigurationHeldTwiceIsReleasedByBothOnly) {
  StudyTrials trials;
  trials.Put(MakeTrial(1, 0.5, v1::TRIAL_STATE_ACTIVE));
  trials.Put(WithState(trials.Get(1), v1::TRIAL_STATE_STALE));
  trials.Put(MakeTrial(2, 0.5, v1::TRIAL_STATE_ACTIVE));
  trials.Put(WithState(trials.Get(1), v1::TRIAL_STATE_COMPLETED));
  EXPECT_THAT(trials.held_keys(), ElementsAre(Pair(Key(0.5), 2)));
  ExpectConsistent(trials);

  trials.Put(WithState(trials.Get(2), v1::TRIAL_STATE_STALE));
  EXPECT_THAT(trials.held_keys(), ElementsAre(Pair(Key(0.5), 1)));
  ExpectConsistent(trials);
}

TEST(StudyTrialsTest, LeaseRenewalChangesNoIndex) {
  StudyTrials trials;
  trials.Put(MakeTrial(1, 0.5, v1::TRIAL_STATE_ACTIVE));
  v1::Trial renewed = trials.Get(1);
  renewed.mutable_lease_expire_time()->set_seconds(1700003600);
  trials.Put(renewed);
  EXPECT_EQ(trials.Get(1).lease_expire_time().seconds(), 1700003600);
  EXPECT_THAT(trials.held_keys(), ElementsAre(Pair(Key(0.5), 1)));
  EXPECT_THAT(trials.active_ids(), ElementsAre(1));
}

// Random histories over a small set of points (so that configurations repeat)
// through every transition the engine makes.
TEST(StudyTrialsTest, IndexesMatchAPassOverTheTrialsAfterAnyHistory) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    SCOPED_TRACE(seed);
    space::Rng rng(seed);
    StudyTrials trials;
    for (int step = 0; step < 200; ++step) {
      const int64_t n = trials.size();
      const int op = static_cast<int>(space::UniformIndex(rng, 4));
      if (op == 0 || n == 0) {  // Suggest, or an external observation
        const double x = static_cast<double>(space::UniformIndex(rng, 8)) / 8;
        trials.Put(MakeTrial(n + 1, x,
                             op == 0 ? v1::TRIAL_STATE_ACTIVE
                                     : v1::TRIAL_STATE_COMPLETED));
        continue;
      }
      const int64_t id = 1 + static_cast<int64_t>(space::UniformIndex(rng, n));
      const v1::Trial& trial = trials.Get(id);
      if (trial.state() == v1::TRIAL_STATE_ACTIVE && op == 1) {
        trials.Put(WithState(trial, v1::TRIAL_STATE_STALE));
      } else if (trial.state() == v1::TRIAL_STATE_ACTIVE ||
                 trial.state() == v1::TRIAL_STATE_STALE) {
        const v1::TrialState outcomes[] = {v1::TRIAL_STATE_COMPLETED,
                                           v1::TRIAL_STATE_FAILED,
                                           v1::TRIAL_STATE_INFEASIBLE};
        trials.Put(WithState(trial, outcomes[space::UniformIndex(rng, 3)]));
      }
    }
    ExpectConsistent(trials);
  }
}

v1::Trial Leased(int64_t id, double x, absl::Time end) {
  v1::Trial trial = MakeTrial(id, x, v1::TRIAL_STATE_ACTIVE);
  *trial.mutable_lease_expire_time() = ToProtoTimestamp(end);
  return trial;
}

TEST(StudyTrialsTest, ExpiredLeasesAreTheActiveTrialsPastTheirLeaseEnd) {
  const absl::Time t0 = absl::FromUnixSeconds(1700000000);
  const absl::Duration lease = absl::Minutes(10);
  StudyTrials trials;
  trials.Put(Leased(1, 0.25, t0 + absl::Minutes(1)));
  trials.Put(Leased(2, 0.5, t0 + absl::Minutes(5)));
  // Stored before leases existed: its lease runs from its creation.
  v1::Trial old = MakeTrial(3, 0.75, v1::TRIAL_STATE_ACTIVE);
  *old.mutable_create_time() = ToProtoTimestamp(t0);
  trials.Put(old);
  trials.Put(WithState(Leased(4, 0.125, t0), v1::TRIAL_STATE_COMPLETED));

  EXPECT_THAT(trials.ExpiredLeases(t0, lease), IsEmpty());
  std::vector<v1::Trial> expired =
      trials.ExpiredLeases(t0 + absl::Minutes(5), lease);
  ASSERT_THAT(expired, SizeIs(2));
  EXPECT_EQ(expired[0].id(), 1);
  EXPECT_EQ(expired[1].id(), 2);
  for (const v1::Trial& trial : expired) {
    EXPECT_EQ(trial.state(), v1::TRIAL_STATE_STALE);
  }
  // Nothing changed until the caller puts them.
  EXPECT_THAT(trials.active_ids(), ElementsAre(1, 2, 3));
  for (v1::Trial& trial : expired) trials.Put(std::move(trial));
  ExpectConsistent(trials);
  EXPECT_THAT(trials.ExpiredLeases(t0 + absl::Minutes(9), lease), IsEmpty());
  expired = trials.ExpiredLeases(t0 + lease, lease);
  ASSERT_THAT(expired, SizeIs(1));
  EXPECT_EQ(expired[0].id(), 3);
  EXPECT_EQ(expired[0].lease_expire_time().seconds(),
            absl::ToUnixSeconds(t0 + lease));
}

TEST(StudyTrialsTest, StagedChangesAreUndoneUnlessCommitted) {
  StudyTrials trials;
  trials.Put(MakeTrial(1, 0.25, v1::TRIAL_STATE_ACTIVE));
  trials.Put(MakeTrial(2, 0.5, v1::TRIAL_STATE_ACTIVE));
  {
    StagedTrials staged(&trials);
    staged.Put(MakeTrial(1, 0.25, v1::TRIAL_STATE_STALE));
    staged.Put(MakeTrial(1, 0.25, v1::TRIAL_STATE_COMPLETED));
    EXPECT_THAT(staged.changed(), SizeIs(2));
    EXPECT_EQ(trials.Get(1).state(), v1::TRIAL_STATE_COMPLETED);
    EXPECT_THAT(trials.active_ids(), ElementsAre(2));
  }  // destroyed: undone
  EXPECT_EQ(trials.Get(1).state(), v1::TRIAL_STATE_ACTIVE);
  EXPECT_THAT(trials.active_ids(), ElementsAre(1, 2));
  ExpectConsistent(trials);
  {
    StagedTrials staged(&trials);
    staged.Put(MakeTrial(2, 0.5, v1::TRIAL_STATE_STALE));
    staged.Commit();
    EXPECT_THAT(staged.changed(), IsEmpty());
  }
  EXPECT_EQ(trials.Get(2).state(), v1::TRIAL_STATE_STALE);
  EXPECT_THAT(trials.held_keys(), UnorderedElementsAre(Pair(Key(0.25), 1)));
  ExpectConsistent(trials);
}

TEST(StudyTrialsTest, LoadRejectsIdsThatAreNotDense) {
  std::vector<v1::Trial> stored = {MakeTrial(1, 0.1, v1::TRIAL_STATE_ACTIVE),
                                   MakeTrial(3, 0.3, v1::TRIAL_STATE_ACTIVE)};
  EXPECT_THAT(StudyTrials::Load(std::move(stored), "s"),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("study \"s\": stored trial ids are not 1..2 "
                                 "(found id 3)")));
}

}  // namespace
}  // namespace metaopt::study
