// Owner namespaces and the per-owner study quota of the StudyEngine
// (CallContext.owner), on in-memory storage.
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/storage/storage.h"
#include "core/study/study_engine.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"
#include "tests/testutil/test_specs.h"

namespace metaopt::study {
namespace {

using ::metaopt::testing::IsOk;
using ::metaopt::testing::PipelineSpec;
using ::metaopt::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

CallContext Owner(const std::string& owner) {
  CallContext context;
  context.owner = owner;
  return context;
}

class OwnerTest : public ::testing::Test {
 protected:
  void Start(EngineOptions options = {}) {
    METAOPT_ASSERT_OK_AND_ASSIGN(storage_, storage::OpenInMemoryStorage());
    engine_ = std::make_unique<StudyEngine>(storage_.get(), nullptr, options);
  }

  absl::StatusOr<v1::CreateStudyResponse> Create(const std::string& owner,
                                                 const std::string& id,
                                                 uint64_t seed = 7) {
    v1::CreateStudyRequest request;
    request.set_study_id(id);
    *request.mutable_spec() = PipelineSpec(v1::ALGORITHM_KIND_RANDOM, seed);
    return engine_->CreateStudy(request, Owner(owner));
  }

  std::vector<std::string> List(const std::string& owner) {
    v1::ListStudiesRequest request;
    auto response = engine_->ListStudies(request, Owner(owner));
    EXPECT_THAT(response, IsOk());
    std::vector<std::string> ids;
    if (response.ok()) {
      for (const v1::Study& study : response->studies()) {
        EXPECT_EQ(study.owner(), owner);
        ids.push_back(study.study_id());
      }
    }
    return ids;
  }

  std::unique_ptr<storage::Storage> storage_;
  std::unique_ptr<StudyEngine> engine_;
};

TEST_F(OwnerTest, EachOwnerHasItsOwnNamespace) {
  Start();
  ASSERT_THAT(Create("", "s", 1), IsOk());
  ASSERT_THAT(Create("alice", "s", 2), IsOk());
  ASSERT_THAT(Create("alice", "t", 3), IsOk());
  EXPECT_THAT(List(""), ::testing::ElementsAre("s"));
  EXPECT_THAT(List("alice"), ::testing::ElementsAre("s", "t"));
  EXPECT_THAT(List("bob"), ::testing::IsEmpty());

  v1::GetStudyRequest get;
  get.set_study_id("t");
  EXPECT_THAT(engine_->GetStudy(get, Owner("")),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("\"t\"")));
  get.set_study_id("s");
  METAOPT_ASSERT_OK_AND_ASSIGN(v1::GetStudyResponse alices,
                               engine_->GetStudy(get, Owner("alice")));
  EXPECT_EQ(alices.study().spec().seed(), 2u);
  EXPECT_EQ(alices.study().owner(), "alice");

  // Suggesting in alice's study leaves the shared one untouched.
  v1::SuggestRequest suggest;
  suggest.set_study_id("s");
  suggest.set_count(2);
  ASSERT_THAT(engine_->Suggest(suggest, Owner("alice")), IsOk());
  METAOPT_ASSERT_OK_AND_ASSIGN(v1::GetStudyResponse shared,
                               engine_->GetStudy(get, Owner("")));
  EXPECT_EQ(shared.study().trial_count(), 0);

  v1::DeleteStudyRequest del;
  del.set_study_id("s");
  ASSERT_THAT(engine_->DeleteStudy(del, Owner("")), IsOk());
  METAOPT_ASSERT_OK_AND_ASSIGN(alices, engine_->GetStudy(get, Owner("alice")));
  EXPECT_EQ(alices.study().trial_count(), 2);
}

TEST_F(OwnerTest, QuotaCountsTheOwnersStudiesOnly) {
  EngineOptions options;
  options.max_studies_per_owner = 1;
  Start(options);
  ASSERT_THAT(Create("alice", "a"), IsOk());
  EXPECT_THAT(Create("alice", "b"),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(HasSubstr("owner \"alice\" holds 1 studies"),
                             HasSubstr("max_studies_per_owner) is 1"))));
  EXPECT_THAT(Create("", "b"), IsOk());
  EXPECT_THAT(Create("", "c"),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("the server holds 1 studies")));
  // Create-or-get of an existing study is not a new study.
  METAOPT_ASSERT_OK_AND_ASSIGN(v1::CreateStudyResponse again,
                               Create("alice", "a"));
  EXPECT_FALSE(again.created());
  // Another spec under the taken id is still ALREADY_EXISTS, not the quota.
  EXPECT_THAT(Create("alice", "a", /*seed=*/99),
              StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("\"a\"")));
}

TEST_F(OwnerTest, ConcurrentCreatesDoNotOvershootTheQuota) {
  constexpr int kQuota = 3;
  constexpr int kThreads = 12;
  EngineOptions options;
  options.max_studies_per_owner = kQuota;
  Start(options);
  std::atomic<int> created{0}, exhausted{0}, other{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto response = Create("alice", absl::StrCat("study-", t));
      if (response.ok()) {
        ++created;
      } else if (absl::IsResourceExhausted(response.status())) {
        ++exhausted;
      } else {
        ++other;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(created.load(), kQuota);
  EXPECT_EQ(exhausted.load(), kThreads - kQuota);
  EXPECT_EQ(other.load(), 0);
  EXPECT_EQ(List("alice").size(), static_cast<size_t>(kQuota));
}

TEST(OwnerOptionsTest, NegativeQuotaIsInvalid) {
  EngineOptions options;
  options.max_studies_per_owner = -1;
  EXPECT_THAT(CheckEngineOptions(options),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("max_studies_per_owner: -1")));
  options.max_studies_per_owner = 0;
  EXPECT_THAT(CheckEngineOptions(options), IsOk());
}

}  // namespace
}  // namespace metaopt::study
