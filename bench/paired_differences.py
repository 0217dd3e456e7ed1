#!/usr/bin/env python3
"""Paired differences of regret between methods from a metaopt-bench per_task.csv.

Every method of a metaopt-bench run replays the same tasks and seeds, so two methods compare
run by run: for each (task, seed) the difference of their regrets after k trials. Prints, for each
pair (A, B) asked for and each k, the mean of regret(A) - regret(B) over tasks x seeds, its
standard error, and how many runs A won, tied and lost (negative means A is better).

The standard error is that of the per-task mean differences (each task's seeds averaged first):
the runs of one task are not independent (a deterministic policy over a catalogue repeats the
same run on every seed, so more seeds would otherwise shrink the error without new evidence);
the task is the unit a choice has to carry over to.

    python3 bench/paired_differences.py /tmp/bench-mo-oboe/per_task.csv \\
        --pairs gp:random,gp:optuna-nsga2,gp:optuna-tpe,deeppipe:gp --trials 10,25
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
from collections import defaultdict
from typing import Dict, List, Sequence, Tuple


def task_clustered_standard_error(differences: Sequence[Tuple[str, float]]) -> float:
    """The standard error of the mean over tasks of each task's mean difference; with one task,
    the standard error over its runs."""
    by_task: Dict[str, List[float]] = defaultdict(list)
    for task, difference in differences:
        by_task[task].append(difference)
    values = ([sum(v) / len(v) for v in by_task.values()] if len(by_task) > 1
              else [d for _, d in differences])
    n = len(values)
    if n < 2:
        return 0.0
    mean = sum(values) / n
    return math.sqrt(sum((x - mean) ** 2 for x in values) / (n - 1) / n)


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("per_task", help="a metaopt-bench per_task.csv")
    parser.add_argument("--pairs", required=True, help="comma list of A:B")
    parser.add_argument("--trials", default="10,25", help="comma list of trial counts")
    args = parser.parse_args(argv)
    regret: Dict[Tuple[str, str, int, int], float] = {}
    runs = defaultdict(set)
    with open(args.per_task, newline="") as f:
        for row in csv.DictReader(f):
            key = (row["method"], row["task"], int(row["seed"]), int(row["trial"]))
            regret[key] = float(row["regret"])
            runs[row["method"]].add((row["task"], int(row["seed"])))
    print("| A − B | trials | mean difference ± SE | A better / tie / worse |")
    print("|---|---|---|---|")
    for pair in args.pairs.split(","):
        a, b = pair.split(":")
        if a not in runs or b not in runs:
            parser.error(f"--pairs: {pair}: no such method in {args.per_task}")
        common = sorted(runs[a] & runs[b])
        for k in (int(x) for x in args.trials.split(",")):
            d = [regret[(a, t, s, k)] - regret[(b, t, s, k)] for t, s in common]
            n = len(d)
            mean = sum(d) / n
            se = task_clustered_standard_error(
                [(t, regret[(a, t, s, k)] - regret[(b, t, s, k)]) for t, s in common])
            wins = sum(x < -1e-12 for x in d)
            losses = sum(x > 1e-12 for x in d)
            print(f"| {a} − {b} | {k} | {mean:+.4f} ± {se:.4f} | "
                  f"{wins} / {n - wins - losses} / {losses} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
