// Process memory: returning freed heap to the system, and reading the
// resident size.
#ifndef METAOPT_CORE_COMMON_MEMORY_H_
#define METAOPT_CORE_COMMON_MEMORY_H_

#include <cstdint>

namespace metaopt {

// Hands heap memory that was freed back to the system. glibc keeps freed
// blocks in each thread's arena, so without this a process's resident size
// stays at its peak after large structures (a study's surrogate, unloaded
// studies) are freed. Costs a walk over the heap: call it after freeing much,
// not per allocation. A no-op without glibc. Thread-safe.
void ReleaseFreedMemory();

// Lets glibc serve and keep the large, short-lived buffers of numerical work
// (a Suggest's n x block cross-covariances, a Cholesky factor extended by a
// row: megabytes each, allocated and freed many times per call) from its heap
// instead of mapping fresh pages for each and returning them on free: below
// 32 MiB an allocation comes from the heap, and a heap's free top is kept up
// to 128 MiB. Each fresh mapping costs a page fault per 4 KiB touched; on a
// 4-D GP Suggest after 100 recorded observations that was a fifth of its time
// (suggest_benchmark, docs/performance.md). The memory stays with the process
// until ReleaseFreedMemory. Call once at start-up, before threads start; a
// no-op without glibc.
void KeepFreedBuffersForReuse();

// The process's resident set size in bytes (VmRSS of /proc/self/status), or
// -1 where that cannot be read.
int64_t ResidentBytes();

}  // namespace metaopt

#endif  // METAOPT_CORE_COMMON_MEMORY_H_
