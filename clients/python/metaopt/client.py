"""The metaopt client: a :class:`Client` for the server and a :class:`Study` handle per study.

::

    with metaopt.Client("localhost:50051") as client:
        study = client.create_study("quadratic", metaopt.flat_space({"x": metaopt.Float(-5, 5)}),
                                    objective="loss", goal="minimize", algorithm="gp")
        for _ in range(20):
            (trial,) = study.suggest()
            study.observe(trial, (trial.params["x"] - 1) ** 2)
        print(study.best_trial())

Retries: every call has a per-attempt deadline (``timeout``). Calls that are safe to repeat are
retried on UNAVAILABLE, RESOURCE_EXHAUSTED (a server or proxy shedding load) and
DEADLINE_EXCEEDED with exponential backoff and jitter, up to ``max_attempts`` attempts (so at
most about ``max_attempts * timeout`` plus the backoffs in all); a retry waits, within its deadline, for the server to become reachable
again, so a server restart is ridden out. Retried: reads, CreateStudy (create-or-get),
DeleteStudy, Heartbeat, Suggest (always sent with a client_id, so the server hands a retry the
ACTIVE trials a lost attempt created instead of new ones) and Observe of a trial id (a retry that
finds the trial already observed with the same outcome returns it). Suggest and FineTune are also
retried on ABORTED, which the server returns when nothing was changed. Observe of a
configuration is never retried.

Thread safety: a Client and its Study handles may be shared between threads (the gRPC channel
is thread-safe; a Study's cached state is replaced atomically). Each worker thread that
evaluates trials should use its own ``client_id``.
"""

from __future__ import annotations

import math
import numbers
import os
import random
import socket
import time
import uuid
import warnings
from typing import (Any, Callable, Dict, Iterator, List, Mapping, NamedTuple, Optional, Sequence,
                    Tuple, Union)

import grpc

from metaopt import spec as spec_lib
from metaopt.errors import MetaoptError, error_for, from_rpc_error
from metaopt.trial import Pruned, Trial, TrialState
from metaopt.v1 import model_pb2, optimizer_service_pb2 as pb, optimizer_service_pb2_grpc
from metaopt.v1 import study_pb2

PathOrBytes = Union[str, "os.PathLike[str]", bytes]

_RETRY = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED,
          grpc.StatusCode.DEADLINE_EXCEEDED)
_RETRY_OR_ABORTED = _RETRY + (grpc.StatusCode.ABORTED,)
_MAX_CLIENT_ID = 128


def _read(value: Optional[PathOrBytes], what: str) -> Optional[bytes]:
    if value is None or isinstance(value, bytes):
        return value
    try:
        with open(value, "rb") as f:
            return f.read()
    except OSError as e:
        raise ValueError(f"{what}: cannot read {value!r}: {e.strerror}") from e


def default_client_id() -> str:
    """``host-pid-random``: unique per process, stable for the life of a Client."""
    return f"{socket.gethostname()[:80]}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


class Client:
    """A connection to a metaopt server.

    Args:
        target: ``host:port`` or any gRPC target (``dns:///metaopt.example:50051``).
        token: sent as ``authorization: Bearer <token>`` with every call.
        tls: use TLS with the system's root certificates; implied by any of the next three.
        root_certificates: PEM bytes, or a path to them, of the CA that signed the server's
            certificate.
        certificate_chain, private_key: PEM bytes or paths of this client's certificate and key
            (mutual TLS).
        server_name: the name to check the server's certificate against, if not the target's host.
        timeout: deadline of each attempt of a call, in seconds.
        connect_timeout: how long the first call waits for the first connection, in seconds. A
            server not reached by then fails it with :class:`UnavailableError` naming the
            target and why (``Connection refused``, no answer). Once connected, calls ride out
            server restarts by retrying instead.
        max_attempts: attempts of a retryable call (1: no retries).
        initial_backoff, max_backoff: seconds to wait before the second attempt, doubled for each
            further one up to ``max_backoff``; the actual wait is drawn from [backoff / 2, backoff].
        client_id: the worker id sent with Suggest (default: :func:`default_client_id`).
        interceptors: ``grpc`` client interceptors wrapped around the channel.
        channel_options: extra ``grpc`` channel arguments, as (key, value) pairs.
    """

    def __init__(
        self,
        target: str = "localhost:50051",
        *,
        token: Optional[str] = None,
        tls: bool = False,
        root_certificates: Optional[PathOrBytes] = None,
        certificate_chain: Optional[PathOrBytes] = None,
        private_key: Optional[PathOrBytes] = None,
        server_name: Optional[str] = None,
        timeout: float = 30.0,
        connect_timeout: float = 5.0,
        max_attempts: int = 5,
        initial_backoff: float = 0.2,
        max_backoff: float = 5.0,
        client_id: Optional[str] = None,
        interceptors: Sequence[grpc.UnaryUnaryClientInterceptor] = (),
        channel_options: Sequence[Tuple[str, Any]] = (),
    ) -> None:
        if not target:
            raise ValueError("target: empty; give host:port")
        if not timeout > 0:
            raise ValueError(f"timeout: {timeout!r} must be > 0 seconds")
        if not connect_timeout > 0:
            raise ValueError(f"connect_timeout: {connect_timeout!r} must be > 0 seconds")
        if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 1:
            raise ValueError(f"max_attempts: {max_attempts!r} must be an integer >= 1")
        if not 0 <= initial_backoff <= max_backoff:
            raise ValueError(f"initial_backoff, max_backoff: need 0 <= {initial_backoff!r} <= "
                             f"{max_backoff!r}")
        if token is not None and (not token or any(c in token for c in "\r\n")):
            raise ValueError("token: must be non-empty and on one line")
        if client_id is not None and not 0 < len(client_id) <= _MAX_CLIENT_ID:
            raise ValueError(f"client_id: {client_id!r} must have 1 to {_MAX_CLIENT_ID} characters")
        if (certificate_chain is None) != (private_key is None):
            raise ValueError("certificate_chain, private_key: give both for mutual TLS, or neither")

        self.target = target
        self.timeout = float(timeout)
        self.connect_timeout = float(connect_timeout)
        self._connected = False
        self.max_attempts = max_attempts
        self.initial_backoff = float(initial_backoff)
        self.max_backoff = float(max_backoff)
        self.client_id = client_id or default_client_id()
        self._metadata: Tuple[Tuple[str, str], ...] = (
            (("authorization", f"Bearer {token}"),) if token else ())

        options = list(channel_options)
        if server_name:
            options.append(("grpc.ssl_target_name_override", server_name))
        secure = tls or root_certificates is not None or certificate_chain is not None
        if secure:
            credentials = grpc.ssl_channel_credentials(
                root_certificates=_read(root_certificates, "root_certificates"),
                private_key=_read(private_key, "private_key"),
                certificate_chain=_read(certificate_chain, "certificate_chain"))
            channel = grpc.secure_channel(target, credentials, options=options)
        else:
            channel = grpc.insecure_channel(target, options=options)
        self._raw_channel = channel
        if interceptors:
            channel = grpc.intercept_channel(channel, *interceptors)
        self._channel = channel
        self.stub = optimizer_service_pb2_grpc.OptimizerServiceStub(channel)

    # -- lifetime ---------------------------------------------------------------------------

    def close(self) -> None:
        """Closes the channel; later calls fail."""
        self._raw_channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    # -- calls ------------------------------------------------------------------------------

    def _await_first_connection(self, method: str) -> None:
        """Until the channel has connected once, waits for it up to ``connect_timeout``; raises
        :class:`UnavailableError` naming the target and the reason if it does not connect."""
        if self._connected:
            return
        try:
            grpc.channel_ready_future(self._raw_channel).result(timeout=self.connect_timeout)
            self._connected = True
            return
        except grpc.FutureTimeoutError:
            pass
        # Why: a health check that does not wait for the connection fails at once with gRPC's
        # reason after a failed attempt (refused, unresolvable name, TLS handshake), and runs
        # into its short deadline while a connection attempt gets no answer at all.
        check = self._raw_channel.unary_unary("/grpc.health.v1.Health/Check",
                                              request_serializer=bytes,
                                              response_deserializer=bytes)
        try:
            check(b"", timeout=1.0)
            self._connected = True
            return
        except grpc.RpcError as rpc_error:
            if rpc_error.code() == grpc.StatusCode.UNIMPLEMENTED:
                self._connected = True
                return
            reason = ("no answer (no route to the host, or a firewall drops the packets)"
                      if rpc_error.code() == grpc.StatusCode.DEADLINE_EXCEEDED
                      else rpc_error.details())
        raise error_for(grpc.StatusCode.UNAVAILABLE,
                        f"cannot connect to {self.target} within {self.connect_timeout:g} s: "
                        f"{reason}", method)

    def call(
        self,
        method: str,
        request: Any,
        *,
        retry_on: Sequence[grpc.StatusCode] = _RETRY,
        recover: Optional[Callable[[MetaoptError], Optional[Any]]] = None,
    ) -> Any:
        """Calls ``method`` (an OptimizerService RPC name) with retries.

        ``retry_on`` lists the codes that are retried (empty: none). After a retried attempt,
        an error is first passed to ``recover``, whose non-None result is returned instead
        (used to recognise that a lost attempt had succeeded). Raises :class:`MetaoptError`.
        """
        rpc = getattr(self.stub, method)
        self._await_first_connection(method)
        backoff = self.initial_backoff
        retried = False
        # The last retryable error other than a deadline: when retries end in DEADLINE_EXCEEDED,
        # the server's reason (say, that its database is unavailable) is what the caller needs.
        server_error: Optional[MetaoptError] = None
        for attempt in range(1, self.max_attempts + 1):
            try:
                # A retry waits (within its deadline) for the channel to reconnect: without a
                # call in progress the Python channel does not run its reconnection timers.
                return rpc(request, timeout=self.timeout, metadata=self._metadata,
                           wait_for_ready=True if retried else None)
            except grpc.RpcError as rpc_error:
                error = from_rpc_error(rpc_error, method)
            if error.code == grpc.StatusCode.DEADLINE_EXCEEDED and server_error is not None:
                error = error_for(server_error.code,
                                  f"{server_error.message} (then attempt {attempt} ran out of "
                                  f"its {self.timeout:g} s deadline)", method)
            elif error.code in retry_on and error.code != grpc.StatusCode.DEADLINE_EXCEEDED:
                server_error = error
            if retried and recover is not None:
                recovered = recover(error)
                if recovered is not None:
                    return recovered
            if error.code not in retry_on or attempt == self.max_attempts:
                raise error
            time.sleep(random.uniform(backoff / 2, backoff))
            backoff = min(backoff * 2, self.max_backoff)
            retried = True
        raise AssertionError("unreachable")

    def create_study(
        self,
        study_id: str,
        space: Optional[study_pb2.SearchSpace] = None,
        *,
        spec: Optional[study_pb2.StudySpec] = None,
        **spec_options: Any,
    ) -> "Study":
        """Creates a study, or gets it if it exists with an equal spec.

        Give either ``space`` plus :func:`metaopt.study_spec` keywords (``objective``, ``goal``,
        or ``objectives=[(name, goal), ...]`` and ``constraints=[(metric, "<=" or ">=",
        bound), ...]``, ``algorithm``, ``model``, ``initial_trials``, ``acquisition_samples``,
        ``seed``, ``candidates``, ``dataset_features``, ``early_stopping``), or a complete
        ``spec``. Instead of ``dataset_features``,
        ``dataset=(X, y)`` or ``(X, y, categorical)`` computes them with
        :func:`metaopt.metafeatures.compute` and also fills ``spec.dataset_sample`` with
        :func:`metaopt.dataset_sample.draw` (for models that read the raw data: GROSI with
        Dataset2Vec).

        A study of a meta-learned kind (DeepPipe, PMF, GROSI) that binds to no model warns
        (``UserWarning``) with the server's reason (``study.metadata["binding_reason"]``).

        Raises:
            AlreadyExistsError: the id is taken by a study with another spec.
            InvalidArgumentError: the spec is invalid (the message names the field).
        """
        if (space is None) == (spec is None):
            raise ValueError("create_study: give either space (with keywords) or spec")
        if spec is not None and spec_options:
            raise ValueError(f"create_study: with spec, no other keywords ({sorted(spec_options)})")
        dataset = spec_options.pop("dataset", None)
        if dataset is not None:
            if spec_options.get("dataset_features") is not None:
                raise ValueError("create_study: give dataset or dataset_features, not both")
            spec_options["dataset_features"] = _dataset_features(dataset)
        if spec is None:
            spec = spec_lib.study_spec(space, **spec_options)
        if dataset is not None:
            from metaopt import dataset_sample  # numpy only when asked for

            spec.dataset_sample.CopyFrom(dataset_sample.draw(*dataset))
        response = self.call("CreateStudy", pb.CreateStudyRequest(study_id=study_id, spec=spec))
        metadata = response.study.metadata
        if metadata.get("binding") == "none":
            # A meta-learned algorithm without its model: worth knowing before evaluating.
            warnings.warn(f"study {study_id!r} is bound to no model: "
                          f"{metadata.get('binding_reason', 'no reason given')}", stacklevel=2)
        return Study(self, response.study, created=response.created)

    def get_study(self, study_id: str) -> "Study":
        """The study ``study_id``. Raises :class:`NotFoundError` if there is none."""
        response = self.call("GetStudy", pb.GetStudyRequest(study_id=study_id))
        return Study(self, response.study)

    def list_studies(self, page_size: int = 100) -> Iterator["Study"]:
        """Every study, ordered by id (pages are fetched as the iterator advances)."""
        token = ""
        while True:
            response = self.call("ListStudies",
                                 pb.ListStudiesRequest(page_size=page_size, page_token=token))
            for study in response.studies:
                yield Study(self, study)
            token = response.next_page_token
            if not token:
                return

    def delete_study(self, study_id: str) -> None:
        """Deletes a study with its trials. A retry that finds it already gone succeeds."""

        def gone(error: MetaoptError) -> Optional[bool]:
            return True if error.code == grpc.StatusCode.NOT_FOUND else None

        self.call("DeleteStudy", pb.DeleteStudyRequest(study_id=study_id), recover=gone)

    def report_intermediate(self, study_id: str, trial_id: int, step: int, value: float,
                            metrics: Optional[Mapping[str, float]] = None, *,
                            stop_reason: Optional[str] = None) -> Report:
        """Reports an intermediate ``value`` of ACTIVE trial ``trial_id`` at ``step`` (>= 0)
        and returns the server's :class:`Report` (``should_stop``, ``reason``, ``trial``).
        Idempotent per (trial, step), so it is retried like a heartbeat. ``stop_reason``: the
        client stops the trial here by a rule of its own (say why, at most 1000 bytes); the
        answer is then ``should_stop`` and observing the trial with a value ends it STOPPED."""
        request = _report_request(study_id, trial_id, step, value, metrics, stop_reason)
        response = self.call("ReportIntermediate", request, retry_on=_RETRY_OR_ABORTED)
        return Report(response.should_stop, response.reason, Trial(response.trial))

    def list_models(self) -> List[model_pb2.Model]:
        """The models the server's registry serves now."""
        return list(self.call("ListModels", pb.ListModelsRequest()).models)


def _dataset_features(dataset: Any) -> Dict[str, float]:
    """The meta-features of ``dataset``, an ``(X, y)`` or ``(X, y, categorical)`` tuple."""
    if not isinstance(dataset, tuple) or len(dataset) not in (2, 3):
        raise ValueError(f"dataset: {type(dataset).__name__} is not an (X, y) or "
                         "(X, y, categorical) tuple")
    from metaopt import metafeatures  # numpy, scipy and scikit-learn only when asked for

    return metafeatures.compute(*dataset)


def _outcome(value: Union[None, float, Mapping[str, float]], failed: Optional[str],
             infeasible: Optional[str], metrics: Optional[Mapping[str, float]],
             request: pb.ObserveRequest) -> None:
    """Fills the outcome and metrics of ``request``. ``value`` is the objective's value, or a
    mapping of every objective's (and constrained metric's) value, which joins ``metrics``; with
    only ``metrics`` the objectives' values are all in them."""
    if isinstance(value, Mapping):
        if metrics is not None:
            overlap = sorted(set(value) & set(metrics))
            if overlap:
                raise ValueError(f"observe: {overlap} given both in value and in metrics")
        metrics = {**metrics, **value} if metrics is not None else value
        value = None
        if not metrics:
            raise ValueError("observe: value is an empty mapping; give the objectives' values")
    given = [name for name, v in (("value", value), ("failed", failed),
                                  ("infeasible", infeasible)) if v is not None]
    if len(given) > 1 or (not given and not metrics):
        raise ValueError(f"observe: give exactly one of value (a number, or a mapping of the "
                         f"objectives' values), failed, infeasible (got {given})")
    for name, metric in (metrics or {}).items():
        if isinstance(metric, bool) or not isinstance(metric, numbers.Real):
            raise TypeError(f"metrics[{name!r}]: {metric!r} is not a number")
        request.metrics[name] = float(metric)
    if value is not None:
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"value: {value!r} is not a number")
        if not math.isfinite(float(value)):
            raise ValueError(f"value: {value!r} is not finite")
        request.value = float(value)
    elif failed is not None or infeasible is not None:
        request.failure.state = (study_pb2.TRIAL_STATE_FAILED if failed is not None
                                 else study_pb2.TRIAL_STATE_INFEASIBLE)
        request.failure.reason = failed if failed is not None else infeasible


_GOAL_NAMES = {study_pb2.GOAL_MINIMIZE: "minimize", study_pb2.GOAL_MAXIMIZE: "maximize"}
_SENSE_NAMES = {study_pb2.CONSTRAINT_SENSE_AT_MOST: "<=",
                study_pb2.CONSTRAINT_SENSE_AT_LEAST: ">="}


class ParetoFrontSummary(NamedTuple):
    """A study's Pareto front summarized (``metaopt.v1.ParetoFrontSummary``): how many trials
    are on it, the ``hypervolume`` they dominate up to ``reference_point`` (one coordinate per
    objective, in the objectives' own units)."""

    size: int
    hypervolume: float
    reference_point: Tuple[float, ...]

    @staticmethod
    def from_proto(proto: study_pb2.ParetoFrontSummary) -> "ParetoFrontSummary":
        return ParetoFrontSummary(int(proto.size), float(proto.hypervolume),
                                  tuple(proto.reference_point))


class Report(NamedTuple):
    """What ReportIntermediate answered: ``should_stop`` (then observe the trial with its last
    value; it ends STOPPED), the rule's ``reason``, and the ``trial`` after the report."""

    should_stop: bool
    reason: str
    trial: Trial


def _report_request(study_id: str, trial_id: int, step: int, value: float,
                    metrics: Optional[Mapping[str, float]],
                    stop_reason: Optional[str] = None) -> pb.ReportIntermediateRequest:
    if isinstance(step, bool) or not isinstance(step, numbers.Integral):
        raise TypeError(f"step: {step!r} is not an integer")
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"value: {value!r} is not a number")
    if stop_reason is not None and (not isinstance(stop_reason, str) or not stop_reason):
        raise ValueError(f"stop_reason: {stop_reason!r} is not a non-empty string")
    request = pb.ReportIntermediateRequest(study_id=study_id, trial_id=int(trial_id),
                                           step=int(step), value=float(value),
                                           client_stop_reason=stop_reason or "")
    for name, metric in (metrics or {}).items():
        request.metrics[name] = float(metric)
    return request


def _same_outcome(trial: study_pb2.Trial, request: pb.ObserveRequest) -> bool:
    outcome = request.WhichOneof("outcome")
    if outcome != "failure":
        completed = (trial.state in (study_pb2.TRIAL_STATE_COMPLETED,
                                     study_pb2.TRIAL_STATE_STOPPED)
                     and trial.HasField("value"))
        if outcome == "value":
            return completed and trial.value == request.value
        # Values in metrics only: the trial holds every one of them.
        return completed and all(trial.metrics.get(name) == v
                                 for name, v in request.metrics.items())
    return (trial.state == request.failure.state
            and trial.failure_reason == request.failure.reason)


class Study:
    """A handle on one study. Its cached ``proto`` is refreshed by :meth:`refresh`."""

    def __init__(self, client: Client, proto: study_pb2.Study, created: bool = False) -> None:
        self._client = client
        self._proto = proto
        self.created = created
        """True if the CreateStudy call that returned this handle created the study."""

    @property
    def id(self) -> str:
        return self._proto.study_id

    @property
    def proto(self) -> study_pb2.Study:
        """The ``metaopt.v1.Study`` as last fetched."""
        return self._proto

    @property
    def spec(self) -> study_pb2.StudySpec:
        return self._proto.spec

    @property
    def bound_model(self) -> str:
        """The registry model the study is bound to (``name@version``), empty if none."""
        return self._proto.bound_model

    @property
    def trial_count(self) -> int:
        """The number of trials as last fetched (see :meth:`refresh`)."""
        return self._proto.trial_count

    @property
    def exhausted(self) -> bool:
        """True once a catalogue study has tried every candidate (as last fetched)."""
        return self._proto.state == study_pb2.STUDY_STATE_EXHAUSTED

    def _incarnation(self, trials: Sequence[Union[Trial, int]]) -> int:
        """The study incarnation the trials came from (else this handle's study's): the server
        refuses trials of a deleted study that had the same id, instead of taking them for the
        trials with the same ids in the study created again."""
        for trial in trials:
            if isinstance(trial, Trial) and trial.proto.study_incarnation:
                return trial.proto.study_incarnation
        return self._proto.incarnation

    def _trial(self, proto: study_pb2.Trial) -> Trial:
        return Trial(proto, self._proto.spec.search_space, study=self)

    def refresh(self) -> "Study":
        """Fetches the study again (trial count, best trial, state); returns self."""
        response = self._client.call("GetStudy", pb.GetStudyRequest(study_id=self.id))
        self._proto = response.study
        return self

    def suggest(self, count: int = 1, *, client_id: Optional[str] = None) -> List[Trial]:
        """Asks for up to ``count`` trials to evaluate.

        The client's ACTIVE trials (not yet observed) come back first, so a retry, or a worker
        that restarts with the same ``client_id``, gets the same trials. Fewer than ``count``
        (finally none) once a catalogue study runs out of candidates.
        """
        request = pb.SuggestRequest(study_id=self.id, count=count,
                                    client_id=client_id or self._client.client_id)
        response = self._client.call("Suggest", request, retry_on=_RETRY_OR_ABORTED)
        return [self._trial(t) for t in response.trials]

    def observe(
        self,
        trial: Union[Trial, int],
        value: Union[None, float, Mapping[str, float]] = None,
        *,
        failed: Optional[str] = None,
        infeasible: Optional[str] = None,
        metrics: Optional[Mapping[str, float]] = None,
    ) -> Trial:
        """Reports a trial's outcome: its objective ``value``, or that it ``failed`` or was
        ``infeasible`` (with the reason). Returns the completed trial.

        A study with several objectives or with constraints takes every objective's and
        constrained metric's value: ``study.observe(trial, {"accuracy": 0.93, "fit_seconds":
        2.1, "memory_mb": 250})`` (a mapping is sent as metrics; ``metrics=`` alone does the
        same). A trial that violates a constraint completes with ``trial.feasible`` False.

        Raises:
            FailedPreconditionError: the trial was already observed (with another outcome).
            NotFoundError: no such trial.
            InvalidArgumentError: e.g. a metric that is not finite.
        """
        trial_id = trial.id if isinstance(trial, Trial) else int(trial)
        request = pb.ObserveRequest(study_id=self.id, trial_id=trial_id,
                                    study_incarnation=self._incarnation([trial]))
        _outcome(value, failed, infeasible, metrics, request)

        def already_recorded(error: MetaoptError) -> Optional[pb.ObserveResponse]:
            # A lost attempt may have been applied: the trial then shows our outcome.
            if error.code != grpc.StatusCode.FAILED_PRECONDITION:
                return None
            current = self._client.call(
                "GetTrial", pb.GetTrialRequest(study_id=self.id, trial_id=trial_id)).trial
            if _same_outcome(current, request):
                return pb.ObserveResponse(trial=current)
            return None

        response = self._client.call("Observe", request, recover=already_recorded)
        return self._trial(response.trial)

    def observe_configuration(
        self,
        configuration: Any,
        value: Union[None, float, Mapping[str, float]] = None,
        *,
        failed: Optional[str] = None,
        infeasible: Optional[str] = None,
        metrics: Optional[Mapping[str, float]] = None,
    ) -> Trial:
        """Records an externally evaluated configuration (warm start from earlier results) as a
        new trial. ``configuration`` is a proto, ``{stage: Choice(algorithm, params)}``, or for a
        one-stage space a flat ``{parameter: value}`` mapping. Never retried (a retry would record
        it twice)."""
        request = pb.ObserveRequest(study_id=self.id)
        request.configuration.CopyFrom(
            spec_lib.configuration(configuration, self._proto.spec.search_space))
        _outcome(value, failed, infeasible, metrics, request)
        response = self._client.call("Observe", request, retry_on=())
        return self._trial(response.trial)

    def report(self, trial: Union[Trial, int], step: int, value: float,
               metrics: Optional[Mapping[str, float]] = None, *,
               stop_reason: Optional[str] = None) -> Report:
        """Reports an intermediate ``value`` of ``trial`` at ``step``; see
        :meth:`Client.report_intermediate` (``trial.report(step, value)`` returns just
        ``should_stop``). With ``stop_reason`` the client stops the trial by its own rule: the
        report answers ``should_stop``, and :meth:`observe_stopped` ends the trial STOPPED."""
        trial_id = trial.id if isinstance(trial, Trial) else int(trial)
        request = _report_request(self.id, trial_id, step, value, metrics, stop_reason)
        request.study_incarnation = self._incarnation([trial])
        response = self._client.call("ReportIntermediate", request,
                                     retry_on=_RETRY_OR_ABORTED)
        return Report(response.should_stop, response.reason, self._trial(response.trial))

    def observe_stopped(self, trial: Trial,
                        metrics: Optional[Mapping[str, float]] = None) -> Trial:
        """Observes a trial the server told to stop with its last reported value; it ends
        STOPPED. Raises ValueError for a trial that reported nothing."""
        value = trial.last_reported_value
        if value is None:
            raise ValueError(f"trial {trial.id}: no intermediate value was reported")
        return self.observe(trial, value, metrics=metrics)

    def optimize(self, objective: Callable[[Trial], float], n_trials: int = 1) -> List[Trial]:
        """Runs ``n_trials`` trials one after another: suggests one, calls ``objective(trial)``
        and observes the value it returns. An objective that raises :class:`metaopt.Pruned`
        (after ``trial.report`` returned True) is observed with its last reported value and
        ends STOPPED; any other exception is observed as FAILED and raised again. Returns the
        observed trials (fewer once a catalogue study runs out)."""
        done: List[Trial] = []
        for _ in range(n_trials):
            suggested = self.suggest()
            if not suggested:
                break
            trial = suggested[0]
            try:
                value = objective(trial)
            except Pruned:
                done.append(self.observe_stopped(trial))
                continue
            except Exception as error:
                self.observe(trial, failed=f"{type(error).__name__}: {error}"[:1000])
                raise
            done.append(self.observe(trial, value))
        return done

    def heartbeat(self, trials: Sequence[Union[Trial, int]]) -> List[Trial]:
        """Extends the leases of ACTIVE trials still being evaluated; returns them with their new
        ``lease_expire_time``."""
        ids = [t.id if isinstance(t, Trial) else int(t) for t in trials]
        request = pb.HeartbeatRequest(study_id=self.id, trial_ids=ids,
                                      study_incarnation=self._incarnation(trials))
        response = self._client.call("Heartbeat", request)
        return [self._trial(t) for t in response.trials]

    def get_trial(self, trial_id: int) -> Trial:
        response = self._client.call("GetTrial",
                                     pb.GetTrialRequest(study_id=self.id, trial_id=trial_id))
        return self._trial(response.trial)

    def trials(self, state: Optional[TrialState] = None, page_size: int = 100) -> Iterator[Trial]:
        """The study's trials by increasing id, optionally only those in ``state``."""
        token = ""
        while True:
            response = self._client.call("ListTrials", pb.ListTrialsRequest(
                study_id=self.id, page_size=page_size, page_token=token,
                state=int(state) if state is not None else 0))
            for trial in response.trials:
                yield self._trial(trial)
            token = response.next_page_token
            if not token:
                return

    def best_trial(self) -> Optional[Trial]:
        """The best COMPLETED trial for the study's goal (fetched now), or None. With
        constraints, the best feasible one; with several objectives, the Pareto front's best in
        the first objective."""
        self.refresh()
        return self._trial(self._proto.best_trial) if self._proto.HasField("best_trial") else None

    @property
    def objectives(self) -> List[Tuple[str, str]]:
        """The study's objectives as ``(name, goal)`` pairs (goal ``"maximize"`` or
        ``"minimize"``); one pair for a study with a single objective."""
        objectives = list(self._proto.spec.objectives) or [self._proto.spec.objective]
        return [(o.name, _GOAL_NAMES.get(o.goal, str(o.goal))) for o in objectives]

    @property
    def constraints(self) -> List[Tuple[str, str, float]]:
        """The study's constraints as ``(metric, "<=" or ">=", bound)``."""
        return [(c.metric, _SENSE_NAMES.get(c.sense, str(c.sense)), c.bound)
                for c in self._proto.spec.constraints]

    @property
    def pareto_front_summary(self) -> "ParetoFrontSummary":
        """The Pareto front's size, hypervolume and reference point as last fetched (by
        :meth:`refresh` or :meth:`pareto_front`); meaningful for several objectives."""
        return ParetoFrontSummary.from_proto(self._proto.pareto_front)

    def pareto_front(self, page_size: int = 100) -> List[Trial]:
        """The Pareto front now (``GetParetoFront``, every page): the non-dominated feasible
        COMPLETED trials by increasing id, each with its objectives' values in ``.metrics``
        (``.values`` in objective order). With a single objective, the best trials (all that
        tie). Also updates :attr:`pareto_front_summary`."""
        token = ""
        front: List[Trial] = []
        while True:
            response = self._client.call("GetParetoFront", pb.GetParetoFrontRequest(
                study_id=self.id, page_size=page_size, page_token=token))
            front.extend(self._trial(t) for t in response.trials)
            token = response.next_page_token
            if not token:
                break
        updated = study_pb2.Study()
        updated.CopyFrom(self._proto)
        updated.pareto_front.CopyFrom(response.summary)
        self._proto = updated  # replaced whole: readers never see a half-updated proto
        return front

    def fine_tune(self, steps: int = 0, scope: str = "kernel") -> pb.FineTuneResponse:
        """Fits the study's surrogate further on its observations (``scope``: ``"kernel"`` or
        ``"full"``; ``steps`` 0: the algorithm's default). Not idempotent: only ABORTED (nothing
        was changed) is retried."""
        scopes = {"kernel": pb.FINE_TUNE_SCOPE_KERNEL, "full": pb.FINE_TUNE_SCOPE_FULL}
        if scope not in scopes:
            raise ValueError(f"scope: {scope!r} is not one of {sorted(scopes)}")
        return self._client.call(
            "FineTune", pb.FineTuneRequest(study_id=self.id, steps=steps, scope=scopes[scope]),
            retry_on=(grpc.StatusCode.ABORTED,))

    def delete(self) -> None:
        """Deletes the study with its trials and surrogate state."""
        self._client.delete_study(self.id)

    def __repr__(self) -> str:
        return f"Study(id={self.id!r}, trial_count={self.trial_count})"

