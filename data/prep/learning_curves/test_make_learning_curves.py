"""make_learning_curves.py: a larger catalogue starts with a smaller one, and --reuse copies the
curves of an earlier build (verified by retraining) instead of training them again."""

from __future__ import annotations

import os
import sys
import tempfile
import unittest

try:
    import numpy as np
    import pandas as pd
    import sklearn  # noqa: F401
    from scipy.stats import qmc  # noqa: F401
except ImportError:  # pragma: no cover - scripts/install-deps.sh installs them
    np = None

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
if np is not None:
    import make_learning_curves as mlc


def tiny_task():
    """A small two-class problem with a categorical column: 400 rows (more than a batch)."""
    rng = np.random.default_rng(7)
    x = rng.normal(size=(400, 3))
    labels = np.where(x[:, 0] + 0.5 * x[:, 1] > 0, "a", "b")
    features = pd.DataFrame(x, columns=["u", "v", "w"])
    features["c"] = np.where(x[:, 2] > 0, "left", "right")
    return features, labels


@unittest.skipIf(np is None, "needs numpy, pandas, scipy and scikit-learn")
class MakeLearningCurvesTest(unittest.TestCase):
    def setUp(self):
        self._epochs = mlc.EPOCHS
        mlc.EPOCHS = 3  # short curves keep the test fast

    def tearDown(self):
        mlc.EPOCHS = self._epochs

    def test_a_larger_catalogue_starts_with_the_smaller_one(self):
        self.assertEqual(mlc.configurations(128)[:64], mlc.configurations(64))
        self.assertNotEqual(mlc.configurations(128)[64], mlc.configurations(128)[0])

    def run_task(self, configs, reused=None, verify=()):
        features, labels = tiny_task()
        return mlc.run_task(("toy_task", features, labels, configs, reused or {}, set(verify)))

    def test_reuse_copies_and_verify_retrains(self):
        configs = mlc.configurations(3)
        _, evaluations, curves = self.run_task(configs)
        self.assertEqual(len(evaluations), 3)
        self.assertEqual(len(curves), 3 * mlc.EPOCHS)
        reused = {i: (evaluations[i], curves[i * mlc.EPOCHS:(i + 1) * mlc.EPOCHS])
                  for i in range(2)}
        # Reused (0, 1) plus trained (2), with 0 retrained and compared: the same rows.
        again = self.run_task(configs, reused, verify=[0])
        self.assertEqual(again[1:], (evaluations, curves))
        # A reused row is copied as it is, not retrained...
        tampered = dict(reused)
        row = evaluations[1].rsplit(",", 2)
        tampered[1] = (f"{row[0]},0.5,{row[2]}", reused[1][1])
        self.assertEqual(self.run_task(configs, tampered)[1][1], tampered[1][0])
        # ...unless verified, which fails on a difference.
        with self.assertRaisesRegex(RuntimeError, "configuration 1: the retrained curve differs"):
            self.run_task(configs, tampered, verify=[1])

    def test_read_reused_checks_the_earlier_build(self):
        configs = mlc.configurations(2)
        _, evaluations, curves = self.run_task(configs)
        names = [p["name"] for p in mlc.PARAMS]
        header = "task,model," + ",".join(f"MLP.{n}" for n in names) + ",y,config"
        with tempfile.TemporaryDirectory() as folder:
            def write(name, lines):
                with open(os.path.join(folder, name), "w", encoding="ascii") as f:
                    f.write("\n".join(lines) + "\n")

            write("evaluations.csv", [header] + evaluations)
            write("curves.csv", ["task,config,epoch,value,loss"] + curves)
            # A larger catalogue reuses both; a smaller one only its prefix.
            reused = mlc.read_reused(folder, mlc.configurations(4))
            self.assertEqual(sorted(reused["toy_task"]), [0, 1])
            self.assertEqual(reused["toy_task"][1],
                             (evaluations[1], curves[mlc.EPOCHS:2 * mlc.EPOCHS]))
            self.assertEqual(sorted(mlc.read_reused(folder, configs[:1])["toy_task"]), [0])
            # Other hyperparameters at an index: another protocol.
            other = [dict(c) for c in configs]
            other[1]["alpha"] = 0.5
            with self.assertRaisesRegex(ValueError, "toy_task configuration 1"):
                mlc.read_reused(folder, other)
            # A curve of another length.
            mlc.EPOCHS = 4
            with self.assertRaisesRegex(ValueError, "not 1..4"):
                mlc.read_reused(folder, configs)


if __name__ == "__main__":
    unittest.main()
