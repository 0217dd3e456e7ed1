#!/usr/bin/env bash
# The history loop of docs/benchmarks.md ("Learning from the service's own history"): a
# metaopt-server with --learn-from-history and an empty model registry runs GP studies over the
# train tasks of a meta-dataset (metaopt-bench --keep-studies leaves them on the server as a
# team's history), learns a portfolio and a DeepPipe model from them by itself, and then the test
# tasks are benchmarked with GP against DeepPipe bound to the learned model.
#
#   bench/learn_from_history.sh [DATA_DIR] [OUT_DIR]
#
# Defaults: $METAOPT_DATA/adaboost (METAOPT_DATA: the meta-datasets folder,
# docs/meta_datasets.md), /tmp/learn-from-history. Environment: METAOPT_BUILD_DIR
# (build), HISTORY_TRIALS (50) and HISTORY_SEEDS (1) of the history runs, TEST_TRIALS (50),
# TEST_SEEDS (5), JOBS (2). Writes OUT_DIR/history/ and OUT_DIR/test/ (metaopt-bench reports),
# OUT_DIR/server.log and OUT_DIR/models.json (ListModels after learning).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${METAOPT_BUILD_DIR:-$root/build}"
data="${1:-${METAOPT_DATA:-$root/../shared/data}/adaboost}"
out="${2:-/tmp/learn-from-history}"
history_trials="${HISTORY_TRIALS:-50}"
history_seeds="${HISTORY_SEEDS:-1}"
test_trials="${TEST_TRIALS:-50}"
test_seeds="${TEST_SEEDS:-5}"
jobs="${JOBS:-2}"
server_bin="$build/server/metaopt-server"
bench_bin="$build/bench/metaopt-bench"
ctl_bin="$build/clients/cpp/metaoptctl"

if [[ ! -f "$data/tasks.csv" ]]; then
  echo "learn_from_history.sh: no meta-dataset at $data (tasks.csv missing)" >&2
  exit 1
fi
for bin in "$server_bin" "$bench_bin" "$ctl_bin"; do
  [[ -x "$bin" ]] || { echo "learn_from_history.sh: build $bin first" >&2; exit 1; }
done

# One study per train task and seed: the server learns once all of them are completed.
train_tasks="$(awk -F, 'NR > 1 && $3 == "train"' "$data/tasks.csv" | wc -l)"
studies=$((train_tasks * history_seeds))

mkdir -p "$out"
work="$(mktemp -d)"
server_pid=""
cleanup() {
  if [[ -n "$server_pid" ]]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

"$server_bin" --listen=127.0.0.1:0 --db="$work/history.db" --models="$work/models" \
  --learn-from-history --learn-min-studies="$studies" --learn-min-trials="$history_trials" \
  >"$out/server.log" 2>&1 &
server_pid=$!
port=""
for _ in $(seq 600); do
  port="$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$out/server.log" | head -1)"
  [[ -n "$port" ]] && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$out/server.log" >&2; exit 1; }
  sleep 0.1
done
[[ -n "$port" ]] || { echo "learn_from_history.sh: the server did not start" >&2; exit 1; }
address="127.0.0.1:$port"
echo "server on $address; history: $studies GP studies of $history_trials trials" >&2

"$bench_bin" --data "$data" --split train --methods gp --trials "$history_trials" \
  --seeds "$history_seeds" --jobs "$jobs" --server "$address" --keep-studies --quiet \
  --out "$out/history"

# The learner trains in the background at low priority; wait for its models.
learned=""
for _ in $(seq 7200); do
  if grep -q "learned from history" "$out/server.log"; then learned=yes; break; fi
  if grep -q "from history failed" "$out/server.log"; then break; fi
  sleep 1
done
if [[ -z "$learned" ]]; then
  echo "learn_from_history.sh: the server learned no model; its log:" >&2
  tail -20 "$out/server.log" >&2
  exit 1
fi
"$ctl_bin" --server="$address" list-models >"$out/models.json"
grep "learned from history" "$out/server.log" >&2

"$bench_bin" --data "$data" --split test --methods gp,deeppipe --trials "$test_trials" \
  --seeds "$test_seeds" --jobs "$jobs" --server "$address" --quiet --out "$out/test"
echo "wrote $out/test/report.md" >&2
