#!/usr/bin/env bash
# ctest driver: shellcheck over the project's shell scripts. Exits 77 (ctest SKIP_RETURN_CODE)
# when shellcheck is not installed (it is optional: apt-get install shellcheck).
set -uo pipefail

root="$1"
if ! command -v shellcheck >/dev/null 2>&1; then
  echo "SKIPPED: shellcheck not installed"
  exit 77
fi
cd "$root" || exit 1
shellcheck scripts/*.sh .ci/run tests/lint/*.sh tests/integration/*.sh clients/node/*.sh tools/loadgen/*.sh bench/*.sh && echo "shellcheck: no findings"
