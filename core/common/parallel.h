// Parallelism inside one computation (a Predict over many queries, a batch of
// training losses): a loop split across a few threads that all return before
// the call does. Results must not depend on the split: each index writes its
// own output, so the same inputs give the same bits on 1 thread or 8.
#ifndef METAOPT_CORE_COMMON_PARALLEL_H_
#define METAOPT_CORE_COMMON_PARALLEL_H_

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

namespace metaopt {

// The threads one computation may use, the caller's included (>= 1; 1 until
// SetComputeThreads). The server sets it from --compute-threads: a single
// Suggest's exact GP variances then take both cores of a 2-core pod.
// Thread-safe.
int ComputeThreads();
// Clamped to [1, 64]; for start-up (computations already running keep the
// count they read).
void SetComputeThreads(int threads);

// Runs fn(i) for every i in [0, n) on up to `threads` threads, the caller's
// included, each taking the next unclaimed index; returns when all are done.
// fn must be safe to run concurrently for different i.
template <typename Fn>
void ParallelFor(int n, int threads, const Fn& fn) {
  threads = std::clamp(threads, 1, std::max(1, n));
  if (threads == 1) {
    for (int i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<int> next{0};
  auto work = [&] {
    for (int i = next.fetch_add(1); i < n; i = next.fetch_add(1)) fn(i);
  };
  std::vector<std::thread> helpers;
  helpers.reserve(threads - 1);
  for (int t = 1; t < threads; ++t) helpers.emplace_back(work);
  work();
  for (std::thread& helper : helpers) helper.join();
}

}  // namespace metaopt

#endif  // METAOPT_CORE_COMMON_PARALLEL_H_
