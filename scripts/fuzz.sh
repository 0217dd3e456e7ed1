#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan+UBSan) in build-fuzz and runs each for a while from its
# seed corpus (tests/fuzz/corpus/<target>/). New interesting inputs go to build-fuzz/corpus/<target>/,
# crashes to build-fuzz/artifacts/ (turn each into a regression input under
# tests/fuzz/regressions/<target>/ and a GoogleTest; see docs/testing.md).
# Usage: scripts/fuzz.sh [seconds per target, default 60] [target...]
#   targets: study_spec study_spec_text configuration meta_dataset (default: all)
# The build runs under nice -n 10 with METAOPT_JOBS (default 2) jobs; exits non-zero on a crash.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${METAOPT_FUZZ_BUILD_DIR:-$root/build-fuzz}"
seconds="${1:-60}"
if (($# > 0)); then shift; fi
if ! [[ "$seconds" =~ ^[0-9]+$ ]] || ((seconds < 1)); then
  echo "usage: $0 [seconds per target >= 1] [target...]" >&2
  exit 2
fi
targets=("$@")
if ((${#targets[@]} == 0)); then
  targets=(study_spec study_spec_text configuration meta_dataset)
fi
jobs="${METAOPT_JOBS:-2}"

start=$SECONDS
nice -n 10 cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER=clang++ -DMETAOPT_FUZZ=ON -DMETAOPT_SANITIZE=address,undefined \
  -DMETAOPT_BUILD_BENCHMARKS=OFF >/dev/null
fuzzers=()
for target in "${targets[@]}"; do fuzzers+=("${target}_fuzzer"); done
nice -n 10 cmake --build "$build_dir" -j "$jobs" --target "${fuzzers[@]}"
echo "fuzz: built ${fuzzers[*]} in $((SECONDS - start)) s"

export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$root/tests/sanitizers/ubsan.supp"
mkdir -p "$build_dir/artifacts"
status=0
for target in "${targets[@]}"; do
  corpus="$build_dir/corpus/$target"
  mkdir -p "$corpus"
  echo "fuzz: $target for $seconds s"
  if ! nice -n 10 "$build_dir/tests/fuzz/${target}_fuzzer" -max_total_time="$seconds" \
    -print_final_stats=1 -artifact_prefix="$build_dir/artifacts/$target-" \
    "$corpus" "$root/tests/fuzz/corpus/$target" >"$build_dir/$target.log" 2>&1; then
    status=1
    echo "fuzz: $target FAILED; see $build_dir/$target.log and $build_dir/artifacts/" >&2
    grep -m1 -A20 -E "ERROR|Sanitizer|contract broken|runtime error" "$build_dir/$target.log" >&2 || true
  fi
  grep -E "^stat::(number_of_executed_units|average_exec_per_sec|new_units_added)" \
    "$build_dir/$target.log" | sed "s/^/fuzz: $target /" || true
  grep -E "^#[0-9]+ +DONE" "$build_dir/$target.log" | tail -1 | sed "s/^/fuzz: $target /" || true
done
exit "$status"
