// Storage conformance: studies and their owners' namespaces.
#include "core/storage/storage.h"

#include <string>
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
using ::testing::_;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Optional;

TYPED_TEST_SUITE(StorageConformanceTest, Factories, FactoryNames);

// ----- Studies -----

TYPED_TEST(StorageConformanceTest, CreatedStudyRoundTrips) {
  const v1::Study study = MakeStudy("s1");
  ASSERT_THAT(this->storage_->CreateStudy(study), IsOk());
  METAOPT_ASSERT_OK_AND_ASSIGN(v1::Study got,
                               this->storage_->GetStudy(Key("s1")));
  EXPECT_THAT(got, EqualsProto(study));
}

TYPED_TEST(StorageConformanceTest, DerivedStudyFieldsAreNotStored) {
  v1::Study study = MakeStudy("s1");
  study.set_trial_count(7);
  *study.mutable_best_trial() = MakeTrial(3, v1::TRIAL_STATE_COMPLETED);
  study.set_state(v1::STUDY_STATE_EXHAUSTED);
  ASSERT_THAT(this->storage_->CreateStudy(study), IsOk());
  METAOPT_ASSERT_OK_AND_ASSIGN(v1::Study got,
                               this->storage_->GetStudy(Key("s1")));
  EXPECT_EQ(got.trial_count(), 0);
  EXPECT_FALSE(got.has_best_trial());
  EXPECT_EQ(got.state(), v1::STUDY_STATE_UNSPECIFIED);
  EXPECT_THAT(got, EqualsProto(StoredStudy(study)));
  EXPECT_THAT(got, EqualsProto(MakeStudy("s1")));
}

TYPED_TEST(StorageConformanceTest,
           CreateTakenIdIsAlreadyExistsAndKeepsOriginal) {
  ASSERT_THAT(this->storage_->CreateStudy(MakeStudy("s1")), IsOk());
  v1::Study other = MakeStudy("s1");
  other.set_bound_model("pmf@1");
  EXPECT_THAT(this->storage_->CreateStudy(other),
              StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("\"s1\"")));
  METAOPT_ASSERT_OK_AND_ASSIGN(v1::Study got,
                               this->storage_->GetStudy(Key("s1")));
  EXPECT_EQ(got.bound_model(), "deeppipe@3");
}

TYPED_TEST(StorageConformanceTest, CreateWithEmptyIdIsInvalidArgument) {
  EXPECT_THAT(
      this->storage_->CreateStudy(MakeStudy("")),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("study_id")));
  METAOPT_ASSERT_OK_AND_ASSIGN(std::vector<v1::Study> all,
                               this->storage_->ListStudies("", "", 10));
  EXPECT_THAT(all, IsEmpty());
}

TYPED_TEST(StorageConformanceTest, EveryCallOnAnAbsentStudyIsNotFound) {
  this->CreateStudies({"present"});
  const auto not_found =
      StatusIs(absl::StatusCode::kNotFound, HasSubstr("\"absent\""));
  EXPECT_THAT(this->storage_->GetStudy(Key("absent")), not_found);
  EXPECT_THAT(this->storage_->DeleteStudy(Key("absent")), not_found);
  EXPECT_THAT(this->storage_->PutTrials(Key("absent"), {MakeTrial(1)}),
              not_found);
  EXPECT_THAT(this->storage_->PutTrials(Key("absent"), {}), not_found);
  EXPECT_THAT(this->storage_->LoadTrials(Key("absent")), not_found);
  EXPECT_THAT(this->storage_->PutPolicyState(Key("absent"), "blob"), not_found);
  const std::vector<v1::Trial> trials = {MakeTrial(1)};
  EXPECT_THAT(this->storage_->WriteStudy(Key("absent"), {trials, "blob"}),
              not_found);
  EXPECT_THAT(this->storage_->GetPolicyState(Key("absent")), not_found);
  // Nothing was written on the way.
  METAOPT_ASSERT_OK_AND_ASSIGN(std::vector<v1::Study> all,
                               this->storage_->ListStudies("", "", 10));
  EXPECT_THAT(Ids(all), ElementsAre("present"));
}

TYPED_TEST(StorageConformanceTest, ListStudiesOrdersByIdAndPages) {
  // Created out of order; "B" < "a" byte-wise, "a" < "a0" < "ab".
  this->CreateStudies({"ab", "B", "a0", "zeta", "a", "m"});
  METAOPT_ASSERT_OK_AND_ASSIGN(std::vector<v1::Study> all,
                               this->storage_->ListStudies("", "", 100));
  EXPECT_THAT(Ids(all), ElementsAre("B", "a", "a0", "ab", "m", "zeta"));
  EXPECT_THAT(all[0], EqualsProto(MakeStudy("B")));

  std::vector<std::string> paged;
  std::string after;
  int pages = 0;
  while (true) {
    METAOPT_ASSERT_OK_AND_ASSIGN(std::vector<v1::Study> page,
                                 this->storage_->ListStudies("", after, 4));
    if (page.empty()) break;
    ASSERT_LE(page.size(), 4u);
    ++pages;
    for (const std::string& id : Ids(page)) paged.push_back(id);
    after = page.back().study_id();
  }
  EXPECT_EQ(pages, 2);
  EXPECT_EQ(paged, Ids(all));
}

TYPED_TEST(StorageConformanceTest, ListStudiesAfterAnIdThatIsNotStored) {
  this->CreateStudies({"a", "c", "e"});
  METAOPT_ASSERT_OK_AND_ASSIGN(std::vector<v1::Study> page,
                               this->storage_->ListStudies("", "b", 1));
  EXPECT_THAT(Ids(page), ElementsAre("c"));
  METAOPT_ASSERT_OK_AND_ASSIGN(page, this->storage_->ListStudies("", "e", 10));
  EXPECT_THAT(page, IsEmpty());
  METAOPT_ASSERT_OK_AND_ASSIGN(page,
                               this->storage_->ListStudies("", "zzz", 10));
  EXPECT_THAT(page, IsEmpty());
}

TYPED_TEST(StorageConformanceTest, ListStudiesOnEmptyStorageIsEmpty) {
  METAOPT_ASSERT_OK_AND_ASSIGN(std::vector<v1::Study> page,
                               this->storage_->ListStudies("", "", 10));
  EXPECT_THAT(page, IsEmpty());
}

TYPED_TEST(StorageConformanceTest,
           ListStudiesWithNonPositiveLimitIsInvalidArgument) {
  this->CreateStudies({"a"});
  EXPECT_THAT(this->storage_->ListStudies("", "", 0),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("limit")));
  EXPECT_THAT(this->storage_->ListStudies("", "", -1),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("limit")));
}

TYPED_TEST(StorageConformanceTest, DeleteStudyRemovesTrialsAndPolicyState) {
  this->CreateStudies({"doomed", "kept"});
  ASSERT_THAT(
      this->storage_->PutTrials(Key("doomed"), {MakeTrial(1), MakeTrial(2)}),
      IsOk());
  ASSERT_THAT(this->storage_->PutPolicyState(Key("doomed"), "state"), IsOk());
  ASSERT_THAT(this->storage_->PutTrials(Key("kept"), {MakeTrial(1)}), IsOk());
  ASSERT_THAT(this->storage_->PutPolicyState(Key("kept"), "kept-state"),
              IsOk());

  ASSERT_THAT(this->storage_->DeleteStudy(Key("doomed")), IsOk());
  EXPECT_THAT(this->storage_->GetStudy(Key("doomed")),
              StatusIs(absl::StatusCode::kNotFound, _));
  EXPECT_THAT(this->storage_->LoadTrials(Key("doomed")),
              StatusIs(absl::StatusCode::kNotFound, _));
  EXPECT_THAT(this->storage_->DeleteStudy(Key("doomed")),
              StatusIs(absl::StatusCode::kNotFound, _));

  // A new study under the same id starts empty.
  this->CreateStudies({"doomed"});
  METAOPT_ASSERT_OK_AND_ASSIGN(std::vector<v1::Trial> trials,
                               this->storage_->LoadTrials(Key("doomed")));
  EXPECT_THAT(trials, IsEmpty());
  METAOPT_ASSERT_OK_AND_ASSIGN(std::optional<std::string> state,
                               this->storage_->GetPolicyState(Key("doomed")));
  EXPECT_EQ(state, std::nullopt);

  // The other study is untouched.
  METAOPT_ASSERT_OK_AND_ASSIGN(trials, this->storage_->LoadTrials(Key("kept")));
  EXPECT_THAT(trials, ElementsAre(EqualsProto(MakeTrial(1))));
  METAOPT_ASSERT_OK_AND_ASSIGN(state,
                               this->storage_->GetPolicyState(Key("kept")));
  EXPECT_THAT(state, Optional(std::string("kept-state")));
}

// ----- Owners -----

TYPED_TEST(StorageConformanceTest, OwnersHaveSeparateNamespaces) {
  for (const char* owner : {"", "alice", "bob"}) {
    ASSERT_THAT(this->storage_->CreateStudy(OwnedStudy("s", owner)), IsOk());
  }
  EXPECT_THAT(this->storage_->CreateStudy(OwnedStudy("s", "alice")),
              StatusIs(absl::StatusCode::kAlreadyExists,
                       AllOf(HasSubstr("\"s\""), HasSubstr("\"alice\""))));
  for (const char* owner : {"", "alice", "bob"}) {
    METAOPT_ASSERT_OK_AND_ASSIGN(v1::Study got,
                                 this->storage_->GetStudy(Key("s", owner)));
    EXPECT_THAT(got, EqualsProto(OwnedStudy("s", owner))) << owner;
  }
  EXPECT_THAT(this->storage_->GetStudy(Key("s", "carol")),
              StatusIs(absl::StatusCode::kNotFound, _));

  // Trials and policy state belong to one owner's study.
  ASSERT_THAT(this->storage_->PutTrials(Key("s", "alice"), {MakeTrial(1)}),
              IsOk());
  ASSERT_THAT(this->storage_->PutPolicyState(Key("s", "alice"), "alice-state"),
              IsOk());
  METAOPT_ASSERT_OK_AND_ASSIGN(std::vector<v1::Trial> trials,
                               this->storage_->LoadTrials(Key("s", "bob")));
  EXPECT_THAT(trials, IsEmpty());
  METAOPT_ASSERT_OK_AND_ASSIGN(std::optional<std::string> state,
                               this->storage_->GetPolicyState(Key("s")));
  EXPECT_EQ(state, std::nullopt);
  METAOPT_ASSERT_OK_AND_ASSIGN(trials,
                               this->storage_->LoadTrials(Key("s", "alice")));
  EXPECT_THAT(trials, ElementsAre(EqualsProto(MakeTrial(1))));

  // Deleting one owner's study leaves the others.
  ASSERT_THAT(this->storage_->DeleteStudy(Key("s", "alice")), IsOk());
  EXPECT_THAT(this->storage_->GetStudy(Key("s", "alice")),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("\"alice\"")));
  EXPECT_THAT(this->storage_->GetStudy(Key("s", "bob")), IsOk());
  EXPECT_THAT(this->storage_->GetStudy(Key("s")), IsOk());
  EXPECT_THAT(this->storage_->PutTrials(Key("s", "alice"), {MakeTrial(2)}),
              StatusIs(absl::StatusCode::kNotFound, _));
}

TYPED_TEST(StorageConformanceTest, ListAndCountSeeOnlyTheOwnersStudies) {
  // Owners that sort around each other and ids shared between them.
  for (const auto& [owner, id] :
       std::vector<std::pair<std::string, std::string>>{{"a", "x"},
                                                        {"a", "y"},
                                                        {"ab", "a"},
                                                        {"", "b"},
                                                        {"b", "a"},
                                                        {"a", "z"}}) {
    ASSERT_THAT(this->storage_->CreateStudy(OwnedStudy(id, owner)), IsOk());
  }
  METAOPT_ASSERT_OK_AND_ASSIGN(std::vector<v1::Study> page,
                               this->storage_->ListStudies("a", "", 100));
  EXPECT_THAT(Ids(page), ElementsAre("x", "y", "z"));
  for (const v1::Study& study : page) EXPECT_EQ(study.owner(), "a");
  METAOPT_ASSERT_OK_AND_ASSIGN(page, this->storage_->ListStudies("a", "x", 1));
  EXPECT_THAT(Ids(page), ElementsAre("y"));
  METAOPT_ASSERT_OK_AND_ASSIGN(page, this->storage_->ListStudies("a", "z", 10));
  EXPECT_THAT(page, IsEmpty());
  METAOPT_ASSERT_OK_AND_ASSIGN(page, this->storage_->ListStudies("", "", 10));
  EXPECT_THAT(Ids(page), ElementsAre("b"));
  METAOPT_ASSERT_OK_AND_ASSIGN(page, this->storage_->ListStudies("c", "", 10));
  EXPECT_THAT(page, IsEmpty());

  EXPECT_EQ(this->storage_->CountStudies("a").value_or(-1), 3);
  EXPECT_EQ(this->storage_->CountStudies("ab").value_or(-1), 1);
  EXPECT_EQ(this->storage_->CountStudies("").value_or(-1), 1);
  EXPECT_EQ(this->storage_->CountStudies("nobody").value_or(-1), 0);
  ASSERT_THAT(this->storage_->DeleteStudy(Key("y", "a")), IsOk());
  EXPECT_EQ(this->storage_->CountStudies("a").value_or(-1), 2);
}

}  // namespace
}  // namespace metaopt::storage
