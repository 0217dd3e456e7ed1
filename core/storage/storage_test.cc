// Conformance tests: every Storage implementation must pass the same suite.
#include "core/storage/storage.h"

#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/common/status_macros.h"
#include "core/storage/storage_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "metaopt/v1/study.pb.h"
#include "tests/testutil/postgres_server.h"
#include "tests/testutil/status_matchers.h"

namespace metaopt::storage {
namespace {

using ::metaopt::testing::IsOk;
using ::metaopt::testing::PostgresServer;
using ::metaopt::testing::StatusIs;
using ::testing::_;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Optional;
using ::testing::SizeIs;

// A factory opens a fresh, empty database (Open) and a second Storage object
// on the same database (OpenAgain: another process, as replicas are; null
// where a database cannot be shared). SkipReason is "" where it can run.
struct InMemoryFactory {
  static std::string SkipReason() { return ""; }
  absl::StatusOr<std::unique_ptr<Storage>> Open(const ScopedTempDir& /*dir*/) {
    return OpenInMemoryStorage();
  }
  absl::StatusOr<std::unique_ptr<Storage>> OpenAgain() { return nullptr; }
};

struct SqliteFactory {
  static std::string SkipReason() { return ""; }
  absl::StatusOr<std::unique_ptr<Storage>> Open(const ScopedTempDir& dir) {
    path = dir.File("metaopt.db");
    return OpenSqliteStorage(path);
  }
  absl::StatusOr<std::unique_ptr<Storage>> OpenAgain() {
    return OpenSqliteStorage(path);
  }
  std::string path;
};

// A real PostgreSQL server, started once per test process; each test gets a
// database of its own.
struct PostgresFactory {
  static std::string SkipReason() { return PostgresServer::SkipReason(); }
  absl::StatusOr<std::unique_ptr<Storage>> Open(const ScopedTempDir& /*dir*/) {
    static absl::StatusOr<std::unique_ptr<PostgresServer>>* server =
        new absl::StatusOr<std::unique_ptr<PostgresServer>>(
            PostgresServer::Start());
    static const bool stopped_at_exit = [] {
      std::atexit([] { server->value().reset(); });
      return true;
    }();
    (void)stopped_at_exit;
    METAOPT_RETURN_IF_ERROR(server->status());
    METAOPT_ASSIGN_OR_RETURN(uri, (**server)->CreateDatabase());
    return OpenPostgresStorage(uri);
  }
  absl::StatusOr<std::unique_ptr<Storage>> OpenAgain() {
    return OpenPostgresStorage(uri);
  }
  std::string uri;
};

template <typename Factory>
class StorageConformanceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string reason = Factory::SkipReason(); !reason.empty())
      GTEST_SKIP() << reason;
    METAOPT_ASSERT_OK_AND_ASSIGN(storage_, factory_.Open(dir_));
  }

  // Creates studies with the given ids (fails the test on error).
  void CreateStudies(const std::vector<std::string>& ids) {
    for (const std::string& id : ids)
      ASSERT_THAT(storage_->CreateStudy(MakeStudy(id)), IsOk());
  }

  ScopedTempDir dir_;
  Factory factory_;
  std::unique_ptr<Storage> storage_;
};

struct FactoryNames {
  template <typename T>
  static std::string GetName(int /*index*/) {
    if (std::is_same_v<T, InMemoryFactory>) return "InMemory";
    if (std::is_same_v<T, SqliteFactory>) return "Sqlite";
    if (std::is_same_v<T, PostgresFactory>) return "Postgres";
    return "Unknown";
  }
};

using Factories =
    ::testing::Types<InMemoryFactory, SqliteFactory, PostgresFactory>;
TYPED_TEST_SUITE(StorageConformanceTest, Factories, FactoryNames);

std::vector<std::string> Ids(const std::vector<v1::Study>& studies) {
  std::vector<std::string> ids;
  for (const v1::Study& study : studies) ids.push_back(study.study_id());
  return ids;
}

std::vector<int64_t> Ids(const std::vector<v1::Trial>& trials) {
  std::vector<int64_t> ids;
  for (const v1::Trial& trial : trials) ids.push_back(trial.id());
  return ids;
}

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

// MakeStudy(id) under `owner`, told apart by its bound model.
v1::Study OwnedStudy(const std::string& id, const std::string& owner) {
  v1::Study study = MakeStudy(id);
  study.set_owner(owner);
  study.set_bound_model(
      absl::StrCat("model-of-", owner.empty() ? "shared" : owner));
  return study;
}

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
  EXPECT_THAT(got, ElementsAre(EqualsProto(stale), EqualsProto(MakeTrial(2)),
                               EqualsProto(MakeTrial(3)),
                               EqualsProto(MakeTrial(4))));
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

// ----- Thread safety -----

TYPED_TEST(StorageConformanceTest,
           ConcurrentWritersOnDifferentStudiesLoseNothing) {
  constexpr int kThreads = 8;
  constexpr int kTrialsPerThread = 12;
  std::vector<std::thread> threads;
  std::vector<absl::Status> errors(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([this, t, &errors] {
      const std::string id = absl::StrCat("study-", t);
      absl::Status s = this->storage_->CreateStudy(MakeStudy(id));
      for (int i = 1; s.ok() && i <= kTrialsPerThread; ++i) {
        s = this->storage_->PutTrials(Key(id), {MakeTrial(i)});
        if (s.ok())
          s = this->storage_->PutPolicyState(Key(id),
                                             absl::StrCat("state-", i));
        if (s.ok()) s = this->storage_->LoadTrials(Key(id)).status();
        if (s.ok()) s = this->storage_->ListStudies("", "", 100).status();
      }
      errors[t] = s;
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const absl::Status& s : errors) EXPECT_THAT(s, IsOk());

  METAOPT_ASSERT_OK_AND_ASSIGN(std::vector<v1::Study> all,
                               this->storage_->ListStudies("", "", 100));
  EXPECT_THAT(all, SizeIs(kThreads));
  for (int t = 0; t < kThreads; ++t) {
    const std::string id = absl::StrCat("study-", t);
    METAOPT_ASSERT_OK_AND_ASSIGN(std::vector<v1::Trial> trials,
                                 this->storage_->LoadTrials(Key(id)));
    EXPECT_THAT(trials, SizeIs(kTrialsPerThread)) << id;
    METAOPT_ASSERT_OK_AND_ASSIGN(std::optional<std::string> state,
                                 this->storage_->GetPolicyState(Key(id)));
    EXPECT_THAT(state, Optional(absl::StrCat("state-", kTrialsPerThread)))
        << id;
  }
}

// Group commit: concurrent writes of one study all land, in some order, each
// counted once in the version.
TYPED_TEST(StorageConformanceTest, ConcurrentWritesToOneStudyAllLand) {
  constexpr int kThreads = 8;
  constexpr int kWritesPerThread = 15;
  this->CreateStudies({"s"});
  std::vector<std::thread> threads;
  std::vector<absl::Status> errors(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kWritesPerThread && errors[t].ok(); ++i) {
        errors[t] = this->storage_->PutTrials(
            Key("s"), {MakeTrial(t * kWritesPerThread + i + 1)});
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const absl::Status& error : errors) EXPECT_THAT(error, IsOk());
  METAOPT_ASSERT_OK_AND_ASSIGN(std::vector<v1::Trial> got,
                               this->storage_->LoadTrials(Key("s")));
  ASSERT_THAT(got, SizeIs(kThreads * kWritesPerThread));
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i].id(), i + 1);
  EXPECT_EQ(this->storage_->GetStudyVersion(Key("s")).value_or(-1),
            kThreads * kWritesPerThread);
}

// Group commit: concurrent writes of which some fail on their own (a stale
// expected version, an absent study) fail alone; the others are stored.
TYPED_TEST(StorageConformanceTest, ConcurrentFailingWritesFailAlone) {
  constexpr int kStudies = 8;
  constexpr int kRounds = 10;
  for (int i = 0; i < kStudies; ++i)
    this->CreateStudies({absl::StrCat("s", i)});
  std::vector<std::thread> threads;
  std::vector<absl::Status> errors(kStudies + 1);
  for (int t = 0; t <= kStudies; ++t) {
    threads.emplace_back([&, t] {
      const std::string id = absl::StrCat("s", t);  // s8 does not exist
      for (int round = 0; round < kRounds && errors[t].ok(); ++round) {
        const std::vector<v1::Trial> trial = {MakeTrial(round + 1)};
        // Even studies write at their current version, odd ones at a stale
        // one.
        const int64_t expected = t % 2 == 0 ? round : round + 100;
        const absl::Status written = this->storage_->WriteStudy(
            Key(id), {trial, std::nullopt, expected});
        if (t == kStudies) {
          if (!absl::IsNotFound(written))
            errors[t] = absl::InternalError(written.ToString());
        } else if (t % 2 == 0) {
          errors[t] = written;
        } else if (!absl::IsAborted(written)) {
          errors[t] = absl::InternalError(written.ToString());
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const absl::Status& error : errors) EXPECT_THAT(error, IsOk());
  for (int t = 0; t < kStudies; ++t) {
    const std::string id = absl::StrCat("s", t);
    const size_t stored = t % 2 == 0 ? kRounds : 0;
    EXPECT_THAT(this->storage_->LoadTrials(Key(id)).value_or(
                    std::vector<v1::Trial>(1000)),
                SizeIs(stored))
        << id;
    EXPECT_EQ(this->storage_->GetStudyVersion(Key(id)).value_or(-1),
              static_cast<int64_t>(stored))
        << id;
  }
}

// ----- Versions, compare-and-set, quotas -----

TYPED_TEST(StorageConformanceTest, VersionStartsAtZeroAndCountsWrites) {
  this->CreateStudies({"s", "other"});
  EXPECT_EQ(this->storage_->GetStudyVersion(Key("s")).value_or(-1), 0);
  ASSERT_THAT(this->storage_->PutTrials(Key("s"), {MakeTrial(1)}), IsOk());
  ASSERT_THAT(this->storage_->PutPolicyState(Key("s"), "p"), IsOk());
  ASSERT_THAT(this->storage_->WriteStudy(Key("s"), {}), IsOk());
  EXPECT_EQ(this->storage_->GetStudyVersion(Key("s")).value_or(-1), 3);
  EXPECT_EQ(this->storage_->GetStudyVersion(Key("other")).value_or(-1), 0);
  EXPECT_THAT(this->storage_->GetStudyVersion(Key("absent")),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("\"absent\"")));
  // A recreated study starts again at 0.
  ASSERT_THAT(this->storage_->DeleteStudy(Key("s")), IsOk());
  this->CreateStudies({"s"});
  EXPECT_EQ(this->storage_->GetStudyVersion(Key("s")).value_or(-1), 0);
}

TYPED_TEST(StorageConformanceTest,
           WriteAtAnotherVersionIsAbortedAndStoresNone) {
  this->CreateStudies({"s"});
  const std::vector<v1::Trial> first = {MakeTrial(1)};
  ASSERT_THAT(this->storage_->WriteStudy(Key("s"), {first, "p1", 0}), IsOk());
  // A writer that read version 0 and missed the write above.
  const std::vector<v1::Trial> stale = {MakeTrial(1, v1::TRIAL_STATE_STALE),
                                        MakeTrial(2)};
  EXPECT_THAT(this->storage_->WriteStudy(Key("s"), {stale, "p2", 0}),
              StatusIs(absl::StatusCode::kAborted,
                       AllOf(HasSubstr("\"s\""), HasSubstr("version 0"),
                             HasSubstr("at 1"))));
  METAOPT_ASSERT_OK_AND_ASSIGN(std::vector<v1::Trial> got,
                               this->storage_->LoadTrials(Key("s")));
  EXPECT_THAT(got, ElementsAre(EqualsProto(MakeTrial(1))));
  EXPECT_THAT(this->storage_->GetPolicyState(Key("s")).value_or(std::nullopt),
              Optional(std::string("p1")));
  EXPECT_EQ(this->storage_->GetStudyVersion(Key("s")).value_or(-1), 1);
  // At the current version it goes through.
  ASSERT_THAT(this->storage_->WriteStudy(Key("s"), {stale, "p2", 1}), IsOk());
  EXPECT_EQ(this->storage_->GetStudyVersion(Key("s")).value_or(-1), 2);
}

TYPED_TEST(StorageConformanceTest, ChangesSinceAVersionAreWhatItLacks) {
  this->CreateStudies({"s", "other"});
  METAOPT_ASSERT_OK_AND_ASSIGN(Storage::Changes none,
                               this->storage_->LoadChangesSince(Key("s"), 0));
  EXPECT_EQ(none.version, 0);
  EXPECT_THAT(none.trials, IsEmpty());
  EXPECT_EQ(none.policy_state, std::nullopt);
  const std::vector<v1::Trial> first = {MakeTrial(1), MakeTrial(2)};
  ASSERT_THAT(this->storage_->WriteStudy(Key("s"), {first, "p1"}), IsOk());
  const v1::Trial completed = MakeTrial(2, v1::TRIAL_STATE_COMPLETED);
  ASSERT_THAT(this->storage_->PutTrials(Key("s"), {completed, MakeTrial(3)}),
              IsOk());
  ASSERT_THAT(this->storage_->PutTrials(Key("other"), {MakeTrial(1)}), IsOk());

  METAOPT_ASSERT_OK_AND_ASSIGN(Storage::Changes all,
                               this->storage_->LoadChangesSince(Key("s"), 0));
  EXPECT_EQ(all.version, 2);
  EXPECT_THAT(all.trials,
              ElementsAre(EqualsProto(MakeTrial(1)), EqualsProto(completed),
                          EqualsProto(MakeTrial(3))));
  EXPECT_THAT(all.policy_state, Optional(std::string("p1")));
  METAOPT_ASSERT_OK_AND_ASSIGN(Storage::Changes since_1,
                               this->storage_->LoadChangesSince(Key("s"), 1));
  EXPECT_EQ(since_1.version, 2);
  EXPECT_THAT(since_1.trials,
              ElementsAre(EqualsProto(completed), EqualsProto(MakeTrial(3))));
  EXPECT_EQ(since_1.policy_state, std::nullopt);  // written at version 1
  METAOPT_ASSERT_OK_AND_ASSIGN(Storage::Changes current,
                               this->storage_->LoadChangesSince(Key("s"), 2));
  EXPECT_THAT(current.trials, IsEmpty());
  EXPECT_THAT(this->storage_->LoadChangesSince(Key("absent"), 0),
              StatusIs(absl::StatusCode::kNotFound, _));
}

TYPED_TEST(StorageConformanceTest, QuotaCountsTheOwnersStudiesOnly) {
  for (const char* id : {"a", "b"})
    ASSERT_THAT(this->storage_->CreateStudy(OwnedStudy(id, "alice"), 2),
                IsOk());
  EXPECT_THAT(this->storage_->CreateStudy(OwnedStudy("c", "alice"), 2),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(HasSubstr("holds 2"), HasSubstr("limit is 2"))));
  // An existing id is ALREADY_EXISTS whatever the count.
  EXPECT_THAT(this->storage_->CreateStudy(OwnedStudy("a", "alice"), 2),
              StatusIs(absl::StatusCode::kAlreadyExists, _));
  ASSERT_THAT(this->storage_->CreateStudy(OwnedStudy("c", "bob"), 2), IsOk());
  EXPECT_EQ(this->storage_->CountStudies("alice").value_or(-1), 2);
  // No limit: 0.
  ASSERT_THAT(this->storage_->CreateStudy(OwnedStudy("c", "alice"), 0), IsOk());
}

TYPED_TEST(StorageConformanceTest, ConcurrentCreatesNeverOvershootTheQuota) {
  constexpr int kThreads = 8;
  constexpr int kLimit = 3;
  std::vector<std::thread> threads;
  std::vector<absl::Status> results(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([this, t, &results] {
      results[t] = this->storage_->CreateStudy(
          OwnedStudy(absl::StrCat("s", t), "alice"), kLimit);
    });
  }
  for (std::thread& thread : threads) thread.join();
  int created = 0;
  for (const absl::Status& result : results) {
    if (result.ok()) {
      ++created;
    } else {
      EXPECT_THAT(result, StatusIs(absl::StatusCode::kResourceExhausted, _));
    }
  }
  EXPECT_EQ(created, kLimit);
  EXPECT_EQ(this->storage_->CountStudies("alice").value_or(-1), kLimit);
}

// Two Storage objects on one database, as two server replicas have: each
// sees the other's writes, and of two writes from one version only one goes
// through.
TYPED_TEST(StorageConformanceTest, SecondInstanceSeesWritesAndLosesRaces) {
  METAOPT_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Storage> other,
                               this->factory_.OpenAgain());
  if (other == nullptr) GTEST_SKIP() << "this storage cannot be shared";
  this->CreateStudies({"s"});
  METAOPT_ASSERT_OK_AND_ASSIGN(v1::Study study, other->GetStudy(Key("s")));
  EXPECT_THAT(study, EqualsProto(MakeStudy("s")));
  const std::vector<v1::Trial> mine = {MakeTrial(1)};
  const std::vector<v1::Trial> theirs = {MakeTrial(1, v1::TRIAL_STATE_FAILED)};
  ASSERT_THAT(this->storage_->WriteStudy(Key("s"), {mine, std::nullopt, 0}),
              IsOk());
  EXPECT_THAT(other->WriteStudy(Key("s"), {theirs, std::nullopt, 0}),
              StatusIs(absl::StatusCode::kAborted, _));
  EXPECT_EQ(other->GetStudyVersion(Key("s")).value_or(-1), 1);
  METAOPT_ASSERT_OK_AND_ASSIGN(std::vector<v1::Trial> got,
                               other->LoadTrials(Key("s")));
  EXPECT_THAT(got, ElementsAre(EqualsProto(MakeTrial(1))));
  EXPECT_THAT(other->CreateStudy(MakeStudy("s")),
              StatusIs(absl::StatusCode::kAlreadyExists, _));
}

// Many writers on two instances, each reading the version and writing at it
// (retrying on ABORTED): every write lands exactly once, in version order.
TYPED_TEST(StorageConformanceTest, CompareAndSetSerializesConcurrentWriters) {
  METAOPT_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Storage> other,
                               this->factory_.OpenAgain());
  Storage* instances[2] = {this->storage_.get(), other != nullptr
                                                     ? other.get()
                                                     : this->storage_.get()};
  this->CreateStudies({"s"});
  constexpr int kThreads = 6;
  constexpr int kWritesPerThread = 10;
  std::vector<std::thread> threads;
  std::vector<absl::Status> errors(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Storage& storage = *instances[t % 2];
      for (int i = 0; i < kWritesPerThread && errors[t].ok(); ++i) {
        while (true) {
          absl::StatusOr<int64_t> version = storage.GetStudyVersion(Key("s"));
          if (!version.ok()) {
            errors[t] = version.status();
            break;
          }
          // The trial id is the version it was written at, plus one: two
          // writes from one version would collide on it.
          const std::vector<v1::Trial> trial = {MakeTrial(*version + 1)};
          const absl::Status written =
              storage.WriteStudy(Key("s"), {trial, std::nullopt, *version});
          if (absl::IsAborted(written)) continue;
          errors[t] = written;
          break;
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const absl::Status& error : errors) EXPECT_THAT(error, IsOk());
  METAOPT_ASSERT_OK_AND_ASSIGN(std::vector<v1::Trial> got,
                               this->storage_->LoadTrials(Key("s")));
  ASSERT_THAT(got, SizeIs(kThreads * kWritesPerThread));
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i].id(), i + 1);
  EXPECT_EQ(this->storage_->GetStudyVersion(Key("s")).value_or(-1),
            kThreads * kWritesPerThread);
}

}  // namespace
}  // namespace metaopt::storage
