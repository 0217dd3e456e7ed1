#!/usr/bin/env bash
# Builds metaopt with sanitizers (clang) in build directories of their own and runs tests there:
#   asan: build-asan, -fsanitize=address,undefined; the whole ctest suite (lint excluded) with
#         leak detection, every report fatal.
#   tsan: build-tsan, -fsanitize=thread; the tests labelled "concurrency" (storage, model
#         manager, mutex, service, registry and crash tests), every report fatal. Project locks
#         are visible to TSan through core/common/mutex.h; tsan.supp covers gRPC and abseil.
# Usage: scripts/sanitize.sh [asan|tsan|all] [extra ctest arguments]   (default: all)
# Builds run under nice -n 10 with METAOPT_JOBS (default 2) jobs. Suppressions for third-party
# noise are in tests/sanitizers/ (see docs/testing.md). Prints the time of each step.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mode="${1:-all}"
if (($# > 0)); then shift; fi
case "$mode" in
  asan | tsan | all) ;;
  *)
    echo "usage: $0 [asan|tsan|all] [ctest arguments...]" >&2
    exit 2
    ;;
esac
jobs="${METAOPT_JOBS:-2}"
supp="$root/tests/sanitizers"

# configure_and_build DIR SANITIZERS TARGET...
configure_and_build() {
  local dir="$1" sanitizers="$2"
  shift 2
  local start=$SECONDS
  nice -n 10 cmake -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_COMPILER=clang++ \
    -DMETAOPT_SANITIZE="$sanitizers" >/dev/null
  nice -n 10 cmake --build "$dir" -j "$jobs" "$@"
  echo "sanitize: built $dir in $((SECONDS - start)) s"
}

status=0
if [[ "$mode" == asan || "$mode" == all ]]; then
  configure_and_build "$root/build-asan" address,undefined
  start=$SECONDS
  ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:abort_on_error=0:check_initialization_order=1:strict_init_order=1" \
    LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0" \
    UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$supp/ubsan.supp" \
    ctest --test-dir "$root/build-asan" --no-tests=error --output-on-failure -j "$jobs" -LE lint --timeout 1500 "$@" ||
    status=1
  echo "sanitize: ASan+UBSan tests ran in $((SECONDS - start)) s"
fi
if [[ "$mode" == tsan || "$mode" == all ]]; then
  configure_and_build "$root/build-tsan" thread --target metaopt_concurrency_tests
  start=$SECONDS
  TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$supp/tsan.supp" \
    ctest --test-dir "$root/build-tsan" --no-tests=error --output-on-failure -j "$jobs" -L concurrency \
    --timeout 1500 "$@" || status=1
  echo "sanitize: TSan tests ran in $((SECONDS - start)) s"
fi
exit "$status"
