#!/usr/bin/env bash
# ctest driver: `buf lint` over proto/ with the repository's buf.yaml (STANDARD rules).
# Exits 77 (ctest SKIP_RETURN_CODE) when the buf CLI is not installed; 1 on any finding.
set -uo pipefail

root="$1"
buf="$root/tools/node_modules/.bin/buf"
if [[ ! -x "$buf" ]]; then
  echo "SKIPPED: $buf not found; run scripts/install-deps.sh (npm install in tools/) to enable proto lint"
  exit 77
fi
cd "$root" || exit 1
"$buf" --version
if ! "$buf" lint --error-format=text; then
  echo "buf lint reported findings in proto/ (see above)" >&2
  exit 1
fi
echo "buf lint: no findings"
