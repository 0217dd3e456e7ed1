// Storage conformance: trials, the policy state and writes of both.
#include "core/storage/storage.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/common/status_macros.h"
#include "tests/testutil/storage_conformance.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "metaopt/v1/study.pb.h"
#include "tests/testutil/status_matchers.h"

namespace metaopt::storage {
namespace {

using ::metaopt::testing::IsOk;
using ::metaopt::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Optional;

TYPED_TEST_SUITE(StorageConformanceTest, Factories, FactoryNames);

// ----- Trials -----

TYPED_TEST(StorageConformanceTest, TrialsRoundTripByIncreasingId) {
  this->CreateStudies({"s"});
  const std::vector<v1::Trial> trials = {
      MakeTrial(3, v1::TRIAL_STATE_COMPLETED), MakeTrial(1),
      MakeTrial(10, v1::TRIAL_STATE_FAILED), MakeTrial(2)};
  ASSERT_THAT(this->storage_->PutTrials(Key("s"), trials), IsOk());
  METAOPT_ASSERT_OK_AND_ASSIGN(std::vector<v1::Trial> got,
                               this->storage_->LoadTrials(Key("s")));
  EXPECT_THAT(got, ElementsAre(EqualsProto(trials[1]), EqualsProto(trials[3]),
                               EqualsProto(trials[0]), EqualsProto(trials[2])));
}

// ReportIntermediate rewrites the trial with one more intermediate value each
// time, and Observe then ends it STOPPED: every write is kept whole, also in
// the changes another process reads.
TYPED_TEST(StorageConformanceTest, IntermediateValuesAndStoppedStateRoundTrip) {
  this->CreateStudies({"s"});
  v1::Trial trial = MakeTrial(1);
  for (int64_t step = 0; step < 3; ++step) {
    v1::IntermediateValue* value = trial.add_intermediate_values();
    value->set_step(step * 10);
    value->set_value(1.0 / static_cast<double>(step + 1));
    (*value->mutable_metrics())["accuracy"] =
        0.5 + 0.1 * static_cast<double>(step);
    value->mutable_report_time()->set_seconds(1700000100 + step);
    ASSERT_THAT(this->storage_->PutTrials(Key("s"), {trial}), IsOk());
  }
  METAOPT_ASSERT_OK_AND_ASSIGN(std::vector<v1::Trial> got,
                               this->storage_->LoadTrials(Key("s")));
  EXPECT_THAT(got, ElementsAre(EqualsProto(trial)));
  (*trial.mutable_metadata())["stop_step"] = "20";
  trial.set_state(v1::TRIAL_STATE_STOPPED);
  trial.set_value(1.0 / 3);
  ASSERT_THAT(this->storage_->PutTrials(Key("s"), {trial, MakeTrial(2)}),
              IsOk());
  METAOPT_ASSERT_OK_AND_ASSIGN(got, this->storage_->LoadTrials(Key("s")));
  EXPECT_THAT(got, ElementsAre(EqualsProto(trial), EqualsProto(MakeTrial(2))));
  METAOPT_ASSERT_OK_AND_ASSIGN(Storage::Changes changes,
                               this->storage_->LoadChangesSince(Key("s"), 2));
  EXPECT_THAT(changes.trials,
              ElementsAre(EqualsProto(trial), EqualsProto(MakeTrial(2))));
}

// An intermediate value of trial `id` at `step`.
TrialValue ValueAt(int64_t id, int64_t step, double value) {
  TrialValue row;
  row.trial_id = id;
  row.value.set_step(step);
  row.value.set_value(value);
  (*row.value.mutable_metrics())["loss"] = value * 2;
  row.value.mutable_report_time()->set_seconds(1700000000 + step);
  return row;
}

// ReportIntermediate's writes: the trial's record without its values, and
// one appended value. Reads return the trial whole, its values by step
// whatever the order they came in; a step written again replaces its value
// (a retry stores nothing new); a record rewritten without values keeps them.
TYPED_TEST(StorageConformanceTest, IntermediateValuesAreAppendedApartFromTheirTrial) {
  this->CreateStudies({"s"});
  v1::Trial head = MakeTrial(1);
  ASSERT_THAT(this->storage_->PutTrials(Key("s"), {head, MakeTrial(2)}),
              IsOk());
  v1::Trial whole = head;
  for (const int64_t step : {0, 5, 2}) {
    const TrialValue row = ValueAt(1, step, 1.0 / (step + 1));
    StudyWrite write;
    write.trials = absl::MakeConstSpan(&head, 1);
    write.intermediate_values = absl::MakeConstSpan(&row, 1);
    ASSERT_THAT(this->storage_->WriteStudy(Key("s"), write), IsOk());
  }
  for (const int64_t step : {0, 2, 5}) {
    *whole.add_intermediate_values() = ValueAt(1, step, 1.0 / (step + 1)).value;
  }
  METAOPT_ASSERT_OK_AND_ASSIGN(std::vector<v1::Trial> got,
                               this->storage_->LoadTrials(Key("s")));
  EXPECT_THAT(got, ElementsAre(EqualsProto(whole), EqualsProto(MakeTrial(2))));

  // The same step again, without its trial's record: one value per step.
  const TrialValue again = ValueAt(1, 2, 1.0 / 3);
  StudyWrite retry;
  retry.intermediate_values = absl::MakeConstSpan(&again, 1);
  ASSERT_THAT(this->storage_->WriteStudy(Key("s"), retry), IsOk());
  // The record rewritten (a lease, a completion) without its values.
  head.set_state(v1::TRIAL_STATE_COMPLETED);
  head.set_value(0.25);
  ASSERT_THAT(this->storage_->PutTrials(Key("s"), {head}), IsOk());
  whole.set_state(v1::TRIAL_STATE_COMPLETED);
  whole.set_value(0.25);
  METAOPT_ASSERT_OK_AND_ASSIGN(got, this->storage_->LoadTrials(Key("s")));
  EXPECT_THAT(got, ElementsAre(EqualsProto(whole), EqualsProto(MakeTrial(2))));
  EXPECT_EQ(this->storage_->GetStudyVersion(Key("s")).value_or(-1), 6);
}

// A value alone (its trial not in the write) is a change of its trial that
// another process reads whole; the trials it did not touch are not re-read.
TYPED_TEST(StorageConformanceTest, AnAppendedValueIsAChangeOfItsTrial) {
  this->CreateStudies({"s"});
  ASSERT_THAT(this->storage_->PutTrials(Key("s"), {MakeTrial(1), MakeTrial(2)}),
              IsOk());
  const TrialValue first = ValueAt(2, 0, 0.5);
  StudyWrite write;
  write.intermediate_values = absl::MakeConstSpan(&first, 1);
  ASSERT_THAT(this->storage_->WriteStudy(Key("s"), write), IsOk());
  const TrialValue second = ValueAt(2, 1, 0.25);
  write.intermediate_values = absl::MakeConstSpan(&second, 1);
  ASSERT_THAT(this->storage_->WriteStudy(Key("s"), write), IsOk());
  v1::Trial whole = MakeTrial(2);
  *whole.add_intermediate_values() = first.value;
  *whole.add_intermediate_values() = second.value;
  METAOPT_ASSERT_OK_AND_ASSIGN(Storage::Changes changes,
                               this->storage_->LoadChangesSince(Key("s"), 2));
  EXPECT_EQ(changes.version, 3);
  EXPECT_THAT(changes.trials, ElementsAre(EqualsProto(whole)));
  METAOPT_ASSERT_OK_AND_ASSIGN(changes,
                               this->storage_->LoadChangesSince(Key("s"), 3));
  EXPECT_THAT(changes.trials, IsEmpty());
  METAOPT_ASSERT_OK_AND_ASSIGN(changes,
                               this->storage_->LoadChangesSince(Key("s"), 0));
  EXPECT_THAT(changes.trials,
              ElementsAre(EqualsProto(MakeTrial(1)), EqualsProto(whole)));
}

TYPED_TEST(StorageConformanceTest, AValueOfAnAbsentTrialIsNotFoundAndStoresNothing) {
  this->CreateStudies({"s"});
  ASSERT_THAT(this->storage_->PutTrials(Key("s"), {MakeTrial(1)}), IsOk());
  const TrialValue rows[] = {ValueAt(1, 0, 0.5), ValueAt(9, 0, 0.5)};
  StudyWrite write;
  write.intermediate_values = rows;
  EXPECT_THAT(this->storage_->WriteStudy(Key("s"), write),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("no trial 9")));
  EXPECT_EQ(this->storage_->GetStudyVersion(Key("s")).value_or(-1), 1);
  METAOPT_ASSERT_OK_AND_ASSIGN(std::vector<v1::Trial> got,
                               this->storage_->LoadTrials(Key("s")));
  EXPECT_THAT(got, ElementsAre(EqualsProto(MakeTrial(1))));
  // Deleting the study deletes its values; a study created again has none.
  ASSERT_THAT(this->storage_->PutTrials(Key("s"), {MakeTrial(2)}), IsOk());
  write.intermediate_values = absl::MakeConstSpan(rows, 1);
  ASSERT_THAT(this->storage_->WriteStudy(Key("s"), write), IsOk());
  ASSERT_THAT(this->storage_->DeleteStudy(Key("s")), IsOk());
  this->CreateStudies({"s"});
  ASSERT_THAT(this->storage_->PutTrials(Key("s"), {MakeTrial(1)}), IsOk());
  METAOPT_ASSERT_OK_AND_ASSIGN(got, this->storage_->LoadTrials(Key("s")));
  EXPECT_THAT(got, ElementsAre(EqualsProto(MakeTrial(1))));
}

TYPED_TEST(StorageConformanceTest, LoadTrialsOfStudyWithoutTrialsIsEmpty) {
  this->CreateStudies({"s"});
  ASSERT_THAT(this->storage_->PutTrials(Key("s"), {}), IsOk());
  METAOPT_ASSERT_OK_AND_ASSIGN(std::vector<v1::Trial> got,
                               this->storage_->LoadTrials(Key("s")));
  EXPECT_THAT(got, IsEmpty());
}

TYPED_TEST(StorageConformanceTest, PutTrialsReplacesByIdAndKeepsTheRest) {
  this->CreateStudies({"s"});
  ASSERT_THAT(this->storage_->PutTrials(
                  Key("s"), {MakeTrial(1), MakeTrial(2), MakeTrial(3)}),
              IsOk());
  v1::Trial completed = MakeTrial(2, v1::TRIAL_STATE_COMPLETED);
  completed.set_client_id("someone-else");
  ASSERT_THAT(this->storage_->PutTrials(Key("s"), {completed, MakeTrial(4)}),
              IsOk());
  METAOPT_ASSERT_OK_AND_ASSIGN(std::vector<v1::Trial> got,
                               this->storage_->LoadTrials(Key("s")));
  EXPECT_THAT(
      got, ElementsAre(EqualsProto(MakeTrial(1)), EqualsProto(completed),
                       EqualsProto(MakeTrial(3)), EqualsProto(MakeTrial(4))));
}

TYPED_TEST(StorageConformanceTest, PutTrialsWithRepeatedIdKeepsTheLast) {
  this->CreateStudies({"s"});
  const v1::Trial last = MakeTrial(5, v1::TRIAL_STATE_COMPLETED);
  ASSERT_THAT(this->storage_->PutTrials(Key("s"), {MakeTrial(5), last}),
              IsOk());
  METAOPT_ASSERT_OK_AND_ASSIGN(std::vector<v1::Trial> got,
                               this->storage_->LoadTrials(Key("s")));
  EXPECT_THAT(got, ElementsAre(EqualsProto(last)));
}

TYPED_TEST(StorageConformanceTest, TrialsAreKeyedPerStudy) {
  this->CreateStudies({"a", "b"});
  v1::Trial in_b = MakeTrial(1, v1::TRIAL_STATE_COMPLETED);
  ASSERT_THAT(this->storage_->PutTrials(Key("a"), {MakeTrial(1), MakeTrial(2)}),
              IsOk());
  ASSERT_THAT(this->storage_->PutTrials(Key("b"), {in_b}), IsOk());
  METAOPT_ASSERT_OK_AND_ASSIGN(std::vector<v1::Trial> a,
                               this->storage_->LoadTrials(Key("a")));
  METAOPT_ASSERT_OK_AND_ASSIGN(std::vector<v1::Trial> b,
                               this->storage_->LoadTrials(Key("b")));
  EXPECT_THAT(
      a, ElementsAre(EqualsProto(MakeTrial(1)), EqualsProto(MakeTrial(2))));
  EXPECT_THAT(b, ElementsAre(EqualsProto(in_b)));
}

// ----- Policy state -----

TYPED_TEST(StorageConformanceTest, PolicyStateIsAbsentThenStoredThenReplaced) {
  this->CreateStudies({"s"});
  METAOPT_ASSERT_OK_AND_ASSIGN(std::optional<std::string> state,
                               this->storage_->GetPolicyState(Key("s")));
  EXPECT_EQ(state, std::nullopt);

  const std::string binary("\0\x01\xff state \0", 10);
  ASSERT_THAT(this->storage_->PutPolicyState(Key("s"), binary), IsOk());
  METAOPT_ASSERT_OK_AND_ASSIGN(state, this->storage_->GetPolicyState(Key("s")));
  EXPECT_THAT(state, Optional(binary));

  ASSERT_THAT(this->storage_->PutPolicyState(Key("s"), "v2"), IsOk());
  METAOPT_ASSERT_OK_AND_ASSIGN(state, this->storage_->GetPolicyState(Key("s")));
  EXPECT_THAT(state, Optional(std::string("v2")));
}

TYPED_TEST(StorageConformanceTest, EmptyPolicyStateIsStoredNotAbsent) {
  this->CreateStudies({"s"});
  ASSERT_THAT(this->storage_->PutPolicyState(Key("s"), ""), IsOk());
  METAOPT_ASSERT_OK_AND_ASSIGN(std::optional<std::string> state,
                               this->storage_->GetPolicyState(Key("s")));
  EXPECT_THAT(state, Optional(std::string()));
}

// ----- Trials and policy state together -----

TYPED_TEST(StorageConformanceTest, WriteStudyStoresTrialsAndPolicyState) {
  this->CreateStudies({"s"});
  ASSERT_THAT(this->storage_->PutTrials(Key("s"), {MakeTrial(1), MakeTrial(2)}),
              IsOk());
  const v1::Trial stale = MakeTrial(1, v1::TRIAL_STATE_STALE);
  const std::vector<v1::Trial> trials = {stale, MakeTrial(3), MakeTrial(4)};
  ASSERT_THAT(this->storage_->WriteStudy(Key("s"), {trials, "state-1"}),
              IsOk());
  METAOPT_ASSERT_OK_AND_ASSIGN(std::vector<v1::Trial> got,
                               this->storage_->LoadTrials(Key("s")));
  EXPECT_THAT(
      got, ElementsAre(EqualsProto(stale), EqualsProto(MakeTrial(2)),
                       EqualsProto(MakeTrial(3)), EqualsProto(MakeTrial(4))));
  METAOPT_ASSERT_OK_AND_ASSIGN(std::optional<std::string> state,
                               this->storage_->GetPolicyState(Key("s")));
  EXPECT_THAT(state, Optional(std::string("state-1")));
}

TYPED_TEST(StorageConformanceTest, WriteStudyWithoutPolicyStateKeepsIt) {
  this->CreateStudies({"s"});
  ASSERT_THAT(this->storage_->PutPolicyState(Key("s"), "kept"), IsOk());
  const std::vector<v1::Trial> trials = {MakeTrial(1)};
  ASSERT_THAT(this->storage_->WriteStudy(Key("s"), {trials, std::nullopt}),
              IsOk());
  METAOPT_ASSERT_OK_AND_ASSIGN(std::optional<std::string> state,
                               this->storage_->GetPolicyState(Key("s")));
  EXPECT_THAT(state, Optional(std::string("kept")));
  METAOPT_ASSERT_OK_AND_ASSIGN(std::vector<v1::Trial> got,
                               this->storage_->LoadTrials(Key("s")));
  EXPECT_THAT(got, ElementsAre(EqualsProto(MakeTrial(1))));
}

TYPED_TEST(StorageConformanceTest, EmptyWriteStudyChangesNothing) {
  this->CreateStudies({"s"});
  ASSERT_THAT(this->storage_->WriteStudy(Key("s"), {}), IsOk());
  METAOPT_ASSERT_OK_AND_ASSIGN(std::vector<v1::Trial> got,
                               this->storage_->LoadTrials(Key("s")));
  EXPECT_THAT(got, IsEmpty());
  METAOPT_ASSERT_OK_AND_ASSIGN(std::optional<std::string> state,
                               this->storage_->GetPolicyState(Key("s")));
  EXPECT_EQ(state, std::nullopt);
}

TYPED_TEST(StorageConformanceTest, WriteStudyReplacesTheStudyRecord) {
  this->CreateStudies({"s", "t"});
  METAOPT_ASSERT_OK_AND_ASSIGN(v1::Study record,
                               this->storage_->GetStudy(Key("s")));
  v1::FineTuneRun& run = *record.add_fine_tune_runs();
  run.set_number(1);
  run.set_loss_before(2.5);
  run.set_loss_after(1.25);
  record.set_trial_count(7);                              // derived: not stored
  record.mutable_update_time()->set_seconds(1800000000);  // derived
  const std::vector<v1::Trial> trials = {MakeTrial(1)};
  ASSERT_THAT(this->storage_->WriteStudy(
                  Key("s"), {trials, "state", std::nullopt, &record}),
              IsOk());
  METAOPT_ASSERT_OK_AND_ASSIGN(v1::Study got,
                               this->storage_->GetStudy(Key("s")));
  EXPECT_THAT(got, EqualsProto(StoredStudy(record)));
  EXPECT_EQ(got.fine_tune_runs_size(), 1);
  EXPECT_FALSE(got.has_update_time());
  METAOPT_ASSERT_OK_AND_ASSIGN(std::vector<v1::Study> listed,
                               this->storage_->ListStudies("", "", 10));
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_THAT(listed[0], EqualsProto(StoredStudy(record)));
  METAOPT_ASSERT_OK_AND_ASSIGN(int64_t version,
                               this->storage_->GetStudyVersion(Key("s")));
  EXPECT_EQ(version, 1);
  // The other study is untouched.
  METAOPT_ASSERT_OK_AND_ASSIGN(v1::Study other,
                               this->storage_->GetStudy(Key("t")));
  EXPECT_EQ(other.fine_tune_runs_size(), 0);
}

TYPED_TEST(StorageConformanceTest, WriteStudyRefusesTheRecordOfAnotherStudy) {
  this->CreateStudies({"s", "t"});
  METAOPT_ASSERT_OK_AND_ASSIGN(v1::Study record,
                               this->storage_->GetStudy(Key("t")));
  record.add_fine_tune_runs()->set_number(1);
  EXPECT_THAT(this->storage_->WriteStudy(
                  Key("s"), {{}, std::nullopt, std::nullopt, &record}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("the write is to study \"s\"")));
  METAOPT_ASSERT_OK_AND_ASSIGN(int64_t version,
                               this->storage_->GetStudyVersion(Key("s")));
  EXPECT_EQ(version, 0);
  METAOPT_ASSERT_OK_AND_ASSIGN(v1::Study other,
                               this->storage_->GetStudy(Key("t")));
  EXPECT_EQ(other.fine_tune_runs_size(), 0);
}

// ----- Copies, not shares -----

TYPED_TEST(StorageConformanceTest, ValuesAreCopiedInAndOut) {
  v1::Study study = MakeStudy("s");
  ASSERT_THAT(this->storage_->CreateStudy(study), IsOk());
  std::vector<v1::Trial> trials = {MakeTrial(1)};
  ASSERT_THAT(this->storage_->PutTrials(Key("s"), trials), IsOk());
  std::string blob = "state";
  ASSERT_THAT(this->storage_->PutPolicyState(Key("s"), blob), IsOk());

  // Changing the inputs after the calls changes nothing stored.
  study.set_bound_model("changed");
  trials[0].set_client_id("changed");
  blob[0] = 'X';
  // Nor does changing what was returned.
  METAOPT_ASSERT_OK_AND_ASSIGN(v1::Study got,
                               this->storage_->GetStudy(Key("s")));
  got.mutable_spec()->set_seed(0);
  METAOPT_ASSERT_OK_AND_ASSIGN(std::vector<v1::Study> listed,
                               this->storage_->ListStudies("", "", 1));
  listed[0].set_bound_model("changed");
  METAOPT_ASSERT_OK_AND_ASSIGN(std::vector<v1::Trial> loaded,
                               this->storage_->LoadTrials(Key("s")));
  loaded[0].set_state(v1::TRIAL_STATE_ABANDONED);

  METAOPT_ASSERT_OK_AND_ASSIGN(got, this->storage_->GetStudy(Key("s")));
  EXPECT_THAT(got, EqualsProto(MakeStudy("s")));
  METAOPT_ASSERT_OK_AND_ASSIGN(loaded, this->storage_->LoadTrials(Key("s")));
  EXPECT_THAT(loaded, ElementsAre(EqualsProto(MakeTrial(1))));
  METAOPT_ASSERT_OK_AND_ASSIGN(std::optional<std::string> state,
                               this->storage_->GetPolicyState(Key("s")));
  EXPECT_THAT(state, Optional(std::string("state")));
}

}  // namespace
}  // namespace metaopt::storage
