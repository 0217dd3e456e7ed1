#include "core/common/parallel.h"

#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"

namespace metaopt {
namespace {

TEST(ParallelForTest, RunsEveryIndexOnceForAnyThreadCount) {
  for (int threads : {1, 2, 3, 8, 100}) {
    for (int n : {0, 1, 2, 7, 64}) {
      std::vector<std::atomic<int>> runs(n);
      ParallelFor(n, threads, [&](int i) { runs[i].fetch_add(1); });
      for (int i = 0; i < n; ++i) {
        EXPECT_EQ(runs[i].load(), 1) << "n " << n << " threads " << threads;
      }
    }
  }
}

TEST(ParallelForTest, UsesUpToTheGivenThreadsTheCallersIncluded) {
  absl::Mutex mu;
  std::set<std::thread::id> seen;
  std::atomic<int> waiting{0};
  // Four indices that each wait until four are running at once: only
  // possible on four threads.
  ParallelFor(4, 4, [&](int) {
    {
      absl::MutexLock lock(&mu);
      seen.insert(std::this_thread::get_id());
    }
    waiting.fetch_add(1);
    while (waiting.load() < 4) std::this_thread::yield();
  });
  EXPECT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen.count(std::this_thread::get_id()), 1u);

  seen.clear();
  ParallelFor(16, 1, [&](int) {
    absl::MutexLock lock(&mu);
    seen.insert(std::this_thread::get_id());
  });
  EXPECT_EQ(seen, std::set<std::thread::id>{std::this_thread::get_id()});
}

TEST(ComputeThreadsTest, DefaultsToOneAndClamps) {
  EXPECT_EQ(ComputeThreads(), 1);
  SetComputeThreads(0);
  EXPECT_EQ(ComputeThreads(), 1);
  SetComputeThreads(1000);
  EXPECT_EQ(ComputeThreads(), 64);
  SetComputeThreads(2);
  EXPECT_EQ(ComputeThreads(), 2);
  SetComputeThreads(1);
}

}  // namespace
}  // namespace metaopt
