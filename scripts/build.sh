#!/usr/bin/env bash
# Configures build/ (RelWithDebInfo) and builds everything with two jobs.
# Extra arguments are passed to `cmake --build` (for example `--target metaoptctl`).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${METAOPT_BUILD_DIR:-$root/build}"
jobs="${METAOPT_JOBS:-2}"

cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build "$build_dir" -j "$jobs" "$@"
