#!/usr/bin/env bash
# Installs dependencies, builds everything and runs the whole test suite (unit, integration, lint).
# Extra arguments are passed to ctest (for example `-L lint` or `-R Metaoptctl`).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${METAOPT_BUILD_DIR:-$root/build}"
bash "$root/scripts/install-deps.sh"
bash "$root/scripts/build.sh"
ctest --test-dir "$build_dir" --output-on-failure -j "${METAOPT_JOBS:-2}" "$@"
