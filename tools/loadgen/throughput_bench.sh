#!/usr/bin/env bash
# Durable-observation throughput and its CPU cost (docs/reliability.md, "Group commit and no
# rejection under load"): a fresh metaopt-server on an empty SQLite database, then
# metaopt-loadgen (RANDOM, 4 continuous parameters, count 1, 4 studies) against it. Prints one
# CSV row per run: the load generator's figures, the CPU seconds (user + system) of the server
# and of the load generator as the kernel accounts them, and their sum per acknowledged
# observation, the robust figure on a shared machine; then each process's share of that CPU and
# the server's context switches (all threads, voluntary and not) per observation; then the write
# transactions committed and the WAL syncs per observation (the server's
# metaopt_sqlite_commit_duration_seconds and metaopt_sqlite_sync_duration_seconds counts; empty
# for a server without the second).
#
# METAOPT_BENCH_DB, if set, is the server's --db (a PostgreSQL URI, say; its database should be
# empty) instead of a fresh SQLite file.
#
#   tools/loadgen/throughput_bench.sh [--header] SERVER LOADGEN CLIENTS SECONDS [LABEL [CALLS]]
#
# CALLS is metaopt-loadgen's --calls: suggest-observe (the default), or a probe of the fixed cost
# of one RPC that writes nothing (list-models, get-study); for a probe the "observation" columns
# count the probe's calls, and its latencies fill the Suggest columns.
#
# SERVER and LOADGEN are the two binaries (build/server/metaopt-server,
# build/tools/loadgen/metaopt-loadgen), so that two builds can be run in turn.
set -euo pipefail

if [[ "${1:-}" == --header ]]; then
  echo "label,clients,observations_per_s,suggest_p50_ms,suggest_p99_ms,observe_p50_ms,observe_p99_ms,failed_calls,calls,server_cpu_s,loadgen_cpu_s,cpu_per_observation_ms,load_average,server_ms_per_observation,loadgen_ms_per_observation,server_context_switches_per_observation,commits_per_observation,syncs_per_observation"
  shift
fi
server="${1:?usage: throughput_bench.sh [--header] SERVER LOADGEN CLIENTS SECONDS [LABEL]}"
loadgen="${2:?LOADGEN}"
clients="${3:?CLIENTS}"
seconds="${4:?SECONDS}"
label="${5:-run}"
calls=()  # metaopt-loadgen's default unless CALLS is given (older builds lack --calls)
if [[ -n "${6:-}" ]]; then calls=(--calls="$6"); fi
work="$(mktemp -d)"
server_pid=""
cleanup() {
  if [[ -n "$server_pid" ]]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
port="$(free_port)"
metrics_port="$(free_port)"
"$server" --listen="127.0.0.1:$port" --db="${METAOPT_BENCH_DB:-$work/load.db}" \
  --models="$work/no-models" --models-poll-interval=0 --log-level=error \
  --metrics-listen="127.0.0.1:$metrics_port" 2>>"$work/server.log" &
server_pid=$!
for ((t = 0; t < 200; t++)); do
  grep -q "listening" "$work/server.log" 2>/dev/null && break
  python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 0.1)' \
    "$port" 2>/dev/null && break
  sleep 0.05
done

# CPU seconds (user + system) of process $1 so far, from /proc/PID/stat.
cpu_of() {
  python3 - "$1" <<'PY'
import os, sys
fields = open(f"/proc/{sys.argv[1]}/stat").read().rsplit(")", 1)[1].split()
print((int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"))
PY
}

# Context switches of all the server's threads so far.
switches_of() {
  cat /proc/"$1"/task/*/status 2>/dev/null | awk '/ctxt_switches/ { n += $2 } END { print n }'
}

server_before="$(cpu_of "$server_pid")"
switches_before="$(switches_of "$server_pid")"
# The load generator's own CPU: the shell's `times` after it, in a subshell that runs nothing else.
# (`times` runs in that subshell itself: in a pipeline it would count another process's children.)
loadgen_times="$(
  "$loadgen" --server="127.0.0.1:$port" --clients="$clients" --studies=4 --duration="$seconds" \
    "${calls[@]}" --quiet --format=json >"$work/report.json"
  times
)"
loadgen_cpu="$(tail -1 <<<"$loadgen_times" | python3 -c '
import re, sys
print(sum(int(m) * 60 + float(s) for m, s in re.findall(r"(\d+)m([\d.]+)s", sys.stdin.read())))')"
server_after="$(cpu_of "$server_pid")"
switches_after="$(switches_of "$server_pid")"
load="$(cut -d' ' -f1 /proc/loadavg)"
python3 -c 'import sys, urllib.request
print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())' \
  "http://127.0.0.1:$metrics_port/metrics" >"$work/metrics.txt" 2>/dev/null || true
python3 - "$work/report.json" "$label" "$clients" "$server_before" "$server_after" \
  "$loadgen_cpu" "$load" "$switches_before" "$switches_after" "$work/metrics.txt" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
label, clients = sys.argv[2], sys.argv[3]
server_cpu = float(sys.argv[5]) - float(sys.argv[4])
loadgen_cpu = float(sys.argv[6])
switches = int(sys.argv[9]) - int(sys.argv[8])
rpcs = {rpc["rpc"]: rpc for rpc in report["rpcs"]}
if "Suggest" in rpcs:
    s, o = rpcs["Suggest"], rpcs["Observe"]
    observations = report["observations"]
    rate = report["observations_per_second"]
else:  # a probe: one RPC, each call counted as an observation
    (s,) = rpcs.values()
    o = {"ok": 0, "errors": 0, "latency_ms": {"p50": float("nan"), "p99": float("nan")}}
    observations = s["ok"]
    rate = report["ops_per_second"]
failed = s["errors"] + o["errors"]
calls = failed + s["ok"] + o["ok"]
def per_obs(x):
    return x / observations if observations else float("nan")
def count(family):
    for line in open(sys.argv[10]):
        if line.startswith(family + "_count "):
            return f"{per_obs(float(line.split()[1])):.2f}"
    return ""
# (the counts include the load generator's CreateStudy calls: a few per run)
print(f"{label},{clients},{rate:.1f},"
      f"{s['latency_ms']['p50']:.2f},{s['latency_ms']['p99']:.2f},"
      f"{o['latency_ms']['p50']:.2f},{o['latency_ms']['p99']:.2f},{failed},{calls},"
      f"{server_cpu:.2f},{loadgen_cpu:.2f},{per_obs(server_cpu + loadgen_cpu) * 1000:.3f},"
      f"{sys.argv[7]},{per_obs(server_cpu) * 1000:.3f},{per_obs(loadgen_cpu) * 1000:.3f},"
      f"{per_obs(switches):.1f},{count('metaopt_sqlite_commit_duration_seconds')},"
      f"{count('metaopt_sqlite_sync_duration_seconds')}")
PY
