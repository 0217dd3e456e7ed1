#include "server/work_pool.h"

#include <atomic>
#include <memory>
#include <vector>

#include "absl/time/clock.h"
#include "core/common/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace metaopt::server {
namespace {

using ::testing::ElementsAre;

TEST(WorkPoolTest, OneWorkerRunsTasksInArrivalOrder) {
  Mutex mu;
  std::vector<int> order;
  {
    WorkPool pool(1);
    for (int i = 0; i < 5; ++i) {
      pool.Submit([&, i] {
        MutexLock lock(&mu);
        order.push_back(i);
      });
    }
  }  // The destructor runs what is queued.
  MutexLock lock(&mu);
  EXPECT_THAT(order, ElementsAre(0, 1, 2, 3, 4));
}

// Tasks beyond the workers wait in the queue (counted) and all run once a
// worker is free; each reports its wait.
TEST(WorkPoolTest, TasksBeyondTheWorkersWaitAndAllRun) {
  constexpr int kWorkers = 2;
  constexpr int kTasks = 50;
  std::atomic<int> waits = 0;
  std::atomic<int> ran = 0;
  Notification release;
  {
    WorkPool pool(kWorkers, [&](absl::Duration wait) {
      EXPECT_GE(wait, absl::ZeroDuration());
      ++waits;
    });
    EXPECT_EQ(pool.threads(), kWorkers);
    for (int i = 0; i < kTasks; ++i) {
      pool.Submit([&] {
        release.WaitForNotification();
        ++ran;
      });
    }
    // Both workers hold a task; the rest wait.
    while (pool.running() < kWorkers) absl::SleepFor(absl::Milliseconds(1));
    EXPECT_EQ(pool.queued(), kTasks - kWorkers);
    EXPECT_EQ(ran.load(), 0);
    release.Notify();
  }
  EXPECT_EQ(ran.load(), kTasks);
  EXPECT_EQ(waits.load(), kTasks);
}

TEST(WorkPoolTest, AtLeastOneWorker) {
  std::atomic<bool> ran = false;
  {
    WorkPool pool(0);
    EXPECT_EQ(pool.threads(), 1);
    pool.Submit([&] { ran = true; });
  }
  EXPECT_TRUE(ran.load());
}

}  // namespace
}  // namespace metaopt::server
