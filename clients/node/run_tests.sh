#!/usr/bin/env bash
# ctest driver for the Node client.
#   run_tests.sh SERVER_BINARY   node --test against the real metaopt-server
#   run_tests.sh --types         tsc: src/index.d.ts compiles and types test/types_check.ts
# Exits 77 (ctest SKIP_RETURN_CODE) when node is older than 18 or the npm packages are not
# installed (scripts/install-deps.sh installs them).
set -uo pipefail

dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mode="${1:?usage: run_tests.sh SERVER_BINARY | --types}"
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
if [[ "$mode" == --types ]]; then
  if [[ ! -f node_modules/typescript/bin/tsc ]]; then
    echo "SKIPPED: typescript is not installed in $dir/node_modules (npm ci installs it)"
    exit 77
  fi
  node node_modules/typescript/bin/tsc -p test/tsconfig.json && echo "tsc: the declarations type-check"
  exit
fi
export METAOPT_SERVER="$mode"
exec node --test test/*.test.js
