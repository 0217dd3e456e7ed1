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

// The process's resident set size in bytes (VmRSS of /proc/self/status), or
// -1 where that cannot be read.
int64_t ResidentBytes();

}  // namespace metaopt

#endif  // METAOPT_CORE_COMMON_MEMORY_H_
