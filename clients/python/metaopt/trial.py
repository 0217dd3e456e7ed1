"""Trials as the server reports them, decoded into Python values."""

from __future__ import annotations

import datetime
import enum
from typing import TYPE_CHECKING, Dict, List, Mapping, NamedTuple, Optional

from google.protobuf import timestamp_pb2

from metaopt.spec import Choice, ParamValue
from metaopt.v1 import study_pb2

if TYPE_CHECKING:  # pragma: no cover
    from metaopt.client import Study


class TrialState(enum.IntEnum):
    """``metaopt.v1.TrialState`` without its prefix."""

    UNSPECIFIED = 0
    ACTIVE = 1  # suggested, not yet observed
    COMPLETED = 2
    FAILED = 3
    INFEASIBLE = 4
    ABANDONED = 5
    STALE = 6  # the lease expired before an observation arrived
    STOPPED = 7  # stopped early by the study's early-stopping rule, then observed


class Pruned(Exception):
    """Raise to abandon a trial the server told to stop (``trial.report`` returned True).

    The pattern, as with Optuna's ``TrialPruned``::

        try:
            for epoch in range(epochs):
                loss = train_one_epoch()
                if trial.report(epoch, loss):
                    raise metaopt.Pruned(f"stopped at epoch {epoch}")
            study.observe(trial, loss)
        except metaopt.Pruned:
            study.observe_stopped(trial)   # its last reported value; the trial ends STOPPED

    :meth:`metaopt.Study.optimize` does the ``except`` part itself.
    """


class IntermediateValue(NamedTuple):
    """One intermediate result of a trial (``metaopt.v1.IntermediateValue``)."""

    step: int
    value: float
    metrics: Dict[str, float]


def _time(stamp: timestamp_pb2.Timestamp) -> Optional[datetime.datetime]:
    if stamp.seconds == 0 and stamp.nanos == 0:
        return None
    return stamp.ToDatetime(tzinfo=datetime.timezone.utc)


class Trial:
    """An immutable snapshot of one trial.

    ``assignments`` maps each stage to its :class:`Choice` (algorithm and parameters);
    ``params`` merges the parameters of all stages into one mapping, which is what plain
    hyperparameter optimization (one stage) wants. Integer parameters come back as ``int``
    when the trial was decoded with its study's search space.
    """

    def __init__(self, proto: study_pb2.Trial,
                 space: Optional[study_pb2.SearchSpace] = None,
                 study: Optional["Study"] = None) -> None:
        self._proto = proto
        self._study = study
        self._last_report: Optional[IntermediateValue] = None
        kinds: Dict[tuple, str] = {}
        single_algorithm: Dict[str, str] = {}
        if space is not None:
            for stage in space.stages:
                if len(stage.algorithms) == 1:
                    single_algorithm[stage.name] = stage.algorithms[0].name
                for algorithm in stage.algorithms:
                    for parameter in algorithm.parameters:
                        kinds[(stage.name, algorithm.name, parameter.name)] = (
                            parameter.WhichOneof("domain") or "")
        self._assignments: Dict[str, Choice] = {}
        for assignment in proto.configuration.assignments:
            algorithm = assignment.algorithm or single_algorithm.get(assignment.stage, "")
            params: Dict[str, ParamValue] = {}
            for name in sorted(assignment.parameters):
                value = assignment.parameters[name]
                if value.WhichOneof("kind") == "category":
                    params[name] = value.category
                elif kinds.get((assignment.stage, algorithm, name)) == "int_domain":
                    params[name] = int(round(value.number))
                else:
                    params[name] = value.number
            self._assignments[assignment.stage] = Choice(algorithm, params)

    @property
    def proto(self) -> study_pb2.Trial:
        """The ``metaopt.v1.Trial`` message."""
        return self._proto

    @property
    def id(self) -> int:
        return self._proto.id

    @property
    def state(self) -> TrialState:
        return TrialState(self._proto.state)

    @property
    def value(self) -> Optional[float]:
        """The objective value of a COMPLETED (or STOPPED) trial, else None."""
        return self._proto.value if self._proto.HasField("value") else None

    @property
    def intermediate_values(self) -> List[IntermediateValue]:
        """The values reported with :meth:`report` (as of this snapshot), by increasing step."""
        return [IntermediateValue(v.step, v.value, dict(v.metrics))
                for v in self._proto.intermediate_values]

    @property
    def last_reported_value(self) -> Optional[float]:
        """The value of the last :meth:`report` through this object, else that of the
        snapshot's largest step, else None."""
        if self._last_report is not None:
            return self._last_report.value
        values = self._proto.intermediate_values
        return values[-1].value if values else None

    def report(self, step: int, value: float,
               metrics: Optional[Mapping[str, float]] = None) -> bool:
        """Reports an intermediate ``value`` at ``step`` (epoch, iteration; >= 0) and returns
        True if the server's early-stopping rule says the trial should stop. Then raise
        :class:`metaopt.Pruned` (or observe the trial with :meth:`metaopt.Study.observe_stopped`).

        Reporting a step again with the same value is a harmless retry; with another value it
        raises :class:`metaopt.FailedPreconditionError`. Each report also extends the trial's
        lease, like a heartbeat.
        """
        if self._study is None:
            raise RuntimeError(f"trial {self.id}: not bound to a study (use Study.report)")
        result = self._study.report(self, step, value, metrics)
        self._last_report = IntermediateValue(int(step), float(value), dict(metrics or {}))
        return result.should_stop

    @property
    def metrics(self) -> Dict[str, float]:
        """The metrics observed with the trial; in a study with several objectives, every
        objective's value by name (the first one's also in :attr:`value`)."""
        return dict(self._proto.metrics)

    @property
    def feasible(self) -> Optional[bool]:
        """In a study with constraints, whether this COMPLETED trial meets them all (a trial
        that does not is kept, and is never best nor on the Pareto front); None otherwise."""
        return self._proto.feasible if self._proto.HasField("feasible") else None

    @property
    def values(self) -> Optional[List[float]]:
        """The objectives' values in the study's objective order (one for a single objective),
        or None if the trial has no value. Needs the trial's study (trials from a
        :class:`metaopt.Study` have it)."""
        if not self._proto.HasField("value"):
            return None
        if self._study is None:
            raise RuntimeError(f"trial {self.id}: not bound to a study (use Trial.metrics)")
        names = [name for name, _ in self._study.objectives]
        if len(names) == 1:
            return [self._proto.value]
        return [self._proto.value] + [self._proto.metrics[name] for name in names[1:]]

    @property
    def client_id(self) -> str:
        return self._proto.client_id

    @property
    def failure_reason(self) -> str:
        return self._proto.failure_reason

    @property
    def metadata(self) -> Dict[str, str]:
        """Server notes, for example ``{"policy": "gp"}``."""
        return dict(self._proto.metadata)

    @property
    def configuration(self) -> study_pb2.Configuration:
        return self._proto.configuration

    @property
    def assignments(self) -> Dict[str, Choice]:
        """``{stage: Choice(algorithm, params)}``."""
        return {stage: Choice(c.algorithm, dict(c.params))
                for stage, c in self._assignments.items()}

    @property
    def params(self) -> Dict[str, ParamValue]:
        """The parameters of every stage in one mapping.

        Raises:
            ValueError: two stages set a parameter of the same name (use ``assignments``).
        """
        merged: Dict[str, ParamValue] = {}
        for stage, choice in self._assignments.items():
            for name, value in choice.params.items():
                if name in merged:
                    raise ValueError(
                        f"trial {self.id}: parameter {name!r} is set in several stages; "
                        "use Trial.assignments")
                merged[name] = value
        return merged

    @property
    def create_time(self) -> Optional[datetime.datetime]:
        return _time(self._proto.create_time)

    @property
    def complete_time(self) -> Optional[datetime.datetime]:
        return _time(self._proto.complete_time)

    @property
    def lease_expire_time(self) -> Optional[datetime.datetime]:
        """When an ACTIVE trial's lease ends unless extended (None if the server sets none)."""
        return _time(self._proto.lease_expire_time)

    def __repr__(self) -> str:
        value = "" if self.value is None else f", value={self.value!r}"
        if self._proto.HasField("feasible"):
            value += f", feasible={self._proto.feasible!r}"
        choices = {s: (c.algorithm, c.params) for s, c in self._assignments.items()}
        return f"Trial(id={self.id}, state={self.state.name}{value}, assignments={choices!r})"
