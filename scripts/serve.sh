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

# The dashboard on 127.0.0.1:8080 unless the arguments say where (--http-listen[=]HOST:PORT).
args=("$@")
http_listen=""
for ((i = 0; i < ${#args[@]}; i++)); do
  case "${args[i]}" in
    --http-listen=*) http_listen="${args[i]#--http-listen=}" ;;
    --http-listen) http_listen="${args[i + 1]:-}" ;;
  esac
done
if [[ -z "$http_listen" ]]; then
  http_listen=127.0.0.1:8080
  args+=("--http-listen=$http_listen")
fi
host="${http_listen%:*}"
port="${http_listen##*:}"
[[ "$host" == 0.0.0.0 || "$host" == 127.0.0.1 ]] && host=localhost
if [[ "$port" == 0 ]]; then
  echo "serve: dashboard on a free port: the server logs 'dashboard at http://...' (docs/dashboard.md)"
else
  echo "serve: dashboard at http://$host:$port/ (docs/dashboard.md)"
fi
exec "${METAOPT_BUILD_DIR:-$root/build}/server/metaopt-server" "${args[@]}"
