"""Runs examples/early_stopping_sklearn.py against the real server with a small budget."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import unittest

import metaopt
from server_process import ServerTestCase

EXAMPLE = os.path.join(os.environ.get("METAOPT_PYTHON_EXAMPLES", ""), "early_stopping_sklearn.py")


class EarlyStoppingExampleTest(ServerTestCase):

    def run_example(self, *args: str) -> str:
        result = subprocess.run(
            [sys.executable, "-B", EXAMPLE, "--server", self.server.target, *args],
            capture_output=True, text=True, timeout=240)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        return result.stdout

    def test_asha_stops_hopeless_trials_and_saves_epochs(self):
        trials, epochs = 12, 9
        out = self.run_example("--rule", "asha", "--trials", str(trials), "--epochs", str(epochs),
                               "--study-id", "es-asha")
        self.assertIn("study es-asha (created, random, early stopping: asha)", out)
        match = re.search(r"trained (\d+) epochs of (\d+) without stopping", out)
        self.assertIsNotNone(match, out)
        trained, full = int(match.group(1)), int(match.group(2))
        self.assertEqual(full, trials * epochs)
        with metaopt.Client(self.server.target) as client:
            study = client.get_study("es-asha")
            done = list(study.trials())
            self.assertEqual(len(done), trials)
            states = [t.state for t in done]
            stopped = [t for t in done if t.state == metaopt.TrialState.STOPPED]
            completed = [t for t in done if t.state == metaopt.TrialState.COMPLETED]
            # ASHA with reduction factor 3 keeps about a third at each rung: some trials stop.
            self.assertGreater(len(stopped), 0, states)
            self.assertGreater(len(completed), 0, states)
            self.assertIn(f"{len(stopped)} of {trials} trials stopped", out)
            spent = 0
            for trial in done:
                steps = [v.step for v in trial.proto.intermediate_values]
                self.assertEqual(steps, list(range(1, len(steps) + 1)), trial)
                spent += len(steps)
                # The observed value is the last reported loss.
                self.assertAlmostEqual(trial.value, trial.proto.intermediate_values[-1].value)
                if trial.state == metaopt.TrialState.COMPLETED:
                    self.assertEqual(len(steps), epochs)
                else:  # the last rung (9 epochs) can stop a trial at its end too
                    self.assertLessEqual(len(steps), epochs)
            # Every epoch trained was reported, and stopping saved epochs.
            self.assertEqual(spent, trained)
            self.assertLess(trained, full)

    def test_without_a_rule_every_trial_runs_all_epochs(self):
        out = self.run_example("--rule", "none", "--trials", "3", "--epochs", "4",
                               "--study-id", "es-none")
        self.assertIn("trained 12 epochs of 12 without stopping (1.00x less); 0 of 3 trials "
                      "stopped", out)
        with metaopt.Client(self.server.target) as client:
            done = list(client.get_study("es-none").trials())
            self.assertEqual([t.state for t in done], [metaopt.TrialState.COMPLETED] * 3)


if __name__ == "__main__":
    unittest.main()
