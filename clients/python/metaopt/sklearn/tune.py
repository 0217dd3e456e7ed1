"""The tune loop: a DeepPipe study over the space bound to the bundled model, suggestions
evaluated here by :class:`~metaopt.sklearn.evaluation.Evaluator` workers, with heartbeats,
progress and a resumable study."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import math
import numbers
import os
import sys
import threading
import time
from typing import Any, Dict, Iterable, List, Optional, Union

from metaopt import metafeatures
from metaopt.client import Client, Study, default_client_id
from metaopt.errors import AlreadyExistsError, MetaoptError
from metaopt.sklearn.ensemble import Ensemble, _Library, select
from metaopt.sklearn.evaluation import (Evaluation, Evaluator, _check_cv, _check_limit, _Data,
                                        _prepare)
from metaopt.sklearn.pipelines import build_pipeline, columns_info
from metaopt.sklearn.report import TuneResult, _records
from metaopt.sklearn.space import (DEFAULT_FIT_TIME_LIMIT, OBJECTIVE, describe,
                                   parse_configuration, search_space_proto)
from metaopt.trial import Trial, TrialState

MODEL = "sklearn-pipelines-deeppipe"

# Failure reasons of trials that tune stopped itself; they do not count towards n_trials, so a
# resumed run evaluates that many configurations again.
INTERRUPTED = "interrupted"

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
                 deadline: Optional[float], progress: _Progress,
                 library: Optional[_Library] = None) -> None:
        self.study = study
        self.library = library
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

    def work(self, client_id: str, evaluator: Evaluator, finished: threading.Event) -> None:
        trial: Optional[Trial] = None
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
            if self.library is not None and evaluation.predictions is not None:
                self.library.add(trial.id, config, evaluation.value, evaluation.predictions)
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
         report_dir: Optional[Union[str, "os.PathLike[str]"]] = None,
         ensemble: Optional[int] = None) -> TuneResult:
    """Tunes a scikit-learn pipeline for the classification data ``(X, y)`` with metaopt.

    Creates (or, with an existing ``study_id``, resumes) a DeepPipe study over :data:`SPACE`
    bound to the server's meta-learned ``model``, with the data's meta-features as
    ``dataset_features``; evaluates the suggested pipelines here, ``workers`` at a time, each
    worker with its own evaluation process (:class:`Evaluator`); reports each balanced accuracy
    back; then refits the best pipeline on all of ``(X, y)``, or with ``ensemble=K`` an ensemble
    of the evaluated pipelines selected greedily (:mod:`metaopt.sklearn.ensemble`).

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
        ensemble: None, or K: keep the validation class scores of the best
            :data:`~metaopt.sklearn.ensemble.LIBRARY_SIZE` pipelines this call evaluates and
            select an ensemble of them by K rounds of greedy selection with replacement (Caruana
            et al.); ``result.pipeline`` is then that ensemble refitted on all of ``(X, y)`` and
            ``result.ensemble`` reports its members and validation score beside the best single
            pipeline's. Pipelines of earlier calls on a resumed study are not in the library.

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
    if ensemble is not None:
        _check_positive_int("ensemble", ensemble)
        if ensemble > 1000:
            raise ValueError(f"ensemble: {ensemble} must be None or at most 1000 rounds")

    data = _prepare(X, y, categorical, cv)
    library = None
    if ensemble is not None:
        data = dataclasses.replace(data, keep_predictions=True)
        library = _Library()
    # The evaluation processes start now: their start-up (an interpreter importing scikit-learn)
    # overlaps the meta-features, the study's creation and the first Suggest.
    evaluators = [Evaluator._of(data, fit_time_limit) for _ in range(workers)]
    for evaluator in evaluators:
        evaluator.start()
    try:
        # The sklearn-pipelines models know their tasks by the simple features only (the
        # meta-dataset records no landmarkers), so the cross-validated landmarkers are not
        # computed.
        features = metafeatures.compute(X, y, list(data.mask), landmarkers=False)
        protocol = "holdout 70/30" if cv is None else f"stratified {cv}-fold CV"
        study_id = (study_id
                    or f"sklearn-{default_client_id().rsplit('-', 1)[-1]}-{int(time.time())}")

        client = Client(server) if isinstance(server, str) else server
        try:
            try:
                study = client.create_study(
                    study_id, search_space_proto(), objective=OBJECTIVE, goal="maximize",
                    algorithm="deeppipe", model=model, seed=seed, dataset_features=features)
            except AlreadyExistsError as error:
                raise ValueError(f"study_id: {study_id!r} exists with another spec (another "
                                 f"dataset, categorical columns, seed or model); give another "
                                 f"study_id ({error.message})") from error
            existing = list(study.trials())
            _check_protocol(existing, data.cv_folds, study_id)
            done = _finished_count(existing)
            budget = max(0, n_trials - done)
            bar = _Progress(budget, done, progress)
            bar.set_best(max((t.value for t in existing if t.value is not None), default=None))
            deadline = None if timeout is None else started + float(timeout)
            run = _Run(study, data, budget, fit_time_limit, deadline, bar, library)
            base = default_client_id()
            # Each worker sets its event when it has returned. (Not Thread.join: in Python 3.11 a
            # KeyboardInterrupt inside join() can mark a running thread as stopped.)
            finished = [threading.Event() for _ in range(workers)]
            for i in range(workers):
                threading.Thread(target=run.work, args=(f"{base}-w{i}", evaluators[i], finished[i]),
                                 daemon=True,
                                 name=f"metaopt-tune-{i}").start()
            interrupted = False
            try:
                for event in finished:
                    while not event.wait(0.2):
                        pass
            except KeyboardInterrupt:
                interrupted = True
                run.halt("Ctrl-C")
            # Cleanup: wait for every worker to stop its evaluation and record its trial, even
            # through a second Ctrl-C.
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
            pipeline: Any = None
            selected = select(library, data, ensemble) if library is not None else None
            info = columns_info(data.X, list(data.mask))
            if refit and selected is not None:
                members = [build_pipeline(config, info).fit(data.X, data.y)
                           for config in selected[1]]
                pipeline = Ensemble(members, selected[2], data.classes)
            elif refit:
                pipeline = build_pipeline(best, info).fit(data.X, data.y)
            result = TuneResult(
                pipeline=pipeline, best_configuration=best, best_value=float(best_trial.value),
                best_trial_id=best_trial.id, study_id=study_id, bound_model=study.bound_model,
                zero_shot_design=dict(study.proto.metadata).get("zero_shot_design", ""),
                trials=records, protocol=protocol, wall_seconds=time.monotonic() - started,
                ensemble=selected[0] if selected is not None else None)
            if report_dir is not None:
                result.save(report_dir)
            return result
        finally:
            if isinstance(server, str):
                client.close()
    finally:
        for evaluator in evaluators:
            evaluator.close()
