#!/usr/bin/env bash
# ctest driver of the dashboard's real-browser test.
#   run_browser_test.sh SERVER_BINARY DASHBOARD_DIST
# Exits 77 (ctest SKIP_RETURN_CODE) only when Debian's chromium is absent; anything else that
# is missing (node, the npm packages, the built page) fails with what to run.
set -uo pipefail

dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
server="${1:?usage: run_browser_test.sh SERVER_BINARY DASHBOARD_DIST}"
dist="${2:?usage: run_browser_test.sh SERVER_BINARY DASHBOARD_DIST}"
chromium="${METAOPT_CHROMIUM:-/usr/bin/chromium}"
if [[ ! -x "$chromium" ]]; then
  echo "SKIPPED: no chromium at $chromium (apt-get install chromium; scripts/install-deps.sh does)"
  exit 77
fi
node_major="$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)"
if ((node_major < 18)); then
  echo "FAILED: node >= 18 is needed (have: $(node --version 2>/dev/null || echo none))"
  exit 1
fi
for need in "$dir/node_modules/playwright-core" "$dir/../clients/node/node_modules/@grpc/grpc-js"; do
  if [[ ! -d "$need" ]]; then
    echo "FAILED: $need is missing; run scripts/install-deps.sh"
    exit 1
  fi
done
if [[ ! -f "$dist/index.html" ]]; then
  echo "FAILED: the dashboard is not built ($dist/index.html); run scripts/build.sh"
  exit 1
fi
export METAOPT_SERVER="$server" METAOPT_DASHBOARD_DIST="$dist" METAOPT_CHROMIUM="$chromium"
export METAOPT_SCREENSHOTS="${METAOPT_SCREENSHOTS:-$(dirname "$dist")/screenshots}"
exec node "$dir/test/browser_test.mjs"
