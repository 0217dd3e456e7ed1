#!/usr/bin/env bash
# Configures build/ (RelWithDebInfo) and builds everything with two jobs.
# Extra arguments are passed to `cmake --build` (for example `--target metaoptctl`); METAOPT_CMAKE_ARGS
# to the configure step (for example METAOPT_BUILD_DIR=build-native METAOPT_CMAKE_ARGS=-DMETAOPT_CPU=native).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${METAOPT_BUILD_DIR:-$root/build}"
jobs="${METAOPT_JOBS:-2}"

# shellcheck disable=SC2086  # METAOPT_CMAKE_ARGS is a list of words.
cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo ${METAOPT_CMAKE_ARGS:-}
cmake --build "$build_dir" -j "$jobs" "$@"
