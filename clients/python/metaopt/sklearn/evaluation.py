"""Evaluating configurations under the meta-dataset's protocol (a stratified 70/30 holdout split
with seed 0, balanced accuracy) or stratified k-fold cross-validation, in worker processes
(fresh interpreters, never forks) under a per-fit CPU-time limit: :class:`Evaluator`,
:func:`evaluate`. POSIX only."""

from __future__ import annotations

import contextlib
import dataclasses
import math
import numbers
import os
import pickle
import resource
import select
import signal
import subprocess
import sys
import sysconfig
import threading
import time
import warnings
from typing import Any, Callable, Optional, Tuple

import numpy as np

from metaopt import metafeatures
from metaopt.sklearn.pipelines import build_pipeline, columns_info, import_sklearn
from metaopt.sklearn.space import (DEFAULT_FIT_TIME_LIMIT, HOLDOUT_TEST_SIZE, SPLIT_SEED,
                                   Configuration, parse_configuration)

@dataclasses.dataclass(frozen=True)
class _Data:
    """Validated data with its categorical mask and the evaluation splits."""

    X: Any  # a DataFrame or a 2-D numpy array
    y: np.ndarray
    mask: Tuple[bool, ...]
    splits: Tuple[Tuple[np.ndarray, np.ndarray], ...]
    cv_folds: int  # 0: the holdout split
    # Also return the validation predictions (_fit_and_score, validation_predictions).
    keep_predictions: bool = False

    @property
    def classes(self) -> np.ndarray:
        """The sorted class labels: the columns of validation predictions."""
        return np.unique(self.y)

    @property
    def validation_rows(self) -> np.ndarray:
        """The rows that the splits score, split after split: the rows of validation
        predictions (the holdout's 30 %, or with cross-validation every row once)."""
        return np.concatenate([test for _, test in self.splits])


def _as_table(X: Any) -> Any:
    """X as a DataFrame (kept) or a 2-D array (object dtype when it mixes numbers and text)."""
    if metafeatures._as_dataframe(X) is not None:
        return X
    array = np.asarray(X)
    if not isinstance(X, np.ndarray) and array.dtype.kind not in "biuf":
        array = np.asarray(X, dtype=object)
    return array


def _rows(X: Any, index: np.ndarray) -> Any:
    return X.iloc[index] if hasattr(X, "iloc") else X[index]


def _prepare(X: Any, y: Any, categorical: Any, cv: Optional[int]) -> _Data:
    from sklearn.model_selection import StratifiedKFold, train_test_split

    columns, _, inferred = metafeatures._columns(X)
    labels = metafeatures._labels(y, len(columns[0]))
    mask = tuple(inferred if categorical is None
                 else metafeatures._categorical_mask(categorical, len(columns)))
    for j, column in enumerate(columns):
        if not mask[j]:
            metafeatures._numeric_column(column, metafeatures._missing(column), f"column {j}")
    keys = labels.astype(str) if labels.dtype == object else labels
    classes, counts = np.unique(keys, return_counts=True)
    if len(classes) < 2:
        raise ValueError(f"y: one class ({classes[0]!r}); a classification task needs at least 2")
    smallest = int(counts.argmin())
    need = 2 if cv is None else cv
    if counts[smallest] < need:
        rule = ("the stratified 70/30 holdout split needs at least 2 rows per class"
                if cv is None else f"cv={cv} needs at least {cv} rows per class")
        raise ValueError(f"y: class {classes[smallest].item()!r} has {counts[smallest]} row(s); "
                         f"{rule}")
    index = np.arange(len(labels))
    if cv is None:
        train, test = train_test_split(index, test_size=HOLDOUT_TEST_SIZE, stratify=keys,
                                       random_state=SPLIT_SEED)
        splits = ((np.asarray(train), np.asarray(test)),)
    else:
        folds = StratifiedKFold(n_splits=cv, shuffle=True, random_state=SPLIT_SEED)
        splits = tuple((train, test) for train, test in folds.split(index, keys))
    return _Data(X=_as_table(X), y=labels, mask=mask, splits=splits, cv_folds=cv or 0)


class _FitTimeLimit(Exception):
    pass


def _on_cpu_limit(signum: int, frame: Any) -> None:
    signal.signal(signal.SIGXCPU, signal.SIG_IGN)  # one exception; the parent kills stragglers
    raise _FitTimeLimit()


def _limit_cpu(seconds: float) -> None:
    """SIGXCPU once this process has used ``seconds`` more CPU time (whole seconds, rounded up)."""
    used = time.process_time()
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    soft = int(math.ceil(used + seconds))
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    signal.signal(signal.SIGXCPU, _on_cpu_limit)
    resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))


def class_scores(pipeline: Any, X: Any, classes: np.ndarray) -> np.ndarray:
    """A fitted pipeline's per-class scores for the rows of X, one column per class of
    ``classes``: its predict_proba where the estimator has one, else 1 for the predicted class
    and 0 elsewhere (SVC without probability estimates). float32, rows x classes."""
    out = np.zeros((_n_rows(X), len(classes)), dtype=np.float32)
    columns = np.searchsorted(classes, pipeline.classes_)
    if hasattr(pipeline, "predict_proba"):
        out[:, columns] = pipeline.predict_proba(X)
    else:
        out[np.arange(len(out)), np.searchsorted(classes, pipeline.predict(X))] = 1.0
    return out


def _n_rows(X: Any) -> int:
    return int(X.shape[0]) if hasattr(X, "shape") else len(X)


def _fit_and_score(config: Configuration, data: _Data,
                   fit_time_limit: Optional[float]) -> Tuple[Any, ...]:
    """Balanced accuracy of the configuration's pipeline, averaged over the splits, and the CPU
    seconds of building, fitting and predicting, summed over them; with
    ``data.keep_predictions`` also its :func:`class_scores` on ``data.validation_rows`` (computed
    after the timed part, so ``fit_seconds`` is unchanged)."""
    from sklearn.metrics import balanced_accuracy_score

    scores = []
    cpu = 0.0
    predictions = []
    for train, test in data.splits:
        if fit_time_limit is not None:
            _limit_cpu(fit_time_limit)
        start = time.process_time()
        X_train = _rows(data.X, train)
        pipeline = build_pipeline(config, columns_info(X_train, list(data.mask)))
        pipeline.fit(X_train, data.y[train])
        X_test = _rows(data.X, test)
        predicted = pipeline.predict(X_test)
        cpu += time.process_time() - start
        scores.append(balanced_accuracy_score(data.y[test], predicted))
        if data.keep_predictions:
            predictions.append(class_scores(pipeline, X_test, data.classes))
    if data.keep_predictions:
        return float(np.mean(scores)), cpu, np.concatenate(predictions)
    return float(np.mean(scores)), cpu


def _worker_main() -> None:
    """An evaluation worker: a fresh interpreter that tune talks to over stdin/stdout.

    Never a fork of the caller: a process that uses gRPC cannot fork safely (gRPC's fork
    handlers can wait forever for its own threads). Reads the caller's sys.path, imports
    scikit-learn, then reads the evaluation function (by reference) and the data, then
    configurations; answers each with (kind, value, cpu seconds, reason, validation predictions
    or None), kind "ok", "failed" or "over_limit". Exits at end of input, or after an
    "over_limit" reply (a fit over its CPU limit).
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the caller decides what Ctrl-C stops
    # Nothing but replies on the pipe: the replies get their own descriptor, and whatever the
    # pipelines print, from Python or from C, goes to stderr.
    requests, replies = sys.stdin.buffer, os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    sys.path[:0] = [p for p in pickle.load(requests) if p not in sys.path]
    warnings.simplefilter("ignore")
    import_sklearn()
    fit_and_score, data = pickle.load(requests)
    while True:
        try:
            config, fit_time_limit = pickle.load(requests)
        except EOFError:
            return
        start = time.process_time()
        over_limit = False
        try:
            outcome = fit_and_score(config, data, fit_time_limit)
            predictions = outcome[2] if len(outcome) > 2 else None
            reply: Tuple[str, Optional[float], float, str, Any] = (
                "ok", outcome[0], outcome[1], "", predictions)
        except _FitTimeLimit:
            over_limit = True
            reply = ("over_limit", None, time.process_time() - start,
                     f"fit over the CPU-time limit of {fit_time_limit:g} s", None)
        except Exception as error:  # any failure of the pipeline is the trial's outcome
            text = " ".join(str(error).split())[:300]
            reply = ("failed", None, time.process_time() - start,
                     f"{type(error).__name__}: {text}", None)
        signal.signal(signal.SIGXCPU, signal.SIG_IGN)
        pickle.dump(reply, replies)
        replies.flush()
        if over_limit:
            return


@dataclasses.dataclass(frozen=True)
class Evaluation:
    """The outcome of evaluating one configuration.

    Attributes:
        value: the balanced accuracy (mean over the folds with cross-validation); None if failed.
        fit_seconds: CPU seconds of building, fitting and predicting, summed over the splits.
        wall_seconds: wall-clock seconds of the whole evaluation.
        failure: why it failed (an error, or the time limit); empty if it did not.
        interrupted: stopped from outside (Ctrl-C, tune's own stop) before it finished.
        lost: the evaluating process ended without a result for a reason that is not the
            configuration's: killed by a signal other than the CPU-time limit's and other than
            a crash of its own (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT), or exited without
            answering. Evaluating it again may succeed.
        predictions: with ``keep_predictions``, the pipeline's :func:`class_scores` on the
            validation rows (rows x classes, float32); else None.
    """

    value: Optional[float]
    fit_seconds: float
    wall_seconds: float
    failure: str = ""
    interrupted: bool = False
    predictions: Optional[np.ndarray] = None
    lost: bool = False


# Signals a process raises on itself when the code it runs crashes: the configuration's failure.
_OWN_CRASHES = frozenset({signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE, signal.SIGILL,
                          signal.SIGABRT})


def _wall_guard(fit_time_limit: Optional[float], n_splits: int) -> Optional[float]:
    # CPU time runs slower than the wall clock on a busy machine, and C code (libsvm) only
    # notices SIGXCPU when it returns: a worker this far past the CPU limit is killed.
    if fit_time_limit is None:
        return None
    return n_splits * (4.0 * fit_time_limit + 10.0)


class Evaluator:
    """Evaluates configurations of :data:`SPACE` on one dataset as :func:`tune` does: in a
    worker process (a fresh single-threaded interpreter, restarted after a fit it had to stop),
    under a per-fit CPU-time limit, on the meta-dataset's stratified 70/30 holdout split (seed 0)
    or, with ``cv=k``, on stratified k folds (shuffled with seed 0); with ``keep_predictions``
    each :class:`Evaluation` also carries the pipeline's validation class scores::

        with metaopt.sklearn.Evaluator(X, y) as evaluator:
            evaluator.evaluate(configuration).value

    The validation class scores are :func:`class_scores` on the splits' test rows
    (``validation_rows`` of the evaluator's data), float32.

    Not thread-safe: one Evaluator per thread.

    Raises:
        ValueError: malformed data or arguments, naming them.
    """

    def __init__(self, X: Any, y: Any, *, categorical: Any = None, cv: Optional[int] = None,
                 fit_time_limit: Optional[float] = DEFAULT_FIT_TIME_LIMIT,
                 keep_predictions: bool = False) -> None:
        _check_cv(cv)
        _check_limit(fit_time_limit)
        if not isinstance(keep_predictions, bool):
            raise ValueError(f"keep_predictions: {keep_predictions!r} must be True or False")
        self.data = dataclasses.replace(_prepare(X, y, categorical, cv),
                                        keep_predictions=keep_predictions)
        self.fit_time_limit = fit_time_limit
        self._process: Optional[subprocess.Popen] = None
        self._sending: Optional[threading.Thread] = None

    @classmethod
    def _of(cls, data: _Data, fit_time_limit: Optional[float]) -> "Evaluator":
        evaluator = cls.__new__(cls)
        evaluator.data, evaluator.fit_time_limit = data, fit_time_limit
        evaluator._process, evaluator._sending = None, None
        return evaluator

    def start(self) -> None:
        """Starts the worker process now rather than at the first :meth:`evaluate`, and returns
        at once: its start-up (a fresh interpreter importing scikit-learn, then reading the
        data) overlaps whatever the caller does until then."""
        if self._process is None or self._process.poll() is not None:
            self._process = self._start()

    def _start(self) -> subprocess.Popen:
        # The folder holding the metaopt package (this file is metaopt/sklearn/evaluation.py).
        package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            [package_root] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
        for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            env[name] = "1"  # one thread per fit, as the meta-dataset measured them
        if "SETUPTOOLS_USE_DISTUTILS" not in env and os.path.isdir(
                os.path.join(sysconfig.get_paths()["stdlib"], "distutils")):
            # joblib (under scikit-learn) imports distutils for its version checks; setuptools'
            # own copy brings pkg_resources along: 0.35 of the 1.1 s that importing
            # scikit-learn takes.
            env["SETUPTOOLS_USE_DISTUTILS"] = "stdlib"
        process = subprocess.Popen(
            [sys.executable, "-c",
             "from metaopt.sklearn.evaluation import _worker_main; _worker_main()"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
            start_new_session=True)  # Ctrl-C in a terminal reaches the caller only
        stdin = process.stdin
        assert stdin is not None
        path = [p for p in sys.path if p]

        def send() -> None:
            # The data can exceed the pipe's buffer: written while the worker imports, by this
            # thread, so that start() does not wait for it.
            with contextlib.suppress(OSError, ValueError):  # it died, or was killed; evaluate()
                pickle.dump(path, stdin)                     # reports how
                pickle.dump((_fit_and_score, self.data), stdin)
                stdin.flush()

        self._sending = threading.Thread(target=send, daemon=True, name="metaopt-evaluator-send")
        self._sending.start()
        return process

    def evaluate(self, configuration: Any, *, should_stop: Callable[[], bool] = lambda: False,
                 on_tick: Callable[[], None] = lambda: None) -> Evaluation:
        """Evaluates one configuration; a failing pipeline is an outcome, not an exception.

        While it runs, ``should_stop`` is polled and ``on_tick`` called about every 0.1 s; a
        True from ``should_stop`` kills the worker and returns an interrupted Evaluation.
        """
        config = parse_configuration(configuration)
        start = time.monotonic()
        if self._process is None or self._process.poll() is not None:
            self._process = self._start()
        process = self._process
        assert process.stdin is not None and process.stdout is not None
        if self._sending is not None:
            self._sending.join()  # the data first
        try:
            pickle.dump((config, self.fit_time_limit), process.stdin)
            process.stdin.flush()
        except BrokenPipeError:
            pass
        guard = _wall_guard(self.fit_time_limit, len(self.data.splits))
        while True:
            ready, _, _ = select.select([process.stdout], [], [], 0.1)
            wall = time.monotonic() - start
            if ready:
                try:
                    kind, value, cpu, reason, predictions = pickle.load(process.stdout)
                except (EOFError, pickle.UnpicklingError):
                    reason, lost = self._died(process)
                    if should_stop():
                        return Evaluation(None, 0.0, wall, "stopped", interrupted=True)
                    return Evaluation(None, 0.0, wall, reason, lost=lost)
                if kind == "ok":
                    return Evaluation(value, cpu, wall, predictions=predictions)
                if kind == "over_limit":
                    # The worker exits after this reply: the next evaluation must not be sent to
                    # it (it would find the process gone and report it lost).
                    self._kill()
                return Evaluation(None, cpu, wall, reason)
            if should_stop():
                self._kill()
                return Evaluation(None, 0.0, wall, "stopped", interrupted=True)
            if guard is not None and wall > guard:
                self._kill()
                return Evaluation(None, 0.0, wall, f"fit over the time limit of "
                                  f"{self.fit_time_limit:g} s CPU (killed after {wall:.0f} s "
                                  "wall)")
            on_tick()

    def _died(self, process: subprocess.Popen) -> Tuple[str, bool]:
        """Why the process ended without a result, and whether that was the configuration's
        doing (False) or not (True: Evaluation.lost)."""
        code = process.wait()
        self._process = None
        if code < 0:
            number = -code
            if number in (signal.SIGXCPU, signal.SIGKILL) and self.fit_time_limit is not None:
                return f"fit over the CPU-time limit of {self.fit_time_limit:g} s", False
            return (f"the evaluating process died of signal {signal.Signals(number).name}",
                    number not in _OWN_CRASHES)
        return f"the evaluating process exited with code {code} without a result", True

    def _kill(self) -> None:
        if self._process is not None:
            if self._process.poll() is None:
                self._process.kill()
            self._process.wait()
            if self._sending is not None:  # its write fails now that the reader is gone
                self._sending.join()
                self._sending = None
            for stream in (self._process.stdin, self._process.stdout):
                if stream is not None:
                    with contextlib.suppress(OSError):
                        stream.close()
            self._process = None

    def close(self) -> None:
        """Stops the worker process. Between evaluations it holds nothing worth a clean exit, so
        it is killed rather than waited for (an interpreter's exit with scikit-learn loaded
        takes about 0.4 s)."""
        self._kill()

    def __enter__(self) -> "Evaluator":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self._kill()


def evaluate(configuration: Any, X: Any, y: Any, *, categorical: Any = None,
             cv: Optional[int] = None,
             fit_time_limit: Optional[float] = DEFAULT_FIT_TIME_LIMIT) -> Evaluation:
    """Evaluates one configuration of :data:`SPACE` on ``(X, y)`` as :func:`tune` does (see
    :class:`Evaluator`, which keeps its worker process for many configurations)."""
    with Evaluator(X, y, categorical=categorical, cv=cv,
                   fit_time_limit=fit_time_limit) as evaluator:
        return evaluator.evaluate(configuration)


def _check_cv(cv: Any) -> None:
    if cv is not None and (isinstance(cv, bool) or not isinstance(cv, numbers.Integral)
                           or cv < 2):
        raise ValueError(f"cv: {cv!r} must be None (the 70/30 holdout split) or an integer >= 2 "
                         "(stratified folds)")


def _check_limit(fit_time_limit: Any) -> None:
    if fit_time_limit is not None and (
            isinstance(fit_time_limit, bool) or not isinstance(fit_time_limit, numbers.Real)
            or not math.isfinite(fit_time_limit) or fit_time_limit <= 0):
        raise ValueError(f"fit_time_limit: {fit_time_limit!r} must be None (no limit) or a "
                         "number of CPU seconds > 0")
