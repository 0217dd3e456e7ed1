"""paired_differences.py: the mean difference and its standard error over task means."""

from __future__ import annotations

import contextlib
import io
import math
import os
import tempfile
import unittest

import paired_differences


def write_per_task(path: str, rows) -> None:
    with open(path, "w") as f:
        f.write("method,task,seed,trial,regret\n")
        for method, task, seed, trial, regret in rows:
            f.write(f"{method},{task},{seed},{trial},{regret}\n")


class PairedDifferencesTest(unittest.TestCase):

    def run_tool(self, rows, pairs="a:b", trials="1"):
        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, "per_task.csv")
            write_per_task(path, rows)
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                self.assertEqual(paired_differences.main([path, "--pairs", pairs,
                                                          "--trials", trials]), 0)
            return out.getvalue().splitlines()[2]

    def test_repeated_seeds_do_not_shrink_the_standard_error(self) -> None:
        # Three tasks with differences -0.3, -0.1, +0.2; every seed repeats its task's run.
        per_task = {"t1": -0.3, "t2": -0.1, "t3": 0.2}
        for seeds in (1, 5):
            rows = []
            for task, difference in per_task.items():
                for seed in range(seeds):
                    rows.append(("a", task, seed, 1, 0.5 + difference))
                    rows.append(("b", task, seed, 1, 0.5))
            line = self.run_tool(rows)
            mean = sum(per_task.values()) / 3
            sd = math.sqrt(sum((d - mean) ** 2 for d in per_task.values()) / 2)
            self.assertIn(f"{mean:+.4f} ± {sd / math.sqrt(3):.4f}", line)
            self.assertIn(f"{2 * seeds} / 0 / {seeds}", line)  # run by run: better / tie / worse

    def test_one_task_uses_its_seeds(self) -> None:
        rows = []
        for seed, difference in enumerate((-0.2, 0.1, 0.4)):
            rows.append(("a", "t", seed, 1, 0.5 + difference))
            rows.append(("b", "t", seed, 1, 0.5))
        line = self.run_tool(rows)
        self.assertIn(f"+0.1000 ± {0.3 / math.sqrt(3):.4f}", line)


if __name__ == "__main__":
    unittest.main()
