#include "core/storage/group_commit.h"

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/common/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"

namespace metaopt::storage {
namespace {

using ::metaopt::testing::IsOk;
using ::metaopt::testing::StatusIs;
using ::testing::_;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A batch runner that applies every write and records the batch sizes;
// `commit` is the status of the batch's "commit".
struct Recorder {
  Mutex mu;
  std::vector<int> batch_sizes ABSL_GUARDED_BY(mu);
  absl::Status commit;

  void Run(absl::Span<GroupCommit::Write* const> batch) {
    {
      MutexLock lock(&mu);
      batch_sizes.push_back(static_cast<int>(batch.size()));
    }
    for (GroupCommit::Write* write : batch) write->status = write->apply();
    if (!commit.ok()) {
      for (GroupCommit::Write* write : batch) {
        if (write->status.ok()) write->status = commit;
      }
    }
  }
  std::vector<int> Sizes() {
    MutexLock lock(&mu);
    return batch_sizes;
  }
};

// Waits until `queue` holds `n` writes that wait for a batch.
void AwaitQueued(const GroupCommit& queue, int64_t n) {
  while (queue.queued() < n) absl::SleepFor(absl::Milliseconds(1));
}

TEST(GroupCommitTest, OneWriterCommitsAloneWithItsStatus) {
  Recorder recorder;
  GroupCommit queue([&](auto batch) { recorder.Run(batch); });
  const StudyKey key{"", "s"};
  int applied = 0;
  EXPECT_THAT(queue.Commit(key,
                           [&] {
                             ++applied;
                             return absl::OkStatus();
                           }),
              IsOk());
  EXPECT_THAT(queue.Commit(key, [] { return absl::NotFoundError("gone"); }),
              StatusIs(absl::StatusCode::kNotFound, _));
  EXPECT_EQ(applied, 1);
  EXPECT_THAT(recorder.Sizes(), ElementsAre(1, 1));
}

// A queue whose first batch (one write, of study "first", from a thread of
// its own) waits until released, so that the writes queued meanwhile form the
// next batch; later batches run through `recorder`.
class HeldQueue {
 public:
  HeldQueue() {
    leader_ = std::thread([this] {
      EXPECT_THAT(queue_.Commit({"", "first"}, absl::OkStatus), IsOk());
    });
    first_started_.WaitForNotification();
  }
  ~HeldQueue() {
    if (!release_.HasBeenNotified()) release_.Notify();
    if (leader_.joinable()) leader_.join();
  }

  // Releases the first batch once `n` writes wait behind it.
  void ReleaseWhenQueued(int n) {
    AwaitQueued(queue_, n);
    release_.Notify();
  }

  Recorder recorder;
  GroupCommit& queue() { return queue_; }

 private:
  Notification first_started_, release_;
  std::atomic<bool> first_{true};
  GroupCommit queue_{[this](absl::Span<GroupCommit::Write* const> batch) {
    if (first_.exchange(false)) {
      first_started_.Notify();
      release_.WaitForNotification();
      for (GroupCommit::Write* write : batch) write->status = write->apply();
      return;
    }
    recorder.Run(batch);
  }};
  std::thread leader_;
};

// Writers that arrive while a batch commits share the next one, and each
// returns only after its own batch ran.
TEST(GroupCommitTest, WritersQueuedDuringACommitShareTheNextBatch) {
  constexpr int kWriters = 12;
  HeldQueue held;
  std::atomic<int> applied = 0;
  std::vector<std::thread> writers;
  std::vector<absl::Status> statuses(kWriters);
  for (int i = 0; i < kWriters; ++i) {
    writers.emplace_back([&, i] {
      statuses[i] = held.queue().Commit({"", absl::StrCat("s", i)}, [&] {
        ++applied;
        return absl::OkStatus();
      });
    });
  }
  AwaitQueued(held.queue(), kWriters);
  // Nothing of the queued writes ran while the first batch was committing.
  EXPECT_EQ(applied.load(), 0);
  held.ReleaseWhenQueued(kWriters);
  for (std::thread& writer : writers) writer.join();
  for (const absl::Status& status : statuses) EXPECT_THAT(status, IsOk());
  EXPECT_EQ(applied.load(), kWriters);
  EXPECT_THAT(held.recorder.Sizes(), ElementsAre(kWriters));
  const GroupCommit::Stats stats = held.queue().stats();
  EXPECT_EQ(stats.batches, 2);
  EXPECT_EQ(stats.writes, kWriters + 1);
  EXPECT_EQ(stats.largest_batch, kWriters);
}

// A failed commit fails every write of its batch, and only those.
TEST(GroupCommitTest, AFailedCommitFailsEveryWriteOfItsBatch) {
  constexpr int kWriters = 6;
  HeldQueue held;
  held.recorder.commit = absl::ResourceExhaustedError("disk is full");
  std::vector<std::thread> writers;
  std::vector<absl::Status> statuses(kWriters);
  for (int i = 0; i < kWriters; ++i) {
    writers.emplace_back([&, i] {
      statuses[i] =
          held.queue().Commit({"", absl::StrCat("s", i)}, absl::OkStatus);
    });
  }
  held.ReleaseWhenQueued(kWriters);
  for (std::thread& writer : writers) writer.join();
  for (const absl::Status& status : statuses) {
    EXPECT_THAT(status, StatusIs(absl::StatusCode::kResourceExhausted,
                                 HasSubstr("disk is full")));
  }
  // The queue goes on after a failed batch.
  held.recorder.commit = absl::OkStatus();
  EXPECT_THAT(held.queue().Commit({"", "after"}, absl::OkStatus), IsOk());
}

// A write's own error fails it alone; the rest of its batch commits.
TEST(GroupCommitTest, AWritesOwnErrorFailsItAlone) {
  constexpr int kWriters = 8;
  HeldQueue held;
  std::vector<std::thread> writers;
  std::vector<absl::Status> statuses(kWriters);
  for (int i = 0; i < kWriters; ++i) {
    writers.emplace_back([&, i] {
      statuses[i] = held.queue().Commit({"", absl::StrCat("s", i)}, [i] {
        return i == 3 ? absl::AbortedError("version conflict")
                      : absl::OkStatus();
      });
    });
  }
  held.ReleaseWhenQueued(kWriters);
  for (std::thread& writer : writers) writer.join();
  for (int i = 0; i < kWriters; ++i) {
    if (i == 3) {
      EXPECT_THAT(statuses[i], StatusIs(absl::StatusCode::kAborted, _));
    } else {
      EXPECT_THAT(statuses[i], IsOk()) << i;
    }
  }
  EXPECT_THAT(held.recorder.Sizes(), ElementsAre(kWriters));
}

// Two writes of one study never share a batch, and keep their order.
TEST(GroupCommitTest, WritesOfOneStudyKeepTheirOrderInSeparateBatches) {
  HeldQueue held;
  Mutex order_mu;
  std::vector<int> order;
  std::vector<std::thread> writers;
  // Writes 0 and 2 are of study "a", 1 of "b"; each enqueues after the last.
  const char* studies[] = {"a", "b", "a"};
  for (int i = 0; i < 3; ++i) {
    writers.emplace_back([&, i] {
      EXPECT_THAT(held.queue().Commit({"", studies[i]},
                                      [&, i] {
                                        MutexLock lock(&order_mu);
                                        order.push_back(i);
                                        return absl::OkStatus();
                                      }),
                  IsOk());
    });
    AwaitQueued(held.queue(), i + 1);
  }
  held.ReleaseWhenQueued(3);
  for (std::thread& writer : writers) writer.join();
  EXPECT_THAT(order, ElementsAre(0, 1, 2));
  EXPECT_THAT(held.recorder.Sizes(), ElementsAre(2, 1));
}

// Many writers on few studies, no blocking: every write is applied once.
TEST(GroupCommitTest, ConcurrentWritersAreEachAppliedOnce) {
  constexpr int kThreads = 16;
  constexpr int kWritesPerThread = 200;
  Recorder recorder;
  GroupCommit queue([&](auto batch) { recorder.Run(batch); });
  std::atomic<int> applied = 0;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const StudyKey key{"", absl::StrCat("s", t % 4)};
      for (int i = 0; i < kWritesPerThread; ++i) {
        EXPECT_THAT(queue.Commit(key,
                                 [&] {
                                   ++applied;
                                   return absl::OkStatus();
                                 }),
                    IsOk());
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(applied.load(), kThreads * kWritesPerThread);
  EXPECT_EQ(queue.stats().writes, kThreads * kWritesPerThread);
  EXPECT_LE(queue.stats().largest_batch, 4);  // one write per study
}

// Enqueue and Wait apart (as the study engine does, waiting after it released
// its study lock): writes of one study enqueued before anyone waits share one
// batch when the queue allows it, in their order, and each Wait returns its
// own status.
TEST(GroupCommitTest, EnqueuedWritesOfOneStudyShareABatchInOrder) {
  Recorder recorder;
  GroupCommit queue(
      [&](auto batch) { recorder.Run(batch); },
      GroupCommit::Options{.writes_of_a_study_share_a_batch = true});
  const StudyKey key{"", "s"};
  std::vector<int> order;
  std::vector<std::shared_ptr<GroupCommit::Ticket>> tickets;
  for (int i = 0; i < 3; ++i) {
    tickets.push_back(queue.Enqueue(
        key,
        [&order, i] {
          order.push_back(i);
          return i == 1 ? absl::NotFoundError("gone") : absl::OkStatus();
        },
        nullptr));
  }
  EXPECT_EQ(queue.Poll(*tickets[0]), std::nullopt);  // nobody waited yet
  EXPECT_THAT(queue.Wait(*tickets[2]), IsOk());
  EXPECT_THAT(order, ElementsAre(0, 1, 2));
  EXPECT_THAT(recorder.Sizes(), ElementsAre(3));
  ASSERT_TRUE(queue.Poll(*tickets[0]).has_value());
  EXPECT_THAT(*queue.Poll(*tickets[0]), IsOk());
  EXPECT_THAT(queue.Wait(*tickets[1]),
              StatusIs(absl::StatusCode::kNotFound, "gone"));
  EXPECT_THAT(queue.Wait(*tickets[0]), IsOk());
}

// A write that builds on an earlier one (`after`) fails ABORTED, without
// running, when that one was not stored: in the same batch, in a later one,
// or after its batch's commit failed.
TEST(GroupCommitTest, AWriteAfterAFailedOneFailsWithoutRunning) {
  for (const bool share : {true, false}) {
    SCOPED_TRACE(share ? "one batch" : "successive batches");
    Recorder recorder;
    GroupCommit queue(
        [&](auto batch) { recorder.Run(batch); },
        GroupCommit::Options{.writes_of_a_study_share_a_batch = share});
    const StudyKey key{"", "s"};
    int applied = 0;
    auto failing = queue.Enqueue(
        key, [] { return absl::AbortedError("conflict"); }, nullptr);
    auto dependent = queue.Enqueue(
        key,
        [&] {
          ++applied;
          return absl::OkStatus();
        },
        failing);
    auto next = queue.Enqueue(
        key,
        [&] {
          ++applied;
          return absl::OkStatus();
        },
        dependent);
    EXPECT_THAT(queue.Wait(*next), StatusIs(absl::StatusCode::kAborted,
                                            HasSubstr("earlier write")));
    EXPECT_THAT(queue.Wait(*dependent),
                StatusIs(absl::StatusCode::kAborted, HasSubstr("conflict")));
    EXPECT_THAT(queue.Wait(*failing),
                StatusIs(absl::StatusCode::kAborted, "conflict"));
    EXPECT_EQ(applied, 0);
    // Once the failure is known, a write after it fails at once; a write
    // after a stored one runs.
    auto late = queue.Enqueue(
        key,
        [&] {
          ++applied;
          return absl::OkStatus();
        },
        failing);
    EXPECT_THAT(queue.Wait(*late), StatusIs(absl::StatusCode::kAborted, _));
    auto stored = queue.Enqueue(key, absl::OkStatus, nullptr);
    EXPECT_THAT(queue.Wait(*stored), IsOk());
    auto after_stored = queue.Enqueue(
        key,
        [&] {
          ++applied;
          return absl::OkStatus();
        },
        stored);
    EXPECT_THAT(queue.Wait(*after_stored), IsOk());
    EXPECT_EQ(applied, 1);
  }
  // A failed commit fails the write after it, queued for the next batch.
  Recorder recorder;
  recorder.commit = absl::ResourceExhaustedError("disk full");
  GroupCommit queue([&](auto batch) {
    recorder.Run(batch);
    recorder.commit = absl::OkStatus();  // only the first commit fails
  });
  const StudyKey key{"", "s"};
  auto first = queue.Enqueue(key, absl::OkStatus, nullptr);
  bool applied = false;
  auto second = queue.Enqueue(
      key,
      [&] {
        applied = true;
        return absl::OkStatus();
      },
      first);
  EXPECT_THAT(queue.Wait(*second),
              StatusIs(absl::StatusCode::kAborted, HasSubstr("disk full")));
  EXPECT_THAT(queue.Wait(*first),
              StatusIs(absl::StatusCode::kResourceExhausted, "disk full"));
  EXPECT_FALSE(applied);
  EXPECT_THAT(recorder.Sizes(), ElementsAre(1, 1));
}

}  // namespace
}  // namespace metaopt::storage
