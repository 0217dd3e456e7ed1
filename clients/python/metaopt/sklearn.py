"""From a dataset to a tuned scikit-learn pipeline in one call.

::

    from sklearn.datasets import load_breast_cancer
    import metaopt.sklearn

    X, y = load_breast_cancer(return_X_y=True)
    result = metaopt.sklearn.tune(X, y, n_trials=25, server="localhost:50051")
    result.pipeline.predict(X[:5])     # the best pipeline, refitted on all of (X, y)
    print(result.table())              # every trial, with the best so far
    result.save("report/")             # trials.csv, best_so_far.svg, report.md

The search space is the sklearn-pipelines meta-dataset's (:data:`SPACE`): an imputer, a scaler, a
reducer and one of eight estimators, with their hyperparameters. :func:`tune` creates a DeepPipe
study over it, bound to the server's bundled ``sklearn-pipelines-deeppipe`` model, with the
dataset's meta-features (:mod:`metaopt.metafeatures`). The first suggestions are the model's
portfolio (pipelines chosen to be good across its training tasks; a model version with a
task-aware design starts from the best pipelines of the training tasks most like this one
instead, which cross-validation found worse for this space) and the model's meta-learned kernel
ranks the rest. Every suggestion is evaluated here, on this machine, with the meta-dataset's
protocol (a stratified 70/30 holdout split with seed 0, balanced accuracy) or by stratified
k-fold cross-validation, in worker processes under a per-fit CPU-time limit.

:func:`build_pipeline` rebuilds, for any configuration of the space, the exact pipeline the
meta-dataset evaluated (its README is the specification: fixed preprocessing of numeric and
categorical columns, then scaler, reducer and estimator with the stated defaults).

Needs numpy, scipy and scikit-learn (Debian's ``python3-sklearn``); pandas only for DataFrames.
Evaluation runs in worker processes (fresh interpreters): POSIX only.
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import datetime
import html
import inspect
import math
import numbers
import os
import pickle
import resource
import select
import signal
import subprocess
import sys
import threading
import time
import warnings
from typing import (Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple,
                    Union)

import numpy as np

from metaopt import metafeatures
from metaopt.client import Client, Study, default_client_id
from metaopt.errors import AlreadyExistsError, MetaoptError
from metaopt.spec import Categorical, Choice, Float, Int, ParamValue, search_space
from metaopt.trial import Trial, TrialState

# -- the space ---------------------------------------------------------------------------------

# The sklearn-pipelines meta-dataset's space.json, stage by stage in its order (a study binds to
# the bundled models only with the same stages, algorithms and parameters in the same order).
SPACE: Dict[str, Dict[str, Dict[str, Union[Float, Int, Categorical]]]] = {
    "imputer": {"mean": {}, "median": {}, "most_frequent": {}},
    "scaler": {"none": {}, "standard": {}, "minmax": {}, "robust": {}},
    "reducer": {
        "none": {},
        "pca": {"n_components_frac": Float(0.1, 1.0)},
        "select_kbest": {"k_frac": Float(0.1, 1.0)},
    },
    "estimator": {
        "logreg": {"C": Float(0.001, 1000.0, log=True)},
        "svm_rbf": {"C": Float(0.01, 1000.0, log=True), "gamma": Float(0.0001, 1.0, log=True)},
        "knn": {"n_neighbors": Int(1, 50, log=True),
                "weights": Categorical(("uniform", "distance"))},
        "rf": {"n_estimators": Int(10, 200, log=True), "max_depth": Int(2, 20),
               "max_features": Float(0.1, 1.0)},
        "gbt": {"learning_rate": Float(0.01, 0.5, log=True), "max_depth": Int(2, 10),
                "max_iter": Int(20, 200, log=True)},
        "extra_trees": {"n_estimators": Int(10, 200, log=True), "max_depth": Int(2, 20),
                        "max_features": Float(0.1, 1.0)},
        "gnb": {},
        "mlp": {"hidden_size": Int(8, 128, log=True), "alpha": Float(1e-05, 0.1, log=True),
                "learning_rate_init": Float(0.0001, 0.1, log=True)},
    },
}
STAGES: Tuple[str, ...] = tuple(SPACE)

OBJECTIVE = "balanced_accuracy"
MODEL = "sklearn-pipelines-deeppipe"

# The meta-dataset's protocol: one stratified 70/30 holdout split with this seed.
HOLDOUT_TEST_SIZE = 0.3
SPLIT_SEED = 0
# random_state of every estimator and reducer that takes one.
RANDOM_STATE = 0
# The meta-dataset's per-fit limit, in seconds of CPU time.
DEFAULT_FIT_TIME_LIMIT = 20.0

# Failure reasons of trials that tune stopped itself; they do not count towards n_trials, so a
# resumed run evaluates that many configurations again.
INTERRUPTED = "interrupted"


def search_space_proto():
    """:data:`SPACE` as a ``metaopt.v1.SearchSpace``."""
    return search_space(SPACE)


# -- configurations ----------------------------------------------------------------------------

Configuration = Dict[str, Choice]


def _check_param(where: str, domain: Any, value: Any) -> ParamValue:
    if isinstance(domain, Categorical):
        if not isinstance(value, str) or value not in domain.values:
            raise ValueError(f"{where}: {value!r} is not one of {list(domain.values)}")
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ValueError(f"{where}: {value!r} is not a finite number")
    if isinstance(domain, Int):
        if float(value) != round(float(value)):
            raise ValueError(f"{where}: {value!r} is not an integer")
        value = int(round(float(value)))
    else:
        value = float(value)
    if not domain.low <= value <= domain.high:
        raise ValueError(f"{where}: {value!r} is outside [{domain.low}, {domain.high}]")
    return value


def parse_configuration(value: Any) -> Configuration:
    """A validated configuration of :data:`SPACE`: ``{stage: Choice(algorithm, params)}``.

    ``value`` is a :class:`metaopt.Trial`, a mapping ``{stage: Choice(algorithm, params)}`` (or
    ``(algorithm, params)`` tuples), or a flat row of the meta-dataset's evaluations.csv:
    ``{"imputer": "mean", ..., "estimator": "svm_rbf", "svm_rbf.C": 2.0, "svm_rbf.gamma": 0.01}``
    (other keys, and empty or None parameter cells of other algorithms, are ignored).

    Raises:
        ValueError: a stage, algorithm or parameter is missing, unknown or out of its domain;
            the message names it, its value and the rule.
    """
    if isinstance(value, Trial):
        value = value.assignments
    if not isinstance(value, Mapping):
        raise ValueError(f"configuration: {type(value).__name__} is not a Trial or a mapping of "
                         "stage to (algorithm, params)")
    flat = all(isinstance(value.get(stage), str) for stage in STAGES)
    result: Configuration = {}
    for stage in STAGES:
        if stage not in value:
            raise ValueError(f"configuration: stage {stage!r} is missing; the stages are "
                             f"{list(STAGES)}")
        if flat:
            algorithm = value[stage]
            prefix = f"{algorithm}."
            params = {k[len(prefix):]: v for k, v in value.items()
                      if isinstance(k, str) and k.startswith(prefix)
                      and v is not None and v != ""}
        else:
            choice = value[stage]
            if not (isinstance(choice, tuple) and len(choice) == 2
                    and isinstance(choice[1], Mapping)):
                raise ValueError(f"configuration[{stage!r}]: {choice!r} is not a "
                                 "Choice(algorithm, params)")
            algorithm, params = choice[0], dict(choice[1])
        algorithms = SPACE[stage]
        if algorithm not in algorithms:
            raise ValueError(f"configuration[{stage!r}]: algorithm {algorithm!r} is not one of "
                             f"{list(algorithms)}")
        domains = algorithms[algorithm]
        for name in params:
            if name not in domains:
                raise ValueError(f"configuration[{stage!r}]: {algorithm} has no parameter "
                                 f"{name!r}; its parameters are {list(domains) or 'none'}")
        checked: Dict[str, ParamValue] = {}
        for name, domain in domains.items():
            where = f"configuration[{stage!r}] {algorithm}.{name}"
            if name not in params:
                raise ValueError(f"{where}: missing; {algorithm} needs {list(domains)}")
            raw = params[name]
            if flat and isinstance(raw, str) and not isinstance(domain, Categorical):
                try:
                    raw = float(raw)
                except ValueError:
                    raise ValueError(f"{where}: {raw!r} is not a number") from None
            checked[name] = _check_param(where, domain, raw)
        result[stage] = Choice(algorithm, checked)
    extra = sorted(k for k in value if not flat and k not in SPACE)
    if extra:
        raise ValueError(f"configuration: unknown stage(s) {extra}; the stages are {list(STAGES)}")
    return result


def describe(config: Configuration) -> str:
    """One line: ``median/standard/pca(n_components_frac=0.28)/svm_rbf(C=2.02, gamma=0.000113)``."""
    parts = []
    for stage in STAGES:
        algorithm, params = config[stage]
        if params:
            inner = ", ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}"
                              for k, v in params.items())
            parts.append(f"{algorithm}({inner})")
        else:
            parts.append(algorithm)
    return "/".join(parts)


# -- columns -----------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class ColumnsInfo:
    """What :func:`build_pipeline` needs to know about the data the pipeline will be fitted on.

    Attributes:
        numeric: positions of the numeric columns (imputed with the imputer stage's strategy).
        categorical: positions of the categorical columns (missing -> 'c_missing', one-hot).
        n_rows: rows of the training data (PCA's component count and k-NN's neighbours are
            clipped to it).
        n_encoded: columns after the preprocessing: numeric columns with at least one value,
            plus, per categorical column, its distinct values and one more if any is missing.
    """

    numeric: Tuple[int, ...]
    categorical: Tuple[int, ...]
    n_rows: int
    n_encoded: int


def columns_info(X: Any, categorical: Any = None) -> ColumnsInfo:
    """The :class:`ColumnsInfo` of the training data ``X`` (array or DataFrame).

    ``categorical`` is as in :func:`metaopt.metafeatures.compute`: a boolean mask or column
    indices; None infers it (a DataFrame's object/category/string/bool columns, an object array's
    text columns). Raises ValueError for malformed input, naming it.
    """
    columns, names, inferred = metafeatures._columns(X)
    mask = inferred if categorical is None else metafeatures._categorical_mask(
        categorical, len(columns))
    n_encoded = 0
    for j, column in enumerate(columns):
        missing = metafeatures._missing(column)
        if mask[j]:
            n_encoded += len(set(_to_text(column[~missing][:, None])[:, 0])) + int(missing.any())
        else:
            metafeatures._numeric_column(column, missing, names[j])
            n_encoded += int(not missing.all())
    return ColumnsInfo(numeric=tuple(j for j in range(len(columns)) if not mask[j]),
                       categorical=tuple(j for j in range(len(columns)) if mask[j]),
                       n_rows=len(columns[0]), n_encoded=n_encoded)


def _cell_is_missing(value: Any) -> bool:
    return metafeatures._is_missing(value)


def _to_float(X: Any) -> np.ndarray:
    """Numeric columns as float64, missing cells (NaN, None, pandas' NA) as NaN."""
    array = np.asarray(X)
    if array.dtype.kind in "biuf":
        return array.astype(np.float64)
    array = np.asarray(X, dtype=object)
    out = np.full(array.shape, np.nan)
    for index, value in np.ndenumerate(array):
        if not _cell_is_missing(value):
            out[index] = float(value)
    return out


def _to_text(X: Any) -> np.ndarray:
    """Categorical columns as text, missing cells as NaN (which the 'c_missing' fill replaces)."""
    array = np.asarray(X, dtype=object)
    out = np.empty(array.shape, dtype=object)
    for index, value in np.ndenumerate(array):
        out[index] = np.nan if _cell_is_missing(value) else str(value)
    return out


def f_classif_nan_to_zero(X: Any, y: Any) -> Tuple[np.ndarray, np.ndarray]:
    """scikit-learn's ANOVA F-test with NaN scores (constant columns) set to 0, as the
    meta-dataset's select_kbest used it."""
    from sklearn.feature_selection import f_classif

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        scores, pvalues = f_classif(X, y)
    return np.nan_to_num(scores, nan=0.0), pvalues


# -- pipelines ---------------------------------------------------------------------------------

def _one_hot_encoder() -> Any:
    from sklearn.preprocessing import OneHotEncoder

    # scikit-learn 1.2 renamed `sparse` to `sparse_output`.
    if "sparse_output" in inspect.signature(OneHotEncoder).parameters:
        return OneHotEncoder(handle_unknown="ignore", sparse_output=False)
    return OneHotEncoder(handle_unknown="ignore", sparse=False)


def _estimator(algorithm: str, params: Mapping[str, ParamValue], n_rows: int) -> Any:
    from sklearn import ensemble, linear_model, naive_bayes, neighbors, neural_network, svm

    if algorithm == "logreg":
        return linear_model.LogisticRegression(C=params["C"], solver="lbfgs", max_iter=300,
                                               random_state=RANDOM_STATE)
    if algorithm == "svm_rbf":
        return svm.SVC(kernel="rbf", C=params["C"], gamma=params["gamma"], max_iter=200000,
                       random_state=RANDOM_STATE)
    if algorithm == "knn":
        return neighbors.KNeighborsClassifier(n_neighbors=min(int(params["n_neighbors"]), n_rows),
                                              weights=params["weights"], n_jobs=1)
    if algorithm in ("rf", "extra_trees"):
        forest = (ensemble.RandomForestClassifier if algorithm == "rf"
                  else ensemble.ExtraTreesClassifier)
        return forest(n_estimators=int(params["n_estimators"]), max_depth=int(params["max_depth"]),
                      max_features=params["max_features"], random_state=RANDOM_STATE, n_jobs=1)
    if algorithm == "gbt":
        return ensemble.HistGradientBoostingClassifier(
            learning_rate=params["learning_rate"], max_depth=int(params["max_depth"]),
            max_iter=int(params["max_iter"]), max_leaf_nodes=31, early_stopping=False,
            random_state=RANDOM_STATE)
    if algorithm == "gnb":
        return naive_bayes.GaussianNB()
    if algorithm == "mlp":
        return neural_network.MLPClassifier(
            hidden_layer_sizes=(int(params["hidden_size"]),), alpha=params["alpha"],
            learning_rate_init=params["learning_rate_init"], solver="adam", max_iter=200,
            random_state=RANDOM_STATE)
    raise AssertionError(f"unknown estimator {algorithm!r}")


def build_pipeline(configuration: Any, X_columns_info: Any) -> Any:
    """The scikit-learn ``Pipeline`` the sklearn-pipelines meta-dataset evaluated for a
    configuration of :data:`SPACE` (unfitted).

    Steps: ``preprocess`` (a ColumnTransformer: numeric columns -> SimpleImputer with the imputer
    stage's strategy; categorical columns -> constant 'c_missing' for missing values ->
    OneHotEncoder(handle_unknown='ignore'), dense), ``scaler`` (on all columns), ``reducer``
    (PCA with round(n_components_frac * min(n_rows, n_encoded)) components, or SelectKBest with
    the F-test and k = round(k_frac * n_encoded), both at least 1), ``estimator`` (the
    meta-dataset's defaults, random_state 0, one thread; k-NN's neighbours clipped to n_rows).

    Args:
        configuration: anything :func:`parse_configuration` accepts (a Trial, a stage mapping, a
            flat evaluations.csv row).
        X_columns_info: the :class:`ColumnsInfo` of the data the pipeline will be fitted on,
            or that data itself (then :func:`columns_info` infers the categorical columns).
    """
    from sklearn.compose import ColumnTransformer
    from sklearn.decomposition import PCA
    from sklearn.feature_selection import SelectKBest
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import (FunctionTransformer, MinMaxScaler, RobustScaler,
                                       StandardScaler)

    config = parse_configuration(configuration)
    info = (X_columns_info if isinstance(X_columns_info, ColumnsInfo)
            else columns_info(X_columns_info))
    if info.n_rows < 1 or info.n_encoded < 1:
        raise ValueError(f"X_columns_info: {info!r} describes no data; it needs at least one row "
                         "and one column with a value")

    branches = []
    if info.numeric:
        branches.append(("numeric", Pipeline([
            ("as_float", FunctionTransformer(_to_float)),
            ("impute", SimpleImputer(strategy=config["imputer"].algorithm)),
        ]), list(info.numeric)))
    if info.categorical:
        branches.append(("categorical", Pipeline([
            ("as_text", FunctionTransformer(_to_text)),
            ("impute", SimpleImputer(strategy="constant", fill_value="c_missing")),
            ("one_hot", _one_hot_encoder()),
        ]), list(info.categorical)))
    preprocess = ColumnTransformer(branches, remainder="drop", sparse_threshold=0.0)

    scalers = {"none": lambda: "passthrough", "standard": StandardScaler,
               "minmax": MinMaxScaler, "robust": RobustScaler}
    scaler = scalers[config["scaler"].algorithm]()

    reducer_name, reducer_params = config["reducer"]
    reducer: Any = "passthrough"
    if reducer_name == "pca":
        n = max(1, round(reducer_params["n_components_frac"] * min(info.n_rows, info.n_encoded)))
        reducer = PCA(n_components=int(n), random_state=RANDOM_STATE)
    elif reducer_name == "select_kbest":
        k = max(1, round(reducer_params["k_frac"] * info.n_encoded))
        reducer = SelectKBest(f_classif_nan_to_zero, k=int(k))

    estimator_name, estimator_params = config["estimator"]
    estimator = _estimator(estimator_name, estimator_params, info.n_rows)
    return Pipeline([("preprocess", preprocess), ("scaler", scaler), ("reducer", reducer),
                     ("estimator", estimator)])


# -- data and the evaluation protocol ----------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class _Data:
    """Validated data with its categorical mask and the evaluation splits."""

    X: Any  # a DataFrame or a 2-D numpy array
    y: np.ndarray
    mask: Tuple[bool, ...]
    splits: Tuple[Tuple[np.ndarray, np.ndarray], ...]
    cv_folds: int  # 0: the holdout split


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


def _fit_and_score(config: Configuration, data: _Data,
                   fit_time_limit: Optional[float]) -> Tuple[float, float]:
    """Balanced accuracy of the configuration's pipeline, averaged over the splits, and the CPU
    seconds of building, fitting and predicting, summed over them."""
    from sklearn.metrics import balanced_accuracy_score

    scores = []
    cpu = 0.0
    for train, test in data.splits:
        if fit_time_limit is not None:
            _limit_cpu(fit_time_limit)
        start = time.process_time()
        X_train = _rows(data.X, train)
        pipeline = build_pipeline(config, columns_info(X_train, list(data.mask)))
        pipeline.fit(X_train, data.y[train])
        predicted = pipeline.predict(_rows(data.X, test))
        cpu += time.process_time() - start
        scores.append(balanced_accuracy_score(data.y[test], predicted))
    return float(np.mean(scores)), cpu


def _worker_main() -> None:
    """An evaluation worker: a fresh interpreter that tune talks to over stdin/stdout.

    Never a fork of the caller: a process that uses gRPC cannot fork safely (gRPC's fork
    handlers can wait forever for its own threads). Reads the caller's sys.path, then the
    evaluation function (by reference) and the data, then configurations; answers each with
    (kind, value, cpu seconds, reason). Exits at end of input, or after a fit over its CPU limit.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the caller decides what Ctrl-C stops
    # Nothing but replies on the pipe: the replies get their own descriptor, and whatever the
    # pipelines print, from Python or from C, goes to stderr.
    requests, replies = sys.stdin.buffer, os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    sys.path[:0] = [p for p in pickle.load(requests) if p not in sys.path]
    fit_and_score, data = pickle.load(requests)
    warnings.simplefilter("ignore")
    while True:
        try:
            config, fit_time_limit = pickle.load(requests)
        except EOFError:
            return
        start = time.process_time()
        over_limit = False
        try:
            value, cpu = fit_and_score(config, data, fit_time_limit)
            reply: Tuple[str, Optional[float], float, str] = ("ok", value, cpu, "")
        except _FitTimeLimit:
            over_limit = True
            reply = ("failed", None, time.process_time() - start,
                     f"fit over the CPU-time limit of {fit_time_limit:g} s")
        except Exception as error:  # any failure of the pipeline is the trial's outcome
            text = " ".join(str(error).split())[:300]
            reply = ("failed", None, time.process_time() - start,
                     f"{type(error).__name__}: {text}")
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
    """

    value: Optional[float]
    fit_seconds: float
    wall_seconds: float
    failure: str = ""
    interrupted: bool = False


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
    or, with ``cv=k``, on stratified k folds (shuffled with seed 0)::

        with metaopt.sklearn.Evaluator(X, y) as evaluator:
            evaluator.evaluate(configuration).value

    Not thread-safe: one Evaluator per thread.

    Raises:
        ValueError: malformed data or arguments, naming them.
    """

    def __init__(self, X: Any, y: Any, *, categorical: Any = None, cv: Optional[int] = None,
                 fit_time_limit: Optional[float] = DEFAULT_FIT_TIME_LIMIT) -> None:
        _check_cv(cv)
        _check_limit(fit_time_limit)
        self.data = _prepare(X, y, categorical, cv)
        self.fit_time_limit = fit_time_limit
        self._process: Optional[subprocess.Popen] = None

    @classmethod
    def _of(cls, data: _Data, fit_time_limit: Optional[float]) -> "Evaluator":
        evaluator = cls.__new__(cls)
        evaluator.data, evaluator.fit_time_limit, evaluator._process = data, fit_time_limit, None
        return evaluator

    def _start(self) -> subprocess.Popen:
        package_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            [package_root] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
        for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            env[name] = "1"  # one thread per fit, as the meta-dataset measured them
        process = subprocess.Popen(
            [sys.executable, "-c", "from metaopt.sklearn import _worker_main; _worker_main()"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
            start_new_session=True)  # Ctrl-C in a terminal reaches the caller only
        assert process.stdin is not None
        try:
            pickle.dump([p for p in sys.path if p], process.stdin)
            pickle.dump((_fit_and_score, self.data), process.stdin)
            process.stdin.flush()
        except BrokenPipeError:
            pass  # it died at start; evaluate() reports how
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
                    kind, value, cpu, reason = pickle.load(process.stdout)
                except (EOFError, pickle.UnpicklingError):
                    reason = self._died(process)
                    if should_stop():
                        return Evaluation(None, 0.0, wall, "stopped", interrupted=True)
                    return Evaluation(None, 0.0, wall, reason)
                if kind == "ok":
                    return Evaluation(value, cpu, wall)
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

    def _died(self, process: subprocess.Popen) -> str:
        code = process.wait()
        self._process = None
        if code < 0:
            number = -code
            if number in (signal.SIGXCPU, signal.SIGKILL) and self.fit_time_limit is not None:
                return f"fit over the CPU-time limit of {self.fit_time_limit:g} s"
            return f"the evaluating process died of signal {signal.Signals(number).name}"
        return f"the evaluating process exited with code {code} without a result"

    def _kill(self) -> None:
        if self._process is not None:
            if self._process.poll() is None:
                self._process.kill()
            self._process.wait()
            for stream in (self._process.stdin, self._process.stdout):
                if stream is not None:
                    with contextlib.suppress(OSError):
                        stream.close()
            self._process = None

    def close(self) -> None:
        """Stops the worker process."""
        if self._process is not None and self._process.poll() is None:
            with contextlib.suppress(OSError):
                assert self._process.stdin is not None
                self._process.stdin.close()  # end of input: it exits when idle
            try:
                self._process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
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


# -- the report --------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class TrialRecord:
    """One trial of a tuning study, as the report lists it."""

    id: int
    state: str  # COMPLETED, FAILED, INFEASIBLE, ACTIVE, STALE, ...
    value: Optional[float]
    best_so_far: Optional[float]  # the best value among this trial and the earlier ones
    pipeline: str  # describe() of its configuration
    fit_seconds: Optional[float]  # CPU seconds (metric fit_seconds)
    policy: str  # how the server chose it, e.g. deeppipe/metabu or deeppipe/ei
    client_id: str
    failure_reason: str
    configuration: Optional[Configuration] = None  # None if not a configuration of SPACE


def _records(trials: Iterable[Trial]) -> List[TrialRecord]:
    records = []
    best: Optional[float] = None
    for trial in sorted(trials, key=lambda t: t.id):
        if trial.value is not None:
            best = trial.value if best is None else max(best, trial.value)
        try:
            config: Optional[Configuration] = parse_configuration(trial)
            pipeline = describe(config)
        except ValueError:
            config, pipeline = None, "(not a configuration of this space)"
        records.append(TrialRecord(
            id=trial.id, state=trial.state.name, value=trial.value, best_so_far=best,
            pipeline=pipeline, fit_seconds=trial.metrics.get("fit_seconds"),
            policy=trial.metadata.get("policy", trial.metadata.get("source", "")),
            client_id=trial.client_id, failure_reason=trial.failure_reason,
            configuration=config))
    return records


def _nice_ticks(low: float, high: float, count: int = 5) -> List[float]:
    if not high > low:
        return [low]
    raw = (high - low) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = min((m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw),
               default=10 * magnitude)
    first = math.ceil(low / step - 1e-9) * step
    ticks = []
    value = first
    while value <= high + 1e-9 * step:
        ticks.append(round(value, 10))
        value += step
    return ticks


_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b")


def svg_line_plot(series: Mapping[str, Sequence[Tuple[float, float]]], *, title: str,
                  x_label: str, y_label: str, width: int = 640, height: int = 400,
                  y_range: Optional[Tuple[float, float]] = None) -> str:
    """A standalone SVG of step-free line series ``{name: [(x, y), ...]}`` with axes, ticks and
    a legend (no plotting library needed)."""
    points = [p for values in series.values() for p in values]
    if not points:
        raise ValueError("series: no points to plot")
    x_low, x_high = min(p[0] for p in points), max(p[0] for p in points)
    y_low, y_high = y_range or (min(p[1] for p in points), max(p[1] for p in points))
    if x_high == x_low:
        x_low, x_high = x_low - 1, x_high + 1
    if y_high == y_low:
        y_low, y_high = y_low - 0.01, y_high + 0.01
    pad = 0.05 * (y_high - y_low)
    y_low, y_high = y_low - (0 if y_range else pad), y_high + (0 if y_range else pad)
    left, right, top, bottom = 70, 20, 40, 76  # the legend goes in one row under the x label
    plot_w, plot_h = width - left - right, height - top - bottom

    def sx(x: float) -> float:
        return left + (x - x_low) / (x_high - x_low) * plot_w

    def sy(y: float) -> float:
        return top + (y_high - y) / (y_high - y_low) * plot_h

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{width / 2:.1f}" y="22" text-anchor="middle" font-size="14">'
           f'{html.escape(title)}</text>']
    for tick in _nice_ticks(y_low, y_high):
        y = sy(tick)
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + plot_w}" y2="{y:.1f}" '
                   'stroke="#e0e0e0"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{tick:g}</text>')
    for tick in _nice_ticks(x_low, x_high):
        x = sx(tick)
        out.append(f'<line x1="{x:.1f}" y1="{top + plot_h}" x2="{x:.1f}" y2="{top + plot_h + 5}" '
                   'stroke="black"/>')
        out.append(f'<text x="{x:.1f}" y="{top + plot_h + 18}" text-anchor="middle">{tick:g}'
                   '</text>')
    out.append(f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="none" '
               'stroke="black"/>')
    out.append(f'<text x="{left + plot_w / 2:.1f}" y="{top + plot_h + 36}" '
               f'text-anchor="middle">{html.escape(x_label)}</text>')
    out.append(f'<text x="16" y="{top + plot_h / 2:.1f}" text-anchor="middle" '
               f'transform="rotate(-90 16 {top + plot_h / 2:.1f})">{html.escape(y_label)}</text>')
    for i, (name, values) in enumerate(series.items()):
        colour = _COLOURS[i % len(_COLOURS)]
        path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in values)
        out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for x, y in values:
            out.append(f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="2.5" fill="{colour}"/>')
        lx, ly = left + 140 * i, height - 10
        out.append(f'<line x1="{lx}" y1="{ly - 4}" x2="{lx + 20}" y2="{ly - 4}" '
                   f'stroke="{colour}" stroke-width="2"/>')
        out.append(f'<text x="{lx + 26}" y="{ly}">{html.escape(name)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


@dataclasses.dataclass
class TuneResult:
    """What :func:`tune` returns.

    Attributes:
        pipeline: the best configuration's pipeline refitted on all of ``(X, y)`` (None with
            ``refit=False``).
        best_configuration: ``{stage: Choice(algorithm, params)}`` of the best trial.
        best_value: its balanced accuracy under the evaluation protocol.
        best_trial_id: its trial id in the study.
        study_id: the study (pass it to tune again to resume).
        bound_model: the registry model the study is bound to (``name@version``).
        zero_shot_design: how the first suggestions were chosen: ``portfolio`` (the model's
            fixed portfolio), or ``metabu`` / ``nearest`` for a model version with a task-aware
            design.
        trials: every trial of the study by id (:class:`TrialRecord`).
        protocol: ``"holdout 70/30"`` or ``"stratified k-fold (k=...)"``.
        wall_seconds: the wall-clock time of this call.
    """

    pipeline: Any
    best_configuration: Configuration
    best_value: float
    best_trial_id: int
    study_id: str
    bound_model: str
    zero_shot_design: str
    trials: List[TrialRecord]
    protocol: str
    wall_seconds: float

    def table(self) -> str:
        """The trials as a fixed-width text table."""
        header = ("trial", "state", "balanced acc.", "best so far", "CPU s", "policy", "pipeline")
        rows = [header]
        for r in self.trials:
            rows.append((str(r.id), r.state, "" if r.value is None else f"{r.value:.4f}",
                         "" if r.best_so_far is None else f"{r.best_so_far:.4f}",
                         "" if r.fit_seconds is None else f"{r.fit_seconds:.3f}", r.policy,
                         r.pipeline + (f"  [{r.failure_reason}]" if r.failure_reason else "")))
        widths = [max(len(row[i]) for row in rows) for i in range(len(header) - 1)]
        return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)) + "  " + row[-1]
                         for row in rows)

    def best_so_far_svg(self) -> str:
        """An SVG plot of the best balanced accuracy so far against the trial number."""
        points = [(float(i + 1), r.best_so_far) for i, r in enumerate(self.trials)
                  if r.best_so_far is not None]
        return svg_line_plot({"best so far": points}, title=f"metaopt tune: {self.study_id}",
                             x_label="trial", y_label=f"balanced accuracy ({self.protocol})")

    def to_csv(self, path: Union[str, "os.PathLike[str]"]) -> None:
        """Writes the trials as CSV: one row per trial, the fields of :class:`TrialRecord` but
        the configuration (its ``pipeline`` column describes it)."""
        with open(path, "w", newline="") as file:
            writer = csv.writer(file, lineterminator="\n")
            fields = [f.name for f in dataclasses.fields(TrialRecord) if f.name != "configuration"]
            writer.writerow(fields)
            for record in self.trials:
                writer.writerow(["" if v is None else v
                                 for v in (getattr(record, f) for f in fields)])

    def save(self, directory: Union[str, "os.PathLike[str]"]) -> None:
        """Writes ``trials.csv``, ``best_so_far.svg`` and ``report.md`` into ``directory``."""
        os.makedirs(directory, exist_ok=True)
        self.to_csv(os.path.join(directory, "trials.csv"))
        with open(os.path.join(directory, "best_so_far.svg"), "w") as file:
            file.write(self.best_so_far_svg())
        with open(os.path.join(directory, "report.md"), "w") as file:
            file.write(f"# metaopt tune: study {self.study_id}\n\n{self.summary()}\n\n"
                       "![best so far](best_so_far.svg)\n\n```\n" + self.table() + "\n```\n")

    def summary(self) -> str:
        counts: Dict[str, int] = {}
        for record in self.trials:
            counts[record.state] = counts.get(record.state, 0) + 1
        states = ", ".join(f"{n} {state.lower()}" for state, n in sorted(counts.items()))
        return (f"best: trial {self.best_trial_id}, balanced accuracy {self.best_value:.4f} "
                f"({self.protocol}): {describe(self.best_configuration)}\n"
                f"study {self.study_id}: {len(self.trials)} trials ({states}); model "
                f"{self.bound_model or 'none'}, first suggestions from the "
                f"{self.zero_shot_design or 'unknown'} design; this call took "
                f"{self.wall_seconds:.1f} s")

    def __repr__(self) -> str:
        return (f"TuneResult(study_id={self.study_id!r}, best_value={self.best_value:.4f}, "
                f"best={describe(self.best_configuration)!r}, trials={len(self.trials)})")


# -- tune --------------------------------------------------------------------------------------

class _Progress:
    """A progress bar on stderr: one redrawn line on a terminal, a line per trial otherwise."""

    def __init__(self, total: int, done_before: int, enabled: bool,
                 stream: Any = None) -> None:
        self.total = total
        self.done_before = done_before
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled
        self.tty = enabled and hasattr(self.stream, "isatty") and self.stream.isatty()
        self.finished = 0
        self.running = 0
        self.best: Optional[float] = None
        self.started_at = time.monotonic()
        self._lock = threading.Lock()

    def set_best(self, value: Optional[float]) -> None:
        self.best = value

    def start(self) -> None:
        with self._lock:
            self.running += 1
            self._draw()

    def finish(self, trial_id: int, value: Optional[float], failure: str, pipeline: str) -> None:
        with self._lock:
            self.running -= 1
            self.finished += 1
            if value is not None and (self.best is None or value > self.best):
                self.best = value
            if self.enabled and not self.tty:
                outcome = f"{value:.4f}" if value is not None else f"failed ({failure})"
                best = "-" if self.best is None else f"{self.best:.4f}"
                self.stream.write(f"metaopt tune: trial {trial_id} [{self.finished}/{self.total}] "
                                  f"{outcome}  best {best}  {pipeline}\n")
                self.stream.flush()
            self._draw()

    def _draw(self) -> None:
        if not self.tty:
            return
        width = 24
        filled = int(width * self.finished / max(self.total, 1))
        best = "-" if self.best is None else f"{self.best:.4f}"
        elapsed = time.monotonic() - self.started_at
        self.stream.write(f"\rmetaopt tune [{'#' * filled}{'.' * (width - filled)}] "
                          f"{self.finished}/{self.total}  running {self.running}  best {best}  "
                          f"{elapsed:.0f} s ")
        self.stream.flush()

    def close(self, message: str = "") -> None:
        if self.tty:
            self.stream.write("\n")
        if self.enabled and message:
            self.stream.write(message + "\n")
        if self.enabled:
            self.stream.flush()


def _finished_count(trials: Iterable[Trial]) -> int:
    """Trials that count towards n_trials: observed, and not stopped by tune itself."""
    return sum(1 for t in trials
               if t.state in (TrialState.COMPLETED, TrialState.STOPPED, TrialState.FAILED,
                              TrialState.INFEASIBLE)
               and not t.failure_reason.startswith(INTERRUPTED))


def _check_protocol(trials: Iterable[Trial], cv_folds: int, study_id: str) -> None:
    for trial in trials:
        recorded = trial.metrics.get("cv_folds")
        if trial.state == TrialState.COMPLETED and recorded is not None and recorded != cv_folds:
            def name(k: float) -> str:
                return "cv=None (the holdout split)" if k == 0 else f"cv={int(k)}"
            raise ValueError(f"study_id: {study_id!r} was evaluated with {name(recorded)} "
                             f"(trial {trial.id}); this call has {name(cv_folds)}: values of "
                             "different protocols are not comparable; use the same cv or "
                             "another study_id")


def _check_positive_int(name: str, value: Any, low: int = 1) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise ValueError(f"{name}: {value!r} must be an integer >= {low}")


class _Run:
    """The shared state of one tune call's worker threads."""

    def __init__(self, study: Study, data: _Data, budget: int, fit_time_limit: Optional[float],
                 deadline: Optional[float], progress: _Progress) -> None:
        self.study = study
        self.data = data
        self.budget = budget
        self.fit_time_limit = fit_time_limit
        self.deadline = deadline
        self.progress = progress
        self.stop = threading.Event()
        self.stop_reason = ""
        self.errors: List[BaseException] = []
        self._claimed = 0
        self._lock = threading.Lock()

    def halt(self, reason: str, error: Optional[BaseException] = None) -> None:
        with self._lock:
            if error is not None:
                self.errors.append(error)
            if not self.stop.is_set():
                self.stop_reason = reason
                self.stop.set()

    def claim(self) -> bool:
        with self._lock:
            if self.stop.is_set() or self._claimed >= self.budget:
                return False
            if self.deadline is not None and time.monotonic() >= self.deadline:
                return False
            self._claimed += 1
            return True

    def unclaim(self) -> None:
        with self._lock:
            self._claimed -= 1

    def metrics(self, evaluation: Evaluation) -> Dict[str, float]:
        return {"fit_seconds": evaluation.fit_seconds, "wall_seconds": evaluation.wall_seconds,
                "cv_folds": float(self.data.cv_folds)}

    def work(self, client_id: str, finished: threading.Event) -> None:
        trial: Optional[Trial] = None
        evaluator = Evaluator._of(self.data, self.fit_time_limit)
        try:
            while self.claim():
                trials = self.study.suggest(client_id=client_id)
                if not trials:  # nothing left to suggest
                    self.unclaim()
                    return
                trial = trials[0]
                self._evaluate(evaluator, trial)
                trial = None
        except BaseException as error:  # noqa: B036 - recorded, re-raised by tune()
            self.halt(f"an error in worker {client_id}: {error}", error)
        finally:
            evaluator.close()
            try:
                if trial is not None:  # suggested but not observed: never leave it ACTIVE
                    with contextlib.suppress(MetaoptError):
                        self.study.observe(trial, failed=f"{INTERRUPTED}: {self.stop_reason}",
                                           metrics={"cv_folds": float(self.data.cv_folds)})
            finally:
                finished.set()

    def _evaluate(self, evaluator: Evaluator, trial: Trial) -> None:
        config = parse_configuration(trial)
        pipeline = describe(config)
        heartbeat = _Heartbeat(self.study, trial)
        self.progress.start()
        evaluation = evaluator.evaluate(config, should_stop=self.stop.is_set,
                                        on_tick=heartbeat.tick)
        if evaluation.interrupted:
            self.unclaim()
            self.progress.finish(trial.id, None, "interrupted", pipeline)
            self.study.observe(trial, failed=f"{INTERRUPTED}: {self.stop_reason}",
                               metrics=self.metrics(evaluation))
            return
        if evaluation.value is None:
            self.study.observe(trial, failed=evaluation.failure, metrics=self.metrics(evaluation))
        else:
            self.study.observe(trial, evaluation.value, metrics=self.metrics(evaluation))
        self.progress.finish(trial.id, evaluation.value, evaluation.failure, pipeline)


class _Heartbeat:
    """Extends a trial's lease while it is evaluated, about three times per lease period."""

    def __init__(self, study: Study, trial: Trial) -> None:
        self.study = study
        self.trial = trial
        self.last = time.monotonic()
        expire = trial.lease_expire_time
        lease = ((expire - datetime.datetime.now(datetime.timezone.utc)).total_seconds()
                 if expire is not None else 3600.0)
        self.interval = min(60.0, max(0.5, lease / 3))

    def tick(self) -> None:
        if time.monotonic() - self.last < self.interval:
            return
        self.last = time.monotonic()
        with contextlib.suppress(MetaoptError):  # a late Observe is still accepted
            self.study.heartbeat([self.trial])


def tune(X: Any, y: Any, n_trials: int = 25, *, server: Union[str, Client] = "localhost:50051",
         workers: int = 1, timeout: Optional[float] = None, study_id: Optional[str] = None,
         categorical: Any = None, cv: Optional[int] = None,
         fit_time_limit: Optional[float] = DEFAULT_FIT_TIME_LIMIT, seed: int = 0,
         model: str = MODEL, refit: bool = True, progress: bool = True,
         report_dir: Optional[Union[str, "os.PathLike[str]"]] = None) -> TuneResult:
    """Tunes a scikit-learn pipeline for the classification data ``(X, y)`` with metaopt.

    Creates (or, with an existing ``study_id``, resumes) a DeepPipe study over :data:`SPACE`
    bound to the server's meta-learned ``model``, with the data's meta-features as
    ``dataset_features``; evaluates the suggested pipelines here, ``workers`` at a time, each
    worker with its own evaluation process (:class:`Evaluator`); reports each balanced accuracy
    back; then refits the best pipeline on all of ``(X, y)``.

    Args:
        X, y: the data: a 2-D array or DataFrame (missing values as NaN or None) and one class
            label per row.
        n_trials: the study's budget of evaluated trials; a resumed study runs only those it
            still lacks (trials tune stopped itself, on Ctrl-C, do not count).
        server: ``host:port`` of the metaopt server, or a :class:`metaopt.Client` (for tokens
            and TLS).
        workers: pipelines evaluated at once, each in its own process under its own client id.
        timeout: seconds after which no new trial starts (running ones finish); None: no limit.
        study_id: the study to create or resume; None: a new id (``result.study_id``).
        categorical: which columns are categorical (mask or indices); None infers them.
        cv: None for the meta-dataset's stratified 70/30 holdout split (seed 0), or k for
            stratified k-fold cross-validation (shuffled with seed 0).
        fit_time_limit: CPU seconds one fit (one fold) may take before the trial is recorded as
            FAILED; None: no limit.
        seed: the study's seed.
        model: the registry model to bind to (``name`` or ``name@version``).
        refit: refit the best pipeline on all of ``(X, y)``.
        progress: show progress on stderr.
        report_dir: if given, :meth:`TuneResult.save` writes the report there.

    Returns:
        A :class:`TuneResult`: the refitted pipeline, the best configuration and the trials.

    Raises:
        ValueError: a malformed argument (the message names it, its value and the rule), or a
            study_id that exists with another dataset, seed, model or protocol.
        KeyboardInterrupt: after Ctrl-C, once the running evaluations are stopped and recorded
            as FAILED ("interrupted: ..."), so the study keeps no ACTIVE trial.
        MetaoptError: the server refused a call (e.g. it serves no such model).
        RuntimeError: no trial completed, so there is no pipeline to return.
    """
    started = time.monotonic()
    _check_positive_int("n_trials", n_trials)
    _check_positive_int("workers", workers)
    if workers > 64:
        raise ValueError(f"workers: {workers} must be at most 64")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, numbers.Real)
                                or not math.isfinite(timeout) or timeout <= 0):
        raise ValueError(f"timeout: {timeout!r} must be None or a number of seconds > 0")
    if study_id is not None and (not isinstance(study_id, str) or not study_id):
        raise ValueError(f"study_id: {study_id!r} must be None or a non-empty string")
    _check_cv(cv)
    _check_limit(fit_time_limit)
    _check_positive_int("seed", seed, low=0)
    if not isinstance(model, str) or not model:
        raise ValueError(f"model: {model!r} must be a registry model name (e.g. {MODEL!r})")
    if not isinstance(server, (str, Client)) or (isinstance(server, str) and not server):
        raise ValueError(f"server: {server!r} must be 'host:port' or a metaopt.Client")
    for name, flag in (("refit", refit), ("progress", progress)):
        if not isinstance(flag, bool):
            raise ValueError(f"{name}: {flag!r} must be True or False")
    if report_dir is not None and not isinstance(report_dir, (str, os.PathLike)):
        raise ValueError(f"report_dir: {report_dir!r} must be None or a folder path")

    data = _prepare(X, y, categorical, cv)
    # The sklearn-pipelines models know their tasks by the simple features only (the
    # meta-dataset records no landmarkers), so the cross-validated landmarkers are not computed.
    features = metafeatures.compute(X, y, list(data.mask), landmarkers=False)
    protocol = "holdout 70/30" if cv is None else f"stratified {cv}-fold CV"
    study_id = study_id or f"sklearn-{default_client_id().rsplit('-', 1)[-1]}-{int(time.time())}"

    client = Client(server) if isinstance(server, str) else server
    try:
        try:
            study = client.create_study(
                study_id, search_space_proto(), objective=OBJECTIVE, goal="maximize",
                algorithm="deeppipe", model=model, seed=seed, dataset_features=features)
        except AlreadyExistsError as error:
            raise ValueError(f"study_id: {study_id!r} exists with another spec (another dataset, "
                             f"categorical columns, seed or model); give another study_id "
                             f"({error.message})") from error
        existing = list(study.trials())
        _check_protocol(existing, data.cv_folds, study_id)
        done = _finished_count(existing)
        budget = max(0, n_trials - done)
        bar = _Progress(budget, done, progress)
        bar.set_best(max((t.value for t in existing if t.value is not None), default=None))
        deadline = None if timeout is None else started + float(timeout)
        run = _Run(study, data, budget, fit_time_limit, deadline, bar)
        base = default_client_id()
        # Each worker sets its event when it has returned. (Not Thread.join: in Python 3.11 a
        # KeyboardInterrupt inside join() can mark a running thread as stopped.)
        finished = [threading.Event() for _ in range(workers)]
        for i in range(workers):
            threading.Thread(target=run.work, args=(f"{base}-w{i}", finished[i]), daemon=True,
                             name=f"metaopt-tune-{i}").start()
        interrupted = False
        try:
            for event in finished:
                while not event.wait(0.2):
                    pass
        except KeyboardInterrupt:
            interrupted = True
            run.halt("Ctrl-C")
        # Cleanup: wait for every worker to stop its evaluation and record its trial, even through a
        # second Ctrl-C.
        for event in finished:
            while not event.is_set():
                try:
                    event.wait(0.2)
                except KeyboardInterrupt:
                    interrupted = True
        if interrupted:
            bar.close(f"metaopt tune: interrupted; study {study_id} keeps its trials; "
                      f"tune(..., study_id={study_id!r}) resumes it")
            raise KeyboardInterrupt
        bar.close()
        if run.errors:
            raise run.errors[0]

        study.refresh()
        records = _records(study.trials())
        best_trial = study.best_trial()
        if best_trial is None or best_trial.value is None:
            reasons = sorted({r.failure_reason for r in records if r.failure_reason})
            raise RuntimeError(f"study {study_id}: no trial completed, so there is no best "
                               f"pipeline; failures: {reasons[:5]}")
        best = parse_configuration(best_trial)
        pipeline = None
        if refit:
            pipeline = build_pipeline(best, columns_info(data.X, list(data.mask)))
            pipeline.fit(data.X, data.y)
        result = TuneResult(
            pipeline=pipeline, best_configuration=best, best_value=float(best_trial.value),
            best_trial_id=best_trial.id, study_id=study_id, bound_model=study.bound_model,
            zero_shot_design=dict(study.proto.metadata).get("zero_shot_design", ""),
            trials=records, protocol=protocol, wall_seconds=time.monotonic() - started)
        if report_dir is not None:
            result.save(report_dir)
        return result
    finally:
        if isinstance(server, str):
            client.close()
