// The engine answers only what is stored: it releases a study's lock before
// waiting for the sync of its write (so that the writes of one study share a
// sync), yet a call that saw a write that was not stored is redone on the
// study as stored, and the write's own caller gets the error.
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/time/clock.h"
#include "core/common/mutex.h"
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
using ::testing::_;
using ::testing::SizeIs;

// A write held by GatedStorage until the test finishes it.
class GatedWrite : public storage::PendingWrite {
 public:
  absl::Status Wait() override {
    MutexLock lock(&mu_);
    mu_.Await(absl::Condition(
        +[](std::optional<absl::Status>* s) { return s->has_value(); },
        &status_));
    return *status_;
  }
  std::optional<absl::Status> Poll() const override {
    MutexLock lock(&mu_);
    return status_;
  }
  void Finish(absl::Status status) {
    MutexLock lock(&mu_);
    status_ = std::move(status);
  }

  storage::StudyKey key;
  std::vector<v1::Trial> trials;
  std::optional<std::string> policy_state;
  std::optional<int64_t> expected_version;
  std::optional<v1::Study> record;
  std::shared_ptr<storage::PendingWrite> after;

 private:
  mutable Mutex mu_;
  std::optional<absl::Status> status_ ABSL_GUARDED_BY(mu_);
};

// In-memory storage whose StartWriteStudy, while gated, queues each write
// until FinishOldest stores it (or fails it); everything else goes straight
// to the in-memory storage.
class GatedStorage : public storage::Storage {
 public:
  GatedStorage() : inner_(*storage::OpenInMemoryStorage()) {}

  void Gate(bool on) {
    MutexLock lock(&mu_);
    gated_ = on;
  }
  int64_t pending() const {
    MutexLock lock(&mu_);
    return static_cast<int64_t>(queue_.size());
  }
  // Waits until `n` writes are queued.
  void AwaitPending(int64_t n) const {
    while (pending() < n) absl::SleepFor(absl::Milliseconds(1));
  }
  // Ends the oldest queued write: with `status` if it is an error; else
  // stores it, unless the write it builds on failed (then ABORTED).
  void FinishOldest(const absl::Status& status) {
    std::shared_ptr<GatedWrite> write;
    {
      MutexLock lock(&mu_);
      ASSERT_FALSE(queue_.empty());
      write = queue_.front();
      queue_.pop_front();
    }
    if (!status.ok()) return write->Finish(status);
    if (write->after != nullptr) {
      const std::optional<absl::Status> before = write->after->Poll();
      ASSERT_TRUE(before.has_value()) << "finished out of order";
      if (!before->ok()) {
        return write->Finish(absl::AbortedError("an earlier write failed"));
      }
    }
    write->Finish(inner_->WriteStudy(
        write->key,
        {write->trials, write->policy_state, write->expected_version,
         write->record.has_value() ? &*write->record : nullptr}));
  }
  storage::Storage& inner() { return *inner_; }

  absl::StatusOr<std::shared_ptr<storage::PendingWrite>> StartWriteStudy(
      const storage::StudyKey& key, const storage::StudyWrite& write,
      const std::shared_ptr<storage::PendingWrite>& after) override {
    MutexLock lock(&mu_);
    if (!gated_) {
      mu_.Unlock();
      auto started = Storage::StartWriteStudy(key, write, after);
      mu_.Lock();
      return started;
    }
    auto gated = std::make_shared<GatedWrite>();
    gated->key = key;
    gated->trials.assign(write.trials.begin(), write.trials.end());
    if (write.policy_state.has_value()) {
      gated->policy_state = std::string(*write.policy_state);
    }
    gated->expected_version = write.expected_version;
    if (write.study != nullptr) gated->record = *write.study;
    gated->after = after;
    queue_.push_back(gated);
    return gated;
  }

  absl::Status CreateStudy(const v1::Study& study, int64_t max) override {
    return inner_->CreateStudy(study, max);
  }
  absl::StatusOr<v1::Study> GetStudy(const storage::StudyKey& key) override {
    return inner_->GetStudy(key);
  }
  absl::StatusOr<std::vector<v1::Study>> ListStudies(std::string_view owner,
                                                     std::string_view after,
                                                     int limit) override {
    return inner_->ListStudies(owner, after, limit);
  }
  absl::StatusOr<int64_t> CountStudies(std::string_view owner) override {
    return inner_->CountStudies(owner);
  }
  absl::Status DeleteStudy(const storage::StudyKey& key) override {
    return inner_->DeleteStudy(key);
  }
  absl::Status WriteStudy(const storage::StudyKey& key,
                          const storage::StudyWrite& write) override {
    return inner_->WriteStudy(key, write);
  }
  absl::StatusOr<int64_t> GetStudyVersion(
      const storage::StudyKey& key) override {
    return inner_->GetStudyVersion(key);
  }
  absl::StatusOr<std::vector<v1::Trial>> LoadTrials(
      const storage::StudyKey& key) override {
    return inner_->LoadTrials(key);
  }
  absl::StatusOr<Changes> LoadChangesSince(const storage::StudyKey& key,
                                           int64_t version) override {
    return inner_->LoadChangesSince(key, version);
  }
  absl::StatusOr<std::optional<std::string>> GetPolicyState(
      const storage::StudyKey& key) override {
    return inner_->GetPolicyState(key);
  }

 private:
  std::unique_ptr<storage::Storage> inner_;
  mutable Mutex mu_;
  bool gated_ ABSL_GUARDED_BY(mu_) = false;
  std::deque<std::shared_ptr<GatedWrite>> queue_ ABSL_GUARDED_BY(mu_);
};

class PendingWriteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    v1::CreateStudyRequest create;
    create.set_study_id("s");
    *create.mutable_spec() = PipelineSpec(v1::ALGORITHM_KIND_RANDOM, 7);
    ASSERT_THAT(engine_.CreateStudy(create), IsOk());
    v1::SuggestRequest suggest;
    suggest.set_study_id("s");
    suggest.set_count(2);
    METAOPT_ASSERT_OK_AND_ASSIGN(v1::SuggestResponse suggested,
                                 engine_.Suggest(suggest));
    ASSERT_THAT(suggested.trials(), SizeIs(2));
  }

  absl::StatusOr<v1::ObserveResponse> Observe(int64_t trial, double value) {
    v1::ObserveRequest request;
    request.set_study_id("s");
    request.set_trial_id(trial);
    request.set_value(value);
    return engine_.Observe(request);
  }
  absl::StatusOr<v1::Trial> GetTrial(int64_t trial) {
    v1::GetTrialRequest request;
    request.set_study_id("s");
    request.set_trial_id(trial);
    absl::StatusOr<v1::GetTrialResponse> response = engine_.GetTrial(request);
    if (!response.ok()) return response.status();
    return response->trial();
  }
  v1::TrialState StoredState(int64_t trial) {
    auto trials = storage_.inner().LoadTrials({"", "s"});
    EXPECT_THAT(trials, IsOk());
    if (!trials.ok() || trials->size() < static_cast<size_t>(trial)) {
      return v1::TRIAL_STATE_UNSPECIFIED;
    }
    return (*trials)[trial - 1].state();
  }

  GatedStorage storage_;
  StudyEngine engine_{&storage_, nullptr};
};

// Two Observes of one study both have their writes queued while the first is
// unsynced: the study lock is not held across the wait. Each returns once its
// own write is stored.
TEST_F(PendingWriteTest, WritesOfOneStudyArePendingTogether) {
  storage_.Gate(true);
  absl::StatusOr<v1::ObserveResponse> first, second;
  std::thread a([&] { first = Observe(1, 0.5); });
  storage_.AwaitPending(1);
  std::thread b([&] { second = Observe(2, 0.25); });
  storage_.AwaitPending(2);
  storage_.FinishOldest(absl::OkStatus());
  storage_.FinishOldest(absl::OkStatus());
  a.join();
  b.join();
  ASSERT_THAT(first, IsOk());
  ASSERT_THAT(second, IsOk());
  EXPECT_EQ(first->trial().state(), v1::TRIAL_STATE_COMPLETED);
  EXPECT_EQ(StoredState(1), v1::TRIAL_STATE_COMPLETED);
  EXPECT_EQ(StoredState(2), v1::TRIAL_STATE_COMPLETED);
}

// A reader that saw an unstored write waits for it; when it fails, the writer
// gets its error, the reader is answered from the study as stored (the trial
// still ACTIVE), and a write that built on the failed one is redone.
TEST_F(PendingWriteTest, AFailedWriteIsAcknowledgedToNobody) {
  storage_.Gate(true);
  absl::StatusOr<v1::ObserveResponse> failed, dependent;
  absl::StatusOr<v1::Trial> read;
  Notification read_done;
  std::thread a([&] { failed = Observe(1, 0.5); });
  storage_.AwaitPending(1);
  std::thread b([&] { dependent = Observe(2, 0.25); });
  storage_.AwaitPending(2);
  std::thread reader([&] {
    read = GetTrial(1);
    read_done.Notify();
  });
  // The reader saw trial 1 COMPLETED in memory: it must not answer yet.
  EXPECT_FALSE(
      read_done.WaitForNotificationWithTimeout(absl::Milliseconds(50)));
  storage_.FinishOldest(absl::InternalError("disk failed"));
  a.join();
  EXPECT_THAT(failed, StatusIs(absl::StatusCode::kInternal, "disk failed"));
  // The second write builds on the failed one: ABORTED, then redone on the
  // study as stored (the redo is the next queued write).
  storage_.FinishOldest(absl::OkStatus());
  storage_.AwaitPending(1);
  storage_.FinishOldest(absl::OkStatus());
  b.join();
  reader.join();
  ASSERT_THAT(dependent, IsOk());
  EXPECT_EQ(dependent->trial().state(), v1::TRIAL_STATE_COMPLETED);
  ASSERT_THAT(read, IsOk());
  EXPECT_EQ(read->state(), v1::TRIAL_STATE_ACTIVE);
  EXPECT_EQ(StoredState(1), v1::TRIAL_STATE_ACTIVE);
  EXPECT_EQ(StoredState(2), v1::TRIAL_STATE_COMPLETED);
  // The copy was read again: trial 1 can still be observed.
  storage_.Gate(false);
  METAOPT_ASSERT_OK_AND_ASSIGN(v1::ObserveResponse again, Observe(1, 0.5));
  EXPECT_EQ(again.trial().state(), v1::TRIAL_STATE_COMPLETED);
  EXPECT_EQ(StoredState(1), v1::TRIAL_STATE_COMPLETED);
}

// DeleteStudy waits for the study's pending writes, so that none of them can
// land in a study created again under the same id.
TEST_F(PendingWriteTest, DeleteStudyWaitsForPendingWrites) {
  storage_.Gate(true);
  absl::StatusOr<v1::ObserveResponse> observed;
  std::thread a([&] { observed = Observe(1, 0.5); });
  storage_.AwaitPending(1);
  Notification deleted;
  absl::StatusOr<v1::DeleteStudyResponse> deletion;
  std::thread b([&] {
    v1::DeleteStudyRequest request;
    request.set_study_id("s");
    deletion = engine_.DeleteStudy(request);
    deleted.Notify();
  });
  EXPECT_FALSE(deleted.WaitForNotificationWithTimeout(absl::Milliseconds(50)));
  storage_.FinishOldest(absl::OkStatus());
  a.join();
  b.join();
  EXPECT_THAT(observed, IsOk());
  EXPECT_THAT(deletion, IsOk());
  EXPECT_THAT(storage_.inner().GetStudyVersion({"", "s"}),
              StatusIs(absl::StatusCode::kNotFound, _));
}

}  // namespace
}  // namespace metaopt::study
