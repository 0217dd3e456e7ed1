#!/usr/bin/env python3
"""Evidence for metaopt.sklearn.tune: it against random search and Optuna's TPE over the same
sklearn-pipelines space, on real datasets that the meta-dataset does not contain.

The datasets come from the R package carData (Debian's r-cran-cardata), which none of the
meta-dataset's tasks uses (its sources are R's MASS, TH.data, kernlab, mlbench and modeldata, and
scikit-learn); they are exported to CSV with Rscript into a temporary folder at run time.

For each dataset and seed s: a stratified 75/25 split (seed s) into a design part and a held-out
part. Each method gets only the design part and evaluates pipelines with metaopt.sklearn's
protocol (stratified 70/30 holdout inside it, balanced accuracy, 20 s CPU per fit, one thread,
in a worker process: metaopt.sklearn.Evaluator), one at a time:

- tune: metaopt.sklearn.tune (DeepPipe bound to the bundled model, the design part's
  meta-features, study seed s), first 10 trials, then the same study resumed to 25;
- random: configurations drawn uniformly from the space (log-uniform where the space says log),
  numpy seed s;
- tpe: Optuna's TPESampler(seed=s) with its defaults (the first 10 trials are its random
  start-up), the space written define-by-run with the same stages and domains.

After 10 and after 25 trials, the best configuration so far is refitted on the whole design part
and scored on the held-out part (balanced accuracy). Wall time is measured from the start of a
method's run to each checkpoint (for tune it includes the meta-features and the server calls).

    PYTHONPATH=build/clients/python python3 clients/python/examples/compare_tuners.py \\
        --server localhost:50051 --out docs/sklearn

writes results.csv (per dataset, seed, method and checkpoint), trials.csv (every evaluation),
summary.md, best_so_far.svg and heldout.svg into --out; --render redraws the last three from the
CSV files.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import subprocess
import sys
import tempfile
import time
import warnings
from typing import Any, Dict, List, Sequence, Tuple

import numpy as np
import pandas as pd
from sklearn.metrics import balanced_accuracy_score
from sklearn.model_selection import train_test_split

import metaopt
from metaopt import sklearn as mosk

# carData data frame -> its class column. None of them is in the sklearn-pipelines meta-dataset.
DATASETS = {
    "Womenlf": "partic",            # Canadian women's labour-force participation (3 classes)
    "Mroz": "lfp",                  # U.S. women's labour-force participation, Mroz (1987)
    "TitanicSurvival": "survived",  # survival of the Titanic's passengers (age missing)
    "Cowles": "volunteer",          # volunteering for a psychological experiment
    "Chile": "vote",                # voting intentions in the 1988 Chilean plebiscite (4 classes)
    "Salaries": "rank",             # U.S. professors' rank from salary, discipline, years (3)
    "WVS": "poverty",               # World Values Survey: views on poverty policy (3 classes)
    "Arrests": "released",          # Toronto arrests for marijuana possession: released or not
}
# Larger datasets are subsampled (stratified, seed 0) to this many rows, as the meta-dataset was.
MAX_ROWS = 1500
CHECKPOINTS = (10, 25)
FIT_TIME_LIMIT = mosk.DEFAULT_FIT_TIME_LIMIT


def export(names: Sequence[str], directory: str) -> Dict[str, pd.DataFrame]:
    """The carData data frames as pandas DataFrames (factors become text columns)."""
    calls = "; ".join(f'write.csv(carData::{name}, "{directory}/{name}.csv", row.names = FALSE)'
                      for name in names)
    subprocess.run(["Rscript", "-e", calls], check=True)
    return {name: pd.read_csv(os.path.join(directory, f"{name}.csv")) for name in names}


def dataset(frame: pd.DataFrame, target: str) -> Tuple[pd.DataFrame, np.ndarray]:
    frame = frame[frame[target].notna()].reset_index(drop=True)
    if len(frame) > MAX_ROWS:
        frame, _ = train_test_split(frame, train_size=MAX_ROWS, stratify=frame[target],
                                    random_state=0)
        frame = frame.reset_index(drop=True)
    return frame.drop(columns=[target]), frame[target].astype(str).to_numpy()


def sample(rng: np.random.RandomState) -> mosk.Configuration:
    """A configuration drawn uniformly from the space (log-uniform for log domains)."""
    config = {}
    for stage, algorithms in mosk.SPACE.items():
        algorithm = list(algorithms)[rng.randint(len(algorithms))]
        params: Dict[str, Any] = {}
        for name, domain in algorithms[algorithm].items():
            if isinstance(domain, metaopt.Categorical):
                params[name] = domain.values[rng.randint(len(domain.values))]
            elif isinstance(domain, metaopt.Int):
                if domain.log:
                    value = math.floor(math.exp(rng.uniform(math.log(domain.low),
                                                            math.log(domain.high + 1))))
                else:
                    value = rng.randint(domain.low, domain.high + 1)
                params[name] = int(min(max(value, domain.low), domain.high))
            elif domain.log:
                params[name] = float(math.exp(rng.uniform(math.log(domain.low),
                                                          math.log(domain.high))))
            else:
                params[name] = float(rng.uniform(domain.low, domain.high))
        config[stage] = metaopt.Choice(algorithm, params)
    return config


def optuna_configuration(trial: Any) -> mosk.Configuration:
    """The same space, define-by-run, for Optuna."""
    config = {}
    for stage, algorithms in mosk.SPACE.items():
        algorithm = trial.suggest_categorical(stage, list(algorithms))
        params: Dict[str, Any] = {}
        for name, domain in algorithms[algorithm].items():
            key = f"{algorithm}.{name}"
            if isinstance(domain, metaopt.Categorical):
                params[name] = trial.suggest_categorical(key, list(domain.values))
            elif isinstance(domain, metaopt.Int):
                params[name] = trial.suggest_int(key, domain.low, domain.high, log=domain.log)
            else:
                params[name] = trial.suggest_float(key, domain.low, domain.high, log=domain.log)
        config[stage] = metaopt.Choice(algorithm, params)
    return config


def objective(evaluation: mosk.Evaluation) -> float:
    """A failed fit scores 0 for the local searches (the worst balanced accuracy)."""
    return 0.0 if evaluation.value is None else evaluation.value


def run_random(X: Any, y: np.ndarray, seed: int) -> Tuple[List[Tuple[float, Any]], List[float]]:
    rng = np.random.RandomState(seed)
    history, clock, start = [], [], time.monotonic()
    with mosk.Evaluator(X, y, fit_time_limit=FIT_TIME_LIMIT) as evaluator:
        for _ in range(CHECKPOINTS[-1]):
            config = sample(rng)
            history.append((objective(evaluator.evaluate(config)), config))
            clock.append(time.monotonic() - start)
    return history, clock


def run_tpe(X: Any, y: np.ndarray, seed: int) -> Tuple[List[Tuple[float, Any]], List[float]]:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="maximize",
                                sampler=optuna.samplers.TPESampler(seed=seed))
    history, clock, start = [], [], time.monotonic()
    with mosk.Evaluator(X, y, fit_time_limit=FIT_TIME_LIMIT) as evaluator:
        for _ in range(CHECKPOINTS[-1]):
            trial = study.ask()
            config = optuna_configuration(trial)
            value = objective(evaluator.evaluate(config))
            study.tell(trial, value)
            history.append((value, config))
            clock.append(time.monotonic() - start)
    return history, clock


def run_tune(X: Any, y: np.ndarray, seed: int, server: str,
             study_id: str) -> Tuple[List[Tuple[float, Any]], List[float]]:
    clock, start = [], time.monotonic()
    for budget in CHECKPOINTS:
        result = mosk.tune(X, y, n_trials=budget, server=server, study_id=study_id, seed=seed,
                           refit=False, progress=False, fit_time_limit=FIT_TIME_LIMIT)
        clock.append(time.monotonic() - start)
    history = [(r.value if r.value is not None else 0.0, r.configuration)
               for r in result.trials]
    # Wall time per trial is known only at the checkpoints: fill the trials in between.
    per_trial = []
    previous, done = 0.0, 0
    for budget, elapsed in zip(CHECKPOINTS, clock):
        for k in range(done, budget):
            per_trial.append(previous + (elapsed - previous) * (k + 1 - done) / (budget - done))
        previous, done = elapsed, budget
    return history, per_trial


def heldout_score(config: mosk.Configuration, X_design: Any, y_design: np.ndarray,
                  X_test: Any, y_test: np.ndarray) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipeline = mosk.build_pipeline(config, mosk.columns_info(X_design))
        pipeline.fit(X_design, y_design)
        return float(balanced_accuracy_score(y_test, pipeline.predict(X_test)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", default="localhost:50051")
    parser.add_argument("--datasets", default=",".join(DATASETS),
                        help=f"comma-separated carData names (of {', '.join(DATASETS)})")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--first-seed", type=int, default=0,
                        help="seeds are first-seed .. first-seed + seeds - 1 (to add seeds "
                             "to an earlier run's CSV files)")
    parser.add_argument("--methods", default="tune,random,tpe")
    parser.add_argument("--out", default="docs/sklearn")
    parser.add_argument("--render", action="store_true",
                        help="only redraw summary.md and the plots from --out's CSV files")
    args = parser.parse_args()
    if args.render:
        render(args.out)
        return 0
    names = [n for n in args.datasets.split(",") if n]
    unknown = sorted(set(names) - set(DATASETS))
    if unknown:
        parser.error(f"--datasets: {unknown} are not among {sorted(DATASETS)}")
    methods = [m for m in args.methods.split(",") if m]
    if not set(methods) <= {"tune", "random", "tpe"} or not methods:
        parser.error(f"--methods: {args.methods!r} must name tune, random and/or tpe")
    if args.seeds < 1:
        parser.error(f"--seeds: {args.seeds} must be >= 1")
    if args.first_seed < 0:
        parser.error(f"--first-seed: {args.first_seed} must be >= 0")
    os.makedirs(args.out, exist_ok=True)
    with tempfile.TemporaryDirectory() as directory:
        frames = export(names, directory)

    results: List[Dict[str, Any]] = []
    trials: List[Dict[str, Any]] = []
    run_id = int(time.time())
    for name in names:
        X, y = dataset(frames[name], DATASETS[name])
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            X_design, X_test, y_design, y_test = train_test_split(
                X, y, test_size=0.25, stratify=y, random_state=seed)
            X_design, X_test = X_design.reset_index(drop=True), X_test.reset_index(drop=True)
            for method in methods:
                if method == "tune":
                    history, clock = run_tune(X_design, y_design, seed, args.server,
                                              f"evidence-{name}-{seed}-{run_id}")
                elif method == "random":
                    history, clock = run_random(X_design, y_design, seed)
                else:
                    history, clock = run_tpe(X_design, y_design, seed)
                for k, (value, _) in enumerate(history):
                    trials.append({"dataset": name, "seed": seed, "method": method,
                                   "trial": k + 1, "value": round(value, 6),
                                   "wall_seconds": round(clock[k], 2)})
                for budget in CHECKPOINTS:
                    value, config = max(history[:budget], key=lambda h: h[0])
                    heldout = heldout_score(config, X_design, y_design, X_test, y_test)
                    results.append({"dataset": name, "rows": len(y), "method": method,
                                    "seed": seed, "trials": budget,
                                    "inner_best": round(value, 6), "heldout": round(heldout, 6),
                                    "wall_seconds": round(clock[budget - 1], 2),
                                    "best": mosk.describe(config)})
                    print(f"{name} seed {seed} {method:6s} @{budget}: inner {value:.4f} "
                          f"held-out {heldout:.4f} wall {clock[budget - 1]:.0f} s  "
                          f"{mosk.describe(config)}", flush=True)
        # After each dataset, so that partial results survive.
        write_csv(os.path.join(args.out, "results.csv"), results)
        write_csv(os.path.join(args.out, "trials.csv"), trials)
        render(args.out)
    return 0


def write_csv(path: str, rows: List[Dict[str, Any]]) -> None:
    with open(path, "w", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def read_csv(path: str) -> List[Dict[str, Any]]:
    with open(path, newline="") as file:
        rows = list(csv.DictReader(file))
    for row in rows:
        for key in ("rows", "seed", "trials", "trial"):
            if key in row:
                row[key] = int(row[key])
        for key in ("inner_best", "heldout", "wall_seconds", "value"):
            if key in row:
                row[key] = float(row[key])
    return rows


def mean_ranks(results: List[Dict[str, Any]], key: str, budget: int,
               methods: Sequence[str]) -> Dict[str, float]:
    """Per (dataset, seed), each method's rank by ``key`` (1 = best, ties share the mean rank),
    averaged over them."""
    ranks: Dict[str, List[float]] = {m: [] for m in methods}
    for run in sorted({(r["dataset"], r["seed"]) for r in results}):
        scores = {r["method"]: r[key] for r in results
                  if (r["dataset"], r["seed"]) == run and r["trials"] == budget}
        for m in methods:
            better = sum(v > scores[m] for v in scores.values())
            equal = sum(v == scores[m] for v in scores.values())
            ranks[m].append(better + (equal + 1) / 2)
    return {m: float(np.mean(v)) for m, v in ranks.items()}


def paired(results: List[Dict[str, Any]], budget: int, a: str, b: str) -> List[float]:
    """Per (dataset, seed), held-out score of method a minus that of method b."""
    score = {(r["dataset"], r["seed"], r["method"]): r["heldout"] for r in results
             if r["trials"] == budget}
    runs = sorted({(d, s) for d, s, _ in score})
    return [score[(d, s, a)] - score[(d, s, b)] for d, s in runs]


def render(out: str) -> None:
    """summary.md, best_so_far.svg and heldout.svg from results.csv and trials.csv."""
    results = read_csv(os.path.join(out, "results.csv"))
    trials = read_csv(os.path.join(out, "trials.csv"))
    methods = list(dict.fromkeys(r["method"] for r in results))

    def cell(selected: List[Dict[str, Any]], key: str, digits: int = 3) -> str:
        values = [r[key] for r in selected]
        return f"{np.mean(values):.{digits}f} ± {np.std(values):.{digits}f}"

    def chosen(budget: int, method: str, name: str = "") -> List[Dict[str, Any]]:
        return [r for r in results if r["method"] == method and r["trials"] == budget
                and (not name or r["dataset"] == name)]

    lines = ["| dataset | trials | " + " | ".join(f"{m} held-out" for m in methods) + " | "
             + " | ".join(f"{m} wall s" for m in methods) + " |",
             "|---|---|" + "---|" * (2 * len(methods))]
    for name in dict.fromkeys(r["dataset"] for r in results):
        rows = chosen(CHECKPOINTS[0], methods[0], name)[0]["rows"]
        for budget in CHECKPOINTS:
            lines.append(f"| {name} ({rows} rows) | {budget} | "
                         + " | ".join(cell(chosen(budget, m, name), "heldout") for m in methods)
                         + " | " + " | ".join(cell(chosen(budget, m, name), "wall_seconds", 1)
                                              for m in methods) + " |")
    lines += ["", "| trials | measure | " + " | ".join(methods) + " |",
              "|---|---|" + "---|" * len(methods)]
    for budget in CHECKPOINTS:
        for key, label in (("heldout", "mean held-out balanced accuracy"),
                           ("inner_best", "mean inner (validation) balanced accuracy")):
            lines.append(f"| {budget} | {label} | " + " | ".join(
                f"{np.mean([r[key] for r in chosen(budget, m)]):.4f}" for m in methods) + " |")
        for key, label in (("heldout", "mean rank, held-out (1 = best)"),
                           ("inner_best", "mean rank, inner")):
            ranks = mean_ranks(results, key, budget, methods)
            lines.append(f"| {budget} | {label} | "
                         + " | ".join(f"{ranks[m]:.2f}" for m in methods) + " |")
        lines.append(f"| {budget} | mean wall seconds | " + " | ".join(
            f"{np.mean([r['wall_seconds'] for r in chosen(budget, m)]):.1f}" for m in methods)
            + " |")
    if "tune" in methods:
        others = [m for m in methods if m != "tune"]
        lines += ["", "| trials | held-out balanced accuracy | " + " | ".join(
            f"tune − {m}" for m in others) + " |", "|---|---|" + "---|" * len(others)]
        for budget in CHECKPOINTS:
            cells_mean, cells_count = [], []
            for m in others:
                pairs = paired(results, budget, "tune", m)
                error = np.std(pairs, ddof=1) / math.sqrt(len(pairs)) if len(pairs) > 1 else 0.0
                cells_mean.append(f"{np.mean(pairs):+.4f} ± {error:.4f}")
                cells_count.append(f"{sum(d > 0 for d in pairs)} / {sum(d == 0 for d in pairs)} / "
                                   f"{sum(d < 0 for d in pairs)}")
            lines.append(f"| {budget} | mean difference ± standard error | "
                         + " | ".join(cells_mean) + " |")
            lines.append(f"| {budget} | runs tune wins / ties / loses | "
                         + " | ".join(cells_count) + " |")
    with open(os.path.join(out, "summary.md"), "w") as file:
        file.write("\n".join(lines) + "\n")

    curves = {}
    for m in methods:
        runs = sorted({(t["dataset"], t["seed"]) for t in trials if t["method"] == m})
        best = [np.maximum.accumulate([t["value"] for t in trials
                                       if t["method"] == m and (t["dataset"], t["seed"]) == run])
                for run in runs]
        curves[m] = [(float(i + 1), float(v)) for i, v in enumerate(np.mean(best, axis=0))]
    with open(os.path.join(out, "best_so_far.svg"), "w") as file:
        file.write(mosk.svg_line_plot(
            curves, title="Best inner balanced accuracy so far (mean over datasets and seeds)",
            x_label="trials", y_label="balanced accuracy (inner 70/30 split)"))
    heldout = {m: [(float(b), float(np.mean([r["heldout"] for r in chosen(b, m)])))
                   for b in CHECKPOINTS] for m in methods}
    with open(os.path.join(out, "heldout.svg"), "w") as file:
        file.write(mosk.svg_line_plot(
            heldout, title="Held-out balanced accuracy of the best pipeline (mean)",
            x_label="trials", y_label="held-out balanced accuracy"))


if __name__ == "__main__":
    sys.exit(main())
