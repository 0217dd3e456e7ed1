#include "core/common/memory.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace metaopt {

#if defined(METAOPT_REQUIRES_X86_64_V3) && defined(__GNUC__)
namespace {

// A build for x86-64-v3 (CMakeLists.txt, METAOPT_CPU) on a CPU without AVX2
// and FMA would die of an illegal instruction somewhere in its first Suggest;
// it stops at start-up instead, saying why. This file is compiled for the
// baseline x86-64 (core/common/CMakeLists.txt), and the check runs before
// the program's other static initialisers.
__attribute__((constructor(101))) void RefuseACpuBelowTheBuild() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("x86-64-v3")) return;
  std::fputs(
      "metaopt was built for x86-64-v3 (AVX2, FMA) and this CPU lacks it: "
      "rebuild with cmake -DMETAOPT_CPU=portable\n",
      stderr);
  std::_Exit(70);  // EX_SOFTWARE
}

}  // namespace
#endif

void ReleaseFreedMemory() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

void KeepFreedBuffersForReuse() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 128 << 20);
#endif
}

int64_t ResidentBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      return std::stoll(line.substr(6)) * 1024;  // "VmRSS:   1234 kB"
    }
  }
  return -1;
}

}  // namespace metaopt
