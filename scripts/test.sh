#!/usr/bin/env bash
# Installs every dependency (scripts/install-deps.sh: runtime, build and test sets), builds
# everything and runs the whole test suite (unit, integration, lint).
# Extra arguments are passed to ctest (for example `-L lint` or `-R Metaoptctl`).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${METAOPT_BUILD_DIR:-$root/build}"
bash "$root/scripts/install-deps.sh"
echo "test: installed in $((SECONDS / 60)) min $((SECONDS % 60)) s"
# Tests and benchmarks on, also in a build directory that scripts/serve.sh configured without them.
export METAOPT_CMAKE_ARGS="${METAOPT_CMAKE_ARGS:-} -DMETAOPT_BUILD_TESTS=ON -DMETAOPT_BUILD_BENCHMARKS=ON"
bash "$root/scripts/build.sh"
echo "test: installed and built in $((SECONDS / 60)) min $((SECONDS % 60)) s"
ctest --test-dir "$build_dir" --output-on-failure -j "${METAOPT_JOBS:-2}" "$@"
