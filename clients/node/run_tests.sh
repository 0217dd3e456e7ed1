#!/usr/bin/env bash
# ctest driver: the Node client's tests (node --test) against the real metaopt-server.
# Usage: run_tests.sh SERVER_BINARY. Exits 77 (ctest SKIP_RETURN_CODE) when node is older than
# 18 or the npm packages are not installed (scripts/install-deps.sh installs them).
set -uo pipefail

dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
server="${1:?usage: run_tests.sh SERVER_BINARY}"
node_major="$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)"
if ((node_major < 18)); then
  echo "SKIPPED: node >= 18 is needed for node --test (have: $(node --version 2>/dev/null || echo none))"
  exit 77
fi
if [[ ! -d "$dir/node_modules/@grpc/grpc-js" || ! -d "$dir/node_modules/@grpc/proto-loader" ]]; then
  echo "SKIPPED: $dir/node_modules is missing; run scripts/install-deps.sh (npm install in clients/node)"
  exit 77
fi
cd "$dir" || exit 1
export METAOPT_SERVER="$server"
exec node --test test/*.test.js
