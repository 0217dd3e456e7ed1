#include "core/common/parallel.h"

namespace metaopt {
namespace {

std::atomic<int> compute_threads{1};

}  // namespace

int ComputeThreads() { return compute_threads.load(std::memory_order_relaxed); }

void SetComputeThreads(int threads) {
  compute_threads.store(std::clamp(threads, 1, 64), std::memory_order_relaxed);
}

}  // namespace metaopt
