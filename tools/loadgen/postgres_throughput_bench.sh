#!/usr/bin/env bash
# throughput_bench.sh against a PostgreSQL server of its own (start_postgres.sh), a fresh database
# per run, for builds run in turn (docs/reliability.md, "One sync per observation"). The CPU
# columns count metaopt-server and metaopt-loadgen, not PostgreSQL's processes.
#
#   tools/loadgen/postgres_throughput_bench.sh CLIENTS SECONDS ROUNDS LABEL=BUILD_DIR...
#
# Each round runs every LABEL=BUILD_DIR once, in the order given; prints throughput_bench.sh's CSV.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
clients="${1:?usage: postgres_throughput_bench.sh CLIENTS SECONDS ROUNDS LABEL=BUILD_DIR...}"
seconds="${2:?SECONDS}"
rounds="${3:?ROUNDS}"
shift 3
work="$(mktemp -d)"
cleanup() {
  stop_postgres
  rm -rf "$work"
}
trap cleanup EXIT
# shellcheck source=tools/loadgen/start_postgres.sh
source "$root/tools/loadgen/start_postgres.sh"

header=--header
n=0
for ((round = 0; round < rounds; round++)); do
  for build in "$@"; do
    n=$((n + 1))
    "${as_pg[@]}" "$pg_bin/createdb" -h 127.0.0.1 -p "$pg_port" -U metaopt "bench$n"
    METAOPT_BENCH_DB="postgresql://metaopt@127.0.0.1:$pg_port/bench$n" \
      "$root/tools/loadgen/throughput_bench.sh" $header "${build#*=}/server/metaopt-server" \
      "${build#*=}/tools/loadgen/metaopt-loadgen" "$clients" "$seconds" "${build%%=*}"
    header=""
  done
done
