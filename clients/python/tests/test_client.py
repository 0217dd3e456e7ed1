"""End-to-end tests of the Python client against the real metaopt-server (127.0.0.1, port 0)."""

from __future__ import annotations

import math
import os
import socket
import subprocess
import threading
import time
import unittest
import warnings
from typing import List, Optional, Tuple

import grpc

import metaopt
from metaopt.v1 import optimizer_service_pb2 as pb, optimizer_service_pb2_grpc, study_pb2
from server_process import ServerTestCase, TempServer, server_binary


class _InjectedError(grpc.RpcError):
    """What a stub raises when a response is lost: a code and details, like grpc's own."""

    def __init__(self, code: grpc.StatusCode) -> None:
        super().__init__(code.name)
        self._code = code

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return f"injected {self._code.name}"


class LoseResponses(grpc.UnaryUnaryClientInterceptor):
    """Lets calls of ``method`` reach the server, then replaces the first ``times`` responses by
    ``code`` (the server did the work; the client never heard). Records every call it sees."""

    def __init__(self, method: str, times: int = 1,
                 code: grpc.StatusCode = grpc.StatusCode.UNAVAILABLE) -> None:
        self.method = method
        self.remaining = times
        self.code = code
        self.calls: List[Tuple[str, object]] = []
        self.metadata: List[Optional[tuple]] = []

    def intercept_unary_unary(self, continuation, client_call_details, request):
        method = client_call_details.method.rsplit("/", 1)[-1]
        self.calls.append((method, request))
        self.metadata.append(client_call_details.metadata)
        outcome = continuation(client_call_details, request)
        if method == self.method and self.remaining > 0:
            outcome.result()  # the server has answered
            self.remaining -= 1
            raise _InjectedError(self.code)
        return outcome

    def count(self, method: str) -> int:
        return sum(1 for m, _ in self.calls if m == method)


def quadratic_space() -> study_pb2.SearchSpace:
    return metaopt.flat_space({"x": metaopt.Float(-5, 5), "n": metaopt.Int(1, 10)}, name="f")


def pipeline_space() -> study_pb2.SearchSpace:
    return metaopt.search_space({
        "scaler": {"none": {}, "standard": {}},
        "estimator": {
            "svm": {"C": metaopt.Float(1e-2, 1e2, log=True),
                    "kernel": metaopt.Categorical(["rbf", "linear"])},
            "knn": {"n_neighbors": metaopt.Int(1, 30)},
        },
    })


class ServerTest(ServerTestCase):
    """One server for the whole class; each test uses its own study ids."""

    def client(self, **options) -> metaopt.Client:
        options.setdefault("timeout", 30)
        options.setdefault("initial_backoff", 0.01)
        client = metaopt.Client(self.server.target, **options)
        self.addCleanup(client.close)
        return client


class AskTellTest(ServerTest):

    def test_gp_study_minimises_a_quadratic(self):
        with metaopt.Client(self.server.target) as client:
            study = client.create_study("quadratic", quadratic_space(), objective="loss",
                                        goal="minimize", algorithm="gp", seed=7)
            self.assertTrue(study.created)
            self.assertEqual(study.id, "quadratic")
            values = []
            for _ in range(12):
                (trial,) = study.suggest()
                self.assertEqual(trial.state, metaopt.TrialState.ACTIVE)
                self.assertEqual(trial.client_id, client.client_id)
                x, n = trial.params["x"], trial.params["n"]
                self.assertIsInstance(x, float)
                self.assertIsInstance(n, int)
                self.assertTrue(-5 <= x <= 5 and 1 <= n <= 10, trial)
                value = (x - 1) ** 2 + (n - 3) ** 2
                done = study.observe(trial, value, metrics={"seconds": 0.5})
                self.assertEqual(done.state, metaopt.TrialState.COMPLETED)
                self.assertEqual(done.value, value)
                self.assertEqual(done.metrics, {"seconds": 0.5})
                self.assertIsNotNone(done.complete_time)
                values.append(value)
            best = study.best_trial()
            self.assertIsNotNone(best)
            self.assertEqual(best.value, min(values))
            self.assertEqual(study.trial_count, 12)
            completed = list(study.trials(metaopt.TrialState.COMPLETED, page_size=5))
            self.assertEqual([t.id for t in completed], list(range(1, 13)))
            self.assertEqual(study.get_trial(3).value, values[2])
            # The GP took over from the initial design.
            self.assertIn("gp/ei", {t.metadata.get("policy", "") for t in completed})

    def test_create_study_is_create_or_get(self):
        client = self.client()
        first = client.create_study("create-or-get", quadratic_space(), algorithm="random")
        again = client.create_study("create-or-get", quadratic_space(), algorithm="random")
        self.assertTrue(first.created)
        self.assertFalse(again.created)
        self.assertEqual(again.spec, first.spec)
        with self.assertRaises(metaopt.AlreadyExistsError) as caught:
            client.create_study("create-or-get", quadratic_space(), algorithm="gp")
        self.assertEqual(caught.exception.code, grpc.StatusCode.ALREADY_EXISTS)
        self.assertEqual(caught.exception.method, "CreateStudy")
        # A complete spec works as well as keywords.
        spec = metaopt.study_spec(quadratic_space(), algorithm="random")
        self.assertFalse(client.create_study("create-or-get", spec=spec).created)

    def test_a_deeppipe_study_that_binds_no_model_warns_why(self):
        with self.assertWarnsRegex(UserWarning, "'unbound' is bound to no model: .*model"):
            study = self.client().create_study("unbound", quadratic_space(),
                                               algorithm="deeppipe")
        self.assertEqual(study.proto.metadata["binding"], "none")
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a GP study needs no model: no warning
            self.client().create_study("gp-no-warning", quadratic_space(), algorithm="gp")

    def test_create_study_with_a_dataset_stores_its_meta_features(self):
        from sklearn.datasets import load_iris
        from metaopt import metafeatures

        X, y = load_iris(return_X_y=True)
        recorder = LoseResponses("none", times=0)
        client = self.client(interceptors=[recorder])
        study = client.create_study("iris", quadratic_space(), algorithm="random",
                                    dataset=(X, y))
        expected = metafeatures.compute(X, y)
        self.assertIn("Landmark1NN", expected)
        self.assertEqual(dict(client.get_study("iris").spec.dataset_features), expected)
        self.assertEqual(dict(study.spec.dataset_features), expected)
        # ... and its raw sample, drawn by the deterministic rule.
        from metaopt import dataset_sample
        self.assertEqual(client.get_study("iris").spec.dataset_sample, dataset_sample.draw(X, y))
        self.assertEqual(dataset_sample.shape(study.spec.dataset_sample), (150, 4, 3))
        # An explicit dict works too; both at once, or a malformed dataset, send nothing.
        given = client.create_study("given-features", quadratic_space(), algorithm="random",
                                    dataset_features={"NumberOfClasses": 3})
        self.assertEqual(dict(given.spec.dataset_features), {"NumberOfClasses": 3.0})
        sent = len(recorder.calls)
        with self.assertRaisesRegex(ValueError, "dataset or dataset_features, not both"):
            client.create_study("both", quadratic_space(), dataset=(X, y),
                                dataset_features={"NumberOfClasses": 3})
        with self.assertRaisesRegex(ValueError, "dataset: list is not an .X, y. or"):
            client.create_study("malformed", quadratic_space(), dataset=[X, y])
        with self.assertRaisesRegex(ValueError, "y: 149 labels for 150 rows of X"):
            client.create_study("short-y", quadratic_space(), dataset=(X, y[1:]))
        with self.assertRaisesRegex(ValueError, "with spec, no other keywords"):
            client.create_study("spec", spec=given.spec, dataset=(X, y))
        self.assertEqual(len(recorder.calls), sent)

    def test_pipeline_assignments_and_external_observations(self):
        client = self.client()
        study = client.create_study("pipeline", pipeline_space(), objective="accuracy",
                                    algorithm="random", seed=3)
        trials = study.suggest(count=4)
        self.assertEqual(len(trials), 4)
        self.assertEqual(len({t.id for t in trials}), 4)
        for trial in trials:
            choices = trial.assignments
            self.assertEqual(set(choices), {"scaler", "estimator"})
            self.assertIn(choices["scaler"].algorithm, ("none", "standard"))
            estimator = choices["estimator"]
            if estimator.algorithm == "svm":
                self.assertEqual(set(estimator.params), {"C", "kernel"})
                self.assertIn(estimator.params["kernel"], ("rbf", "linear"))
            else:
                self.assertEqual(estimator.algorithm, "knn")
                self.assertIsInstance(estimator.params["n_neighbors"], int)
            study.observe(trial, 0.5)
        external = study.observe_configuration(
            {"scaler": metaopt.Choice("standard", {}),
             "estimator": metaopt.Choice("knn", {"n_neighbors": 5})}, 0.97)
        self.assertEqual(external.state, metaopt.TrialState.COMPLETED)
        self.assertEqual(external.metadata.get("source"), "external")
        self.assertEqual(external.assignments["estimator"],
                         metaopt.Choice("knn", {"n_neighbors": 5}))
        self.assertEqual(study.best_trial().id, external.id)

    def test_flat_external_observation_and_failures(self):
        client = self.client()
        study = client.create_study("failures", quadratic_space(), algorithm="random",
                                    goal="minimize")
        warm = study.observe_configuration({"x": 1.0, "n": 3}, 0.0)
        self.assertEqual(warm.params, {"n": 3, "x": 1.0})
        first, second = study.suggest(count=2)
        failed = study.observe(first, failed="out of memory")
        self.assertEqual(failed.state, metaopt.TrialState.FAILED)
        self.assertEqual(failed.failure_reason, "out of memory")
        self.assertIsNone(failed.value)
        infeasible = study.observe(second.id, infeasible="n too large")
        self.assertEqual(infeasible.state, metaopt.TrialState.INFEASIBLE)
        self.assertEqual(len(list(study.trials(metaopt.TrialState.FAILED))), 1)

    def test_suggest_returns_the_clients_active_trials_first(self):
        client = self.client(client_id="worker-a")
        study = client.create_study("idempotent", quadratic_space(), algorithm="random")
        (first,) = study.suggest()
        (again,) = study.suggest()
        self.assertEqual(again.id, first.id)
        (other,) = study.suggest(client_id="worker-b")
        self.assertNotEqual(other.id, first.id)
        self.assertEqual(other.client_id, "worker-b")
        study.observe(first, 1.0)
        (fresh,) = study.suggest()
        self.assertNotIn(fresh.id, (first.id, other.id))

    def test_list_and_delete_studies(self):
        client = self.client()
        for i in range(3):
            client.create_study(f"list-{i}", quadratic_space(), algorithm="random")
        ids = [s.id for s in client.list_studies(page_size=2)]
        self.assertEqual(ids, sorted(ids))
        self.assertTrue({"list-0", "list-1", "list-2"} <= set(ids))
        client.get_study("list-1").delete()
        with self.assertRaises(metaopt.NotFoundError):
            client.get_study("list-1")
        self.assertNotIn("list-1", [s.id for s in client.list_studies()])
        self.assertEqual(client.list_models(), [])  # the test registry is empty


class ErrorTest(ServerTest):

    def test_not_found_carries_code_message_and_method(self):
        client = self.client()
        with self.assertRaises(metaopt.NotFoundError) as caught:
            client.get_study("no-such-study")
        error = caught.exception
        self.assertIsInstance(error, metaopt.MetaoptError)
        self.assertEqual(error.code, grpc.StatusCode.NOT_FOUND)
        self.assertIn("no-such-study", error.message)
        self.assertTrue(str(error).startswith("GetStudy: NOT_FOUND: "), str(error))

    def test_invalid_arguments_name_the_field(self):
        client = self.client()
        bad = metaopt.flat_space({"x": metaopt.Float(5, 1)})
        with self.assertRaises(metaopt.InvalidArgumentError) as caught:
            client.create_study("bad-space", bad)
        self.assertIn("spec.search_space.stages[0]", caught.exception.message)
        self.assertIn("low", caught.exception.message)
        study = client.create_study("count-check", quadratic_space(), algorithm="random")
        with self.assertRaises(metaopt.InvalidArgumentError) as caught:
            study.suggest(count=100000)
        self.assertIn("count", caught.exception.message)
        with self.assertRaises(metaopt.NotFoundError):
            study.observe(999, 1.0)
        with self.assertRaises(metaopt.InvalidArgumentError):
            client.create_study("bad id!", quadratic_space())
        with self.assertRaises(metaopt.InvalidArgumentError) as caught:
            client.create_study("bad-budget", quadratic_space(), acquisition_samples=-1)
        self.assertIn("spec.algorithm.acquisition_samples: -1", caught.exception.message)
        budget = client.create_study("budget", quadratic_space(), acquisition_samples=300)
        self.assertEqual(budget.proto.spec.algorithm.acquisition_samples, 300)

    def test_trial_of_a_deleted_study_is_not_taken_for_the_new_ones(self):
        client = self.client()
        old = client.create_study("reborn", quadratic_space(), algorithm="random")
        (stale,) = old.suggest()
        self.assertNotEqual(stale.proto.study_incarnation, 0)
        old.delete()
        reborn = client.create_study("reborn", quadratic_space(), algorithm="random")
        (fresh,) = reborn.suggest()
        self.assertEqual(fresh.id, stale.id)
        self.assertNotEqual(fresh.proto.study_incarnation, stale.proto.study_incarnation)
        with self.assertRaises(metaopt.NotFoundError) as caught:
            reborn.observe(stale, 1.0)
        self.assertIn('is not the incarnation of study "reborn"', caught.exception.message)
        with self.assertRaises(metaopt.NotFoundError):
            old.observe(stale.id, 1.0)  # the old handle knows its incarnation
        with self.assertRaises(metaopt.NotFoundError):
            old.heartbeat([stale.id])
        self.assertEqual(reborn.observe(fresh.id, 1.0).state, metaopt.TrialState.COMPLETED)

    def test_second_observation_is_failed_precondition(self):
        study = self.client().create_study("observe-twice", quadratic_space(), algorithm="random")
        (trial,) = study.suggest()
        study.observe(trial, 1.0)
        with self.assertRaises(metaopt.FailedPreconditionError) as caught:
            study.observe(trial, 2.0)
        self.assertEqual(caught.exception.code, grpc.StatusCode.FAILED_PRECONDITION)

    def test_client_side_checks_send_nothing(self):
        recorder = LoseResponses("none", times=0)
        study = self.client(interceptors=[recorder]).create_study(
            "client-checks", quadratic_space(), algorithm="random")
        (trial,) = study.suggest()
        sent = len(recorder.calls)
        with self.assertRaisesRegex(ValueError, "not finite"):
            study.observe(trial, math.nan)
        with self.assertRaisesRegex(ValueError, "exactly one"):
            study.observe(trial, 1.0, failed="both")
        with self.assertRaisesRegex(TypeError, "not a number"):
            study.observe(trial, "0.5")
        with self.assertRaisesRegex(ValueError, "scope"):
            study.fine_tune(scope="everything")
        self.assertEqual(len(recorder.calls), sent)
        for options in ({"timeout": 0}, {"max_attempts": 0}, {"client_id": "x" * 129},
                        {"certificate_chain": b"pem"}, {"token": "a\nb"}):
            with self.assertRaises(ValueError, msg=str(options)):
                metaopt.Client(self.server.target, **options)
        with self.assertRaisesRegex(ValueError, "goal"):
            metaopt.study_spec(quadratic_space(), goal="up")
        with self.assertRaisesRegex(TypeError, "Float, Int or Categorical"):
            metaopt.flat_space({"x": (0, 1)})

    def test_fine_tune_of_a_random_study_is_failed_precondition(self):
        study = self.client().create_study("fine-tune", quadratic_space(), algorithm="random")
        with self.assertRaises(metaopt.FailedPreconditionError):
            study.fine_tune(steps=10)

    def test_a_server_that_never_answers_fails_within_the_connect_timeout(self):
        with socket.socket() as silent:  # accepts connections, never speaks HTTP/2
            silent.bind(("127.0.0.1", 0))
            silent.listen(8)
            target = f"127.0.0.1:{silent.getsockname()[1]}"
            recorder = LoseResponses("none", times=0)
            client = metaopt.Client(target, timeout=30, connect_timeout=0.5, max_attempts=2,
                                    initial_backoff=0.01, interceptors=[recorder])
            self.addCleanup(client.close)
            started = time.monotonic()
            with self.assertRaises(metaopt.UnavailableError) as caught:
                client.get_study("anything")
        self.assertLess(time.monotonic() - started, 10)
        self.assertIn(f"cannot connect to {target} within 0.5 s", caught.exception.message)
        self.assertEqual(recorder.count("GetStudy"), 0)

    def test_an_unreachable_address_fails_fast_naming_it_and_the_reason(self):
        with socket.socket() as closed:
            closed.bind(("127.0.0.1", 0))
            target = f"127.0.0.1:{closed.getsockname()[1]}"  # nothing listens once closed
        client = metaopt.Client(target, connect_timeout=1)
        self.addCleanup(client.close)
        started = time.monotonic()
        with self.assertRaises(metaopt.UnavailableError) as caught:
            client.create_study("x", quadratic_space())
        self.assertLess(time.monotonic() - started, 10)
        self.assertIn(f"cannot connect to {target}", str(caught.exception))
        self.assertIn("connection refused", str(caught.exception).lower())

    def test_trial_state_matches_the_proto(self):
        for value in study_pb2.TrialState.values():
            name = study_pb2.TrialState.Name(value)
            self.assertEqual(metaopt.TrialState[name[len("TRIAL_STATE_"):]], value)


class _SheddingService(optimizer_service_pb2_grpc.OptimizerServiceServicer):
    """A fake OptimizerService that answers the first ``shed`` calls with ``code`` (a server
    shedding load), then GetStudy with the study asked for; every call is counted by method."""

    def __init__(self, shed: int, code: grpc.StatusCode) -> None:
        self.shed = shed
        self.code = code
        self.calls: List[str] = []
        self.lock = threading.Lock()
        self.hang = 0.0  # seconds each call waits once the failures are over

    def _shed(self, method: str, context) -> None:
        with self.lock:
            self.calls.append(method)
            shedding = self.shed > 0
            self.shed -= 1
        if shedding:
            context.abort(self.code, "server overloaded")
        deadline = time.monotonic() + self.hang
        while time.monotonic() < deadline and context.is_active():
            time.sleep(0.01)

    def GetStudy(self, request, context):
        self._shed("GetStudy", context)
        return pb.GetStudyResponse(study=study_pb2.Study(study_id=request.study_id))

    def FineTune(self, request, context):
        self._shed("FineTune", context)
        return pb.FineTuneResponse()

    def Observe(self, request, context):
        self._shed("Observe", context)
        return pb.ObserveResponse()


class FakeServerRetryTest(unittest.TestCase):
    """Retries against a fake server that returns the codes itself."""

    def serve(self, shed: int, code: grpc.StatusCode) -> Tuple[_SheddingService, str]:
        from concurrent import futures
        service = _SheddingService(shed, code)
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        optimizer_service_pb2_grpc.add_OptimizerServiceServicer_to_server(service, server)
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        self.addCleanup(server.stop, None)
        return service, f"127.0.0.1:{port}"

    def test_resource_exhausted_and_unavailable_are_retried_for_safe_calls(self):
        for code in (grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.UNAVAILABLE):
            with self.subTest(code=code.name):
                service, address = self.serve(shed=2, code=code)
                client = metaopt.Client(address, max_attempts=3, initial_backoff=0.001,
                                        max_backoff=0.002)
                self.addCleanup(client.close)
                study = client.get_study("s")
                self.assertEqual(study.id, "s")
                self.assertEqual(service.calls, ["GetStudy"] * 3)

    def test_retries_end_after_max_attempts_with_the_last_error(self):
        service, address = self.serve(shed=100, code=grpc.StatusCode.RESOURCE_EXHAUSTED)
        client = metaopt.Client(address, max_attempts=3, initial_backoff=0.001,
                                max_backoff=0.002)
        self.addCleanup(client.close)
        with self.assertRaises(metaopt.ResourceExhaustedError):
            client.get_study("s")
        self.assertEqual(service.calls, ["GetStudy"] * 3)

    def test_the_servers_reason_outlives_a_retry_that_runs_out_of_time(self):
        service, address = self.serve(shed=1, code=grpc.StatusCode.UNAVAILABLE)
        service.hang = 5.0  # after the failure, GetStudy answers too late
        client = metaopt.Client(address, timeout=0.5, max_attempts=2, initial_backoff=0.001,
                                max_backoff=0.002)
        self.addCleanup(client.close)
        with self.assertRaises(metaopt.UnavailableError) as caught:
            client.get_study("s")
        self.assertIn("server overloaded", caught.exception.message)
        self.assertIn("deadline", caught.exception.message)
        self.assertEqual(service.calls, ["GetStudy"] * 2)

    def test_unsafe_calls_are_not_retried(self):
        service, address = self.serve(shed=100, code=grpc.StatusCode.RESOURCE_EXHAUSTED)
        client = metaopt.Client(address, max_attempts=3, initial_backoff=0.001,
                                max_backoff=0.002)
        self.addCleanup(client.close)
        study = metaopt.Study(client, study_pb2.Study(study_id="s"))
        with self.assertRaises(metaopt.ResourceExhaustedError):
            study.fine_tune()
        self.assertEqual(service.calls, ["FineTune"])


class RetryTest(ServerTest):

    def test_lost_suggest_response_is_retried_with_the_same_client_id(self):
        for code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
            with self.subTest(code=code.name):
                lose = LoseResponses("Suggest", times=2, code=code)
                study = self.client(interceptors=[lose]).create_study(
                    f"lost-suggest-{code.name.lower()}", quadratic_space(), algorithm="random")
                trials = study.suggest(count=3)
                self.assertEqual(lose.count("Suggest"), 3)
                client_ids = {request.client_id for m, request in lose.calls if m == "Suggest"}
                self.assertEqual(len(client_ids), 1)
                # The lost attempts created the trials; the retry got those, not new ones.
                self.assertEqual([t.id for t in trials], [1, 2, 3])
                self.assertEqual(study.refresh().trial_count, 3)

    def test_lost_observe_response_is_recognised(self):
        lose = LoseResponses("Observe", times=1)
        study = self.client(interceptors=[lose]).create_study(
            "lost-observe", quadratic_space(), algorithm="random")
        (trial,) = study.suggest()
        done = study.observe(trial, 0.25)
        self.assertEqual(done.state, metaopt.TrialState.COMPLETED)
        self.assertEqual(done.value, 0.25)
        self.assertEqual(lose.count("Observe"), 2)  # the retry met FAILED_PRECONDITION
        self.assertEqual(lose.count("GetTrial"), 1)
        # Another outcome for the same trial is still an error.
        with self.assertRaises(metaopt.FailedPreconditionError):
            study.observe(trial, 0.5)

    def test_lost_external_observation_is_not_retried(self):
        lose = LoseResponses("Observe", times=1)
        study = self.client(interceptors=[lose]).create_study(
            "lost-external", quadratic_space(), algorithm="random")
        with self.assertRaises(metaopt.UnavailableError):
            study.observe_configuration({"x": 0.0, "n": 1}, 1.0)
        self.assertEqual(lose.count("Observe"), 1)
        self.assertEqual(study.refresh().trial_count, 1)  # recorded once

    def test_retries_stop_after_max_attempts(self):
        lose = LoseResponses("GetStudy", times=10)
        client = self.client(interceptors=[lose], max_attempts=3)
        client.create_study("attempts", quadratic_space(), algorithm="random")
        with self.assertRaises(metaopt.UnavailableError):
            client.get_study("attempts")
        self.assertEqual(lose.count("GetStudy"), 3)

    def test_non_retryable_codes_are_not_retried(self):
        recorder = LoseResponses("none", times=0)
        client = self.client(interceptors=[recorder])
        with self.assertRaises(metaopt.NotFoundError):
            client.get_study("absent")
        self.assertEqual(recorder.count("GetStudy"), 1)

    def test_token_is_sent_as_bearer_metadata(self):
        recorder = LoseResponses("none", times=0)
        self.client(interceptors=[recorder], token="s3cret").list_models()
        self.assertIn(("authorization", "Bearer s3cret"), recorder.metadata[-1])
        self.client(interceptors=[recorder]).list_models()
        self.assertFalse(recorder.metadata[-1])


class RestartTest(unittest.TestCase):

    def test_suggest_waits_out_a_server_restart_and_gets_its_trial_back(self):
        with TempServer() as server:
            client = metaopt.Client(server.target, max_attempts=4, timeout=10)
            self.addCleanup(client.close)
            study = client.create_study("restart", quadratic_space(), algorithm="gp", seed=1)
            (trial,) = study.suggest()
            port = server.port
            server.kill()  # SIGKILL: nothing is flushed on the way out

            impatient = metaopt.Client(server.target, max_attempts=1, timeout=5)
            self.addCleanup(impatient.close)
            with self.assertRaises(metaopt.UnavailableError):
                impatient.get_study("restart")

            restarter = threading.Timer(1.5, server.start, kwargs={"port": port})
            restarter.start()
            started = time.monotonic()
            try:
                (again,) = study.suggest()
            finally:
                restarter.join()
            self.assertGreater(time.monotonic() - started, 1.0)  # it did wait for the restart
            self.assertEqual(again.id, trial.id)
            self.assertEqual(again.params, trial.params)
            self.assertEqual(study.observe(again, 3.0).value, 3.0)


def _server_supports(flag: str) -> bool:
    result = subprocess.run([server_binary(), "--help"], capture_output=True, text=True,
                            timeout=30)
    return flag in result.stdout + result.stderr


class AuthTest(unittest.TestCase):

    def test_tokens_authenticate_and_namespace_studies(self):
        if not _server_supports("--tokens"):
            self.skipTest("this metaopt-server has no --tokens")
        server = TempServer()
        self.addCleanup(server.__exit__, None, None, None)
        tokens = os.path.join(server.directory, "tokens")
        with open(tokens, "w") as f:
            f.write("# owner:token\nalice:alice-token-0123456789\nbob:bob-token-0123456789\n")
        server.extra_args = [f"--tokens={tokens}"]
        server.start()
        with metaopt.Client(server.target) as anonymous:
            with self.assertRaises(metaopt.UnauthenticatedError):
                anonymous.list_studies().__next__()
        with metaopt.Client(server.target, token="wrong") as wrong:
            with self.assertRaises(metaopt.UnauthenticatedError):
                wrong.get_study("x")
        with metaopt.Client(server.target, token="alice-token-0123456789") as alice, \
                metaopt.Client(server.target, token="bob-token-0123456789") as bob:
            study = alice.create_study("private", quadratic_space(), algorithm="random")
            self.assertEqual(study.proto.owner, "alice")
            with self.assertRaises(metaopt.NotFoundError):
                bob.get_study("private")
            self.assertEqual([s.id for s in bob.list_studies()], [])


def _make_certificates(directory: str) -> None:
    """A CA, and a server (localhost, 127.0.0.1) and a client certificate it signed, as PEM files
    ca.pem, server.pem/server.key and client.pem/client.key in ``directory``."""

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=directory, check=True, capture_output=True,
                       timeout=60)

    key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    openssl("req", "-x509", *key, "-keyout", "ca.key", "-out", "ca.pem", "-days", "1",
            "-subj", "/CN=metaopt test CA")
    with open(os.path.join(directory, "san.ext"), "w") as f:
        f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    for name in ("server", "client"):
        openssl("req", *key, "-keyout", f"{name}.key", "-out", f"{name}.csr",
                "-subj", f"/CN={name}")
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                "-CAcreateserial", "-out", f"{name}.pem", "-days", "1", "-extfile", "san.ext")


class TlsTest(unittest.TestCase):

    def start_server(self, mutual: bool) -> TempServer:
        if not _server_supports("--tls-cert"):
            self.skipTest("this metaopt-server has no --tls-cert")
        server = TempServer()
        self.addCleanup(server.__exit__, None, None, None)
        _make_certificates(server.directory)
        self.directory = server.directory
        server.extra_args = [f"--tls-cert={self.path('server.pem')}",
                             f"--tls-key={self.path('server.key')}"]
        if mutual:
            server.extra_args.append(f"--tls-client-ca={self.path('ca.pem')}")
        server.start()
        return server

    def path(self, name: str) -> str:
        return os.path.join(self.directory, name)

    def test_tls_with_the_servers_ca(self):
        server = self.start_server(mutual=False)
        ca = self.path("ca.pem")
        with metaopt.Client(server.target, root_certificates=ca) as client:
            study = client.create_study("tls", quadratic_space(), algorithm="random")
            self.assertEqual(len(study.suggest()), 1)
        with open(ca, "rb") as f:  # PEM bytes work as well as a path
            with metaopt.Client(f"localhost:{server.port}", root_certificates=f.read()) as client:
                self.assertEqual(client.get_study("tls").id, "tls")
        for options in ({}, {"tls": True}):  # plaintext; TLS without the CA
            with metaopt.Client(server.target, max_attempts=1, timeout=10, **options) as client:
                with self.assertRaises(metaopt.UnavailableError, msg=str(options)):
                    client.get_study("tls")
        with self.assertRaisesRegex(ValueError, "root_certificates: cannot read"):
            metaopt.Client(server.target, root_certificates=ca + ".missing")

    def test_mutual_tls_needs_the_client_certificate(self):
        server = self.start_server(mutual=True)
        with metaopt.Client(server.target, root_certificates=self.path("ca.pem"),
                            certificate_chain=self.path("client.pem"),
                            private_key=self.path("client.key")) as client:
            self.assertEqual(client.list_models(), [])
        with metaopt.Client(server.target, root_certificates=self.path("ca.pem"), max_attempts=1,
                            timeout=10) as client:
            with self.assertRaises(metaopt.UnavailableError):
                client.list_models()


class HeartbeatTest(ServerTest):

    def test_heartbeat_extends_leases(self):
        client = self.client()
        study = client.create_study("heartbeat", quadratic_space(), algorithm="random")
        trials = study.suggest(count=2)
        try:
            beaten = study.heartbeat(trials)
        except metaopt.MetaoptError as e:
            if e.code == grpc.StatusCode.UNIMPLEMENTED:
                self.skipTest("this metaopt-server does not implement Heartbeat")
            raise
        self.assertEqual(sorted(t.id for t in beaten), sorted(t.id for t in trials))
        for before, after in zip(sorted(trials, key=lambda t: t.id),
                                 sorted(beaten, key=lambda t: t.id)):
            self.assertEqual(after.state, metaopt.TrialState.ACTIVE)
            self.assertIsNotNone(after.lease_expire_time)
            if before.lease_expire_time is not None:
                self.assertGreaterEqual(after.lease_expire_time, before.lease_expire_time)


class EarlyStoppingTest(ServerTest):

    def test_report_stops_a_trial_that_then_ends_stopped(self):
        client = self.client()
        study = client.create_study("early-threshold", quadratic_space(), algorithm="random",
                                    goal="minimize",
                                    early_stopping=metaopt.threshold_stopping(1.0, start_step=1))
        self.assertTrue(study.spec.HasField("early_stopping"))
        (trial,) = study.suggest()
        self.assertFalse(trial.report(0, 5.0))  # before start_step: no decision
        self.assertFalse(trial.report(1, 0.8, {"accuracy": 0.7}))
        self.assertTrue(trial.report(2, 1.5))
        self.assertEqual(trial.last_reported_value, 1.5)
        # A retry of the same step answers the same; another value is refused.
        again = study.report(trial, 2, 1.5)
        self.assertTrue(again.should_stop)
        self.assertIn("threshold 1", again.reason)
        self.assertEqual([v.step for v in again.trial.intermediate_values], [0, 1, 2])
        self.assertEqual(again.trial.intermediate_values[1].metrics, {"accuracy": 0.7})
        with self.assertRaises(metaopt.FailedPreconditionError):
            study.report(trial, 2, 1.6)
        stopped = study.observe_stopped(trial)
        self.assertEqual(stopped.state, metaopt.TrialState.STOPPED)
        self.assertEqual(stopped.value, 1.5)
        self.assertEqual([t.id for t in study.trials(state=metaopt.TrialState.STOPPED)],
                         [trial.id])
        # The client-level call, on the finished trial: FAILED_PRECONDITION.
        with self.assertRaises(metaopt.FailedPreconditionError):
            client.report_intermediate(study.id, trial.id, 3, 1.0)

    def test_validation_names_the_field(self):
        client = self.client()
        study = client.create_study("early-validation", quadratic_space(), algorithm="random")
        (trial,) = study.suggest()
        with self.assertRaises(metaopt.InvalidArgumentError) as caught:
            trial.report(-1, 0.5)
        self.assertIn("step: -1", caught.exception.message)
        with self.assertRaises(metaopt.InvalidArgumentError):
            trial.report(0, float("nan"))
        with self.assertRaises(TypeError):
            trial.report(1.5, 0.5)
        with self.assertRaises(metaopt.InvalidArgumentError) as caught:
            client.create_study("early-bad", quadratic_space(),
                                early_stopping=metaopt.asha(reduction_factor=1))
        self.assertIn("spec.early_stopping.asha.reduction_factor", caught.exception.message)
        # Without a rule a trial is never stopped.
        report = client.report_intermediate(study.id, trial.id, 0, 100.0)
        self.assertFalse(report.should_stop)
        self.assertEqual(report.reason, "")
        self.assertEqual(report.trial.id, trial.id)

    def test_client_stops_a_trial_by_its_own_rule(self):
        client = self.client()
        study = client.create_study("early-client-stop", quadratic_space(), algorithm="random")
        first, second = study.suggest(count=2)
        self.assertFalse(first.report(0, 3.0))
        report = study.report(first, 1, 2.5, stop_reason="loss plateaued")
        self.assertTrue(report.should_stop)
        self.assertEqual(report.reason, "client: loss plateaued")
        with self.assertRaises(ValueError):
            study.report(second, 0, 1.0, stop_reason="")
        stopped = study.observe_stopped(report.trial)
        self.assertEqual(stopped.state, metaopt.TrialState.STOPPED)
        self.assertEqual(stopped.value, 2.5)
        self.assertEqual(stopped.metadata["stop_step"], "1")
        # The client-level call does the same.
        self.assertTrue(client.report_intermediate(study.id, second.id, 4, 1.0,
                                                   stop_reason="budget").should_stop)

    def test_rule_compares_a_metric(self):
        client = self.client()
        # Minimized objective; the threshold rule compares "accuracy", maximized.
        study = client.create_study(
            "early-metric", quadratic_space(), algorithm="random",
            early_stopping=metaopt.threshold_stopping(0.5, metric="accuracy",
                                                      metric_goal="maximize"))
        first, second = study.suggest(count=2)
        with self.assertRaises(metaopt.InvalidArgumentError) as caught:
            first.report(1, 0.9)
        self.assertIn('metrics: no "accuracy"', caught.exception.message)
        self.assertFalse(first.report(1, 0.9, metrics={"accuracy": 0.8}))
        report = study.report(second, 1, 0.1, metrics={"accuracy": 0.3})
        self.assertTrue(report.should_stop)
        self.assertIn("(maximizing)", report.reason)
        self.assertEqual(study.observe_stopped(report.trial).value, 0.1)
        spec = metaopt.asha(min_resource=1, metric="loss")
        self.assertEqual((spec.asha.min_resource, spec.metric, spec.metric_goal),
                         (1, "loss", 0))
        for bad in (dict(metric=""), dict(metric_goal="maximize"),
                    dict(metric="loss", metric_goal="up")):
            with self.assertRaises(ValueError):
                metaopt.median_stopping(**bad)

    def test_optimize_observes_pruned_trials_as_stopped(self):
        client = self.client()
        study = client.create_study(
            "early-median", quadratic_space(), algorithm="random", goal="minimize", seed=3,
            early_stopping=metaopt.median_stopping(min_trials=2))

        def objective(trial: metaopt.Trial) -> float:
            # Trials 1 and 2 train well, the others badly: the median rule stops those.
            start = {1: 1.0, 2: 0.9}.get(trial.id, 10.0)
            loss = start
            for epoch in range(5):
                loss = start / (epoch + 1)
                if trial.report(epoch, loss):
                    raise metaopt.Pruned(f"epoch {epoch}")
            return loss

        done = study.optimize(objective, n_trials=4)
        self.assertEqual([t.state for t in done],
                         [metaopt.TrialState.COMPLETED] * 2 + [metaopt.TrialState.STOPPED] * 2)
        self.assertEqual(done[2].value, 10.0)  # stopped after its first report
        self.assertEqual(len(done[2].intermediate_values), 1)
        self.assertEqual(study.best_trial().id, 2)

        def broken(trial: metaopt.Trial) -> float:
            raise RuntimeError("out of memory")

        with self.assertRaises(RuntimeError):
            study.optimize(broken)
        failed = list(study.trials(state=metaopt.TrialState.FAILED))
        self.assertEqual(len(failed), 1)
        self.assertIn("out of memory", failed[0].failure_reason)


if __name__ == "__main__":
    unittest.main()
