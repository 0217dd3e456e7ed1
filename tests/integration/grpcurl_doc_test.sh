#!/usr/bin/env bash
# ctest driver: runs the grpcurl walkthrough of docs/grpcurl.md with `buf curl` against the real
# server (grpcurl_doc_test.mjs). Usage: grpcurl_doc_test.sh SERVER_BINARY REPOSITORY_ROOT.
# Exits 77 (ctest SKIP_RETURN_CODE) when node is older than 18 or the buf CLI is not installed.
set -uo pipefail

server="${1:?usage: grpcurl_doc_test.sh SERVER_BINARY REPOSITORY_ROOT}"
root="${2:?usage: grpcurl_doc_test.sh SERVER_BINARY REPOSITORY_ROOT}"
node_major="$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)"
if ((node_major < 18)); then
  echo "SKIPPED: node >= 18 is needed for node --test (have: $(node --version 2>/dev/null || echo none))"
  exit 77
fi
if [[ ! -x "$root/tools/node_modules/.bin/buf" ]]; then
  echo "SKIPPED: $root/tools/node_modules/.bin/buf not found; run scripts/install-deps.sh"
  exit 77
fi
export METAOPT_SERVER="$server"
export BUF="$root/tools/node_modules/.bin/buf"
exec node --test "$root/tests/integration/grpcurl_doc_test.mjs"
