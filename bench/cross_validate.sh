#!/usr/bin/env bash
# K-fold cross-validation of a meta-learned method over a meta-dataset's train and valid tasks
# (docs/benchmarks.md, "Choosing settings by cross-validation"). A meta-dataset ships a handful of valid tasks,
# too few to choose between variants whose differences are a few tasks' worth; here every train or
# valid task is held out once. Fold k: a copy of the data (symlinks, only tasks.csv rewritten)
# whose valid split is every K-th of the train and valid tasks in name order (offset k), the rest
# its train split; the test split is left as it is and never read. A model is meta-trained on the
# fold's train split (its valid split picks the epoch, as the bundled recipe does), then
# metaopt-bench replays the fold's valid tasks. The folds' per-task regrets are pooled into one
# summary, report and plots (metaopt-bench --pool: mean and standard error over all tasks x seeds,
# as metaopt-bench's own).
#
#   bench/cross_validate.sh [DATA_DIR] [OUT_DIR]
#
# Defaults: $METAOPT_DATA/sklearn-pipelines (METAOPT_DATA: the meta-datasets folder,
# docs/meta_datasets.md), /tmp/cross-validate. Environment: METAOPT_BUILD_DIR
# (build), FOLDS (4), MODEL_NAME (the data folder's name + "-deeppipe-newalg"), TRAIN_ARGS (the
# bundled sklearn-pipelines-deeppipe-newalg recipe, docs/models.md), METHODS
# (gp,deeppipe-newalg), TRIALS (25), SEEDS (5), JOBS (2), TRAIN_JOBS (2 folds trained at once),
# REUSE_MODELS (1: keep a fold's trained model when OUT_DIR already has it, so that policy
# variants built into another metaopt-bench are compared on the same models), BENCH_DIR (bench:
# the name of each fold's and the pooled report folder, one per variant), DESIGN_ARGS (empty;
# metaopt-train flags that add a task design to each fold's trained model, e.g. `--kind metabu
# --design nearest --neighbours 5 --blend interleave`: run on a copy of the fold's registry,
# registry-BENCH_DIR, which that variant's bench reads, so that design variants share one trained
# model per fold), BENCH_ARGS (empty; more metaopt-bench flags, e.g. `--dataset-samples DIR` for a
# design or method that reads the tasks' raw samples). Writes
# OUT_DIR/fold-K/{DATA,registry,BENCH_DIR}/ and OUT_DIR/BENCH_DIR/ (summary.csv, per_task.csv,
# report.md, SVG plots).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${METAOPT_BUILD_DIR:-$root/build}"
data="$(cd "${1:-${METAOPT_DATA:-$root/../shared/data}/sklearn-pipelines}" && pwd)"
out="${2:-/tmp/cross-validate}"
name="$(basename "$data")"
folds="${FOLDS:-4}"
model="${MODEL_NAME:-$name-deeppipe-newalg}"
train_args="${TRAIN_ARGS:---kind deeppipe --threads 1 --seed 0 --epochs 40 --lr 3e-3 --hidden 128 --encoder-layers 1 --exclude-algorithm estimator/mlp}"
methods="${METHODS:-gp,deeppipe-newalg}"
trials="${TRIALS:-25}"
seeds="${SEEDS:-5}"
jobs="${JOBS:-2}"
train_jobs="${TRAIN_JOBS:-2}"
reuse="${REUSE_MODELS:-1}"
bench_dir="${BENCH_DIR:-bench}"
design_args="${DESIGN_ARGS:-}"
bench_args="${BENCH_ARGS:-}"
train_bin="$build/tools/train/metaopt-train"
bench_bin="$build/bench/metaopt-bench"

[[ -f "$data/tasks.csv" ]] || { echo "cross_validate.sh: no tasks.csv in $data" >&2; exit 1; }
for bin in "$train_bin" "$bench_bin"; do
  [[ -x "$bin" ]] || { echo "cross_validate.sh: build $bin first" >&2; exit 1; }
done
[[ "$folds" =~ ^[0-9]+$ && "$folds" -ge 2 ]] || { echo "cross_validate.sh: FOLDS=$folds: need an integer >= 2" >&2; exit 1; }
mkdir -p "$out"
out="$(cd "$out" && pwd)"

# The fold copies: every file but tasks.csv linked, tasks.csv rewritten.
for ((k = 0; k < folds; ++k)); do
  dir="$out/fold-$k/$name"
  mkdir -p "$dir"
  for f in "$data"/*; do
    [[ "$(basename "$f")" == tasks.csv || -L "$dir/$(basename "$f")" ]] || ln -sfn "$f" "$dir/$(basename "$f")"
  done
  # The fold of a train or valid task: its index in name order, modulo FOLDS (a function of the
  # task list alone). Rows stay in their order: evaluations.csv follows it.
  awk -F, -v OFS=, -v k="$k" -v folds="$folds" '
    NR == FNR { if (FNR > 1 && ($3 == "train" || $3 == "valid")) pool[n++] = $1; next }
    FNR == 1 {
      for (i = 0; i < n; ++i) { below = 0; for (j = 0; j < n; ++j) if (pool[j] < pool[i]) ++below; fold[pool[i]] = below % folds }
      print; next
    }
    $1 in fold { $3 = (fold[$1] == k) ? "valid" : "train" }
    { print }' "$data/tasks.csv" "$data/tasks.csv" >"$dir/tasks.csv.new"
  # Replaced only when it changes, and atomically: another run may be reading it.
  if cmp -s "$dir/tasks.csv.new" "$dir/tasks.csv"; then rm "$dir/tasks.csv.new"; else mv "$dir/tasks.csv.new" "$dir/tasks.csv"; fi
  held="$(awk -F, '$3 == "valid" { printf "%s%s", s, $1; s = " " }' "$dir/tasks.csv")"
  echo "fold $k holds out: $held" >&2
done

# Meta-training, TRAIN_JOBS folds at a time.
train_fold() {
  local k="$1" registry="$out/fold-$1/registry"
  if [[ "$reuse" == 1 && -d "$registry/$model" ]]; then
    echo "fold $k: reusing $registry/$model" >&2
    return 0
  fi
  rm -rf "${registry:?}/${model:?}"
  # shellcheck disable=SC2086  # TRAIN_ARGS is a flag list
  "$train_bin" $train_args --data "$out/fold-$k/$name" --registry "$registry" --name "$model" \
    --quiet >"$out/fold-$k/train.log" 2>&1 || { echo "fold $k: metaopt-train failed:" >&2; cat "$out/fold-$k/train.log" >&2; return 1; }
  echo "fold $k: trained $(grep -m1 -o "$model@[0-9]*" "$out/fold-$k/train.log" || echo "$model")" >&2
}
pids=()
for ((k = 0; k < folds; ++k)); do
  train_fold "$k" &
  pids+=($!)
  if ((${#pids[@]} >= train_jobs)); then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
done
for pid in "${pids[@]}"; do wait "$pid"; done

for ((k = 0; k < folds; ++k)); do
  registry="$out/fold-$k/registry"
  if [[ -n "$design_args" ]]; then
    # The variant's registry: the fold's trained model plus the design, as a new version. A
    # design archives every train and valid task it reads, so it reads a copy of the fold whose
    # held-out tasks are marked test: a held-out task must not find itself.
    registry="$out/fold-$k/registry-$bench_dir"
    rm -rf "$registry"
    cp -r "$out/fold-$k/registry" "$registry"
    design_data="$out/fold-$k/design/$name"
    mkdir -p "$design_data"
    for f in "$data"/*; do
      [[ "$(basename "$f")" == tasks.csv ]] || ln -sfn "$f" "$design_data/$(basename "$f")"
    done
    awk -F, -v OFS=, 'FNR > 1 && $3 == "valid" { $3 = "test" } { print }' \
      "$out/fold-$k/$name/tasks.csv" >"$design_data/tasks.csv"
    # shellcheck disable=SC2086  # DESIGN_ARGS is a flag list
    "$train_bin" $design_args --data "$design_data" --registry "$registry" --name "$model" \
      --quiet >"$out/fold-$k/design-$bench_dir.log" 2>&1 ||
      { echo "fold $k: the design failed:" >&2; cat "$out/fold-$k/design-$bench_dir.log" >&2; exit 1; }
  fi
  echo "fold $k: metaopt-bench $methods" >&2
  # shellcheck disable=SC2086  # BENCH_ARGS is a flag list
  "$bench_bin" --data "$out/fold-$k/$name" --split valid --methods "$methods" --trials "$trials" \
    --seeds "$seeds" --registry "$registry" --jobs "$jobs" --quiet $bench_args \
    --out "$out/fold-$k/$bench_dir"
done

# Pooled: every fold's per_task.csv into one summary, report and plots.
pooled=()
for ((k = 0; k < folds; ++k)); do pooled+=("$out/fold-$k/$bench_dir"); done
"$bench_bin" --pool "$(IFS=,; echo "${pooled[*]}")" --out "$out/$bench_dir" --quiet \
  --pool-name "$name, $folds-fold cross-validation over the train and valid tasks"
echo "wrote $out/$bench_dir/report.md" >&2
awk -F, '$2 == 5 || $2 == 10 || $2 == 25 || $2 == 50' "$out/$bench_dir/summary.csv" >&2
