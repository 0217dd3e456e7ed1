// Trial leases: expiry to STALE, Heartbeat, renewal by the same client's
// Suggest, re-suggestion of stale catalogue entries, late observations and
// persistence across a restart.
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "core/common/proto_time.h"
#include "core/space/search_space.h"
#include "core/storage/storage.h"
#include "tests/testutil/fake_clock.h"
#include "tests/testutil/restartable_engine.h"
#include "core/study/study_engine.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"
#include "tests/testutil/temp_dir.h"
#include "tests/testutil/test_specs.h"

namespace metaopt::study {
namespace {

using ::metaopt::testing::CatalogueSpec;
using ::metaopt::testing::IsOk;
using ::metaopt::testing::PipelineSpec;
using ::metaopt::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAreArray;

google::protobuf::Timestamp At(absl::Time t) { return ToProtoTimestamp(t); }

class LeaseTest : public RestartableEngineTest<60> {
 protected:
  void Create(const std::string& id, const v1::StudySpec& spec) {
    v1::CreateStudyRequest request;
    request.set_study_id(id);
    *request.mutable_spec() = spec;
    ASSERT_THAT(engine_->CreateStudy(request), IsOk());
  }

  std::vector<v1::Trial> Suggest(const std::string& id, int count,
                                 const std::string& client) {
    v1::SuggestRequest request;
    request.set_study_id(id);
    request.set_count(count);
    request.set_client_id(client);
    auto response = engine_->Suggest(request);
    EXPECT_THAT(response, IsOk());
    if (!response.ok()) return {};
    return {response->trials().begin(), response->trials().end()};
  }

  v1::Trial Get(const std::string& id, int64_t trial_id) {
    v1::GetTrialRequest request;
    request.set_study_id(id);
    request.set_trial_id(trial_id);
    auto response = engine_->GetTrial(request);
    EXPECT_THAT(response, IsOk());
    return response.ok() ? response->trial() : v1::Trial();
  }

  absl::StatusOr<v1::HeartbeatResponse> Heartbeat(
      const std::string& id, const std::vector<int64_t>& trial_ids) {
    v1::HeartbeatRequest request;
    request.set_study_id(id);
    for (int64_t t : trial_ids) request.add_trial_ids(t);
    return engine_->Heartbeat(request);
  }
};

TEST_F(LeaseTest, SuggestedTrialsCarryALease) {
  Create("s", PipelineSpec());
  const absl::Time start = clock_.Peek();
  std::vector<v1::Trial> trials = Suggest("s", 2, "w1");
  ASSERT_EQ(trials.size(), 2u);
  for (const v1::Trial& trial : trials) {
    EXPECT_EQ(trial.state(), v1::TRIAL_STATE_ACTIVE);
    EXPECT_EQ(trial.lease_expire_time(), At(start + kLease));
  }
}

TEST_F(LeaseTest, ExpiredLeaseTurnsTrialStaleAndIsStored) {
  Create("s", PipelineSpec());
  const absl::Time start = clock_.Peek();
  Suggest("s", 1, "w1");
  clock_.Advance(kLease - absl::Seconds(1));
  EXPECT_EQ(Get("s", 1).state(), v1::TRIAL_STATE_ACTIVE);
  clock_.Advance(absl::Seconds(1));
  const v1::Trial stale = Get("s", 1);
  EXPECT_EQ(stale.state(), v1::TRIAL_STATE_STALE);
  EXPECT_EQ(stale.lease_expire_time(), At(start + kLease));

  v1::ListTrialsRequest list;
  list.set_study_id("s");
  list.set_state(v1::TRIAL_STATE_STALE);
  auto listed = engine_->ListTrials(list);
  ASSERT_THAT(listed, IsOk());
  ASSERT_EQ(listed->trials_size(), 1);
  EXPECT_EQ(listed->trials(0).id(), 1);

  auto stored = storage_->LoadTrials({"", "s"});
  ASSERT_THAT(stored, IsOk());
  ASSERT_EQ(stored->size(), 1u);
  EXPECT_EQ((*stored)[0].state(), v1::TRIAL_STATE_STALE);
}

TEST_F(LeaseTest, HeartbeatExtendsTheLease) {
  Create("s", PipelineSpec());
  Suggest("s", 2, "w1");
  clock_.Advance(absl::Minutes(50));
  const absl::Time beat = clock_.Peek();
  auto response = Heartbeat("s", {2, 1});
  ASSERT_THAT(response, IsOk());
  ASSERT_EQ(response->trials_size(), 2);
  EXPECT_EQ(response->trials(0).id(), 2);
  EXPECT_EQ(response->trials(1).id(), 1);
  for (const v1::Trial& trial : response->trials()) {
    EXPECT_EQ(trial.state(), v1::TRIAL_STATE_ACTIVE);
    EXPECT_EQ(trial.lease_expire_time(), At(beat + kLease));
  }
  clock_.Advance(kLease - absl::Seconds(1));  // 109 min after Suggest
  EXPECT_EQ(Get("s", 1).state(), v1::TRIAL_STATE_ACTIVE);
  clock_.Advance(absl::Seconds(1));
  EXPECT_EQ(Get("s", 1).state(), v1::TRIAL_STATE_STALE);
  EXPECT_EQ(Get("s", 2).state(), v1::TRIAL_STATE_STALE);
}

TEST_F(LeaseTest, SameClientSuggestRenewsAllItsTrials) {
  Create("s", PipelineSpec());
  Suggest("s", 2, "w1");
  Suggest("s", 1, "w2");
  clock_.Advance(absl::Minutes(50));
  const absl::Time again = clock_.Peek();
  std::vector<v1::Trial> back = Suggest("s", 1, "w1");
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].id(), 1);
  EXPECT_EQ(back[0].lease_expire_time(), At(again + kLease));
  // Trial 2 was not handed back (count 1) but its client is alive: renewed.
  EXPECT_EQ(Get("s", 2).lease_expire_time(), At(again + kLease));

  clock_.Advance(absl::Minutes(20));  // 70 min after the first Suggest
  EXPECT_EQ(Get("s", 1).state(), v1::TRIAL_STATE_ACTIVE);
  EXPECT_EQ(Get("s", 2).state(), v1::TRIAL_STATE_ACTIVE);
  EXPECT_EQ(Get("s", 3).state(), v1::TRIAL_STATE_STALE);  // w2's
}

TEST_F(LeaseTest, StaleTrialIsNotHandedBackToItsClient) {
  Create("s", PipelineSpec());
  Suggest("s", 1, "w1");
  clock_.Advance(kLease);
  std::vector<v1::Trial> trials = Suggest("s", 1, "w1");
  ASSERT_EQ(trials.size(), 1u);
  EXPECT_EQ(trials[0].id(), 2);
  EXPECT_EQ(Get("s", 1).state(), v1::TRIAL_STATE_STALE);
}

TEST_F(LeaseTest, HeartbeatRejectsBadIdListsWithoutExtendingAny) {
  Create("s", PipelineSpec());
  Suggest("s", 3, "w1");
  v1::ObserveRequest observe;
  observe.set_study_id("s");
  observe.set_trial_id(3);
  observe.set_value(0.5);
  ASSERT_THAT(engine_->Observe(observe), IsOk());
  const google::protobuf::Timestamp lease = Get("s", 1).lease_expire_time();
  clock_.Advance(absl::Minutes(10));

  EXPECT_THAT(Heartbeat("s", {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("trial_ids: 0 ids, want 1..1000")));
  EXPECT_THAT(Heartbeat("s", std::vector<int64_t>(1001, 1)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("trial_ids: 1001 ids, want 1..1000")));
  EXPECT_THAT(Heartbeat("s", {1, 0}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("trial_ids[1]: 0 is not a trial id")));
  EXPECT_THAT(Heartbeat("s", {1, 2, 1}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("trial_ids[2]: 1 repeats trial_ids[0]")));
  EXPECT_THAT(Heartbeat("s", {1, 9}),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("trial_ids[1]: study \"s\" has no trial 9")));
  EXPECT_THAT(Heartbeat("s", {1, 3}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("trial 3 of study \"s\" is "
                                 "TRIAL_STATE_COMPLETED")));
  EXPECT_THAT(Heartbeat("nope", {1}),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("\"nope\"")));
  EXPECT_THAT(Heartbeat("", {1}), StatusIs(absl::StatusCode::kInvalidArgument,
                                           HasSubstr("study_id")));
  // All or nothing: trial 1 led each failed list and kept its lease.
  EXPECT_EQ(Get("s", 1).lease_expire_time(), lease);
}

TEST_F(LeaseTest, HeartbeatOfStaleTrialIsFailedPrecondition) {
  Create("s", PipelineSpec());
  Suggest("s", 1, "w1");
  clock_.Advance(kLease + absl::Seconds(1));
  EXPECT_THAT(Heartbeat("s", {1}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("trial 1 of study \"s\" is TRIAL_STATE_STALE "
                                 "(its lease expired at")));
  EXPECT_EQ(Get("s", 1).state(), v1::TRIAL_STATE_STALE);
}

TEST_F(LeaseTest, StaleCatalogueEntriesAreSuggestedAgain) {
  Create("cat", CatalogueSpec(3));
  std::vector<v1::Trial> first = Suggest("cat", 3, "w1");
  ASSERT_EQ(first.size(), 3u);
  v1::GetStudyRequest get;
  get.set_study_id("cat");
  EXPECT_EQ(engine_->GetStudy(get)->study().state(), v1::STUDY_STATE_EXHAUSTED);
  EXPECT_TRUE(Suggest("cat", 1, "w2").empty());

  clock_.Advance(kLease);
  EXPECT_EQ(engine_->GetStudy(get)->study().state(), v1::STUDY_STATE_ACTIVE);
  std::vector<v1::Trial> again = Suggest("cat", 3, "w2");
  ASSERT_EQ(again.size(), 3u);
  std::vector<std::string> first_keys, again_keys;
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(again[i].id(), 4 + static_cast<int64_t>(i));
    EXPECT_EQ(again[i].state(), v1::TRIAL_STATE_ACTIVE);
    first_keys.push_back(space::ConfigurationKey(first[i].configuration()));
    again_keys.push_back(space::ConfigurationKey(again[i].configuration()));
  }
  EXPECT_THAT(again_keys, UnorderedElementsAreArray(first_keys));
  EXPECT_EQ(engine_->GetStudy(get)->study().state(), v1::STUDY_STATE_EXHAUSTED);
}

TEST_F(LeaseTest, LateObservationOfStaleTrialIsRecorded) {
  Create("s", PipelineSpec());
  Suggest("s", 1, "w1");
  clock_.Advance(kLease);
  ASSERT_EQ(Get("s", 1).state(), v1::TRIAL_STATE_STALE);
  v1::ObserveRequest observe;
  observe.set_study_id("s");
  observe.set_trial_id(1);
  observe.set_value(0.75);
  auto observed = engine_->Observe(observe);
  ASSERT_THAT(observed, IsOk());
  EXPECT_EQ(observed->trial().state(), v1::TRIAL_STATE_COMPLETED);
  EXPECT_FALSE(observed->trial().has_lease_expire_time());
  EXPECT_THAT(observed->trial().metadata().at("late"),
              HasSubstr("observed after its lease expired at"));
  v1::GetStudyRequest get;
  get.set_study_id("s");
  EXPECT_EQ(engine_->GetStudy(get)->study().best_trial().id(), 1);
}

TEST_F(LeaseTest, LeaseStateSurvivesARestart) {
  UseSqlite();
  Create("s", PipelineSpec());
  const absl::Time start = clock_.Peek();
  Suggest("s", 3, "w1");
  clock_.Advance(absl::Minutes(30));
  ASSERT_THAT(Heartbeat("s", {2}), IsOk());
  clock_.Advance(absl::Minutes(40));
  // Trials 1 and 3 expire here (and are stored STALE).
  ASSERT_EQ(Get("s", 1).state(), v1::TRIAL_STATE_STALE);

  Restart();
  EXPECT_EQ(Get("s", 1).state(), v1::TRIAL_STATE_STALE);
  EXPECT_EQ(Get("s", 1).lease_expire_time(), At(start + kLease));
  EXPECT_EQ(Get("s", 2).state(), v1::TRIAL_STATE_ACTIVE);
  EXPECT_EQ(Get("s", 2).lease_expire_time(),
            At(start + absl::Minutes(30) + kLease));
  EXPECT_EQ(Get("s", 3).state(), v1::TRIAL_STATE_STALE);
  // The restored lease still ends on time.
  clock_.Advance(absl::Minutes(20));
  EXPECT_EQ(Get("s", 2).state(), v1::TRIAL_STATE_STALE);
}

TEST_F(LeaseTest, LeasesEndWhileTheServerIsDown) {
  UseSqlite();
  Create("cat", CatalogueSpec(2));
  Suggest("cat", 2, "w1");
  Restart();
  clock_.Advance(2 * kLease);
  std::vector<v1::Trial> again = Suggest("cat", 2, "w2");
  ASSERT_EQ(again.size(), 2u);
  EXPECT_EQ(again[0].id(), 3);
}

}  // namespace
}  // namespace metaopt::study
