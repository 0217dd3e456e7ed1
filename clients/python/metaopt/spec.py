"""Building ``metaopt.v1`` search spaces, study specs and configurations from plain Python values.

A search space is a mapping ``stage -> algorithm -> parameter -> domain``; plain hyperparameter
optimization is one stage with one algorithm (:func:`flat_space`)::

    space = metaopt.search_space({
        "scaler": {"none": {}, "standard": {}},
        "estimator": {
            "svm": {"C": metaopt.Float(1e-2, 1e3, log=True)},
            "knn": {"n_neighbors": metaopt.Int(1, 30)},
        },
    })
    spec = metaopt.study_spec(space, objective="accuracy", goal="maximize", algorithm="gp")

The server validates everything (bounds, names, catalogue membership) and answers
INVALID_ARGUMENT naming the field; these helpers only check Python types.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from typing import Any, Dict, Iterable, Mapping, NamedTuple, Optional, Sequence, Union

from metaopt.v1 import study_pb2

ParamValue = Union[float, int, str]


@dataclasses.dataclass(frozen=True)
class Float:
    """A real parameter on [low, high]; with ``log`` values spread geometrically (low > 0)."""

    low: float
    high: float
    log: bool = False


@dataclasses.dataclass(frozen=True)
class Int:
    """An integer parameter on [low, high]; with ``log`` values spread geometrically (low >= 1)."""

    low: int
    high: int
    log: bool = False


@dataclasses.dataclass(frozen=True)
class Categorical:
    """A categorical parameter: one of ``values``."""

    values: Sequence[str]


Domain = Union[Float, Int, Categorical]


class Choice(NamedTuple):
    """The choice made in one stage: an algorithm and its parameters."""

    algorithm: str
    params: Dict[str, ParamValue]


_GOALS = {
    "minimize": study_pb2.GOAL_MINIMIZE,
    "maximize": study_pb2.GOAL_MAXIMIZE,
}
_ALGORITHMS = {
    "random": study_pb2.ALGORITHM_KIND_RANDOM,
    "gp": study_pb2.ALGORITHM_KIND_GP,
    "deeppipe": study_pb2.ALGORITHM_KIND_DEEPPIPE,
    "pmf": study_pb2.ALGORITHM_KIND_PMF,
    "mosaic": study_pb2.ALGORITHM_KIND_MOSAIC,
    "grosi": study_pb2.ALGORITHM_KIND_GROSI,
    "fsbo": study_pb2.ALGORITHM_KIND_FSBO,
}


def _parameter(name: str, domain: Domain) -> study_pb2.Parameter:
    parameter = study_pb2.Parameter(name=name)
    if isinstance(domain, Float):
        parameter.float_domain.low = domain.low
        parameter.float_domain.high = domain.high
        parameter.float_domain.log = domain.log
    elif isinstance(domain, Int):
        for field, bound in (("low", domain.low), ("high", domain.high)):
            if isinstance(bound, bool) or not isinstance(bound, numbers.Integral):
                raise TypeError(f"parameter {name!r}: Int.{field} must be an integer, got {bound!r}")
        parameter.int_domain.low = int(domain.low)
        parameter.int_domain.high = int(domain.high)
        parameter.int_domain.log = domain.log
    elif isinstance(domain, Categorical):
        if isinstance(domain.values, str):
            raise TypeError(f"parameter {name!r}: Categorical.values must be a list of strings")
        parameter.categorical_domain.values.extend(str(v) for v in domain.values)
    else:
        raise TypeError(
            f"parameter {name!r}: domain must be Float, Int or Categorical, got {domain!r}")
    return parameter


def search_space(stages: Mapping[str, Mapping[str, Mapping[str, Domain]]]) -> study_pb2.SearchSpace:
    """A pipeline space from ``{stage: {algorithm: {parameter: domain}}}`` (in insertion order)."""
    space = study_pb2.SearchSpace()
    for stage_name, algorithms in stages.items():
        stage = space.stages.add(name=stage_name)
        for algorithm_name, params in algorithms.items():
            algorithm = stage.algorithms.add(name=algorithm_name)
            for param_name, domain in params.items():
                algorithm.parameters.append(_parameter(param_name, domain))
    return space


def flat_space(params: Mapping[str, Domain], name: str = "model") -> study_pb2.SearchSpace:
    """Plain hyperparameter optimization: one stage and one algorithm, both called ``name``."""
    return search_space({name: {name: params}})


def _enum(value: Union[str, int], table: Mapping[str, int], what: str) -> int:
    if isinstance(value, str):
        key = value.lower()
        if key not in table:
            raise ValueError(f"{what}: {value!r} is not one of {sorted(table)}")
        return table[key]
    return int(value)


_SENSES = {
    "<=": study_pb2.CONSTRAINT_SENSE_AT_MOST,
    ">=": study_pb2.CONSTRAINT_SENSE_AT_LEAST,
}


def _objectives(spec: study_pb2.StudySpec, objectives: Sequence[Sequence[Any]]) -> None:
    """Fills ``spec.objectives`` (and ``spec.objective``, the first) from ``(name, goal)`` or
    ``(name, goal, reference)`` tuples."""
    if isinstance(objectives, (str, bytes)) or not isinstance(objectives, Sequence):
        raise TypeError(f"objectives: {objectives!r} is not a list of (name, goal) tuples")
    if not objectives:
        raise ValueError("objectives: empty; give at least one (name, goal)")
    for i, item in enumerate(objectives):
        if isinstance(item, (str, bytes)) or not isinstance(item, Sequence) or \
                len(item) not in (2, 3):
            raise TypeError(f"objectives[{i}]: {item!r} is not a (name, goal) or "
                            "(name, goal, reference) tuple")
        name = item[0]
        if not isinstance(name, str) or not name:
            raise ValueError(f"objectives[{i}]: name {name!r} is not a non-empty string")
        objective = study_pb2.Objective(name=name,
                                        goal=_enum(item[1], _GOALS, f"objectives[{i}].goal"))
        if len(item) == 3 and item[2] is not None:
            reference = item[2]
            if isinstance(reference, bool) or not isinstance(reference, numbers.Real) or \
                    not math.isfinite(float(reference)):
                raise ValueError(f"objectives[{i}].reference: {reference!r} is not a finite "
                                 "number")
            objective.reference = float(reference)
        spec.objectives.append(objective)
    # The server's canonical form: the first objective is also `objective`; one objective is
    # `objective` alone (so that creating the study again compares equal).
    spec.objective.CopyFrom(spec.objectives[0])
    if len(spec.objectives) == 1:
        spec.ClearField("objectives")


def _constraints(spec: study_pb2.StudySpec, constraints: Sequence[Sequence[Any]]) -> None:
    """Fills ``spec.constraints`` from ``(metric, "<=" or ">=", bound)`` tuples."""
    if isinstance(constraints, (str, bytes)) or not isinstance(constraints, Sequence):
        raise TypeError(f"constraints: {constraints!r} is not a list of (metric, sense, bound) "
                        "tuples")
    for i, item in enumerate(constraints):
        if isinstance(item, (str, bytes)) or not isinstance(item, Sequence) or len(item) != 3:
            raise TypeError(f"constraints[{i}]: {item!r} is not a (metric, \"<=\" or \">=\", "
                            "bound) tuple")
        metric, sense, bound = item
        if not isinstance(metric, str) or not metric:
            raise ValueError(f"constraints[{i}]: metric {metric!r} is not a non-empty string")
        if sense not in _SENSES:
            raise ValueError(f"constraints[{i}]: sense {sense!r} is not one of {sorted(_SENSES)}")
        if isinstance(bound, bool) or not isinstance(bound, numbers.Real) or \
                not math.isfinite(float(bound)):
            raise ValueError(f"constraints[{i}]: bound {bound!r} is not a finite number")
        spec.constraints.add(metric=metric, sense=_SENSES[sense], bound=float(bound))


def study_spec(
    space: study_pb2.SearchSpace,
    *,
    objective: Optional[str] = None,
    goal: Optional[Union[str, int]] = None,
    objectives: Optional[Sequence[Sequence[Any]]] = None,
    constraints: Sequence[Sequence[Any]] = (),
    algorithm: Union[str, int] = "gp",
    model: str = "",
    initial_trials: int = 0,
    acquisition_samples: int = 0,
    seed: int = 0,
    candidates: Iterable[Any] = (),
    dataset_features: Optional[Mapping[str, float]] = None,
    early_stopping: Optional[study_pb2.EarlyStoppingSpec] = None,
) -> study_pb2.StudySpec:
    """A ``StudySpec``.

    Args:
        space: the search space (see :func:`search_space`, :func:`flat_space`).
        objective: the objective's name (default ``"objective"``).
        goal: ``"maximize"`` (default) or ``"minimize"`` (or a ``metaopt.v1.Goal`` value).
        objectives: instead of ``objective`` and ``goal``, several objectives (2 or 3) optimized
            together, as ``[(name, goal), ...]``; a third element sets the objective's
            coordinate of the hypervolume's reference point (``(name, goal, reference)``).
            Observe them all (``study.observe(trial, {name: value, ...})``); the study looks for
            their Pareto front (:meth:`Study.pareto_front`).
        constraints: limits on observed metrics, ``[(metric, "<=" or ">=", bound), ...]``; a
            trial that violates one is kept with ``trial.feasible`` False.
        algorithm: ``"random"``, ``"gp"``, ``"deeppipe"``, ``"pmf"``, ``"mosaic"``,
            ``"grosi"`` or ``"fsbo"`` (or a ``metaopt.v1.AlgorithmKind`` value).
        model: a registry model (``"name"`` or ``"name@version"``); empty: the one whose space
            matches, if any; ``"none"``: no model.
        initial_trials: initial-design suggestions before the model takes over (0: default).
        acquisition_samples: random samples of the space the acquisition search scores at each
            Suggest of a GP, DeepPipe or GROSI study without candidates (0: the server's
            default, 500); more explore a large space better at a linear cost.
        seed: the study's random seed (runs with the same seed and history are reproducible).
        candidates: a finite catalogue of configurations (see :func:`configuration`).
        dataset_features: meta-features of the dataset, for warm starts that use them.
        early_stopping: the rule that stops trials early from their intermediate results
            (:func:`median_stopping`, :func:`asha`, :func:`successive_halving`,
            :func:`threshold_stopping`); None: never stop.
    """
    spec = study_pb2.StudySpec(seed=seed)
    spec.search_space.CopyFrom(space)
    if objectives is not None:
        if objective is not None or goal is not None:
            raise ValueError("objectives: give objectives, or objective and goal, not both")
        _objectives(spec, objectives)
    else:
        spec.objective.name = "objective" if objective is None else objective
        spec.objective.goal = _enum("maximize" if goal is None else goal, _GOALS, "goal")
    _constraints(spec, constraints)
    spec.algorithm.kind = _enum(algorithm, _ALGORITHMS, "algorithm")
    spec.algorithm.model = model
    spec.algorithm.initial_trials = initial_trials
    spec.algorithm.acquisition_samples = acquisition_samples
    for candidate in candidates:
        spec.candidates.append(configuration(candidate, space))
    for name, value in (dataset_features or {}).items():
        spec.dataset_features[name] = float(value)
    if early_stopping is not None:
        spec.early_stopping.CopyFrom(early_stopping)
    return spec


# Early-stopping rules (docs/api.md, "Early stopping", states their exact semantics). Zero
# arguments take the server's defaults.

def _compared(rule: study_pb2.EarlyStoppingSpec, metric: Optional[str],
              metric_goal: Optional[str]) -> study_pb2.EarlyStoppingSpec:
    """Sets what the rule compares: ``metric`` (a name of the reports' metrics) instead of the
    value, in the direction ``metric_goal`` ("minimize" or "maximize"; None: the objective's)."""
    if metric is not None:
        if not isinstance(metric, str) or not metric:
            raise ValueError(f"metric: {metric!r} is not a non-empty string")
        rule.metric = metric
    if metric_goal is not None:
        if metric is None:
            raise ValueError("metric_goal: given without metric")
        if metric_goal not in _GOALS:
            raise ValueError(f"metric_goal: {metric_goal!r} is not one of {sorted(_GOALS)}")
        rule.metric_goal = _GOALS[metric_goal]
    return rule


def median_stopping(start_step: int = 0, min_trials: int = 0, *, metric: Optional[str] = None,
                    metric_goal: Optional[str] = None) -> study_pb2.EarlyStoppingSpec:
    """Median stopping (Vizier, Katib): stop a trial whose best value so far is worse than the
    median of the completed trials' running averages at the same step. ``min_trials`` 0: 3.
    ``metric``: compare that metric of the reports instead of their value (every report must
    carry it), in the direction ``metric_goal`` (None: the objective's); so for every rule."""
    rule = study_pb2.EarlyStoppingSpec()
    rule.median.start_step = start_step
    rule.median.min_trials = min_trials
    return _compared(rule, metric, metric_goal)


def asha(min_resource: int = 0, reduction_factor: int = 0, grace_period: int = 0, *,
         metric: Optional[str] = None,
         metric_goal: Optional[str] = None) -> study_pb2.EarlyStoppingSpec:
    """Asynchronous successive halving (Li et al.): at each rung ``min_resource *
    reduction_factor**k`` only the top ``1/reduction_factor`` continue. 0: 1 and 3."""
    rule = study_pb2.EarlyStoppingSpec()
    rule.asha.min_resource = min_resource
    rule.asha.reduction_factor = reduction_factor
    rule.asha.grace_period = grace_period
    return _compared(rule, metric, metric_goal)


def successive_halving(cohort_size: int, min_resource: int = 0, reduction_factor: int = 0, *,
                       metric: Optional[str] = None,
                       metric_goal: Optional[str] = None) -> study_pb2.EarlyStoppingSpec:
    """Synchronous successive halving over cohorts of ``cohort_size`` trials (by id)."""
    rule = study_pb2.EarlyStoppingSpec()
    rule.successive_halving.cohort_size = cohort_size
    rule.successive_halving.min_resource = min_resource
    rule.successive_halving.reduction_factor = reduction_factor
    return _compared(rule, metric, metric_goal)


def threshold_stopping(threshold: float, start_step: int = 0, *, metric: Optional[str] = None,
                       metric_goal: Optional[str] = None) -> study_pb2.EarlyStoppingSpec:
    """Stop a trial whose reported value is worse than ``threshold`` (from ``start_step`` on)."""
    rule = study_pb2.EarlyStoppingSpec()
    rule.threshold.threshold = threshold
    rule.threshold.start_step = start_step
    return _compared(rule, metric, metric_goal)


def _set_value(target: study_pb2.ParameterValue, name: str, value: Any) -> None:
    if isinstance(value, str):
        target.category = value
    elif isinstance(value, numbers.Real) and not isinstance(value, bool):
        if not math.isfinite(float(value)):
            raise ValueError(f"parameter {name!r}: {value!r} is not a finite number")
        target.number = float(value)
    else:
        raise TypeError(f"parameter {name!r}: value must be a number or a string, got {value!r}")


def configuration(
    value: Any, space: Optional[study_pb2.SearchSpace] = None
) -> study_pb2.Configuration:
    """A ``Configuration`` from a proto, ``{stage: Choice(algorithm, params)}`` (tuples work too),
    or, for a space with a single stage, a flat ``{parameter: value}`` mapping."""
    if isinstance(value, study_pb2.Configuration):
        return value
    if not isinstance(value, Mapping):
        raise TypeError(f"configuration must be a Configuration or a mapping, got {value!r}")
    config = study_pb2.Configuration()
    if value and all(isinstance(v, tuple) and len(v) == 2 for v in value.values()):
        for stage, (algorithm, params) in value.items():
            assignment = config.assignments.add(stage=stage, algorithm=algorithm)
            for name, v in params.items():
                _set_value(assignment.parameters[name], name, v)
        return config
    if space is None or len(space.stages) != 1:
        raise ValueError(
            "configuration: a flat {parameter: value} mapping needs a space with exactly one "
            "stage; give {stage: Choice(algorithm, params)} instead")
    stage = space.stages[0]
    assignment = config.assignments.add(stage=stage.name)
    if len(stage.algorithms) == 1:
        assignment.algorithm = stage.algorithms[0].name
    for name, v in value.items():
        _set_value(assignment.parameters[name], name, v)
    return config
