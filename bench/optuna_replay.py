#!/usr/bin/env python3
"""Optuna's NSGA-II and (multi-objective) TPE on metaopt-bench's replay of a meta-dataset.

The same replay as metaopt-bench (bench/bench_lib.h): the tasks of --split in tasks.csv order,
those whose y does not vary left out, the first --max-tasks of the rest; each task's catalogue is
its rows of evaluations.csv in file order (entry i = the task's i-th row); seeds 0..S-1 with the
study seed FNV-1a-64(task id) + seed (taken modulo 2**32 for Optuna's samplers); --trials trials
per run, no configuration twice.

Optuna samples the space of space.json define-by-run (each stage's algorithm as a categorical,
then that algorithm's parameters, log where the space says log); the sampled configuration is
snapped to the nearest catalogue entry not yet evaluated in the run (another algorithm of a
stage counts 10; a numeric parameter its difference scaled to [0, 1], on a log scale where the
space says log; a categorical one 0 or 1), and that entry's values are told for the sampled trial.

Objectives (--objectives y,fit_seconds): y with the meta-dataset's goal, the further columns
minimised. A constraint (--constraint fit_seconds<=median): y alone, told with Optuna's
constraints_func (the column minus the task's median; <= 0 is feasible).

Writes one trace file, method,task,seed,trial,entry (plus suggest_ms: the ask, snap and tell time
of the trial), which metaopt-bench --traces reads and scores exactly as its own runs:

    python3 bench/optuna_replay.py --data $METAOPT_DATA/oboe --split test --objectives y,runtime_s \\
        --trials 50 --seeds 5 --out /tmp/optuna/traces.csv
    metaopt-bench --data $METAOPT_DATA/oboe --split test --objectives y,runtime_s \\
        --methods random,gp --traces /tmp/optuna/traces.csv --out /tmp/mo

Samplers: nsga2 is NSGAIISampler(population_size=10, seed) (Optuna's default population of 50
would leave a 50-trial run random search); tpe is TPESampler(seed) with its defaults (10 random
start-up trials; with several objectives it is Optuna's multi-objective TPE).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import multiprocessing
import os
import statistics
import sys
import time
import warnings
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

MISMATCH = 10.0  # distance of another algorithm in a stage


def fnv1a64(text: str) -> int:
    h = 0xCBF29CE484222325
    for b in text.encode("utf-8"):
        h ^= b
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def study_seed(task: str, seed: int) -> int:
    """metaopt-bench's StudySeed."""
    return (fnv1a64(task) + seed) & 0xFFFFFFFFFFFFFFFF


class Space:
    """space.json: stages, their algorithms and parameters, and the evaluations.csv columns."""

    def __init__(self, spec: dict):
        self.name = spec["name"]
        self.goal = spec["objective"]["goal"]
        self.stages = spec["stages"]
        self.columns: List[Tuple[int, str, dict]] = []  # (stage, algorithm, param)
        for s, stage in enumerate(self.stages):
            for algorithm in stage["algorithms"]:
                for param in algorithm["params"]:
                    self.columns.append((s, algorithm["name"], param))

    def column_name(self, algorithm: str, param: dict) -> str:
        return f"{algorithm}.{param['name']}"

    def scaled(self, param: dict, value) -> float:
        """A numeric parameter's value in [0, 1] (log where the space says log)."""
        low, high = float(param["low"]), float(param["high"])
        v = float(value)
        if param.get("log"):
            low, high, v = math.log(low), math.log(high), math.log(v)
        return 0.0 if high == low else (v - low) / (high - low)


class Task:
    def __init__(self, task_id: str):
        self.id = task_id
        self.algorithms: List[List[str]] = []  # per row, per stage
        self.params: List[List[Optional[str]]] = []  # per row, per parameter column
        self.y: List[float] = []
        self.columns: Dict[str, List[float]] = {}


def read_tasks(data: str, split: str, space: Space, extra: Sequence[str],
               max_tasks: int) -> List[Task]:
    with open(os.path.join(data, "tasks.csv"), newline="") as f:
        ids = [row["task"] for row in csv.DictReader(f)
               if split == "all" or row["split"] == split]
    wanted = set(ids)
    tasks: Dict[str, Task] = {}
    with open(os.path.join(data, "evaluations.csv"), newline="") as f:
        reader = csv.reader(f)
        header = next(reader)
        stage_at = [header.index(stage["name"]) for stage in space.stages]
        param_at = [header.index(space.column_name(a, p)) for _, a, p in space.columns]
        y_at = header.index("y")
        extra_at = [header.index(c) for c in extra]
        for row in reader:
            if row[0] not in wanted:
                continue
            task = tasks.setdefault(row[0], Task(row[0]))
            task.algorithms.append([row[i] for i in stage_at])
            task.params.append([row[i] if row[i] != "" else None for i in param_at])
            task.y.append(float(row[y_at]))
            for c, i in zip(extra, extra_at):
                task.columns.setdefault(c, []).append(float(row[i]))
    out = []
    for task_id in ids:
        task = tasks[task_id]
        if min(task.y) == max(task.y):
            continue  # metaopt-bench skips tasks without y spread
        if max_tasks > 0 and len(out) >= max_tasks:
            break
        out.append(task)
    return out


class Catalogue:
    """A task's rows encoded for the nearest-entry search."""

    def __init__(self, space: Space, task: Task):
        self.space = space
        n = len(task.y)
        self.algorithm = np.array(
            [[stage_algorithms.index(a) for stage_algorithms, a in
              zip([[x["name"] for x in st["algorithms"]] for st in space.stages], row)]
             for row in task.algorithms], dtype=np.int64).reshape(n, len(space.stages))
        self.numeric = np.full((n, len(space.columns)), np.nan)
        self.category: List[List[Optional[str]]] = task.params
        for j, (_, _, param) in enumerate(space.columns):
            if param["type"] == "categorical":
                continue
            for i in range(n):
                cell = task.params[i][j]
                if cell is not None:
                    self.numeric[i, j] = space.scaled(param, cell)

    def nearest(self, config: Dict[Tuple[int, str], object], chosen: List[int],
                free: np.ndarray) -> int:
        """The free entry closest to a sampled configuration (chosen: algorithm per stage)."""
        d = MISMATCH * (self.algorithm != np.array(chosen)[None, :]).sum(axis=1).astype(float)
        for j, (s, algorithm, param) in enumerate(self.space.columns):
            key = (s, self.space.column_name(algorithm, param))
            if key not in config:
                continue
            same = self.algorithm[:, s] == chosen[s]
            if param["type"] == "categorical":
                want = str(config[key])
                diff = np.array([0.0 if c == want else 1.0 for c in
                                 (row[j] for row in self.category)])
            else:
                diff = np.abs(self.numeric[:, j] - self.space.scaled(param, config[key]))
            d = d + np.where(same, np.nan_to_num(diff, nan=1.0), 0.0)
        d = np.where(free, d, np.inf)
        return int(np.argmin(d))


def sample(trial, space: Space) -> Tuple[Dict[Tuple[int, str], object], List[int]]:
    config: Dict[Tuple[int, str], object] = {}
    chosen = []
    for s, stage in enumerate(space.stages):
        names = [a["name"] for a in stage["algorithms"]]
        algorithm = names[0] if len(names) == 1 else trial.suggest_categorical(stage["name"], names)
        chosen.append(names.index(algorithm))
        for param in stage["algorithms"][names.index(algorithm)]["params"]:
            label = f"{stage['name']}.{algorithm}.{param['name']}"
            if param["type"] == "categorical":
                value = trial.suggest_categorical(label, param["values"])
            elif param["type"] == "int":
                value = trial.suggest_int(label, int(param["low"]), int(param["high"]),
                                          log=bool(param.get("log")))
            else:
                value = trial.suggest_float(label, float(param["low"]), float(param["high"]),
                                            log=bool(param.get("log")))
            config[(s, space.column_name(algorithm, param))] = value
    return config, chosen


def replay(job) -> List[Tuple[str, str, int, int, int, float]]:
    (space, task, sampler_name, seed, trials, objectives, constraint) = job
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore")
    goal = "maximize" if space.goal == "maximize" else "minimize"
    sampler_seed = study_seed(task.id, seed) % (2 ** 32)
    bound = None
    constraints_func = None
    if constraint:
        bound = statistics.median(task.columns[constraint])
        constraints_func = lambda t: [t.user_attrs["constraint"]]  # noqa: E731
    if sampler_name == "nsga2":
        sampler = optuna.samplers.NSGAIISampler(population_size=10, seed=sampler_seed,
                                                constraints_func=constraints_func)
    else:
        sampler = optuna.samplers.TPESampler(seed=sampler_seed, constraints_func=constraints_func)
    directions = [goal] + ["minimize"] * (len(objectives) - 1)
    study = optuna.create_study(directions=directions, sampler=sampler)
    catalogue = Catalogue(space, task)
    free = np.ones(len(task.y), dtype=bool)
    rows = []
    for t in range(min(trials, len(task.y))):
        start = time.perf_counter()
        trial = study.ask()
        config, chosen = sample(trial, space)
        entry = catalogue.nearest(config, chosen, free)
        free[entry] = False
        values = [task.y[entry]] + [task.columns[c][entry] for c in objectives[1:]]
        if constraint:
            trial.set_user_attr("constraint", task.columns[constraint][entry] - bound)
        study.tell(trial, values if len(values) > 1 else values[0])
        ms = (time.perf_counter() - start) * 1000
        rows.append((f"optuna-{sampler_name}", task.id, seed, t + 1, entry, ms))
    return rows


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="meta-dataset folder")
    parser.add_argument("--split", default="test")
    parser.add_argument("--max-tasks", type=int, default=0)
    parser.add_argument("--trials", type=int, default=50)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--objectives", default="y", help="y, then further columns (minimised)")
    parser.add_argument("--constraint", default="", help="COLUMN<=median")
    parser.add_argument("--samplers", default="nsga2,tpe")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--out", required=True, help="trace file to write")
    args = parser.parse_args(argv)

    objectives = args.objectives.split(",")
    if objectives[0] != "y":
        parser.error(f"--objectives: {args.objectives!r} must start with y")
    constraint = ""
    if args.constraint:
        if not args.constraint.endswith("<=median") or args.constraint == "<=median":
            parser.error(f"--constraint: {args.constraint!r} is not COLUMN<=median")
        if len(objectives) > 1:
            parser.error("--constraint applies to y alone")
        constraint = args.constraint[: -len("<=median")]
    samplers = args.samplers.split(",")
    for name in samplers:
        if name not in ("nsga2", "tpe"):
            parser.error(f"--samplers: unknown sampler {name!r} (nsga2, tpe)")
    with open(os.path.join(args.data, "space.json")) as f:
        space = Space(json.load(f))
    extra = objectives[1:] + ([constraint] if constraint else [])
    tasks = read_tasks(args.data, args.split, space, extra, args.max_tasks)
    jobs = [(space, task, name, seed, args.trials, objectives, constraint)
            for task in tasks for name in samplers for seed in range(args.seeds)]
    start = time.time()
    if args.jobs > 1:
        with multiprocessing.Pool(args.jobs) as pool:
            results = pool.map(replay, jobs, chunksize=1)
    else:
        results = [replay(job) for job in jobs]
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", newline="") as f:
        out = csv.writer(f, lineterminator="\n")
        out.writerow(["method", "task", "seed", "trial", "entry", "suggest_ms"])
        for rows in results:
            for method, task, seed, trial, entry, ms in rows:
                out.writerow([method, task, seed, trial, entry, f"{ms:.3f}"])
    print(f"optuna_replay: {len(tasks)} tasks x {len(samplers)} samplers x {args.seeds} seeds "
          f"in {time.time() - start:.1f} s; wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
