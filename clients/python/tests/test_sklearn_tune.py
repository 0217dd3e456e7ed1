"""metaopt.sklearn.tune end to end against the real server with the bundled DeepPipe model.

The server runs on 127.0.0.1 (port 0) with a copy of models/sklearn-pipelines-deeppipe and a
short trial lease, so that a fit longer than the lease completes only through heartbeats. Slow or
runaway fits are simulated by replacing ``metaopt.sklearn.evaluation._fit_and_score`` before tune
starts its evaluation processes, which receive the function by reference.
"""

from __future__ import annotations

import io
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest
import xml.etree.ElementTree as ElementTree
from contextlib import redirect_stderr
from pathlib import Path

import numpy as np
import sklearn.datasets

import metaopt
from metaopt import sklearn as mosk
from metaopt.sklearn import evaluation as mosk_evaluation
from server_process import TempServer

PROJECT = Path(__file__).resolve().parents[3]
LEASE_SECONDS = 2


def iris():
    return sklearn.datasets.load_iris(return_X_y=True)


# Evaluation functions that stand in for metaopt.sklearn.evaluation._fit_and_score. tune's worker
# processes receive the function by reference, so these live at module level.
_original_fit_and_score = mosk_evaluation._fit_and_score


def slower_than_the_lease(config, data, limit):
    time.sleep(LEASE_SECONDS * 1.5)
    return _original_fit_and_score(config, data, limit)


def runaway(config, data, limit):
    mosk_evaluation._limit_cpu(limit)
    while True:
        pass


def asleep(config, data, limit):
    time.sleep(120)
    return _original_fit_and_score(config, data, limit)


class TuneTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls) -> None:
        cls.server = TempServer([f"--trial-lease={LEASE_SECONDS}"])
        shutil.copytree(PROJECT / "models" / "sklearn-pipelines-deeppipe",
                        Path(cls.server.models) / "sklearn-pipelines-deeppipe")
        cls.server.start()

    @classmethod
    def tearDownClass(cls) -> None:
        cls.server.__exit__(None, None, None)

    def trials(self, study_id: str):
        with metaopt.Client(self.server.target) as client:
            return list(client.get_study(study_id).trials())

    def test_tune_returns_the_refitted_best_pipeline_and_a_report_and_resumes(self) -> None:
        X, y = iris()
        stderr = io.StringIO()
        with redirect_stderr(stderr):
            result = mosk.tune(X, y, n_trials=4, server=self.server.target, workers=2,
                               study_id="iris")
        self.assertRegex(stderr.getvalue(), r"trial \d+ \[4/4\] ")
        self.assertTrue(result.bound_model.startswith("sklearn-pipelines-deeppipe@"))
        # The bundled model's newest version starts from its fixed portfolio (chosen over the
        # task-aware designs by cross-validation, docs/benchmarks.md).
        self.assertEqual(result.zero_shot_design, "portfolio")
        trials = self.trials("iris")
        self.assertEqual([t.state for t in trials], [metaopt.TrialState.COMPLETED] * 4)
        self.assertEqual(len({t.client_id for t in trials}), 2)  # one client id per worker
        # CPU seconds of the fits: a fit of iris takes well under a millisecond, and one of the
        # four read 0.0 once on a loaded 2-core machine (the process's CPU clock did not move
        # across it), so each must be >= 0 and their sum > 0.
        self.assertGreater(sum(trial.metrics["fit_seconds"] for trial in trials), 0)
        for trial in trials:
            self.assertEqual(trial.metrics["cv_folds"], 0)
            self.assertGreaterEqual(trial.metrics["fit_seconds"], 0)
            self.assertNotIn("late", trial.metadata)
            # The first suggestions come from the model's portfolio.
            self.assertRegex(trial.metadata["policy"], r"^deeppipe/portfolio")
        best = max(trials, key=lambda t: t.value)
        self.assertEqual(result.best_trial_id, best.id)
        self.assertEqual(result.best_value, best.value)
        self.assertGreater(result.best_value, 0.9)
        # The returned pipeline is the best configuration's, refitted on all rows.
        self.assertEqual(result.best_configuration, mosk.parse_configuration(best))
        self.assertGreater(np.mean(result.pipeline.predict(X) == y), 0.9)
        self.assertEqual(result.pipeline.named_steps["preprocess"].n_features_in_, 4)

        # The report: table, CSV, SVG and markdown.
        self.assertEqual(len(result.table().splitlines()), 5)
        with tempfile.TemporaryDirectory() as directory:
            result.save(directory)
            self.assertEqual(sorted(os.listdir(directory)),
                             ["best_so_far.svg", "report.md", "trials.csv"])
            root = ElementTree.parse(os.path.join(directory, "best_so_far.svg")).getroot()
            self.assertTrue(root.tag.endswith("svg"))
            with open(os.path.join(directory, "trials.csv")) as file:
                self.assertEqual(len(file.read().splitlines()), 5)

        # The same study id resumes: the budget counts the trials it already has.
        result = mosk.tune(X, y, n_trials=6, server=self.server.target, study_id="iris",
                           progress=False)
        self.assertEqual(len(result.trials), 6)
        self.assertEqual(len(self.trials("iris")), 6)
        result = mosk.tune(X, y, n_trials=6, server=self.server.target, study_id="iris",
                           progress=False, refit=False)
        self.assertEqual(len(result.trials), 6)
        self.assertIsNone(result.pipeline)
        # A timeout stops new trials from starting: none is added.
        result = mosk.tune(X, y, n_trials=50, server=self.server.target, study_id="iris",
                           progress=False, timeout=1e-6)
        self.assertEqual(len(result.trials), 6)

        # Resuming with another protocol or other data is refused by name.
        with self.assertRaisesRegex(ValueError, r"study_id: 'iris' was evaluated with cv=None "
                                    r"\(the holdout split\) .* this call has cv=3"):
            mosk.tune(X, y, n_trials=7, server=self.server.target, study_id="iris", cv=3,
                      progress=False)
        with self.assertRaisesRegex(ValueError, "study_id: 'iris' exists with another spec"):
            mosk.tune(X[:100], y[:100], n_trials=7, server=self.server.target,
                      study_id="iris", progress=False)

    def test_cross_validation_heartbeats_and_the_fit_time_limit(self) -> None:
        X, y = iris()
        mosk_evaluation._fit_and_score = slower_than_the_lease
        try:
            result = mosk.tune(X, y, n_trials=2, server=self.server.target, cv=3,
                               study_id="iris-cv", progress=False)
        finally:
            mosk_evaluation._fit_and_score = _original_fit_and_score
        self.assertEqual(result.protocol, "stratified 3-fold CV")
        for trial in self.trials("iris-cv"):
            self.assertEqual(trial.state, metaopt.TrialState.COMPLETED)
            self.assertEqual(trial.metrics["cv_folds"], 3)
            self.assertGreater(trial.metrics["wall_seconds"], LEASE_SECONDS)
            # Observed before the lease ran out, thanks to the heartbeats.
            self.assertNotIn("late", trial.metadata)

        mosk_evaluation._fit_and_score = runaway
        try:
            with self.assertRaisesRegex(RuntimeError, "no trial completed.*CPU-time limit of 1 s"):
                mosk.tune(X, y, n_trials=1, server=self.server.target, study_id="iris-limit",
                          fit_time_limit=1, progress=False)
        finally:
            mosk_evaluation._fit_and_score = _original_fit_and_score
        (trial,) = self.trials("iris-limit")
        self.assertEqual(trial.state, metaopt.TrialState.FAILED)
        self.assertEqual(trial.failure_reason, "fit over the CPU-time limit of 1 s")

    def test_ctrl_c_leaves_no_active_trial_and_the_study_resumes(self) -> None:
        script = textwrap.dedent(f"""
            import sklearn.datasets
            from metaopt import sklearn as mosk
            from metaopt.sklearn import evaluation
            from test_sklearn_tune import asleep
            evaluation._fit_and_score = asleep
            X, y = sklearn.datasets.load_iris(return_X_y=True)
            mosk.tune(X, y, n_trials=3, server={self.server.target!r}, workers=2,
                      study_id="interrupted")
        """)
        # Its own process group, which Ctrl-C in a terminal signals as a whole.
        process = subprocess.Popen([sys.executable, "-B", "-c", script], start_new_session=True,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 120
            active = []
            while time.monotonic() < deadline and process.poll() is None:
                try:
                    active = [t for t in self.trials("interrupted")
                              if t.state == metaopt.TrialState.ACTIVE]
                except metaopt.NotFoundError:
                    active = []
                if len(active) == 2:
                    break
                time.sleep(0.2)
            self.assertEqual(len(active), 2, process.stderr.read() if process.poll() else "")
            os.killpg(process.pid, signal.SIGINT)
            _, stderr = process.communicate(timeout=60)
        finally:
            if process.poll() is None:
                process.kill()
                process.communicate()
        self.assertNotEqual(process.returncode, 0)
        self.assertIn("KeyboardInterrupt", stderr)
        self.assertIn("tune(..., study_id='interrupted') resumes it", stderr)
        trials = self.trials("interrupted")
        self.assertEqual([t.state for t in trials], [metaopt.TrialState.FAILED] * 2)
        self.assertTrue(all(t.failure_reason == "interrupted: Ctrl-C" for t in trials), trials)

        # Interrupted trials do not count: resuming runs the whole budget.
        X, y = iris()
        result = mosk.tune(X, y, n_trials=2, server=self.server.target,
                           study_id="interrupted", progress=False)
        states = [r.state for r in result.trials]
        self.assertEqual(states, ["FAILED", "FAILED", "COMPLETED", "COMPLETED"])

    def test_ensemble_of_the_evaluated_pipelines(self) -> None:
        X, y = sklearn.datasets.load_wine(return_X_y=True)
        result = mosk.tune(X, y, n_trials=8, server=self.server.target, workers=2,
                           study_id="wine-ensemble", progress=False, ensemble=10)
        summary = result.ensemble
        self.assertIsNotNone(summary)
        self.assertEqual(summary.size, 10)
        self.assertEqual(summary.library_size, 8)
        self.assertEqual(len(summary.scores), 10)
        completed = {t.id: t.value for t in self.trials("wine-ensemble")}
        self.assertEqual(summary.best_single_value, max(completed.values()))
        # The kept rounds are the best-scoring prefix, the first round the best single pipeline.
        kept = sum(n for _, n in summary.members)
        self.assertEqual(summary.value, max(summary.scores))
        self.assertEqual(summary.scores[kept - 1], summary.value)
        self.assertEqual(summary.scores[0], summary.best_single_value)
        self.assertGreaterEqual(summary.value, summary.best_single_value)
        self.assertTrue(all(t in completed for t, _ in summary.members))
        # result.pipeline is the ensemble of those members, refitted on all rows.
        self.assertIsInstance(result.pipeline, mosk.Ensemble)
        self.assertEqual(len(result.pipeline.pipelines), len(summary.members))
        self.assertAlmostEqual(sum(result.pipeline.weights), 1.0)
        self.assertEqual([w * kept for w in result.pipeline.weights],
                         [n for _, n in summary.members])
        for member in result.pipeline.pipelines:
            self.assertEqual(member.named_steps["preprocess"].n_features_in_, 13)
        self.assertGreater(np.mean(result.pipeline.predict(X) == y), 0.9)
        self.assertIn("ensemble: validation balanced accuracy", result.summary())

        # A resumed call with nothing left to run has no library: the best single pipeline.
        again = mosk.tune(X, y, n_trials=8, server=self.server.target, study_id="wine-ensemble",
                          progress=False, ensemble=10)
        self.assertIsNone(again.ensemble)
        self.assertNotIsInstance(again.pipeline, mosk.Ensemble)

    def test_arguments_are_validated_before_anything_is_sent(self) -> None:
        X, y = iris()
        cases = [
            (dict(n_trials=0), "n_trials: 0 must be an integer >= 1"),
            (dict(n_trials=2.5), "n_trials: 2.5 must be an integer >= 1"),
            (dict(workers=0), "workers: 0 must be an integer >= 1"),
            (dict(workers=65), "workers: 65 must be at most 64"),
            (dict(timeout=-1), "timeout: -1 must be None or a number of seconds > 0"),
            (dict(cv=1), "cv: 1 must be None"),
            (dict(fit_time_limit=0), "fit_time_limit: 0 must be None"),
            (dict(seed=-1), "seed: -1 must be an integer >= 0"),
            (dict(server=""), "server: '' must be 'host:port' or a metaopt.Client"),
            (dict(study_id=""), "study_id: '' must be None or a non-empty string"),
            (dict(model=""), "model: '' must be a registry model name"),
            (dict(refit="yes"), "refit: 'yes' must be True or False"),
            (dict(report_dir=3), "report_dir: 3 must be None or a folder path"),
            (dict(ensemble=0), "ensemble: 0 must be an integer >= 1"),
            (dict(ensemble=True), "ensemble: True must be an integer >= 1"),
            (dict(ensemble=1001), "ensemble: 1001 must be None or at most 1000 rounds"),
        ]
        for kwargs, message in cases:
            with self.subTest(message=message):
                kwargs.setdefault("server", "127.0.0.1:1")  # never reached
                with self.assertRaises(ValueError) as raised:
                    mosk.tune(X, y, **kwargs)
                self.assertIn(message, str(raised.exception))
        with self.assertRaisesRegex(ValueError, "y: 149 labels for 150 rows of X"):
            mosk.tune(X, y[:-1], server="127.0.0.1:1")

    def test_a_server_without_the_model_is_an_error(self) -> None:
        X, y = iris()
        with self.assertRaises(metaopt.MetaoptError) as raised:
            mosk.tune(X, y, n_trials=1, server=self.server.target, model="no-such-model",
                      progress=False)
        self.assertIn("spec.algorithm.model", str(raised.exception))


if __name__ == "__main__":
    unittest.main()
