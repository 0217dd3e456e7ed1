"""The sklearn-pipelines space (:data:`SPACE`), its protocol's constants, and configurations of it
(:func:`parse_configuration`, :func:`describe`)."""

from __future__ import annotations

import math
import numbers
from typing import Any, Dict, Mapping, Tuple, Union

from metaopt.spec import Categorical, Choice, Float, Int, ParamValue, search_space
from metaopt.trial import Trial

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

# The meta-dataset's protocol: one stratified 70/30 holdout split with this seed.
HOLDOUT_TEST_SIZE = 0.3
SPLIT_SEED = 0
# random_state of every estimator and reducer that takes one.
RANDOM_STATE = 0
# The meta-dataset's per-fit limit, in seconds of CPU time.
DEFAULT_FIT_TIME_LIMIT = 20.0


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
