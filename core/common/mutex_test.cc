#include "core/common/mutex.h"

#include <functional>
#include <thread>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/base/const_init.h"
#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

// Each test passes data between threads through one primitive only, with plain
// (non-atomic) fields: under ThreadSanitizer (scripts/sanitize.sh tsan) a
// missing annotation in mutex.h shows up as a data race here.

namespace metaopt {
namespace {

constexpr int kThreads = 4;
constexpr int kIterations = 1000;

struct Counter {
  Mutex mu;
  int value ABSL_GUARDED_BY(mu) = 0;
};

TEST(MutexTest, MutexLockExcludesOtherWriters) {
  Counter counter;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&counter] {
      for (int i = 0; i < kIterations; ++i) {
        MutexLock lock(&counter.mu);
        ++counter.value;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  MutexLock lock(&counter.mu);
  EXPECT_EQ(counter.value, kThreads * kIterations);
}

TEST(MutexTest, ReadersSeeWholeWrites) {
  struct {
    Mutex mu;
    int a ABSL_GUARDED_BY(mu) = 0;
    int b ABSL_GUARDED_BY(mu) = 0;
  } pair;
  std::thread writer([&pair] {
    for (int i = 1; i <= kIterations; ++i) {
      MutexLock lock(&pair.mu);
      pair.a = i;
      pair.b = -i;
    }
  });
  std::vector<std::thread> readers;
  for (int t = 0; t < kThreads; ++t) {
    readers.emplace_back([&pair] {
      for (int i = 0; i < kIterations; ++i) {
        ReaderMutexLock lock(&pair.mu);
        ASSERT_EQ(pair.a, -pair.b);
      }
    });
  }
  writer.join();
  for (std::thread& reader : readers) reader.join();
}

TEST(MutexTest, AwaitReturnsOnceAnotherThreadMakesTheConditionTrue) {
  struct {
    Mutex mu;
    bool ready ABSL_GUARDED_BY(mu) = false;
    int payload ABSL_GUARDED_BY(mu) = 0;
  } shared;
  std::thread producer([&shared] {
    absl::SleepFor(absl::Milliseconds(20));
    MutexLock lock(&shared.mu);
    shared.payload = 42;
    shared.ready = true;
  });
  {
    MutexLock lock(&shared.mu);
    shared.mu.Await(absl::Condition(&shared.ready));
    EXPECT_EQ(shared.payload, 42);
  }
  producer.join();
}

TEST(MutexTest, AwaitWithTimeoutReportsTheConditionAndHoldsTheMutex) {
  Counter counter;
  {
    MutexLock lock(&counter.mu);
    EXPECT_FALSE(counter.mu.AwaitWithTimeout(
        absl::Condition(
            +[](int* value) { return *value > 0; }, &counter.value),
        absl::Milliseconds(10)));
    counter.mu.AssertHeld();
    ++counter.value;
  }
  std::thread incrementer([&counter] {
    MutexLock lock(&counter.mu);
    ++counter.value;
  });
  {
    MutexLock lock(&counter.mu);
    EXPECT_TRUE(counter.mu.AwaitWithTimeout(
        absl::Condition(
            +[](int* value) { return *value == 2; }, &counter.value),
        absl::Seconds(30)));
    EXPECT_EQ(counter.value, 2);
  }
  incrementer.join();
}

// A thread writes a plain int and then notifies; `wait` returns once it has
// seen the notification, after which the write must be visible.
void ExpectWriteVisibleAfter(
    const std::function<void(const Notification&)>& wait) {
  Notification done;
  int payload = 0;
  std::thread producer([&] {
    payload = 7;
    done.Notify();
  });
  wait(done);
  EXPECT_EQ(payload, 7);
  producer.join();
}

TEST(NotificationTest, WritesBeforeNotifyAreVisibleAfterTheWait) {
  ExpectWriteVisibleAfter(
      [](const Notification& done) { done.WaitForNotification(); });
}

TEST(NotificationTest, WritesBeforeNotifyAreVisibleAfterATimedWait) {
  ExpectWriteVisibleAfter([](const Notification& done) {
    while (!done.WaitForNotificationWithTimeout(absl::Milliseconds(1))) {
    }
  });
}

TEST(NotificationTest, WritesBeforeNotifyAreVisibleOnceHasBeenNotified) {
  ExpectWriteVisibleAfter([](const Notification& done) {
    while (!done.HasBeenNotified()) std::this_thread::yield();
  });
}

TEST(NotificationTest, WaitWithTimeoutGivesUpWithoutNotify) {
  Notification done;
  EXPECT_FALSE(done.WaitForNotificationWithTimeout(absl::Milliseconds(10)));
  EXPECT_FALSE(done.HasBeenNotified());
  done.Notify();
  EXPECT_TRUE(done.WaitForNotificationWithTimeout(absl::Milliseconds(10)));
}

ABSL_CONST_INIT Mutex global_mu(absl::kConstInit);
int global_value ABSL_GUARDED_BY(global_mu) = 0;

TEST(MutexTest, ConstInitializedMutexWorksLikeAnyOther) {
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([] {
      for (int i = 0; i < kIterations; ++i) {
        MutexLock lock(&global_mu);
        ++global_value;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  MutexLock lock(&global_mu);
  EXPECT_EQ(global_value, kThreads * kIterations);
}

}  // namespace
}  // namespace metaopt
