#include "server/work_pool.h"

#include <algorithm>
#include <utility>

#include "absl/time/clock.h"

namespace metaopt::server {

WorkPool::WorkPool(int threads, std::function<void(absl::Duration)> on_wait)
    : on_wait_(std::move(on_wait)) {
  const int n = std::max(1, threads);
  workers_.reserve(n);
  for (int i = 0; i < n; ++i) workers_.emplace_back([this] { Work(); });
}

WorkPool::~WorkPool() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (std::thread& worker : workers_) worker.join();
}

void WorkPool::Submit(absl::AnyInvocable<void() &&> task) {
  MutexLock lock(&mu_);
  queue_.push_back(Task{std::move(task), absl::Now()});
}

int64_t WorkPool::queued() const {
  MutexLock lock(&mu_);
  return static_cast<int64_t>(queue_.size());
}

int64_t WorkPool::running() const {
  MutexLock lock(&mu_);
  return running_;
}

void WorkPool::Work() {
  while (true) {
    Task task;
    {
      MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](WorkPool* pool) ABSL_NO_THREAD_SAFETY_ANALYSIS {
            return pool->stopping_ || !pool->queue_.empty();
          },
          this));
      // Stopping: the queue is drained first.
      if (queue_.empty()) return;
      task = std::move(queue_.front());
      queue_.pop_front();
      ++running_;
    }
    if (on_wait_) on_wait_(absl::Now() - task.submitted);
    std::move(task.run)();
    MutexLock lock(&mu_);
    --running_;
  }
}

}  // namespace metaopt::server
