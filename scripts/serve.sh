#!/usr/bin/env bash
# Installs what the server needs (install-deps.sh's runtime and build sets: no R, chromium, Go,
# Node or PostgreSQL server), builds only the server, its dashboard, metaoptctl, metaopt-train, the
# C++ example and the Python client, and runs the server in the foreground.
# Defaults: --listen=127.0.0.1:50051 --db=./metaopt.db --models=./models
# --http-listen=127.0.0.1:8080 (the dashboard, docs/dashboard.md); arguments override them.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/scripts/install-deps.sh" runtime build
# Without the test set (GoogleTest, Google Benchmark) configure the build without tests; a build
# directory that scripts/test.sh configured keeps them.
installed="$(dpkg-query -W -f='${Status}\n' libgtest-dev libgmock-dev libbenchmark-dev 2>/dev/null |
  grep -c '^install ok installed$' || true)"
if [[ "$installed" != 3 ]]; then
  export METAOPT_CMAKE_ARGS="${METAOPT_CMAKE_ARGS:-} -DMETAOPT_BUILD_TESTS=OFF -DMETAOPT_BUILD_BENCHMARKS=OFF"
fi
bash "$root/scripts/build.sh" --target metaopt-server dashboard metaoptctl metaopt-train \
  ask_tell_example metaopt_python
echo "serve: installed and built in $((SECONDS / 60)) min $((SECONDS % 60)) s"

# flag_value NAME: the value of --NAME[=]VALUE among the arguments, or "".
args=("$@")
flag_value() {
  local i value=""
  for ((i = 0; i < ${#args[@]}; i++)); do
    case "${args[i]}" in
      "--$1="*) value="${args[i]#--"$1"=}" ;;
      "--$1") value="${args[i + 1]:-}" ;;
    esac
  done
  echo "$value"
}
# gRPC on 127.0.0.1:50051 and the dashboard on 127.0.0.1:8080 unless the arguments say where.
listen="$(flag_value listen)"
if [[ -z "$listen" ]]; then
  listen=127.0.0.1:50051
  args+=("--listen=$listen")
fi
http_listen="$(flag_value http-listen)"
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
if [[ -n "$(flag_value tokens)" ]]; then
  :
elif [[ "${listen%:*}" == 127.0.0.1 || "${listen%:*}" == localhost || "${listen%:*}" == "[::1]" ]]; then
  echo "serve: open to this machine only, without authentication; for a team: bash scripts/serve.sh" \
    "--listen=0.0.0.0:50051 --tls-cert=server.pem --tls-key=server.key --tokens=tokens.txt" \
    "(docs/security.md, \"Running it\")"
else
  echo "serve: warning: $listen without --tokens: whoever reaches it reads and changes every" \
    "study (docs/security.md)"
fi
exec "${METAOPT_BUILD_DIR:-$root/build}/server/metaopt-server" "${args[@]}"
