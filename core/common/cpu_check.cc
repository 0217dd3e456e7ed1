// A build for x86-64-v3 (CMakeLists.txt, METAOPT_CPU) started on a CPU
// without AVX2 and FMA would die of an illegal instruction somewhere in its
// first numerical work; every program stops at start-up instead, saying why.
// This file is compiled for the baseline x86-64 (core/common/CMakeLists.txt),
// every executable is linked with it (the top-level CMakeLists.txt names the
// check to the linker), and it runs before the program's other static
// initialisers.
#include <cstdio>
#include <cstdlib>

#if defined(METAOPT_REQUIRES_X86_64_V3) && defined(__GNUC__)
extern "C" __attribute__((constructor(101))) void
metaopt_refuse_cpu_below_build() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("x86-64-v3")) return;
  std::fputs(
      "metaopt was built for x86-64-v3 (AVX2, FMA) and this CPU lacks it: "
      "rebuild with cmake -DMETAOPT_CPU=portable\n",
      stderr);
  std::_Exit(70);  // EX_SOFTWARE
}
#endif
