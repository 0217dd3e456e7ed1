#!/usr/bin/env bash
# Installs dependencies, builds, and runs the server in the foreground.
# Defaults: --listen=0.0.0.0:50051 --db=./metaopt.db --models=./models; arguments override them.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/scripts/install-deps.sh"
# The server and the user-facing tools the README uses (not the tests).
bash "$root/scripts/build.sh" --target metaopt-server metaoptctl metaopt-train metaopt-bench \
  ask_tell_example metaopt_python metaopt-loadgen
exec "${METAOPT_BUILD_DIR:-$root/build}/server/metaopt-server" "$@"
