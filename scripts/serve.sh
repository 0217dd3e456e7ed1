#!/usr/bin/env bash
# Installs dependencies, builds, and runs the server in the foreground.
# Defaults: --listen=0.0.0.0:50051 --db=./metaopt.db --models=./models
# --http-listen=127.0.0.1:8080 (the dashboard, docs/dashboard.md); arguments override them.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/scripts/install-deps.sh"
# The server, its dashboard and the user-facing tools the README uses (not the tests).
bash "$root/scripts/build.sh" --target metaopt-server dashboard metaoptctl metaopt-train \
  metaopt-bench ask_tell_example metaopt_python metaopt-loadgen

http_listen=127.0.0.1:8080
for arg in "$@"; do
  case "$arg" in
    --http-listen=*) http_listen="${arg#--http-listen=}" ;;
    --http-listen) http_listen="" ;;  # given as two words: the server reads it
  esac
done
args=("$@")
if ! printf '%s\n' "$@" | grep -q '^--http-listen'; then args+=("--http-listen=$http_listen"); fi
if [[ -n "$http_listen" ]]; then
  host="${http_listen%:*}"
  [[ "$host" == 0.0.0.0 || "$host" == 127.0.0.1 ]] && host=localhost
  echo "serve: dashboard at http://$host:${http_listen##*:}/ (docs/dashboard.md)"
fi
exec "${METAOPT_BUILD_DIR:-$root/build}/server/metaopt-server" "${args[@]}"
