"""Build a meta-dataset through the service: a finite catalogue evaluated on many datasets.

::

    # one or more workers, on one or more machines, against the same server
    python -m metaopt.collect run --server localhost:50051 \\
        --catalogue sklearn-pipelines/ --datasets tables/ --workers 2
    # once every study is exhausted: the meta-dataset folder
    python -m metaopt.collect write --server localhost:50051 \\
        --catalogue sklearn-pipelines/ --datasets tables/ --out collected/

A team that owns a search space builds its own meta-dataset with it. Each dataset becomes one
catalogue study (``collect-<task>``, algorithm ``random``, the catalogue as ``spec.candidates``,
the dataset's meta-features as ``spec.dataset_features``). Workers Suggest a pipeline, evaluate it
with :class:`metaopt.sklearn.Evaluator` (the meta-dataset's protocol: stratified 70/30 holdout
with seed 0, balanced accuracy, a per-fit CPU-time limit, one thread) and Observe the result with
its ``fit_seconds``, extending the trial's lease while it runs. A worker that dies leaves a
leased trial that the server hands out again once the lease expires (or, sooner, to the same
worker id on restart: ids are ``collect-<host>-w<i>``), so a killed run resumes where it stopped
and no result is lost or counted twice. A fit that fails or runs over its limit is observed as
FAILED with its reason and becomes a listed failure (no row) in the folder, as the shared
meta-dataset format says.

Inputs:

- ``--catalogue``: a meta-dataset folder over :data:`metaopt.sklearn.SPACE` (``space.json``,
  ``evaluations.csv``); its distinct configurations (by the ``config`` column) are the catalogue
  and keep their ids.
- ``--datasets``: a folder of tables ``<task>.csv`` (a header; the class in the column ``class``;
  empty cells missing) each with ``<task>.kinds`` (one line per column before ``class``:
  ``numeric`` or ``categorical``), as ``data/prep/collect/export_extra_tables.R`` writes them.

Each table gets the meta-dataset's preprocessing before anything else sees it: a stratified
subsample (seed 0) to at most 2,000 rows, then classes with fewer than 6 rows dropped. A table
that cannot follow the protocol (fewer than two classes left, a malformed cell) is skipped with
its reason, in the output and in the folder's README.

Needs numpy, scipy and scikit-learn (Debian's ``python3-sklearn``).
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import datetime
import math
import os
import signal
import socket
import sys
import threading
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from metaopt import metafeatures
from metaopt import sklearn as pipelines
from metaopt.client import Client
from metaopt.errors import MetaoptError, NotFoundError
from metaopt.sklearn.evaluation import _prepare
from metaopt.sklearn.tune import _Heartbeat
from metaopt.trial import Trial, TrialState

MAX_ROWS = 2000
MIN_CLASS_ROWS = 6
SUBSAMPLE_SEED = 0
CLASS_COLUMN = "class"
STUDY_PREFIX = "collect-"
# An evaluation whose process was lost (killed from outside, not by the CPU-time limit) is run
# again this many times before it is recorded as failed: the meta-dataset's failures are the
# configurations' own.
LOST_RETRIES = 1
# R writes a factor's missing level as an empty cell; the meta-dataset's export made it the level
# "c_NA" before evaluation (a category of its own), while its meta-features count it missing.
CATEGORICAL_MISSING = "c_NA"


# -- the catalogue ------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Catalogue:
    """The distinct configurations of a meta-dataset folder, by config id."""

    header: Tuple[str, ...]  # evaluations.csv's columns
    space_json: str
    cells: Dict[int, Tuple[str, ...]]  # config id -> the row's stage and parameter cells
    configurations: Dict[int, pipelines.Configuration]

    @property
    def ids(self) -> List[int]:
        return sorted(self.cells)

    def parameter_columns(self) -> Tuple[str, ...]:
        """The stage and parameter columns: after ``task``, before ``y``."""
        return self.header[1:self.header.index("y")]


def read_catalogue(folder: str) -> Catalogue:
    """The catalogue of a meta-dataset folder over metaopt.sklearn.SPACE.

    Raises:
        ValueError: the folder lacks a file or a column, or a configuration is outside the space.
    """
    space_path = os.path.join(folder, "space.json")
    evaluations = os.path.join(folder, "evaluations.csv")
    for path in (space_path, evaluations):
        if not os.path.isfile(path):
            raise ValueError(f"--catalogue: {path} does not exist")
    with open(space_path) as file:
        space_json = file.read()
    cells: Dict[int, Tuple[str, ...]] = {}
    configurations: Dict[int, pipelines.Configuration] = {}
    with open(evaluations, newline="") as file:
        reader = csv.reader(file)
        header = tuple(next(reader))
        for name in ("task", "y", "config"):
            if name not in header:
                raise ValueError(f"--catalogue: {evaluations} has no column {name!r}")
        y_at, config_at = header.index("y"), header.index("config")
        for row in reader:
            config_id = int(row[config_at])
            if config_id in cells:
                continue
            cells[config_id] = tuple(row[1:y_at])
            configurations[config_id] = pipelines.parse_configuration(
                dict(zip(header[1:y_at], row[1:y_at])))
    return Catalogue(header, space_json, cells, configurations)


def configuration_key(config: pipelines.Configuration) -> Tuple[Any, ...]:
    """A hashable key of a configuration (the server returns the catalogue's values exactly)."""
    return tuple((stage, choice[0], tuple(sorted(choice[1].items())))
                 for stage, choice in sorted(config.items()))


# -- the datasets -------------------------------------------------------------------------------

@dataclasses.dataclass
class Table:
    """A dataset after the protocol's preprocessing."""

    task: str
    X: np.ndarray  # object array: floats (NaN missing) and strings (None missing)
    categorical: List[bool]
    labels: np.ndarray  # class names (str)
    n_rows_raw: int
    # Its meta-features, computed once for all of a run's workers (empty until then).
    features: Dict[str, float] = dataclasses.field(default_factory=dict)


def list_tables(folder: str, only: Sequence[str] = ()) -> List[str]:
    """The tasks of a tables folder (``<task>.csv`` with ``<task>.kinds``): sorted by name, or
    ``only`` in its order."""
    if not os.path.isdir(folder):
        raise ValueError(f"--datasets: {folder} is not a folder")
    tasks = sorted(name[:-4] for name in os.listdir(folder)
                   if name.endswith(".csv") and name != "manifest.csv"
                   and os.path.isfile(os.path.join(folder, name[:-4] + ".kinds")))
    if only:
        unknown = sorted(set(only) - set(tasks))
        if unknown:
            raise ValueError(f"--only: {unknown} are not tables of {folder} (a <task>.csv with "
                             "its <task>.kinds)")
        tasks = list(dict.fromkeys(only))  # in the order given: the cheap ones first, say
    return tasks


def read_table(folder: str, task: str) -> Table:
    """Reads and preprocesses one table (the protocol's subsample and class filter).

    Raises:
        ValueError: a malformed table, or fewer than two classes left; the message says why.
    """
    with open(os.path.join(folder, task + ".kinds")) as file:
        kinds = [line.strip() for line in file if line.strip()]
    with open(os.path.join(folder, task + ".csv"), newline="") as file:
        rows = list(csv.reader(file))
    if not rows:
        raise ValueError(f"{task}: empty table")
    header, body = rows[0], rows[1:]
    if CLASS_COLUMN not in header:
        raise ValueError(f"{task}: no column {CLASS_COLUMN!r}")
    target = header.index(CLASS_COLUMN)
    columns = [j for j in range(len(header)) if j != target]
    if len(kinds) != len(columns):
        raise ValueError(f"{task}: {len(kinds)} kinds for {len(columns)} feature columns")
    if any(kind not in ("numeric", "categorical") for kind in kinds):
        raise ValueError(f"{task}: kinds must be 'numeric' or 'categorical'")
    body = [row for row in body if row[target] != ""]
    labels = np.array([row[target] for row in body], dtype=object)
    X = np.empty((len(body), len(columns)), dtype=object)
    mask = [kind == "categorical" for kind in kinds]
    for out, (j, categorical) in enumerate(zip(columns, mask)):
        for i, row in enumerate(body):
            cell = row[j]
            if categorical:
                X[i, out] = None if cell == "" else cell
            elif cell == "" or cell == "NA":
                X[i, out] = math.nan
            else:
                try:
                    X[i, out] = float(cell)
                except ValueError:
                    raise ValueError(f"{task}: column {header[j]!r} row {i + 2}: {cell!r} is "
                                     "not a number (the kinds file says numeric)") from None
    n_raw = len(labels)
    index = protocol_rows(labels)
    left = len(set(labels[index].astype(str))) if len(index) else 0
    if left < 2:
        raise ValueError(f"{task}: {left} class(es) with at least {MIN_CLASS_ROWS} rows after "
                         f"the {MAX_ROWS}-row subsample; a task needs at least 2")
    # Columns without a single value say nothing and break the imputers: dropped.
    keep = [j for j in range(X.shape[1])
            if any(not metafeatures._is_missing(v) for v in X[index, j])]
    return Table(task, X[np.ix_(index, keep)], [mask[j] for j in keep],
                 labels[index].astype(str), n_raw)


def protocol_rows(labels: np.ndarray) -> np.ndarray:
    """The rows the meta-dataset protocol keeps, sorted: a stratified subsample (seed 0) to at
    most MAX_ROWS, then the rows of classes with fewer than MIN_CLASS_ROWS left dropped."""
    text = np.array([str(v) for v in labels])
    index = np.arange(len(text))
    if len(index) > MAX_ROWS:
        from sklearn.model_selection import train_test_split
        index, _ = train_test_split(index, train_size=MAX_ROWS, stratify=text,
                                    random_state=SUBSAMPLE_SEED)
        index = np.sort(index)
    classes, counts = np.unique(text[index], return_counts=True)
    small = set(classes[counts < MIN_CLASS_ROWS])
    return np.array([r for r in index if text[r] not in small], dtype=int)


def evaluation_view(table: Table) -> np.ndarray:
    """The table as the evaluator sees it: a categorical cell that is missing is a level."""
    X = table.X.copy()
    for j, categorical in enumerate(table.categorical):
        if categorical:
            X[:, j] = [CATEGORICAL_MISSING if v is None else v for v in X[:, j]]
    return X


# The meta-features a collected folder records: metaopt.metafeatures' simple features without the
# Symbols* ones, as they were when the sklearn-pipelines collection started. Pinned, so that every
# study of one collection carries the same columns and a resumed run sends the spec it created
# its studies with (compute() has since gained features; one added to SIMPLE_FEATURES would need
# excluding here too).
COLLECTED_FEATURES = tuple(name for name in metafeatures.SIMPLE_FEATURES
                           if not name.startswith("Symbols"))


def features(table: Table) -> Dict[str, float]:
    """The table's COLLECTED_FEATURES (a superset of what the bundled sklearn-pipelines models read)."""
    computed = metafeatures.compute(table.X, table.labels, table.categorical, landmarkers=False)
    return {name: computed[name] for name in COLLECTED_FEATURES}


# -- collecting ---------------------------------------------------------------------------------

def study_id(task: str, prefix: str = STUDY_PREFIX) -> str:
    return prefix + task


def open_study(client: Client, table: Table, catalogue: Catalogue, prefix: str) -> Any:
    """Creates the dataset's catalogue study, or gets it (an equal spec) to resume it."""
    return client.create_study(
        study_id(table.task, prefix), pipelines.search_space_proto(),
        objective=pipelines.OBJECTIVE, goal="maximize", algorithm="random", seed=0,
        candidates=[catalogue.configurations[i] for i in catalogue.ids],
        dataset_features=table.features or features(table))


class Progress:
    """One line per 25 observations on stderr: the dataset, its observed trials (of all this
    process's workers) out of the catalogue, the rate. Thread-safe."""

    def __init__(self, n_tasks: int, n_configs: int) -> None:
        self.n_tasks = n_tasks
        self.n_configs = n_configs
        self.started = time.monotonic()
        self.evaluated = 0
        self._observed: Dict[str, int] = {}
        self._failed: Dict[str, int] = {}
        self._lock = threading.Lock()

    def start_task(self, task: str, observed: int, failed: int) -> None:
        """Records what the study held when a worker joined it (the larger count wins)."""
        with self._lock:
            self._observed[task] = max(self._observed.get(task, 0), observed)
            self._failed[task] = max(self._failed.get(task, 0), failed)

    def evaluated_one(self, position: int, task: str, failed: bool) -> None:
        with self._lock:
            self.evaluated += 1
            done = self._observed[task] = self._observed.get(task, 0) + 1
            bad = self._failed[task] = self._failed.get(task, 0) + int(failed)
            elapsed = time.monotonic() - self.started
            if self.evaluated % 25 == 0 or done == self.n_configs:
                rate = self.evaluated / max(elapsed, 1e-9)
                print(f"collect: [{position}/{self.n_tasks}] {task}: {done}/{self.n_configs} "
                      f"observed ({bad} failed); {self.evaluated} this run in "
                      f"{elapsed / 60:.1f} min ({rate:.2f}/s)", file=sys.stderr, flush=True)

    def say(self, message: str) -> None:
        with self._lock:
            print(f"collect: {message}", file=sys.stderr, flush=True)


def _observed(trial: Trial) -> bool:
    return trial.state in (TrialState.COMPLETED, TrialState.FAILED, TrialState.INFEASIBLE)


def collect_task(client: Client, table: Table, catalogue: Catalogue, *, worker_id: str,
                 fit_time_limit: float, prefix: str, position: int, progress: Progress,
                 stop: threading.Event) -> None:
    """Suggest → evaluate → Observe on the dataset's study until it has nothing left to give.

    Other workers may still hold leased trials of it when this returns.
    """
    study = open_study(client, table, catalogue, prefix)
    trials = list(study.trials())
    progress.start_task(table.task, sum(1 for t in trials if _observed(t)),
                        sum(1 for t in trials if t.state == TrialState.FAILED))
    data = _prepare(evaluation_view(table), table.labels, table.categorical, None)
    evaluator = pipelines.Evaluator._of(data, fit_time_limit)
    try:
        while not stop.is_set():
            trials = study.suggest(client_id=worker_id)
            if not trials:
                return
            trial = trials[0]
            heartbeat = _Heartbeat(study, trial)
            configuration = pipelines.parse_configuration(trial)
            for attempt in range(1 + LOST_RETRIES):
                evaluation = evaluator.evaluate(configuration, should_stop=stop.is_set,
                                                on_tick=heartbeat.tick)
                if not evaluation.lost or attempt == LOST_RETRIES:
                    break
                progress.say(f"{table.task}: trial {trial.id}: {evaluation.failure}; "
                             "evaluating it again in a new process")
            if evaluation.interrupted:
                return  # leased to this worker id: a restart gets it back first
            metrics = {"fit_seconds": evaluation.fit_seconds,
                       "wall_seconds": evaluation.wall_seconds, "cv_folds": 0.0}
            if evaluation.value is None:
                study.observe(trial, failed=evaluation.failure, metrics=metrics)
            else:
                study.observe(trial, evaluation.value, metrics=metrics)
            progress.evaluated_one(position, table.task, evaluation.value is None)
    finally:
        evaluator.close()


def run(args: argparse.Namespace) -> int:
    catalogue = read_catalogue(args.catalogue)
    tasks = list_tables(args.datasets, args.only)
    progress = Progress(len(tasks), len(catalogue.ids))
    progress.say(f"{len(tasks)} datasets x {len(catalogue.ids)} configurations, "
                 f"{args.workers} worker(s) on {args.server}")
    tables: Dict[str, Optional[Table]] = {}
    tables_lock = threading.Lock()
    skipped: Dict[str, str] = {}
    stop = threading.Event()
    errors: List[BaseException] = []
    host = socket.gethostname()[:60]

    def table_of(task: str) -> Optional[Table]:
        with tables_lock:
            if task not in tables:
                try:
                    table = read_table(args.datasets, task)
                    table.features = features(table)
                    tables[task] = table
                except ValueError as error:
                    tables[task] = None
                    skipped[task] = str(error)
                    progress.say(f"skip {error}")
            return tables[task]

    def work(index: int) -> None:
        worker_id = f"collect-{host}-w{index}"
        try:
            with Client(args.server, token=args.token) as client:
                for position, task in enumerate(tasks, 1):
                    if stop.is_set():
                        return
                    table = table_of(task)
                    if table is None:
                        continue
                    collect_task(client, table, catalogue, worker_id=worker_id,
                                 fit_time_limit=args.fit_time_limit, prefix=args.study_prefix,
                                 position=position, progress=progress, stop=stop)
        except BaseException as error:  # noqa: B036 - reported by run()
            errors.append(error)
            stop.set()

    # SIGTERM (kill, a pod's shutdown) stops a run as Ctrl-C does: running fits are abandoned,
    # not recorded as failures.
    on_main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler) if on_main_thread \
        else None
    threads = [threading.Thread(target=work, args=(i,), daemon=True)
               for i in range(args.workers)]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            while thread.is_alive():
                thread.join(0.5)
    except KeyboardInterrupt:
        stop.set()
        progress.say("interrupted: running fits stopped; their trials stay leased to this "
                     "run's worker ids, and the next run resumes them")
        for thread in threads:
            thread.join()
        return 130
    finally:
        if on_main_thread:
            signal.signal(signal.SIGTERM, previous)
    if errors:
        raise errors[0]
    progress.say(f"done: {progress.evaluated} evaluations this run; {len(skipped)} dataset(s) "
                 "skipped")
    if args.out:
        return write(args)
    return 0


# -- the folder ---------------------------------------------------------------------------------

def _format(value: float) -> str:
    return f"{value:.6g}"


def write(args: argparse.Namespace) -> int:
    """Writes the meta-dataset folder of every collected study (all must be complete)."""
    catalogue = read_catalogue(args.catalogue)
    tasks = list_tables(args.datasets, args.only)
    index = {configuration_key(c): i for i, c in catalogue.configurations.items()}
    rows: List[List[str]] = []
    task_rows: List[List[str]] = []
    feature_rows: Dict[str, Dict[str, float]] = {}
    failures: Dict[str, List[Tuple[int, str]]] = {}
    skipped: Dict[str, str] = {}
    incomplete: List[str] = []
    with Client(args.server, token=args.token) as client:
        for task in tasks:
            try:
                table = read_table(args.datasets, task)
            except ValueError as error:
                skipped[task] = str(error)
                continue
            try:
                study = client.get_study(study_id(task, args.study_prefix))
            except NotFoundError:
                incomplete.append(f"{task} (no study)")
                continue
            by_config: Dict[int, Trial] = {}
            for trial in study.trials():
                if not _observed(trial):
                    continue
                config_id = index[configuration_key(pipelines.parse_configuration(trial))]
                first = by_config.get(config_id)
                if first is None or (first.state != TrialState.COMPLETED
                                     and trial.state == TrialState.COMPLETED):
                    by_config[config_id] = trial
            missing = len(catalogue.ids) - len(by_config)
            if missing:
                incomplete.append(f"{task} ({missing} of {len(catalogue.ids)} not observed)")
                continue
            failures[task] = []
            for config_id in catalogue.ids:
                trial = by_config[config_id]
                if trial.state != TrialState.COMPLETED:
                    failures[task].append((config_id, trial.failure_reason))
                    continue
                fit = trial.metrics.get("fit_seconds", math.nan)
                rows.append([task, *catalogue.cells[config_id], _format(trial.value),
                             f"{round(fit, 4):g}", str(config_id)])
            n_features = table.X.shape[1]
            task_rows.append([task, task.split("_", 1)[-1], "train", str(len(table.labels)),
                              str(n_features), str(len(set(table.labels))),
                              f"R {task.split('_', 1)[0]}"])
            feature_rows[task] = dict(study.spec.dataset_features)
    if incomplete and not args.complete_only:
        print("collect: not written, studies not complete yet: " + ", ".join(incomplete)
              + " (--complete-only writes the complete ones)", file=sys.stderr)
        return 1
    if not task_rows:
        print("collect: not written: no study is complete", file=sys.stderr)
        return 1
    out = args.out
    partial = out.rstrip("/") + ".partial"
    os.makedirs(partial, exist_ok=True)
    with open(os.path.join(partial, "space.json"), "w") as file:
        file.write(catalogue.space_json)
    with open(os.path.join(partial, "evaluations.csv"), "w", newline="") as file:
        writer = csv.writer(file, lineterminator="\n")
        writer.writerow(catalogue.header)
        writer.writerows(rows)
    with open(os.path.join(partial, "tasks.csv"), "w", newline="") as file:
        writer = csv.writer(file, lineterminator="\n")
        writer.writerow(["task", "name", "split", "n_rows", "n_features", "n_classes", "source"])
        writer.writerows(task_rows)
    names = sorted({name for f in feature_rows.values() for name in f})
    with open(os.path.join(partial, "metafeatures.csv"), "w", newline="") as file:
        writer = csv.writer(file, lineterminator="\n")
        writer.writerow(["task", *names])
        for task, values in feature_rows.items():
            writer.writerow([task, *(repr(values[n]) if n in values else "" for n in names)])
    with open(os.path.join(partial, "README.md"), "w") as file:
        file.write(_readme(task_rows, failures, skipped, incomplete, len(catalogue.ids), args))
    if os.path.isdir(out):
        for name in os.listdir(out):
            os.remove(os.path.join(out, name))
        os.rmdir(out)
    os.rename(partial, out)
    print(f"collect: wrote {out}: {len(task_rows)} tasks, {len(rows)} evaluations, "
          f"{sum(len(f) for f in failures.values())} failed fits, {len(skipped)} skipped",
          file=sys.stderr)
    return 0


def _readme(task_rows: List[List[str]], failures: Dict[str, List[Tuple[int, str]]],
            skipped: Dict[str, str], incomplete: List[str], n_configs: int,
            args: argparse.Namespace) -> str:
    lines = [
        "# A meta-dataset collected through metaopt",
        "",
        "Written by `python -m metaopt.collect write` (generated: do not edit). Every row is one "
        "Observe of a catalogue study of the service (`collect-<task>`), evaluated by "
        "`metaopt.sklearn.Evaluator` under the sklearn-pipelines protocol: stratified 70/30 "
        "holdout (seed 0), balanced accuracy, a per-fit limit of "
        f"{args.fit_time_limit:g} s CPU, one thread, at most {MAX_ROWS} rows (stratified "
        f"subsample, seed 0), classes with fewer than {MIN_CLASS_ROWS} rows dropped.",
        "",
        f"Catalogue: the {n_configs} configurations of the catalogue folder, with their `config` "
        "ids. `fit_seconds` is CPU seconds of fit and predict. A failed fit (an error or the "
        "time limit) has no row; the failures are listed below. `metafeatures.csv` holds the "
        "studies' `dataset_features` (`metaopt.metafeatures.compute`, no landmarkers).",
        "",
        f"Written {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC.",
        "",
        "| task | rows | features | classes | failed fits |",
        "|---|---|---|---|---|",
    ]
    for task, _, _, n_rows, n_features, n_classes, _ in task_rows:
        lines.append(f"| {task} | {n_rows} | {n_features} | {n_classes} | "
                     f"{len(failures.get(task, []))} |")
    lines.append("")
    lines.append("## Failed fits")
    lines.append("")
    any_failure = False
    for task, items in failures.items():
        reasons: Dict[str, int] = {}
        for _, reason in items:
            reasons[reason[:120]] = reasons.get(reason[:120], 0) + 1
        for reason, count in sorted(reasons.items(), key=lambda kv: -kv[1]):
            lines.append(f"- {task}: {count} x {reason}")
            any_failure = True
    if not any_failure:
        lines.append("None.")
    lines.append("")
    lines.append("## Skipped datasets")
    lines.append("")
    for task, reason in sorted(skipped.items()):
        lines.append(f"- {task}: {reason}")
    if not skipped:
        lines.append("None.")
    if incomplete:
        lines.append("")
        lines.append("## Not collected yet")
        lines.append("")
        lines.append("Written with `--complete-only`; these studies were not complete:")
        lines.append("")
        lines.extend(f"- {entry}" for entry in incomplete)
    lines.append("")
    return "\n".join(lines)


# -- the command line ---------------------------------------------------------------------------

def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m metaopt.collect",
        description="Evaluates a catalogue of scikit-learn pipelines on many datasets through a "
                    "metaopt server and writes the results as a meta-dataset folder.")
    commands = parser.add_subparsers(dest="command", required=True)
    for name, text in (("run", "evaluate: Suggest -> evaluate -> Observe until every dataset's "
                                "study is exhausted (resumable; any number of workers/machines)"),
                       ("write", "write the meta-dataset folder of the complete studies")):
        command = commands.add_parser(name, help=text, description=text)
        command.add_argument("--server", default="localhost:50051", help="host:port")
        command.add_argument("--token", default=None, help="bearer token (with --tokens)")
        command.add_argument("--catalogue", required=True,
                             help="meta-dataset folder whose configurations are the catalogue")
        command.add_argument("--datasets", required=True,
                             help="folder of <task>.csv tables with <task>.kinds")
        command.add_argument("--only", default="",
                             help="comma-separated tasks, in the order to collect them "
                                  "(default: all, by name)")
        command.add_argument("--study-prefix", default=STUDY_PREFIX,
                             help=f"study id prefix (default {STUDY_PREFIX!r})")
        command.add_argument("--fit-time-limit", type=float,
                             default=pipelines.DEFAULT_FIT_TIME_LIMIT,
                             help="CPU seconds per fit (default: the protocol's 20)")
        if name == "run":
            command.add_argument("--workers", type=int, default=1,
                                 help="fits at once in this process (default 1)")
            command.add_argument("--out", default="",
                                 help="also write the folder here when done")
        else:
            command.add_argument("--out", required=True, help="the folder to write")
            command.add_argument("--complete-only", action="store_true",
                                 help="write the complete studies and list the others as not "
                                      "collected yet (default: refuse until all are complete)")
    args = parser.parse_args(argv)
    args.complete_only = getattr(args, "complete_only", False)
    args.only = [t for t in args.only.split(",") if t]
    if args.command == "run" and not 1 <= args.workers <= 64:
        parser.error(f"--workers: {args.workers} must be in 1..64")
    if not args.fit_time_limit > 0:
        parser.error(f"--fit-time-limit: {args.fit_time_limit} must be > 0")
    try:
        return run(args) if args.command == "run" else write(args)
    except (ValueError, MetaoptError) as error:
        print(f"collect: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
