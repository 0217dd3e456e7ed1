// Storage conformance: concurrent writers, study versions, compare-and-set
// and quotas.
#include "core/storage/storage.h"

#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
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
using ::testing::SizeIs;

TYPED_TEST_SUITE(StorageConformanceTest, Factories, FactoryNames);

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
