"""An Optuna sampler that asks a metaopt server: switch an Optuna study in one line.

::

    import optuna
    from metaopt.integration.optuna import Sampler

    study = optuna.create_study(direction="maximize",
                                sampler=Sampler("localhost:50051"))   # the one line
    study.optimize(objective, n_trials=50)

Optuna keeps its own storage, pruners and callbacks; the sampler only decides the parameters.

How it samples (Optuna's BaseSampler protocol):

- *Relative sampling* over the intersection search space (the parameters every finished trial
  so far has, with the same distribution; or a ``search_space`` given up front): the sampler
  creates (or gets) a metaopt study over that space and asks it with ``Suggest``. A registry model
  whose space matches serves the study, as for any other metaopt client. The study id is
  ``<prefix>-<hash of the space>``, so a space that changes gets its own study, warm-started with
  the Optuna trials that already covered it.
- *Independent sampling* for the other parameters (conditional ones, and all of them until a
  first trial has finished): Optuna's RandomSampler, or the ``independent_sampler`` given.
- *Outcomes*: a COMPLETE Optuna trial is observed with its value; a FAIL one as FAILED with
  Optuna's failure reason; a PRUNED one ends STOPPED, as a trial that metaopt's own early-stopping
  rule stopped: its finite intermediate values are reported (``ReportIntermediate``, by
  increasing step), the last with the client's stop reason (``Optuna's <Pruner> pruned it at
  step N``), and it is observed with that last value (Optuna's pruner decides; the metaopt
  study has no rule of its own). A pruned trial without a finite intermediate value, or whose
  metaopt trial no longer takes reports (its lease expired), is observed as FAILED with reason
  ``pruned at step N``. An Optuna trial whose parameters were sampled
  independently but cover the space is recorded with ``ObserveConfiguration``; so is one that
  evaluated other values than the suggestion (fixed or enqueued parameters), whose suggested
  metaopt trial becomes FAILED (``superseded``). Every observation carries the Optuna trial number
  as the metric ``optuna_trial_number``.

Each Optuna trial asks as its own client id (``optuna-<trial id>-<client id>``), so Optuna's
parallel workers (threads or processes) get distinct trials, and a retried ``Suggest`` the same.

Several objectives (``optuna.create_study(directions=[...])``, 2 or 3 of them): the metaopt study
has the objectives ``value_0``, ``value_1`` (, ``value_2``) with Optuna's directions, and looks for
their Pareto front (algorithm ``"gp"``, ``"deeppipe"`` or ``"random"``). A pruned trial of such a
study is observed as FAILED (Optuna does not prune multi-objective trials; a STOPPED trial would
need every objective's value).

Constraints (``constraints_func``, Optuna's convention: it maps a finished trial to a sequence of
floats, and the trial is feasible when every one is <= 0): each value is observed as the metric
``optuna_constraint_<i>`` and the metaopt study constrains it ``<= 0``, so its GP models
feasibility (EI x P(feasible), or the Pareto equivalent) and its best trial and Pareto front are
feasible ones. As Optuna's own samplers do, the values are also stored in the trial's system
attribute ``constraints``. The number of constraints is learned from the first trial that
finishes; until then parameters are sampled independently.

Requires Optuna 3.0 or later.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import re
import threading
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Set, Tuple, Union

try:
    import optuna
    from optuna.distributions import (BaseDistribution, CategoricalDistribution,
                                      FloatDistribution, IntDistribution)
except ImportError as _missing:  # no Optuna, or one older than 3.0 (no FloatDistribution)
    raise ImportError(
        f"metaopt.integration.optuna needs Optuna 3.0 or later ({_missing}): "
        "python -m pip install 'optuna>=3.0' (Debian: python3-optuna)") from None
from optuna.samplers import BaseSampler, RandomSampler
from optuna.study import Study as OptunaStudy
from optuna.study import StudyDirection
from optuna.trial import FrozenTrial, TrialState as OptunaTrialState

import metaopt
from metaopt.errors import FailedPreconditionError

try:  # Optuna >= 3.2
    from optuna.search_space import IntersectionSearchSpace
except ImportError:  # Optuna 3.0 and 3.1
    from optuna.samplers import IntersectionSearchSpace  # type: ignore[no-redef]

__all__ = ["Sampler"]

_logger = logging.getLogger(__name__)

# System attributes the sampler sets on the Optuna trials it samples relatively.
STUDY_ATTR = "metaopt:study_id"
TRIAL_ATTR = "metaopt:trial_id"
# The metric that records the Optuna trial number of every observation.
TRIAL_NUMBER_METRIC = "optuna_trial_number"
# Optuna's system attribute of a trial's constraint values (optuna.samplers._base).
CONSTRAINTS_ATTR = "constraints"
# The most objectives a metaopt study optimizes together.
_MAX_OBJECTIVES = 3
_STAGE = "optuna"
_MAX_ID = 128
# The most intermediate values a pruned trial reports (the server keeps at most 10,000).
_MAX_REPORTED = 1000


class _Codec:
    """Maps one Optuna distribution to a metaopt domain and values between the two."""

    def __init__(self, name: str, distribution: BaseDistribution) -> None:
        self.name = name
        self.distribution = distribution
        self.step: Optional[float] = None
        self.labels: List[str] = []
        if isinstance(distribution, CategoricalDistribution):
            labels = [str(choice) for choice in distribution.choices]
            if len(set(labels)) != len(labels):  # e.g. 1 and "1": keep them apart
                labels = [f"{i}:{label}" for i, label in enumerate(labels)]
            self.labels = labels
            self.domain: metaopt.spec.Domain = metaopt.Categorical(labels)
        elif isinstance(distribution, IntDistribution):
            if distribution.step != 1:  # the grid low, low + step, ... as its index
                self.step = float(distribution.step)
                self.domain = metaopt.Int(0, (distribution.high - distribution.low)
                                          // distribution.step)
            else:
                self.domain = metaopt.Int(distribution.low, distribution.high,
                                          log=distribution.log)
        elif isinstance(distribution, FloatDistribution):
            if distribution.step is not None:
                self.step = float(distribution.step)
                self.domain = metaopt.Int(0, int(round((distribution.high - distribution.low)
                                                       / distribution.step)))
            else:
                self.domain = metaopt.Float(distribution.low, distribution.high,
                                            log=distribution.log)
        else:
            raise TypeError(f"{type(distribution).__name__} is not supported")

    def to_optuna(self, value: Any) -> Any:
        """The Optuna value for a metaopt trial's value."""
        d = self.distribution
        if isinstance(d, CategoricalDistribution):
            return d.choices[self.labels.index(str(value))]
        if self.step is not None:
            index = int(round(float(value)))
            if isinstance(d, IntDistribution):
                return min(d.high, d.low + index * d.step)
            return min(d.high, d.low + index * self.step)
        if isinstance(d, IntDistribution):
            return min(d.high, max(d.low, int(round(float(value)))))
        return min(d.high, max(d.low, float(value)))

    def to_metaopt(self, value: Any) -> Union[float, int, str]:
        """The metaopt value for an Optuna trial's value (a warm-start observation)."""
        d = self.distribution
        if isinstance(d, CategoricalDistribution):
            return self.labels[d.choices.index(value)]
        if self.step is not None:
            return int(round((float(value) - d.low) / self.step))
        if isinstance(d, IntDistribution):
            return int(value)
        return float(value)


def objective_names(count: int) -> List[str]:
    """The metaopt objective names of an Optuna study with ``count`` objectives: ``value`` for
    one, ``value_0``, ``value_1``, ... for several."""
    return ["value"] if count == 1 else [f"value_{i}" for i in range(count)]


def constraint_metric(index: int) -> str:
    """The metric that carries the constraint value ``index`` of ``constraints_func``."""
    return f"optuna_constraint_{index}"


def _supported(distribution: BaseDistribution) -> bool:
    return (isinstance(distribution, (CategoricalDistribution, IntDistribution,
                                      FloatDistribution))
            and not distribution.single())


class _SpaceStudy:
    """A metaopt study over one Optuna search space, with the codecs of its parameters."""

    def __init__(self, study: metaopt.Study, codecs: Dict[str, _Codec]) -> None:
        self.study = study
        self.codecs = codecs

    def covers(self, trial: FrozenTrial) -> bool:
        return all(trial.distributions.get(name) == codec.distribution
                   for name, codec in self.codecs.items())

    def configuration(self, trial: FrozenTrial) -> Dict[str, Union[float, int, str]]:
        return {name: codec.to_metaopt(trial.params[name]) for name, codec in self.codecs.items()}


class Sampler(BaseSampler):
    """An Optuna sampler whose relative sampling is done by a metaopt study.

    Args:
        client: a :class:`metaopt.Client`, or the server's ``host:port`` (a client is then made
            with ``client_options`` and closed by :meth:`close`).
        study_id: prefix of the metaopt study ids (default ``optuna-<Optuna study name>``); the
            hash of the search space is appended.
        algorithm, model, initial_trials: the metaopt study's algorithm (``"gp"``, ``"random"``,
            ``"deeppipe"``, ``"mosaic"``, ...), registry model and initial-design size (see
            :func:`metaopt.study_spec`).
        seed: the metaopt study's seed and the independent sampler's.
        search_space: a fixed relative search space ``{name: distribution}``, used from the first
            trial on, instead of the intersection search space of the finished trials.
        independent_sampler: samples the parameters outside the relative search space (default:
            ``optuna.samplers.RandomSampler(seed)``).
        constraints_func: Optuna's constraints: maps a finished ``FrozenTrial`` to a sequence of
            floats, each <= 0 when its constraint is met (as for Optuna's NSGAIISampler and
            TPESampler). The metaopt study constrains each to be <= 0.
        client_options: keyword arguments of :class:`metaopt.Client` when ``client`` is a target
            (``token``, ``root_certificates``, ``timeout``, ...).
    """

    def __init__(
        self,
        client: Union[metaopt.Client, str] = "localhost:50051",
        *,
        study_id: Optional[str] = None,
        algorithm: str = "gp",
        model: str = "",
        initial_trials: int = 0,
        seed: Optional[int] = None,
        search_space: Optional[Mapping[str, BaseDistribution]] = None,
        independent_sampler: Optional[BaseSampler] = None,
        client_options: Optional[Mapping[str, Any]] = None,
        constraints_func: Optional[Callable[[FrozenTrial], Sequence[float]]] = None,
    ) -> None:
        if not isinstance(client, (str, metaopt.Client)):
            raise TypeError(f"client: {client!r} is neither a metaopt.Client nor host:port")
        if isinstance(client, metaopt.Client) and client_options:
            raise ValueError("client_options: only with a target, not with a Client")
        if study_id is not None and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,100}",
                                                     study_id):
            raise ValueError(f"study_id: {study_id!r} must be 1 to 101 characters of "
                             "[A-Za-z0-9._-], starting with a letter or digit")
        if isinstance(initial_trials, bool) or not isinstance(initial_trials, int) or \
                initial_trials < 0:
            raise ValueError(f"initial_trials: {initial_trials!r} must be an integer >= 0")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
            raise ValueError(f"seed: {seed!r} must be a non-negative integer")
        metaopt.study_spec(metaopt.flat_space({}), algorithm=algorithm)  # checks the name
        if constraints_func is not None and not callable(constraints_func):
            raise TypeError(f"constraints_func: {constraints_func!r} is not callable")
        self._fixed_space: Optional[Dict[str, BaseDistribution]] = None
        if search_space is not None:
            self._fixed_space = {}
            for name, distribution in search_space.items():
                if not isinstance(distribution, BaseDistribution):
                    raise TypeError(f"search_space[{name!r}]: {distribution!r} is not an Optuna "
                                    "distribution")
                _Codec(name, distribution)  # raises on unsupported kinds
                if not distribution.single():
                    self._fixed_space[name] = distribution
        if isinstance(client, str):
            self._client = metaopt.Client(client, **dict(client_options or {}))
            self._owns_client = True
        else:
            self._client = client
            self._owns_client = False
        self._prefix = study_id
        self._algorithm = algorithm
        self._model = model
        self._initial_trials = initial_trials
        self._seed = seed
        self._independent = independent_sampler or RandomSampler(seed=seed)
        self._intersection = IntersectionSearchSpace()
        self._lock = threading.Lock()
        self._studies: Dict[str, _SpaceStudy] = {}
        self._current: Optional[_SpaceStudy] = None
        self._warned: Set[str] = set()
        # The relative parameters suggested to each running Optuna trial (by trial id).
        self._suggested: Dict[int, Dict[str, Any]] = {}
        self._constraints_func = constraints_func
        # How many values constraints_func returns (None until a trial has finished).
        self._constraint_count: Optional[int] = None

    # -- BaseSampler ----------------------------------------------------------------------

    def infer_relative_search_space(self, study: OptunaStudy,
                                    trial: FrozenTrial) -> Dict[str, BaseDistribution]:
        if len(study.directions) > _MAX_OBJECTIVES:
            raise ValueError(f"metaopt.integration.optuna.Sampler: {len(study.directions)} "
                             f"objectives; a metaopt study optimizes at most {_MAX_OBJECTIVES}")
        if self._fixed_space is not None:
            return dict(self._fixed_space)
        space = self._intersection.calculate(study)
        return {name: d for name, d in sorted(space.items()) if _supported(d)}

    def sample_relative(self, study: OptunaStudy, trial: FrozenTrial,
                        search_space: Dict[str, BaseDistribution]) -> Dict[str, Any]:
        if not search_space:
            return {}
        if self._constraints_func is not None and self._constraints(study) is None:
            return {}  # how many constraints: known once a trial has finished
        space_study = self._space_study(study, search_space)
        client_id = f"optuna-{trial._trial_id}-{self._client.client_id}"[:_MAX_ID]
        suggested = space_study.study.suggest(client_id=client_id)
        if not suggested:  # a catalogue study that ran out: Optuna samples independently
            _logger.warning("metaopt study %s suggested no trial; sampling independently",
                            space_study.study.id)
            return {}
        metaopt_trial = suggested[0]
        study._storage.set_trial_system_attr(trial._trial_id, STUDY_ATTR, space_study.study.id)
        study._storage.set_trial_system_attr(trial._trial_id, TRIAL_ATTR, metaopt_trial.id)
        params = metaopt_trial.params
        relative = {name: codec.to_optuna(params[name])
                    for name, codec in space_study.codecs.items()}
        with self._lock:
            self._suggested[trial._trial_id] = relative
        return relative

    def sample_independent(self, study: OptunaStudy, trial: FrozenTrial, param_name: str,
                           param_distribution: BaseDistribution) -> Any:
        if param_name not in self._warned and self._current is not None:
            self._warned.add(param_name)
            _logger.info("parameter %r is outside the relative search space of metaopt study "
                         "%s: %s samples it", param_name, self._current.study.id,
                         type(self._independent).__name__)
        return self._independent.sample_independent(study, trial, param_name,
                                                     param_distribution)

    def after_trial(self, study: OptunaStudy, trial: FrozenTrial, state: OptunaTrialState,
                    values: Optional[Sequence[float]]) -> None:
        metrics = {TRIAL_NUMBER_METRIC: float(trial.number)}
        constraints = self._constraint_values(study, trial, state)
        if constraints is not None:
            metrics.update((constraint_metric(i), v) for i, v in enumerate(constraints))
        multiple = len(study.directions) > 1
        outcome: Dict[str, Any]
        if state == OptunaTrialState.COMPLETE and values:
            outcome = _values_outcome(values, metrics)
        elif state == OptunaTrialState.PRUNED and multiple:
            step = trial.last_step
            outcome = {"failed": "pruned (a multi-objective trial has no value to stop with)"
                       if step is None else f"pruned at step {step}"}
        elif state == OptunaTrialState.PRUNED:
            step = trial.last_step
            outcome = {"failed": "pruned" if step is None else f"pruned at step {step}"}
        elif state == OptunaTrialState.FAIL:
            reason = trial.system_attrs.get("fail_reason") or "the Optuna trial failed"
            outcome = {"failed": str(reason)[:1000]}
        else:
            return

        study_id = trial.system_attrs.get(STUDY_ATTR)
        trial_id = trial.system_attrs.get(TRIAL_ATTR)
        with self._lock:
            suggested = self._suggested.pop(trial._trial_id, None)
        if study_id is not None and trial_id is not None:
            space_study = self._studies.get(study_id)
            handle = space_study.study if space_study else self._client.get_study(study_id)
            if suggested is not None and any(
                    name in trial.params and trial.params[name] != value
                    for name, value in suggested.items()):
                # Optuna evaluated other values than the suggestion (fixed or enqueued
                # parameters): the metaopt trial was not evaluated, and the values that were
                # join as an external observation.
                handle.observe(int(trial_id), metrics=metrics,
                               failed="superseded: Optuna evaluated other parameter values")
                if space_study is not None and "value" in outcome and space_study.covers(trial):
                    handle.observe_configuration(space_study.configuration(trial),
                                                 metrics=metrics, **outcome)
                return
            try:
                if state == OptunaTrialState.PRUNED and not multiple and self._observe_stopped(
                        handle, int(trial_id), trial, type(study.pruner).__name__, metrics):
                    return
                handle.observe(int(trial_id), metrics=metrics, **outcome)
                return
            except FailedPreconditionError as error:
                # The lease ran out (the trial is STALE) or it was observed elsewhere: keep a
                # completed result as an external observation rather than lose it.
                _logger.warning("metaopt trial %s/%s: %s", study_id, trial_id, error.message)
                if space_study is None or "value" not in outcome or not space_study.covers(trial):
                    return
                handle.observe_configuration(space_study.configuration(trial),
                                             metrics=metrics, **outcome)
                return
        # Sampled independently: record a completed trial that covers the current space.
        current = self._current
        if current is not None and "value" in outcome and current.covers(trial):
            current.study.observe_configuration(current.configuration(trial), metrics=metrics,
                                                **outcome)

    @staticmethod
    def _observe_stopped(handle: metaopt.Study, trial_id: int, trial: FrozenTrial,
                         pruner: str, metrics: Dict[str, float]) -> bool:
        """Ends the metaopt trial of a PRUNED Optuna trial STOPPED: reports its finite
        intermediate values (the last _MAX_REPORTED) with the client's stop on the last one,
        then observes it with that value. False if it has no finite intermediate value or its
        metaopt trial takes no reports (no longer ACTIVE); then nothing was observed."""
        values = [(step, float(value)) for step, value in sorted(trial.intermediate_values.items())
                  if math.isfinite(value)][-_MAX_REPORTED:]
        if not values:
            return False
        try:
            for step, value in values[:-1]:
                handle.report(trial_id, step, value)
            last_step, last_value = values[-1]
            report = handle.report(trial_id, last_step, last_value,
                                   stop_reason=f"Optuna's {pruner} pruned it at step "
                                   f"{trial.last_step}")
        except FailedPreconditionError as error:
            _logger.warning("metaopt trial %s/%s: %s", handle.id, trial_id, error.message)
            return False
        handle.observe(report.trial, last_value, metrics=metrics)
        return True

    def reseed_rng(self) -> None:
        self._independent.reseed_rng()

    # -- constraints -----------------------------------------------------------------------

    def _constraint_values(self, study: OptunaStudy, trial: FrozenTrial,
                           state: OptunaTrialState) -> Optional[Tuple[float, ...]]:
        """constraints_func's values for a finished trial (COMPLETE or PRUNED, as Optuna's own
        samplers evaluate it), stored in the trial's ``constraints`` system attribute; None
        without constraints_func or for other states."""
        if self._constraints_func is None or state not in (OptunaTrialState.COMPLETE,
                                                           OptunaTrialState.PRUNED):
            return None
        values = None
        try:
            values = tuple(float(v) for v in self._constraints_func(trial))
            if any(math.isnan(v) for v in values):
                raise ValueError(f"constraints_func: trial {trial.number}: {values} has NaN; "
                                 "constraint values cannot be NaN")
        finally:
            study._storage.set_trial_system_attr(trial._trial_id, CONSTRAINTS_ATTR, values)
        with self._lock:
            if self._constraint_count is None:
                self._constraint_count = len(values)
            elif len(values) != self._constraint_count:
                raise ValueError(f"constraints_func: trial {trial.number}: {len(values)} values, "
                                 f"earlier trials had {self._constraint_count}")
        return values

    def _constraints(self, study: OptunaStudy) -> Optional[int]:
        """How many values constraints_func returns: learned from a finished trial (of this
        process, or recorded in the Optuna storage by an earlier one); None before any."""
        with self._lock:
            if self._constraint_count is not None:
                return self._constraint_count
        for trial in study.get_trials(deepcopy=False, states=(OptunaTrialState.COMPLETE,
                                                              OptunaTrialState.PRUNED)):
            recorded = trial.system_attrs.get(CONSTRAINTS_ATTR)
            if recorded is not None:
                with self._lock:
                    self._constraint_count = len(recorded)
                return len(recorded)
        return None

    # -- metaopt studies -------------------------------------------------------------------

    def _space_study(self, study: OptunaStudy,
                     search_space: Dict[str, BaseDistribution]) -> _SpaceStudy:
        codecs = {name: _Codec(name, d) for name, d in sorted(search_space.items())}
        shape: List[Any] = [[name, optuna.distributions.distribution_to_json(c.distribution)]
                            for name, c in codecs.items()]
        directions = [d == StudyDirection.MAXIMIZE for d in study.directions]
        constraint_count = self._constraints(study) if self._constraints_func else 0
        if len(directions) > 1 or constraint_count:
            # Another objective or constraint shape is another study (single-objective ids as
            # before).
            shape.append({"maximize": directions, "constraints": constraint_count})
        fingerprint = hashlib.sha256(json.dumps(shape).encode()).hexdigest()[:12]
        prefix = self._prefix or _study_prefix(study.study_name)
        study_id = f"{prefix}-{fingerprint}"
        with self._lock:
            space_study = self._studies.get(study_id)
            if space_study is None:
                space = metaopt.flat_space({name: c.domain for name, c in codecs.items()},
                                           name=_STAGE)
                goals = ["maximize" if maximize else "minimize" for maximize in directions]
                objectives = list(zip(objective_names(len(goals)), goals))
                constraints = [(constraint_metric(i), "<=", 0.0)
                               for i in range(constraint_count or 0)]
                handle = self._client.create_study(
                    study_id, space, objectives=objectives, constraints=constraints,
                    algorithm=self._algorithm, model=self._model,
                    initial_trials=self._initial_trials, seed=self._seed or 0)
                space_study = _SpaceStudy(handle, codecs)
                self._warm_start(study, space_study)
                self._studies[study_id] = space_study
            self._current = space_study
        return space_study

    def _warm_start(self, study: OptunaStudy, space_study: _SpaceStudy) -> None:
        """Observes the completed Optuna trials that cover the space and that the metaopt
        study does not hold yet (it records their numbers as a metric)."""
        recorded = {int(t.metrics[TRIAL_NUMBER_METRIC]) for t in space_study.study.trials()
                    if TRIAL_NUMBER_METRIC in t.metrics}
        added = 0
        constrained = bool(space_study.study.constraints)
        for trial in study.get_trials(deepcopy=False, states=(OptunaTrialState.COMPLETE,)):
            if trial.number in recorded or not space_study.covers(trial) or not trial.values:
                continue
            metrics = {TRIAL_NUMBER_METRIC: float(trial.number)}
            if constrained:
                values = trial.system_attrs.get(CONSTRAINTS_ATTR)
                if values is None:
                    continue  # finished before constraints were evaluated
                metrics.update((constraint_metric(i), float(v)) for i, v in enumerate(values))
            outcome = _values_outcome(trial.values, metrics)
            if "value" not in outcome:
                continue
            space_study.study.observe_configuration(space_study.configuration(trial),
                                                    metrics=metrics, **outcome)
            added += 1
        if added:
            _logger.info("metaopt study %s: warm-started with %d Optuna trials",
                         space_study.study.id, added)

    @property
    def client(self) -> metaopt.Client:
        """The metaopt client the sampler asks."""
        return self._client

    def metaopt_study(self) -> Optional[metaopt.Study]:
        """The metaopt study of the latest relative search space, or None before one."""
        current = self._current
        return current.study if current is not None else None

    def close(self) -> None:
        """Closes the client if the sampler made it."""
        if self._owns_client:
            self._client.close()


def _values_outcome(values: Sequence[float], metrics: Dict[str, float]) -> Dict[str, Any]:
    """The observation of a COMPLETE trial's ``values``: ``{"value": values[0]}`` with the other
    objectives' values added to ``metrics`` (``value_1``, ...), or a failure naming a value that
    is not finite."""
    values = [float(v) for v in values]
    for i, value in enumerate(values):
        if not math.isfinite(value):
            what = "objective value" if len(values) == 1 else f"objective value {i}"
            return {"failed": f"{what} {value} is not finite"}
    if len(values) > 1:
        names = objective_names(len(values))
        metrics.update((names[i], values[i]) for i in range(1, len(values)))
    return {"value": values[0]}


def _study_prefix(study_name: str) -> str:
    """``optuna-<name>`` with every character outside [A-Za-z0-9._-] replaced by ``_``."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]", "_", study_name)
    return f"optuna-{cleaned}"[:100]
