#!/usr/bin/python3
"""Builds the learning-curves meta-dataset: real MLP training runs, epoch by epoch.

For every task (a real classification dataset that a Debian package ships) and every one of a
fixed list of configurations (MLP hyperparameters drawn by a scrambled Sobol sequence), an
sklearn.neural_network.MLPClassifier is trained with one partial_fit call per epoch (one pass over
the training part, mini-batches shuffled) and after every epoch its misclassification rate and log
loss on the validation part are recorded. Output: a folder in the shared meta-dataset format
(space.json, evaluations.csv with the error after the last epoch, tasks.csv, README.md) plus
curves.csv (task,config,epoch,value,loss), for evaluating early-stopping rules
(`metaopt-bench --early-stopping`, docs/benchmarks.md).

Deterministic: fixed seeds everywhere, one thread; the same Debian packages give the same files.

    /usr/bin/python3 data/prep/learning_curves/make_learning_curves.py \\
        --out data/learning-curves

Growing the catalogue: the configurations are a prefix of one Sobol sequence and configuration i
is trained with random_state i, so the first P configurations of a larger catalogue are exactly
the P of a smaller one. `--reuse DIR` copies the curves of the configurations already in DIR
(matched by index and hyperparameters) and trains only the new ones; `--verify K` retrains the
first K reused configurations of every task and fails unless their rows come out identical.

Needs python3-sklearn, python3-scipy, python3-pandas, r-base-core, r-cran-mlbench and
r-cran-cardata (scripts/install-deps.sh installs them).
"""

from __future__ import annotations

import os

# One thread: reproducible sums and a fair "epoch" as the unit of cost.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import multiprocessing  # noqa: E402
import platform  # noqa: E402
import random  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from typing import Dict, List, Sequence, Tuple  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import scipy  # noqa: E402
import sklearn  # noqa: E402
from scipy.stats import qmc  # noqa: E402
from sklearn import datasets  # noqa: E402
from sklearn.compose import ColumnTransformer  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.impute import SimpleImputer  # noqa: E402
from sklearn.metrics import log_loss  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402
from sklearn.neural_network import MLPClassifier  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import OneHotEncoder, StandardScaler  # noqa: E402

NAME = "learning-curves"
EPOCHS = 27  # 3^3: the rungs 1, 3, 9, 27 of successive halving with reduction factor 3
CONFIGS = 128  # a power of 2: the balance of the Sobol points
MAX_ROWS = 2000
VALID_FRACTION = 0.3
SOBOL_SEED = 20261125
SPLIT_SEED = 20261125

# (source, dataset, target column). Task id: <source>_<dataset>.
DATASETS: Sequence[Tuple[str, str, str]] = (
    ("sklearn", "digits", "target"),
    ("sklearn", "breast_cancer", "target"),
    ("mlbench", "Satellite", "classes"),
    ("mlbench", "LetterRecognition", "lettr"),
    ("mlbench", "Vehicle", "Class"),
    ("mlbench", "PimaIndiansDiabetes", "diabetes"),
    ("mlbench", "DNA", "Class"),
    ("mlbench", "Vowel", "Class"),
    ("mlbench", "Ionosphere", "Class"),
    ("mlbench", "BreastCancer", "Class"),
    ("mlbench", "HouseVotes84", "Class"),
    ("carData", "Chile", "vote"),
    ("carData", "Mroz", "lfp"),
    ("carData", "Cowles", "volunteer"),
    ("carData", "Arrests", "released"),
    ("carData", "WVS", "poverty"),
)
# Identifier columns, not features.
DROP_COLUMNS = {("mlbench", "BreastCancer"): ["Id"]}

# The search space: one stage, one algorithm (the MLP), five hyperparameters.
PARAMS = (
    {"name": "solver", "type": "categorical", "values": ["adam", "sgd"]},
    {"name": "learning_rate_init", "type": "float", "low": 1e-4, "high": 0.3, "log": True},
    {"name": "alpha", "type": "float", "low": 1e-6, "high": 0.1, "log": True},
    {"name": "hidden_size", "type": "int", "low": 8, "high": 256, "log": True},
    {"name": "batch_size", "type": "int", "low": 16, "high": 256, "log": True},
)


def space_json() -> dict:
    return {
        "name": NAME,
        "objective": {"name": "valid_error", "goal": "minimize"},
        "stages": [{"name": "model", "algorithms": [{"name": "MLP", "params": list(PARAMS)}]}],
    }


def configurations(count: int) -> List[dict]:
    """`count` configurations from a scrambled Sobol sequence (log-uniform for log params)."""
    sampler = qmc.Sobol(d=len(PARAMS), scramble=True, seed=SOBOL_SEED)
    points = sampler.random(count)
    configs = []
    for u in points:
        config = {}
        for p, x in zip(PARAMS, u):
            if p["type"] == "categorical":
                config[p["name"]] = p["values"][min(int(x * len(p["values"])), len(p["values"]) - 1)]
            elif p["type"] == "float":
                lo, hi = math.log(p["low"]), math.log(p["high"])
                # Rounded to 4 significant digits: short, exact text in evaluations.csv.
                config[p["name"]] = float(f"{math.exp(lo + x * (hi - lo)):.4g}")
            else:  # int, log: floor(exp(U(log lo, log(hi + 1))))
                lo, hi = math.log(p["low"]), math.log(p["high"] + 1)
                value = int(math.floor(math.exp(lo + x * (hi - lo))))
                config[p["name"]] = min(max(value, p["low"]), p["high"])
        configs.append(config)
    return configs


def export_r(package: str, names: Sequence[str], directory: str) -> None:
    calls = "; ".join(
        f'data("{name}", package = "{package}"); '
        f'write.csv(get("{name}"), "{directory}/{package}_{name}.csv", row.names = FALSE)'
        for name in names)
    subprocess.run(["Rscript", "-e", calls], check=True, stdout=subprocess.DEVNULL)


def load_frames(directory: str) -> Dict[str, Tuple[pd.DataFrame, np.ndarray]]:
    """task id -> (features, labels as strings)."""
    by_package: Dict[str, List[str]] = {}
    for source, name, _ in DATASETS:
        if source != "sklearn":
            by_package.setdefault(source, []).append(name)
    for package, names in by_package.items():
        export_r(package, names, directory)
    out = {}
    for source, name, target in DATASETS:
        task = f"{source}_{name}"
        if source == "sklearn":
            bunch = getattr(datasets, f"load_{name}")(as_frame=True)
            frame = bunch.frame
        else:
            frame = pd.read_csv(os.path.join(directory, f"{task}.csv"))
        frame = frame.drop(columns=DROP_COLUMNS.get((source, name), []))
        frame = frame[frame[target].notna()].reset_index(drop=True)
        labels = frame[target].astype(str).to_numpy()
        features = frame.drop(columns=[target])
        # Constant columns carry nothing (Ionosphere's V2).
        features = features.loc[:, features.nunique(dropna=False) > 1]
        out[task] = (features, labels)
    return out


def prepare(features: pd.DataFrame, labels: np.ndarray):
    """Stratified subsample (<= MAX_ROWS), stratified train/valid split, preprocessing fitted on
    the training part: median imputation + standardisation of numeric columns, one-hot encoding
    of the others (a missing value is its own category)."""
    if len(labels) > MAX_ROWS:
        features, _, labels, _ = train_test_split(features, labels, train_size=MAX_ROWS,
                                                  stratify=labels, random_state=0)
    # Classes too rare to stratify (fewer than 4 rows) are dropped.
    keep_classes = {c for c, n in zip(*np.unique(labels, return_counts=True)) if n >= 4}
    mask = np.array([c in keep_classes for c in labels])
    features, labels = features[mask], labels[mask]
    x_train, x_valid, y_train, y_valid = train_test_split(
        features, labels, test_size=VALID_FRACTION, stratify=labels, random_state=0)
    numeric = [c for c in features.columns if pd.api.types.is_numeric_dtype(features[c])]
    categorical = [c for c in features.columns if c not in numeric]
    transformer = ColumnTransformer([
        ("numeric", make_pipeline(SimpleImputer(strategy="median"), StandardScaler()), numeric),
        ("categorical", OneHotEncoder(handle_unknown="ignore", sparse_output=False),
         categorical),
    ])
    def text(part: pd.DataFrame) -> pd.DataFrame:
        part = part.copy()
        for c in categorical:
            part[c] = part[c].astype(str).where(part[c].notna(), "missing")
        return part

    x_train, x_valid = text(x_train), text(x_valid)
    x_train_t = transformer.fit_transform(x_train).astype(np.float64)
    x_valid_t = transformer.transform(x_valid).astype(np.float64)
    info = {"n_rows": len(labels), "n_features": features.shape[1],
            "n_encoded": x_train_t.shape[1], "n_classes": len(keep_classes),
            "n_train": len(y_train), "n_valid": len(y_valid)}
    return x_train_t, y_train, x_valid_t, y_valid, info


def train_curve(config: dict, seed: int, x_train, y_train, x_valid, y_valid
                ) -> Tuple[List[float], List[float]]:
    """Validation error and log loss after each of EPOCHS epochs."""
    classes = np.unique(y_train)
    model = MLPClassifier(hidden_layer_sizes=(config["hidden_size"],), solver=config["solver"],
                          learning_rate_init=config["learning_rate_init"], alpha=config["alpha"],
                          batch_size=config["batch_size"], random_state=seed, shuffle=True)
    errors, losses = [], []
    for _ in range(EPOCHS):
        model.partial_fit(x_train, y_train, classes=classes)
        proba = model.predict_proba(x_valid)
        if not np.all(np.isfinite(proba)):
            # A diverged network (NaN weights) predicts nothing: the error of guessing.
            errors.append(1.0)
            losses.append(float(f"{math.log(len(classes)) * 10:.4g}"))
            continue
        predicted = model.classes_[np.argmax(proba, axis=1)]
        errors.append(round(float(np.mean(predicted != y_valid)), 4))
        losses.append(float(f"{log_loss(y_valid, proba, labels=model.classes_):.4g}"))
    return errors, losses


_COUNTER = None


def _init_worker(counter) -> None:
    global _COUNTER
    _COUNTER = counter


def run_task(job):
    """Trains every configuration on one task: (info, evaluations rows, curves rows).

    `reused` maps a configuration index to its (evaluations row, curves rows) from an earlier
    build; those are copied, except the indices in `verify`, which are retrained and must
    reproduce the reused rows exactly (RuntimeError otherwise)."""
    warnings.simplefilter("ignore", ConvergenceWarning)
    warnings.simplefilter("ignore", RuntimeWarning)  # overflow in diverging networks
    task, features, labels, configs, reused, verify = job
    x_train, y_train, x_valid, y_valid, info = prepare(features, labels)
    names = [p["name"] for p in PARAMS]
    evaluations, curves = [], []
    for index, config in enumerate(configs):
        if index in reused and index not in verify:
            evaluation, curve = reused[index]
            evaluations.append(evaluation)
            curves.extend(curve)
            continue
        errors, losses = train_curve(config, index, x_train, y_train, x_valid, y_valid)
        evaluation = ",".join([task, "MLP"] + [number(config[n]) for n in names] +
                              [number(errors[-1]), str(index)])
        curve = [f"{task},{index},{epoch},{number(e)},{number(l)}"
                 for epoch, (e, l) in enumerate(zip(errors, losses), start=1)]
        if index in reused and reused[index] != (evaluation, curve):
            raise RuntimeError(f"{task} configuration {index}: the retrained curve differs from "
                               "the reused one (different software versions or data?)")
        evaluations.append(evaluation)
        curves.extend(curve)
        if _COUNTER is not None:
            with _COUNTER.get_lock():
                _COUNTER.value += 1
    return info, evaluations, curves


def read_reused(directory: str, configs: List[dict]) -> Dict[str, Dict[int, Tuple[str, List[str]]]]:
    """task -> configuration index -> (evaluations row, curves rows) of an earlier build in
    `directory`, for the configurations whose index and hyperparameters equal `configs`' and whose
    curve has all EPOCHS epochs (ValueError for anything else: a build by another protocol)."""
    names = [p["name"] for p in PARAMS]
    with open(os.path.join(directory, "evaluations.csv"), encoding="ascii") as f:
        rows = f.read().splitlines()
    if rows[0] != "task,model," + ",".join(f"MLP.{n}" for n in names) + ",y,config":
        raise ValueError(f"{directory}/evaluations.csv: unexpected header {rows[0]!r}")
    out: Dict[str, Dict[int, Tuple[str, List[str]]]] = {}
    for row in rows[1:]:
        fields = row.split(",")
        task, index = fields[0], int(fields[-1])
        if index >= len(configs):
            continue
        expected = [number(configs[index][n]) for n in names]
        if fields[2:2 + len(names)] != expected:
            raise ValueError(f"{directory}: {task} configuration {index} is {fields[2:-2]}, "
                             f"not {expected} (another Sobol seed or space?)")
        out.setdefault(task, {})[index] = (row, [])
    with open(os.path.join(directory, "curves.csv"), encoding="ascii") as f:
        rows = f.read().splitlines()
    if rows[0] != "task,config,epoch,value,loss":
        raise ValueError(f"{directory}/curves.csv: unexpected header {rows[0]!r}")
    for row in rows[1:]:
        task, index = row.split(",", 2)[:2]
        entry = out.get(task, {}).get(int(index))
        if entry is not None:
            entry[1].append(row)
    for task, entries in out.items():
        for index, (evaluation, curve) in entries.items():
            epochs = [int(r.split(",")[2]) for r in curve]
            if epochs != list(range(1, EPOCHS + 1)):
                raise ValueError(f"{directory}: {task} configuration {index} has epochs "
                                 f"{epochs[:3]}..., not 1..{EPOCHS}")
            if curve[-1].split(",")[3] != evaluation.split(",")[-2]:
                raise ValueError(f"{directory}: {task} configuration {index}: y is not the "
                                 "last epoch's value")
    return out


def split_tasks(tasks: Sequence[str]) -> Dict[str, str]:
    """Fixed-seed split for evaluating stopping rules: 4 train, 4 valid, the rest test."""
    order = sorted(tasks)
    random.Random(SPLIT_SEED).shuffle(order)
    split = {}
    for i, task in enumerate(order):
        split[task] = "train" if i < 4 else "valid" if i < 8 else "test"
    return split


def number(x) -> str:
    return repr(float(x)) if isinstance(x, float) else str(x)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="output folder (created)")
    parser.add_argument("--configs", type=int, default=CONFIGS, help="configurations per task")
    parser.add_argument("--tasks", default="", help="comma list of task ids (default: all)")
    parser.add_argument("--jobs", type=int, default=1,
                        help="worker processes (tasks in parallel; the output does not depend on it)")
    parser.add_argument("--reuse", default="",
                        help="folder of an earlier build: copy its curves of the same "
                        "configurations, train only the others (may equal --out)")
    parser.add_argument("--verify", type=int, default=0,
                        help="with --reuse: retrain the first K reused configurations of every "
                        "task and fail unless they reproduce the reused rows exactly")
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    configs = configurations(args.configs)
    reused = read_reused(args.reuse, configs) if args.reuse else {}
    wanted = set(filter(None, args.tasks.split(",")))
    with tempfile.TemporaryDirectory() as tmp:
        frames = load_frames(tmp)
    if wanted:
        frames = {k: v for k, v in frames.items() if k in wanted}
    splits = split_tasks(list(frames))
    names = [p["name"] for p in PARAMS]
    evaluations = ["task,model," + ",".join(f"MLP.{n}" for n in names) +
                   ",y,config"]
    curves = ["task,config,epoch,value,loss"]
    task_rows = ["task,name,split,n_rows,n_features,n_classes,n_encoded,n_train,n_valid"]
    summary = []
    verify = {}
    for task in frames:
        indices = sorted(reused.get(task, {}))
        verify[task] = set(indices[:args.verify])
    total = sum(len(configs) - len(reused.get(task, {})) + len(verify[task]) for task in frames)
    tty = sys.stderr.isatty()
    start = time.time()
    counter = multiprocessing.Value("i", 0)
    jobs = [(task, features, labels, configs, reused.get(task, {}), verify[task])
            for task, (features, labels) in frames.items()]
    last_print = 0.0
    # Tasks run in worker processes (each trains one configuration at a time on one thread);
    # the results are collected in task order, so --jobs does not change the output.
    with multiprocessing.Pool(args.jobs, initializer=_init_worker, initargs=(counter,)) as pool:
        pending = pool.map_async(run_task, jobs, chunksize=1)
        while not pending.ready():
            pending.wait(2.0)
            done = counter.value
            elapsed = time.time() - start
            if done == 0 or (not tty and elapsed - last_print < 60):
                continue
            last_print = elapsed
            eta = elapsed / done * (total - done)
            line = (f"make_learning_curves: {done}/{total} curves ({100 * done / total:.0f}%), "
                    f"elapsed {elapsed:.0f} s, ETA {eta:.0f} s")
            print(f"\r{line}\x1b[K" if tty else line, end="" if tty else "\n",
                  file=sys.stderr, flush=True)
        results = pending.get()
    if tty:
        print(file=sys.stderr)
    for (task, *_), (info, task_evaluations, task_curves) in zip(jobs, results):
        task_rows.append(",".join(str(v) for v in (
            task, task.split("_", 1)[1], splits[task], info["n_rows"], info["n_features"],
            info["n_classes"], info["n_encoded"], info["n_train"], info["n_valid"])))
        evaluations.extend(task_evaluations)
        curves.extend(task_curves)
        finals = [float(row.rsplit(",", 2)[1]) for row in task_evaluations]
        summary.append((task, splits[task], info, min(finals), float(np.median(finals)),
                        max(finals)))

    def write(name: str, lines: List[str]) -> None:
        with open(os.path.join(args.out, name), "w", encoding="ascii", newline="\n") as f:
            f.write("\n".join(lines) + "\n")

    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "space.json"), "w", encoding="ascii") as f:
        json.dump(space_json(), f, indent=2)
        f.write("\n")
    write("evaluations.csv", evaluations)
    write("curves.csv", curves)
    write("tasks.csv", task_rows)
    with open(os.path.join(args.out, "README.md"), "w", encoding="ascii", newline="\n") as f:
        f.write(readme(summary, len(configs)))
    print(f"wrote {args.out}: {len(frames)} tasks x {len(configs)} configurations x {EPOCHS} "
          f"epochs ({total} curves trained) in {time.time() - start:.0f} s",
          file=sys.stderr)
    return 0


def readme(summary, configs: int) -> str:
    lines = [
        f"# {NAME}",
        "",
        "Learning curves of real training runs, for evaluating early-stopping rules "
        "(`metaopt-bench --early-stopping`, docs/benchmarks.md). Not for meta-training: the "
        "split exists so that rule settings are chosen on `valid` and reported on `test`.",
        "",
        "Built by `data/prep/learning_curves/make_learning_curves.py` (deterministic; docs/benchmarks.md "
        "gives the command).",
        "",
        "## Files",
        "",
        "- `space.json`: one stage `model`, one algorithm `MLP` with `solver` (adam, sgd), "
        "`learning_rate_init` (log), `alpha` (L2, log), `hidden_size` (units of the one hidden "
        "layer, int log), `batch_size` (int log). Objective `valid_error` (minimize).",
        f"- `evaluations.csv`: one row per (task, configuration); `y` = validation "
        f"misclassification rate after the last epoch ({EPOCHS}); after `y`: `config` (the "
        "configuration's index 0..P-1: the same configuration on every task, and its row index "
        "within the task).",
        f"- `curves.csv`: `task,config,epoch,value,loss`, epochs 1..{EPOCHS} of every (task, "
        "config): `value` = validation misclassification rate after that epoch (rounded to 4 "
        "decimals; the last epoch's equals `y`), `loss` = validation log loss (4 significant "
        "digits). A network whose weights diverged to NaN is recorded as error 1 and loss "
        "10 log(classes).",
        "- `tasks.csv`: the shared columns, then `n_classes`, `n_encoded` (columns after "
        "one-hot encoding), `n_train`, `n_valid`.",
        "",
        "## Protocol",
        "",
        f"- Configurations: {configs}, the first {configs} points of a scrambled Sobol "
        f"sequence (scipy.stats.qmc, seed {SOBOL_SEED}); floats log-uniform, rounded to 4 "
        "significant digits; ints floor(exp(U(log lo, log(hi+1)))); the solver from the first "
        "coordinate. Configuration i is trained with random_state i, so a build with more "
        "configurations starts with exactly the curves of a smaller one: `--reuse FOLDER` "
        "copies those and trains only the new configurations, and `--verify K` retrains the "
        "first K reused ones of every task and fails unless they come out identical.",
        f"- Data: classes with fewer than 4 rows dropped; stratified subsample (seed 0) to at "
        f"most {MAX_ROWS} rows; stratified {int(100 * (1 - VALID_FRACTION))}/"
        f"{int(100 * VALID_FRACTION)} train/validation split (seed 0); numeric columns: median "
        "imputation, standardisation; other columns: one-hot (missing = own category); fitted on "
        "the training part; constant columns and id columns dropped.",
        "- Model: scikit-learn MLPClassifier(hidden_layer_sizes=(hidden_size,), "
        "random_state=config index, shuffle=True, other settings default: relu, "
        "momentum 0.9 with Nesterov for sgd, constant learning rate). One epoch = one "
        "`partial_fit` call (one shuffled pass over the training part in mini-batches).",
        "- One thread (OMP/OpenBLAS/MKL = 1), one process.",
        f"- Task split: task ids sorted, shuffled with python random.Random({SPLIT_SEED}); the "
        "first 4 train, the next 4 valid, the rest test.",
        f"- Software: python {platform.python_version()}, scikit-learn {sklearn.__version__}, "
        f"numpy {np.__version__}, scipy {scipy.__version__}, pandas {pd.__version__}; data "
        "exported by Rscript from Debian's r-cran-mlbench and r-cran-cardata.",
        "",
        "## Tasks",
        "",
        "| task | split | rows | features (encoded) | classes | train / valid | y min / median / max |",
        "|---|---|---|---|---|---|---|",
    ]
    for task, split, info, lo, med, hi in summary:
        lines.append(f"| {task} | {split} | {info['n_rows']} | {info['n_features']} "
                     f"({info['n_encoded']}) | {info['n_classes']} | {info['n_train']} / "
                     f"{info['n_valid']} | {lo:.4f} / {med:.4f} / {hi:.4f} |")
    lines += [
        "",
        "## Dataset origins and licenses",
        "",
        "- `sklearn_*`: datasets bundled with scikit-learn (BSD-3-Clause): the UCI optical "
        "digits (test part) and the Wisconsin diagnostic breast cancer data.",
        "- `mlbench_*`: R package mlbench (GPL-2), which redistributes UCI ML Repository data "
        "(Statlog Landsat Satellite, Letter Recognition, Statlog Vehicle Silhouettes, Pima "
        "Indians Diabetes, Statlog DNA, Vowel, Ionosphere, Wisconsin Breast Cancer (original), "
        "Congressional Voting Records 1984).",
        "- `carData_*`: R package carData (GPL-2 or later), the data sets of Fox & Weisberg, "
        "An R Companion to Applied Regression (Chile plebiscite survey, Mroz labour-force "
        "participation, Cowles volunteering, Toronto arrests, World Values Survey).",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
