#!/usr/bin/env bash
# Measures metaopt-loadgen throughput and Suggest latency against 1, 2 and 3 metaopt-server
# replicas on one PostgreSQL database, and one server on SQLite for comparison (docs/reliability.md,
# "Several replicas on PostgreSQL"). Starts its own PostgreSQL (Debian's binaries) in a temporary
# directory; as root it runs it as the user "postgres". Prints one CSV row per run.
#
#   tools/loadgen/replicas_bench.sh [BUILD_DIR] [SECONDS] [CLIENTS]
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-$root/build}"
seconds="${2:-20}"
clients="${3:-6}"
server="$build/server/metaopt-server"
loadgen="$build/tools/loadgen/metaopt-loadgen"
work="$(mktemp -d)"
pids=()
stop_servers() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
  pids=()
}
cleanup() {
  stop_servers
  stop_postgres
  rm -rf "$work"
}
trap cleanup EXIT

# shellcheck source=tools/loadgen/start_postgres.sh
source "$root/tools/loadgen/start_postgres.sh"

# run LABEL DB REPLICAS ALGORITHM: starts the replicas, runs the load, prints a CSV row.
run() {
  local label="$1" db="$2" replicas="$3" algorithm="$4" servers=() port
  for ((i = 0; i < replicas; i++)); do
    port="$(free_port)"
    "$server" --listen="127.0.0.1:$port" --db="$db" --models="$work/no-models" \
      --models-poll-interval=0 --log-level=warning 2>>"$work/server.log" &
    pids+=("$!")
    servers+=("127.0.0.1:$port")
    for ((t = 0; t < 100; t++)); do
      "$build/clients/cpp/metaoptctl" --server "127.0.0.1:$port" health >/dev/null 2>&1 && break
      sleep 0.1
    done
  done
  local list
  list="$(IFS=,; echo "${servers[*]}")"
  "$loadgen" --server="$list" --clients="$clients" --studies=4 --algorithm="$algorithm" \
    --duration="$seconds" --quiet --format=json --timeout=60 >"$work/report.json"
  python3 - "$work/report.json" "$label" "$replicas" "$algorithm" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
suggest = {rpc["rpc"]: rpc for rpc in report["rpcs"]}["Suggest"]
latency = suggest["latency_ms"]
print(f"{sys.argv[2]},{sys.argv[3]},{sys.argv[4]},{report['observations_per_second']:.1f},"
      f"{latency['p50']:.2f},{latency['p99']:.2f},{suggest['errors']}")
PY
  stop_servers
}

echo "storage,replicas,algorithm,observations_per_s,suggest_p50_ms,suggest_p99_ms,suggest_errors"
n=0
for algorithm in random gp; do
  n=$((n + 1))
  run sqlite "$work/sqlite-$n.db" 1 "$algorithm"
  for replicas in 1 2 3; do
    n=$((n + 1))
    "${as_pg[@]}" "$pg_bin/createdb" -h 127.0.0.1 -p "$pg_port" -U metaopt "bench$n"
    run postgresql "postgresql://metaopt@127.0.0.1:$pg_port/bench$n" "$replicas" "$algorithm"
  done
done
