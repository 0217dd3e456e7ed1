#!/usr/bin/env python3
"""Optuna's TPE and random samplers on metaopt-bench's synthetic test functions (bench/functions.h).

The same studies as metaopt-bench --functions: each named function minimised over its search space
(the same parameters, bounds, log scales, integers and categories), seeds 0..S-1 with the study seed
FNV-1a-64(function name) + seed (taken modulo 2**32 for Optuna's samplers), --trials trials per run.
Every trial is asked, its configuration evaluated by the function (the definitions below mirror
bench/functions.cc term by term; test_optuna_functions.py checks them against values of the C++
ones) and told.

Writes one trace file, method,task,seed,trial,value (plus suggest_ms: the ask, suggest and tell
time of the trial), which metaopt-bench --functions --traces reads and scores exactly as its own
runs (regret from the values):

    /usr/bin/python3 bench/optuna_functions.py --functions branin,hartmann6 --trials 200 \\
        --seeds 5 --jobs 2 --out /tmp/optuna/functions.csv
    metaopt-bench --functions branin,hartmann6 --methods random,gp --trials 200 --seeds 5 \\
        --traces /tmp/optuna/functions.csv --out /tmp/functions

Samplers: tpe is TPESampler(seed) with Optuna's defaults (10 random start-up trials, independent
univariate densities); random is RandomSampler(seed).
"""

from __future__ import annotations

import argparse
import csv
import math
import multiprocessing
import os
import sys
import time
import warnings
from typing import Callable, Dict, List, Sequence, Tuple

from optuna_replay import study_seed  # metaopt-bench's StudySeed

PI = math.pi


# --- The functions (bench/functions.cc) ----------------------------------------------------


def branin(x0: float, x1: float) -> float:
    b = 5.1 / (4 * PI * PI)
    c = 5 / PI
    t = 1 / (8 * PI)
    u = x1 - b * x0 * x0 + c * x0 - 6
    return u * u + 10 * (1 - t) * math.cos(x0) + 10


ALPHA = (1.0, 1.2, 3.0, 3.2)
H3_A = ((3, 10, 30), (0.1, 10, 35), (3, 10, 30), (0.1, 10, 35))
H3_P = ((0.3689, 0.1170, 0.2673), (0.4699, 0.4387, 0.7470),
        (0.1091, 0.8732, 0.5547), (0.0381, 0.5743, 0.8828))
H6_A = ((10, 3, 17, 3.5, 1.7, 8), (0.05, 10, 17, 0.1, 8, 14),
        (3, 3.5, 1.7, 10, 17, 8), (17, 8, 0.05, 10, 0.1, 14))
H6_P = ((0.1312, 0.1696, 0.5569, 0.0124, 0.8283, 0.5886),
        (0.2329, 0.4135, 0.8307, 0.3736, 0.1004, 0.9991),
        (0.2348, 0.1451, 0.3522, 0.2883, 0.3047, 0.6650),
        (0.4047, 0.8828, 0.8732, 0.5743, 0.1091, 0.0381))


def hartmann(x: Sequence[float], a, p) -> float:
    total = 0.0
    for i in range(4):
        inner = sum(a[i][j] * (x[j] - p[i][j]) ** 2 for j in range(len(x)))
        total += ALPHA[i] * math.exp(-inner)
    return -total


def ackley(x: Sequence[float]) -> float:
    d = len(x)
    squares = sum(v * v for v in x)
    cosines = sum(math.cos(2 * PI * v) for v in x)
    return -20 * math.exp(-0.2 * math.sqrt(squares / d)) - math.exp(cosines / d) + 20 + math.e


def levy(x: Sequence[float]) -> float:
    w = [1 + (v - 1) / 4 for v in x]
    total = math.sin(PI * w[0]) ** 2
    for i in range(len(w) - 1):
        total += (w[i] - 1) ** 2 * (1 + 10 * math.sin(PI * w[i] + 1) ** 2)
    total += (w[-1] - 1) ** 2 * (1 + math.sin(2 * PI * w[-1]) ** 2)
    return total


def styblinski_tang(x: Sequence[float]) -> float:
    return sum(v ** 4 - 16 * v * v + 5 * v for v in x) / 2


def rosenbrock(x: Sequence[float]) -> float:
    return sum(100 * (x[i + 1] - x[i] ** 2) ** 2 + (x[i] - 1) ** 2 for i in range(len(x) - 1))


def sin7(x: Sequence[float]) -> float:
    return sum(math.sin(7 * v) + v * v for v in x)


SHIFTS = ("a", "b", "c")
SHIFT_OFFSETS = (0.0, 0.2, -0.15)
SHIFT_PENALTIES = (0.2, 0.0, 0.4)
K_SCALE = 0.6573 / 6


def hartmann6_mixed(p: Dict[str, object]) -> float:
    s = SHIFTS.index(p["shift"])
    z = [float(p[f"x{i}"]) - SHIFT_OFFSETS[s] for i in range(5)] + [int(p["k"]) * K_SCALE]
    return hartmann(z, H6_A, H6_P) + SHIFT_PENALTIES[s]


OPTIMIZERS = ("sgd", "adam", "rmsprop")
OPTIMIZER_PENALTIES = (0.5, 0.0, 0.25)


def branin_logmixed(p: Dict[str, object]) -> float:
    o = OPTIMIZERS.index(p["optimizer"])
    x0 = -5 + 15 * (math.log10(float(p["lr"])) + 4) / 4
    layers = int(p["layers"])
    return branin(x0, float(p["x1"])) * (1 + 0.25 * abs(layers - 3)) + OPTIMIZER_PENALTIES[o]


# A parameter: (name, kind, low or values, high, log); kind "float", "int" or "categorical".
Param = Tuple[str, str, object, object, bool]


def box(d: int, low: float, high: float) -> List[Param]:
    return [(f"x{i}", "float", low, high, False) for i in range(d)]


def on_box(f: Callable[[Sequence[float]], float], d: int) -> Callable[[Dict[str, object]], float]:
    return lambda p: f([float(p[f"x{i}"]) for i in range(d)])


# name -> (parameters, function of {name: value}, f*)
FUNCTIONS: Dict[str, Tuple[List[Param], Callable[[Dict[str, object]], float], float]] = {
    "branin": ([("x0", "float", -5.0, 10.0, False), ("x1", "float", 0.0, 15.0, False)],
               lambda p: branin(float(p["x0"]), float(p["x1"])), 0.39788735772973816),
    "hartmann3": (box(3, 0, 1), on_box(lambda x: hartmann(x, H3_A, H3_P), 3), -3.8627797869493365),
    "hartmann6": (box(6, 0, 1), on_box(lambda x: hartmann(x, H6_A, H6_P), 6), -3.322368011391339),
    "ackley4": (box(4, -32.768, 32.768), on_box(ackley, 4), 0.0),
    "levy4": (box(4, -10, 10), on_box(levy, 4), 0.0),
    "styblinski_tang4": (box(4, -5, 5), on_box(styblinski_tang, 4), -156.66466281508565),
    "rosenbrock4": (box(4, -5, 10), on_box(rosenbrock, 4), 0.0),
    "sin4": (box(4, 0, 1), on_box(sin7, 4), -2.2585014190877666),
    "hartmann6_mixed": (box(5, 0, 1) + [("k", "int", 0, 10, False),
                                        ("shift", "categorical", SHIFTS, None, False)],
                        hartmann6_mixed, -3.322368011391339),
    "branin_logmixed": ([("lr", "float", 1e-4, 1.0, True), ("x1", "float", 0.0, 15.0, False),
                         ("layers", "int", 1, 8, False),
                         ("optimizer", "categorical", OPTIMIZERS, None, False)],
                        branin_logmixed, 0.39788735772973816),
}


def ask(trial, params: Sequence[Param]) -> Dict[str, object]:
    out: Dict[str, object] = {}
    for name, kind, low, high, log in params:
        if kind == "categorical":
            out[name] = trial.suggest_categorical(name, list(low))
        elif kind == "int":
            out[name] = trial.suggest_int(name, int(low), int(high), log=log)
        else:
            out[name] = trial.suggest_float(name, float(low), float(high), log=log)
    return out


def run(job) -> List[Tuple[str, str, int, int, float, float]]:
    (function, sampler_name, seed, trials) = job
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore")
    sampler_seed = study_seed(function, seed) % (2 ** 32)
    if sampler_name == "random":
        sampler = optuna.samplers.RandomSampler(seed=sampler_seed)
    else:
        sampler = optuna.samplers.TPESampler(seed=sampler_seed)
    study = optuna.create_study(direction="minimize", sampler=sampler)
    params, f, _ = FUNCTIONS[function]
    rows = []
    for t in range(trials):
        start = time.perf_counter()
        trial = study.ask()
        value = f(ask(trial, params))
        study.tell(trial, value)
        ms = (time.perf_counter() - start) * 1000
        rows.append((f"optuna-{sampler_name}", function, seed, t + 1, value, ms))
    return rows


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--functions", required=True,
                        help="comma list of: " + ", ".join(FUNCTIONS))
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--samplers", default="tpe,random")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--out", required=True, help="trace file to write")
    args = parser.parse_args(argv)

    functions = [name.strip() for name in args.functions.split(",") if name.strip()]
    for name in functions:
        if name not in FUNCTIONS:
            parser.error(f"--functions: unknown function {name!r}; known: {', '.join(FUNCTIONS)}")
    if len(set(functions)) != len(functions) or not functions:
        parser.error(f"--functions: {args.functions!r} is empty or names a function twice")
    samplers = args.samplers.split(",")
    for name in samplers:
        if name not in ("tpe", "random"):
            parser.error(f"--samplers: unknown sampler {name!r} (tpe, random)")
    if args.trials < 1 or args.seeds < 1 or args.jobs < 1:
        parser.error("--trials, --seeds and --jobs must be >= 1")
    jobs = [(function, name, seed, args.trials)
            for function in functions for name in samplers for seed in range(args.seeds)]
    start = time.time()
    if args.jobs > 1:
        with multiprocessing.Pool(args.jobs) as pool:
            results = pool.map(run, jobs, chunksize=1)
    else:
        results = [run(job) for job in jobs]
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", newline="") as f:
        out = csv.writer(f, lineterminator="\n")
        out.writerow(["method", "task", "seed", "trial", "value", "suggest_ms"])
        for rows in results:
            for method, task, seed, trial, value, ms in rows:
                out.writerow([method, task, seed, trial, repr(float(value)), f"{ms:.3f}"])
    print(f"optuna_functions: {len(functions)} functions x {len(samplers)} samplers x "
          f"{args.seeds} seeds x {args.trials} trials in {time.time() - start:.1f} s; "
          f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
