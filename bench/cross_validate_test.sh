#!/usr/bin/env bash
# ctest driver: bench/cross_validate.sh end to end on the bundled learning-curves folder (8 train
# and valid tasks, 8 test tasks), 2 folds, a portfolio model per fold, random search and the
# portfolio start: every train and valid task is held out exactly once, the test split never,
# and the pooled report covers the 8 held-out tasks for both methods.
#
#   bench/cross_validate_test.sh BUILD_DIR
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$(cd "${1:?usage: cross_validate_test.sh BUILD_DIR}" && pwd)"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

METAOPT_BUILD_DIR="$build" FOLDS=2 TRAIN_ARGS="--kind portfolio --seed 0" \
  MODEL_NAME=learning-curves-portfolio METHODS=random,portfolio TRIALS=4 SEEDS=2 JOBS=1 \
  bash "$root/bench/cross_validate.sh" "$root/data/learning-curves" "$out" 2>"$out/log" ||
  { cat "$out/log" >&2; fail "cross_validate.sh failed"; }

data="$root/data/learning-curves"
pool="$(awk -F, 'NR > 1 && ($3 == "train" || $3 == "valid") { print $1 }' "$data/tasks.csv" | sort)"
held=""
for k in 0 1; do
  fold="$out/fold-$k/learning-curves"
  [[ -d "$out/fold-$k/registry/learning-curves-portfolio" ]] || fail "fold $k has no model"
  # Rows keep their order; the test split is untouched.
  diff <(cut -d, -f1 "$data/tasks.csv") <(cut -d, -f1 "$fold/tasks.csv") >/dev/null ||
    fail "fold $k reorders tasks.csv"
  diff <(awk -F, '$3 == "test"' "$data/tasks.csv") <(awk -F, '$3 == "test"' "$fold/tasks.csv") >/dev/null ||
    fail "fold $k changes the test split"
  valid="$(awk -F, '$3 == "valid" { print $1 }' "$fold/tasks.csv")"
  [[ "$(wc -l <<<"$valid")" -eq 4 ]] || fail "fold $k holds out $(wc -l <<<"$valid") tasks, not 4"
  held+="$valid"$'\n'
  # The fold's model never saw its held-out tasks: they are not in its train split.
  for t in $valid; do
    grep -q "^$t,.*,train," "$fold/tasks.csv" && fail "fold $k trains on its held-out $t"
  done
done
[[ "$(sort <<<"${held%$'\n'}")" == "$pool" ]] || fail "the folds do not hold out every train and valid task once"

grep -q "| tasks | 8 evaluated" "$out/bench/report.md" || fail "the pooled report does not cover 8 tasks"
for m in random portfolio; do
  grep -q "^$m,4," "$out/bench/summary.csv" || fail "no pooled row for $m at 4 trials"
done
[[ "$(tail -n +2 "$out/bench/per_task.csv" | wc -l)" -eq $((2 * 8 * 2 * 4)) ]] ||
  fail "the pooled per_task.csv does not hold 2 methods x 8 tasks x 2 seeds x 4 trials"
[[ -s "$out/bench/regret_vs_trials.svg" ]] || fail "no pooled plot"
echo "cross_validate.sh: 2 folds, 8 held-out tasks, pooled report and plots"
