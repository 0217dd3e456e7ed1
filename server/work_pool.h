// A bounded pool of threads that runs RPC handlers, with a queue in front.
#ifndef METAOPT_SERVER_WORK_POOL_H_
#define METAOPT_SERVER_WORK_POOL_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/time/time.h"
#include "core/common/mutex.h"

namespace metaopt::server {

// `threads` workers run submitted tasks in arrival order. A task submitted
// while every worker is busy waits in an unbounded queue: overload shows as
// waiting (latency, queue depth), never as a rejected task. The engine's calls
// may block (storage, policy fits), so they run here rather than on gRPC's
// callback threads, and at most `threads` of them at once.
//
// Thread-safe. The destructor runs every task already queued, then joins the
// workers; no task may be submitted after it started.
class WorkPool {
 public:
  // `on_wait` (may be empty) is called on the worker with how long each task
  // waited in the queue, before the task runs; it must be thread-safe and
  // quick (the server feeds a histogram from it).
  explicit WorkPool(int threads,
                    std::function<void(absl::Duration)> on_wait = {});
  ~WorkPool() ABSL_LOCKS_EXCLUDED(mu_);

  WorkPool(const WorkPool&) = delete;
  WorkPool& operator=(const WorkPool&) = delete;

  void Submit(absl::AnyInvocable<void() &&> task) ABSL_LOCKS_EXCLUDED(mu_);

  // Tasks waiting for a worker, and tasks running, now.
  int64_t queued() const ABSL_LOCKS_EXCLUDED(mu_);
  int64_t running() const ABSL_LOCKS_EXCLUDED(mu_);
  int threads() const { return static_cast<int>(workers_.size()); }

 private:
  struct Task {
    absl::AnyInvocable<void() &&> run;
    absl::Time submitted;
  };
  void Work() ABSL_LOCKS_EXCLUDED(mu_);

  const std::function<void(absl::Duration)> on_wait_;
  mutable Mutex mu_;
  std::deque<Task> queue_ ABSL_GUARDED_BY(mu_);
  int64_t running_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> workers_;
};

}  // namespace metaopt::server

#endif  // METAOPT_SERVER_WORK_POOL_H_
