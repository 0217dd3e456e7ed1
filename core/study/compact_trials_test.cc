// The compact form of StudyTrials: a trial that is not ACTIVE is held
// serialized and parsed again on demand; every field comes back, the policies'
// list (PolicyTrials) holds just their fields, the parsed list (all) stays
// equal to what a fresh parse gives, and the engine's answers
// (GetTrial, ListTrials and its paging, GetStudy) are the same whether a
// study's trials are parsed or compact.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/common/proto_time.h"
#include "core/space/search_space.h"
#include "tests/testutil/restartable_engine.h"
#include "core/study/study_trials.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"
#include "tests/testutil/test_specs.h"

namespace metaopt::study {
namespace {

using ::google::protobuf::util::MessageDifferencer;
using ::metaopt::testing::IsOk;
using ::metaopt::testing::PipelineSpec;
using ::testing::SizeIs;

// A trial with every field of v1::Trial set.
v1::Trial FullTrial(int64_t id, v1::TrialState state, double x) {
  v1::Trial trial;
  trial.set_id(id);
  v1::Assignment* a = trial.mutable_configuration()->add_assignments();
  a->set_stage("model");
  a->set_algorithm("svm");
  (*a->mutable_parameters())["c"].set_number(x);
  (*a->mutable_parameters())["kernel"].set_category("rbf");
  trial.set_state(state);
  trial.set_value(0.25 * x);
  (*trial.mutable_metrics())["accuracy"] = 0.75;
  trial.set_client_id("worker-1");
  trial.set_failure_reason("none");
  *trial.mutable_create_time() =
      ToProtoTimestamp(absl::FromUnixSeconds(1700000000 + id));
  *trial.mutable_complete_time() = ToProtoTimestamp(
      absl::FromUnixSeconds(1700000100 + id) + absl::Microseconds(7));
  (*trial.mutable_metadata())["policy"] = "gp/ei";
  (*trial.mutable_metadata())["stop_reason"] = "rule";
  *trial.mutable_lease_expire_time() =
      ToProtoTimestamp(absl::FromUnixSeconds(1700003600 + id));
  trial.set_study_incarnation(42);
  for (int64_t step : {1, 3}) {
    v1::IntermediateValue* v = trial.add_intermediate_values();
    v->set_step(step);
    v->set_value(0.5 / static_cast<double>(step));
    (*v->mutable_metrics())["loss"] = 2.0 * static_cast<double>(step);
    *v->mutable_report_time() =
        ToProtoTimestamp(absl::FromUnixSeconds(1700000050 + step));
  }
  return trial;
}

bool Same(const v1::Trial& a, const v1::Trial& b) {
  return MessageDifferencer::Equals(a, b);
}

TEST(CompactTrialsTest, EveryFieldRoundTrips) {
  const std::vector<v1::TrialState> states = {
      v1::TRIAL_STATE_COMPLETED,  v1::TRIAL_STATE_FAILED,
      v1::TRIAL_STATE_INFEASIBLE, v1::TRIAL_STATE_STALE,
      v1::TRIAL_STATE_STOPPED,    v1::TRIAL_STATE_ACTIVE};
  std::vector<v1::Trial> want;
  for (size_t i = 0; i < states.size(); ++i) {
    want.push_back(FullTrial(static_cast<int64_t>(i) + 1, states[i],
                             static_cast<double>(i)));
  }
  auto loaded = StudyTrials::Load(want, "s");
  ASSERT_THAT(loaded, IsOk());
  StudyTrials& trials = *loaded;
  EXPECT_FALSE(trials.parsed());  // Load keeps the compact form only
  for (const v1::Trial& trial : want) {
    EXPECT_TRUE(Same(trials.Get(trial.id()), trial)) << trial.id();
    const TrialSummary& summary = trials.summary(trial.id());
    EXPECT_EQ(summary.state, trial.state());
    EXPECT_TRUE(summary.has_value);
    EXPECT_EQ(summary.value, trial.value());
    EXPECT_EQ(summary.latest_seconds, trial.complete_time().seconds());
    EXPECT_EQ(summary.latest_nanos, 7000);
  }
  ASSERT_THAT(trials.all(), SizeIs(want.size()));
  EXPECT_TRUE(trials.parsed());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_TRUE(Same(trials.all()[i], want[i])) << i;
  }
  trials.ReleaseParsed();
  EXPECT_FALSE(trials.parsed());
  for (const v1::Trial& trial : want) {
    EXPECT_TRUE(Same(trials.Get(trial.id()), trial)) << trial.id();
  }
  EXPECT_TRUE(Same(trials.GetActive(6), want[5]));
}

// What policies read: id, configuration, state and value (when set), of
// compact and ACTIVE trials alike, and nothing else; building it leaves the
// trials as they were.
TEST(CompactTrialsTest, PolicyTrialsHoldThePolicyFieldsOnly) {
  std::vector<v1::Trial> want = {FullTrial(1, v1::TRIAL_STATE_COMPLETED, 1.0),
                                 FullTrial(2, v1::TRIAL_STATE_FAILED, 2.0),
                                 FullTrial(3, v1::TRIAL_STATE_ACTIVE, 3.0),
                                 FullTrial(4, v1::TRIAL_STATE_STOPPED, 4.0)};
  want[1].clear_value();
  want[2].clear_value();
  auto loaded = StudyTrials::Load(want, "s");
  ASSERT_THAT(loaded, IsOk());
  const std::vector<v1::Trial> policy_trials = loaded->PolicyTrials();
  ASSERT_THAT(policy_trials, SizeIs(want.size()));
  EXPECT_FALSE(loaded->parsed());
  for (size_t i = 0; i < want.size(); ++i) {
    v1::Trial fields;
    fields.set_id(want[i].id());
    *fields.mutable_configuration() = want[i].configuration();
    fields.set_state(want[i].state());
    if (want[i].has_value()) fields.set_value(want[i].value());
    EXPECT_TRUE(Same(policy_trials[i], fields)) << i;
    EXPECT_EQ(policy_trials[i].has_value(), want[i].has_value()) << i;
    EXPECT_TRUE(Same(loaded->Get(want[i].id()), want[i])) << i;
  }
  // After changes too: the ACTIVE trial observed, a finished one replaced.
  want[2].set_state(v1::TRIAL_STATE_COMPLETED);
  want[2].set_value(-0.5);
  want[0].set_state(v1::TRIAL_STATE_STALE);
  loaded->Put(want[2]);
  loaded->Put(want[0]);
  const std::vector<v1::Trial> after = loaded->PolicyTrials();
  EXPECT_EQ(after[2].state(), v1::TRIAL_STATE_COMPLETED);
  EXPECT_EQ(after[2].value(), -0.5);
  EXPECT_EQ(after[0].state(), v1::TRIAL_STATE_STALE);
  EXPECT_FALSE(after[0].has_create_time());
  EXPECT_TRUE(Same(loaded->Get(1), want[0]));
  EXPECT_TRUE(Same(loaded->Get(3), want[2]));
}

TEST(CompactTrialsTest, ParsedListFollowsEveryPut) {
  StudyTrials trials;
  std::vector<v1::Trial> want;
  for (int64_t id = 1; id <= 4; ++id) {
    want.push_back(FullTrial(id, v1::TRIAL_STATE_ACTIVE, 0.1 * id));
    trials.Put(want.back());
  }
  ASSERT_THAT(trials.all(), SizeIs(4));  // built with ACTIVE trials
  // Changes after it was built: observed, stale, appended, observed again.
  want[0].set_state(v1::TRIAL_STATE_COMPLETED);
  want[0].set_value(3.5);
  want[1].set_state(v1::TRIAL_STATE_STALE);
  want.push_back(FullTrial(5, v1::TRIAL_STATE_ACTIVE, 0.9));
  for (const v1::Trial& trial : {want[0], want[1], want[4]}) trials.Put(trial);
  want[1].set_state(v1::TRIAL_STATE_COMPLETED);
  trials.Put(want[1]);
  const std::vector<v1::Trial> kept = trials.all();
  ASSERT_THAT(kept, SizeIs(want.size()));
  trials.ReleaseParsed();
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_TRUE(Same(kept[i], want[i])) << i;
    EXPECT_TRUE(Same(trials.Get(want[i].id()), want[i])) << i;
    EXPECT_TRUE(Same(trials.all()[i], want[i])) << i;  // a fresh parse
  }
  EXPECT_EQ(trials.completed_count(), 2);
  EXPECT_EQ(trials.active_ids(), (std::set<int64_t>{3, 4, 5}));
}

// The engine's answers over a study whose trials early stopping has parsed
// (its rule reads the other trials' curves from StudyTrials::all), and over
// the same study after a restart (nothing parsed).
class CompactEngineTest : public RestartableEngineTest<10> {
 protected:
  void Create() {
    v1::CreateStudyRequest request;
    request.set_study_id("s");
    *request.mutable_spec() = PipelineSpec(v1::ALGORITHM_KIND_GP);
    // A rule that never decides, so that a report only parses the trials.
    request.mutable_spec()
        ->mutable_early_stopping()
        ->mutable_median()
        ->set_start_step(1000000);
    ASSERT_THAT(engine_->CreateStudy(request), IsOk());
  }

  void Observe(int64_t id, double value) {
    v1::ObserveRequest request;
    request.set_study_id("s");
    request.set_trial_id(id);
    request.set_value(value);
    ASSERT_THAT(engine_->Observe(request), IsOk());
  }

  void Report(int64_t id, int64_t step, double value) {
    v1::ReportIntermediateRequest request;
    request.set_study_id("s");
    request.set_trial_id(id);
    request.set_step(step);
    request.set_value(value);
    (*request.mutable_metrics())["loss"] = value + 1;
    ASSERT_THAT(engine_->ReportIntermediate(request), IsOk());
  }

  v1::ListTrialsResponse List(
      int page_size, const std::string& token = "",
      v1::TrialState state = v1::TRIAL_STATE_UNSPECIFIED) {
    v1::ListTrialsRequest request;
    request.set_study_id("s");
    request.set_page_size(page_size);
    request.set_page_token(token);
    request.set_state(state);
    auto response = engine_->ListTrials(request);
    EXPECT_THAT(response, IsOk());
    return response.ok() ? *response : v1::ListTrialsResponse();
  }

  // What a client can read of the study: every page of ListTrials of
  // `state`, each trial by GetTrial, and GetStudy.
  struct Answers {
    std::vector<v1::ListTrialsResponse> pages;
    std::vector<v1::Trial> trials;
    v1::Study study;
  };
  Answers Read(v1::TrialState state) {
    Answers out;
    std::string token;
    do {
      out.pages.push_back(List(3, token, state));
      token = out.pages.back().next_page_token();
    } while (!token.empty());
    for (int64_t id = 1;; ++id) {
      v1::GetTrialRequest request;
      request.set_study_id("s");
      request.set_trial_id(id);
      auto response = engine_->GetTrial(request);
      if (!response.ok()) break;
      out.trials.push_back(response->trial());
    }
    v1::GetStudyRequest get;
    get.set_study_id("s");
    auto study = engine_->GetStudy(get);
    EXPECT_THAT(study, IsOk());
    if (study.ok()) out.study = study->study();
    return out;
  }
};

TEST_F(CompactEngineTest, AnswersAreTheSameParsedOrCompact) {
  UseSqlite();
  Create();
  for (int round = 0; round < 4; ++round) {
    const std::vector<int64_t> ids = Suggest(3);
    ASSERT_THAT(ids, SizeIs(3));
    Report(ids[0], 1, 0.5 + round);  // the rule parses the trials
    Report(ids[0], 2, 0.25 + round);
    Observe(ids[0], 0.1 * round);
    Observe(ids[1], 1.0 - 0.1 * round);
  }
  const std::vector<v1::TrialState> states = {v1::TRIAL_STATE_UNSPECIFIED,
                                              v1::TRIAL_STATE_COMPLETED,
                                              v1::TRIAL_STATE_ACTIVE};
  std::vector<Answers> parsed;
  for (v1::TrialState state : states) parsed.push_back(Read(state));
  // The worker's ACTIVE trial is handed out again by its next Suggest: at
  // least 8 trials, several pages of 3.
  ASSERT_GE(parsed[0].trials.size(), 8u);
  ASSERT_GE(parsed[0].pages.size(), 3u);
  ASSERT_GE(parsed[2].trials.size(), 1u);
  EXPECT_TRUE(parsed[0].study.has_best_trial());
  Restart();  // the trials load compact
  for (size_t i = 0; i < states.size(); ++i) {
    const Answers compact = Read(states[i]);
    ASSERT_EQ(compact.pages.size(), parsed[i].pages.size());
    for (size_t j = 0; j < compact.pages.size(); ++j) {
      EXPECT_TRUE(
          MessageDifferencer::Equals(compact.pages[j], parsed[i].pages[j]))
          << i << " " << j;
    }
    ASSERT_EQ(compact.trials.size(), parsed[i].trials.size());
    for (size_t j = 0; j < compact.trials.size(); ++j) {
      EXPECT_TRUE(Same(compact.trials[j], parsed[i].trials[j])) << i << j;
    }
    EXPECT_TRUE(MessageDifferencer::Equals(compact.study, parsed[i].study));
  }
}

TEST_F(CompactEngineTest, APageTokenSurvivesItsTrialsBecomingCompact) {
  Create();
  ASSERT_THAT(Suggest(5), SizeIs(5));  // trials 1..5 ACTIVE
  const v1::ListTrialsResponse first = List(2);
  ASSERT_EQ(first.trials_size(), 2);
  ASSERT_FALSE(first.next_page_token().empty());
  // The token points after trial 2; trials 2, 3 and 4 are observed (held
  // compact from now on) before the next page is read.
  Report(3, 1, 0.75);
  for (int64_t id : {2, 3, 4}) Observe(id, 0.5 * static_cast<double>(id));
  const v1::ListTrialsResponse second = List(2, first.next_page_token());
  ASSERT_EQ(second.trials_size(), 2);
  EXPECT_EQ(second.trials(0).id(), 3);
  EXPECT_EQ(second.trials(1).id(), 4);
  for (const v1::Trial& trial : second.trials()) {
    EXPECT_EQ(trial.state(), v1::TRIAL_STATE_COMPLETED);
    EXPECT_EQ(trial.value(), 0.5 * static_cast<double>(trial.id()));
    EXPECT_EQ(trial.client_id(), "worker");
  }
  ASSERT_EQ(second.trials(0).intermediate_values_size(), 1);
  EXPECT_EQ(second.trials(0).intermediate_values(0).metrics().at("loss"), 1.75);
  const v1::ListTrialsResponse third = List(2, second.next_page_token());
  ASSERT_EQ(third.trials_size(), 1);
  EXPECT_EQ(third.trials(0).id(), 5);
  EXPECT_EQ(third.trials(0).state(), v1::TRIAL_STATE_ACTIVE);
  EXPECT_TRUE(third.next_page_token().empty());
  // The same token, filtered by state: the COMPLETED trials after trial 2.
  const v1::ListTrialsResponse completed =
      List(5, first.next_page_token(), v1::TRIAL_STATE_COMPLETED);
  ASSERT_EQ(completed.trials_size(), 2);
  EXPECT_EQ(completed.trials(0).id(), 3);
}

// A GP study that the engine's sweeps find idle (unused for more than
// kParsedTrialsIdleUses calls) between its Suggests suggests exactly what a
// study that no sweep passed suggests.
TEST_F(CompactEngineTest, SuggestionsAreTheSameAfterTheParsedTrialsAreDropped) {
  auto other_storage = storage::OpenInMemoryStorage();
  ASSERT_THAT(other_storage, IsOk());
  std::unique_ptr<StudyEngine> kept = MakeEngine(other_storage->get());
  auto run = [&](StudyEngine& engine, bool idle) {
    std::vector<std::string> suggested;
    v1::CreateStudyRequest create;
    create.set_study_id("s");
    *create.mutable_spec() = PipelineSpec(v1::ALGORITHM_KIND_GP);
    EXPECT_THAT(engine.CreateStudy(create), IsOk());
    create.set_study_id("other");
    EXPECT_THAT(engine.CreateStudy(create), IsOk());
    for (int round = 0; round < 8; ++round) {
      v1::SuggestRequest suggest;
      suggest.set_study_id("s");
      suggest.set_count(2);
      auto response = engine.Suggest(suggest);
      EXPECT_THAT(response, IsOk());
      if (!response.ok()) return suggested;
      for (const v1::Trial& trial : response->trials()) {
        suggested.push_back(space::ConfigurationKey(trial.configuration()));
        v1::ObserveRequest observe;
        observe.set_study_id("s");
        observe.set_trial_id(trial.id());
        observe.set_value(0.01 * static_cast<double>(trial.id() % 7));
        EXPECT_THAT(engine.Observe(observe), IsOk());
      }
      // Enough calls on another study for two sweeps to pass "s".
      for (int i = 0; idle && i < 2100; ++i) {
        v1::GetStudyRequest get;
        get.set_study_id("other");
        EXPECT_THAT(engine.GetStudy(get), IsOk());
      }
    }
    return suggested;
  };
  const std::vector<std::string> dropped = run(*engine_, true);
  ASSERT_THAT(dropped, SizeIs(16));
  EXPECT_EQ(dropped, run(*kept, false));
}

}  // namespace
}  // namespace metaopt::study
