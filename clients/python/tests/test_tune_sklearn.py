"""Runs examples/tune_sklearn.py against the real server with a small budget."""

from __future__ import annotations

import os
import subprocess
import sys
import unittest

import metaopt
from server_process import ServerTestCase

EXAMPLE = os.path.join(os.environ.get("METAOPT_PYTHON_EXAMPLES", ""), "tune_sklearn.py")


class TuneSklearnTest(ServerTestCase):

    def run_example(self, *args: str) -> str:
        result = subprocess.run(
            [sys.executable, "-B", EXAMPLE, "--server", self.server.target, *args],
            capture_output=True, text=True, timeout=240)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        return result.stdout

    def check_study(self, study_id: str, trials: int, model_policy: str) -> metaopt.Study:
        with metaopt.Client(self.server.target) as client:
            study = client.get_study(study_id)
            self.assertEqual(study.trial_count, trials)
            done = list(study.trials())
            self.assertEqual([t.state for t in done], [metaopt.TrialState.COMPLETED] * trials)
            for trial in done:
                self.assertTrue(0 <= trial.value <= 1, trial)
                self.assertIn("cv_seconds", trial.metrics)
            # The model took over from the initial design and the search found a good pipeline
            # (a default SVM or k-NN scores about 0.96-0.98 on digits; a bad one under 0.2).
            self.assertIn(model_policy, {t.metadata.get("policy") for t in done})
            self.assertGreaterEqual(study.best_trial().value, 0.97)
            return study

    def test_gp_study_tunes_the_pipeline_and_a_rerun_continues_it(self):
        out = self.run_example("--algorithm", "gp", "--trials", "10", "--seed", "1")
        self.assertIn("study sklearn-digits-gp (created, gp", out)
        self.assertRegex(out, r"best: trial \d+ accuracy 0\.9\d+ after 10 trials")
        self.check_study("sklearn-digits-gp", 10, "gp/ei")
        out = self.run_example("--algorithm", "gp", "--trials", "2", "--seed", "1")
        self.assertIn("(existing, gp", out)
        self.check_study("sklearn-digits-gp", 12, "gp/ei")

    def test_deeppipe_study_trains_from_scratch(self):
        out = self.run_example("--algorithm", "deeppipe", "--trials", "8", "--seed", "2",
                               "--study-id", "digits-deeppipe")
        self.assertIn("bound model: none", out)
        self.check_study("digits-deeppipe", 8, "deeppipe/ei")


if __name__ == "__main__":
    unittest.main()
