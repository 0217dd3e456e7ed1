#!/usr/bin/env bash
# Collects the sklearn-pipelines space over the extra datasets through the service and writes the
# meta-dataset folder data/sklearn-pipelines-collected (docs/meta_datasets.md, "Collecting a
# meta-dataset through the service").
#
#   data/prep/collect/collect_extra.sh [EXTRA_DIR] [SKLEARN_PIPELINES_DIR]
#
# Defaults: $METAOPT_DATA/sklearn-pipelines-extra and $METAOPT_DATA/sklearn-pipelines (whose 586
# configurations are the catalogue). Exports the extra R datasets as tables
# (data/prep/collect/export_extra_tables.R running the collection's own export_extra.R; the R packages
# its README names), starts a metaopt-server on 127.0.0.1:$PORT over $WORK/metaopt.db, runs
# `python -m metaopt.collect run` with $WORKERS workers, cheapest datasets first, then writes the
# folder. Killed, it resumes: run it again (the database keeps every observation; tables are
# exported once). Environment: METAOPT_BUILD_DIR (build), WORK (build/collect), PORT (50071),
# WORKERS (2), OUT (data/sklearn-pipelines-collected), ONLY (comma-separated tasks: a subset).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
build="${METAOPT_BUILD_DIR:-$root/build}"
data_root="${METAOPT_DATA:-$root/../shared/data}"
extra="$(cd "${1:-$data_root/sklearn-pipelines-extra}" && pwd)"
catalogue="$(cd "${2:-$data_root/sklearn-pipelines}" && pwd)"
work="${WORK:-$build/collect}"
port="${PORT:-50071}"
workers="${WORKERS:-2}"
out="${OUT:-$root/data/sklearn-pipelines-collected}"
python=/usr/bin/python3
export PYTHONPATH="$build/clients/python${PYTHONPATH:+:$PYTHONPATH}"

server="$build/server/metaopt-server"
[[ -x "$server" ]] || { echo "collect_extra.sh: build $server first (scripts/build.sh)" >&2; exit 1; }
mkdir -p "$work"

tables="$work/tables"
if [[ ! -f "$tables/manifest.csv" ]]; then
  echo "collect_extra.sh: exporting the extra datasets into $tables" >&2
  rm -rf "$tables.partial"
  Rscript "$root/data/prep/collect/export_extra_tables.R" "$extra/export_extra.R" "$tables.partial" --new-only
  mv "$tables.partial" "$tables"
fi

# Cheapest first (rows after the 2,000-row subsample times columns), so that a run stopped early
# has collected the most datasets.
order="${ONLY:-$(awk -F, 'NR > 1 && $10 == 0 {
    rows = ($4 > 2000) ? 2000 : $4; pkg = $1; gsub(/\./, "", pkg)
    printf "%d %s_%s\n", rows * ($5 + 1), pkg, $2 }' "$extra/extra_datasets.csv" |
  sort -n | awk '{ printf "%s%s", s, $2; s = "," }')}"

mkdir -p "$work/models"
"$server" --listen "127.0.0.1:$port" --db "$work/metaopt.db" --models "$work/models" \
  >"$work/server.log" 2>&1 &
server_pid=$!
trap 'kill "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null || true' EXIT
for _ in $(seq 100); do grep -q "listening on" "$work/server.log" && break; sleep 0.1; done
grep -q "listening on" "$work/server.log" || { cat "$work/server.log" >&2; exit 1; }

started=$(date +%s)
"$python" -m metaopt.collect run --server "127.0.0.1:$port" --catalogue "$catalogue" \
  --datasets "$tables" --only "$order" --workers "$workers" --out "$out"
echo "collect_extra.sh: done in $(( ($(date +%s) - started) / 60 )) min; wrote $out" >&2
