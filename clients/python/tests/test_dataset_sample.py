"""Tests of metaopt.dataset_sample: the deterministic sampling rule on hand-made tables, input
validation, and (when R and the meta-dataset are present) the export of every sklearn-pipelines
task's sample by data/prep/dataset_samples/export_samples.py.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import numpy as np
import sklearn.datasets

from metaopt import dataset_sample
from metaopt.v1 import study_pb2

ROOT = Path(__file__).resolve().parents[3]


def shared_data_dir() -> Path:
    for variable in ("METAOPT_DATA", "METAOPT_SHARED_DATA"):
        if os.environ.get(variable):
            return Path(os.environ[variable])
    return ROOT.parent / "shared" / "data"


def matrix(sample, field, columns):
    return np.array(getattr(sample, field)).reshape(-1, columns)


class DrawTest(unittest.TestCase):
    def test_small_table_is_standardised_and_one_hot(self):
        X = np.array([[1.0, 10.0], [2.0, np.nan], [3.0, 30.0], [4.0, 40.0]])
        y = ["b", "a", "b", "c"]
        sample = dataset_sample.draw(X, y)
        self.assertEqual(dataset_sample.shape(sample), (4, 2, 3))
        self.assertEqual(list(sample.column_kinds), [study_pb2.COLUMN_KIND_NUMERIC] * 2)
        values = matrix(sample, "values", 2)
        # Column 0: (v - 2.5) / std([1, 2, 3, 4]).
        np.testing.assert_allclose(values[:, 0], (np.arange(1, 5) - 2.5) / np.std([1, 2, 3, 4]))
        # Column 1: the missing value takes the mean of the others (80 / 3).
        filled = np.array([10.0, 80.0 / 3.0, 30.0, 40.0])
        np.testing.assert_allclose(values[:, 1], (filled - filled.mean()) / filled.std())
        # Classes by frequency ("b": 2), ties by text ("a" before "c").
        np.testing.assert_array_equal(matrix(sample, "targets", 3),
                                      [[1, 0, 0], [0, 1, 0], [1, 0, 0], [0, 0, 1]])

    def test_large_table_keeps_evenly_spaced_rows_and_columns(self):
        n, m = 1000, 40
        X = np.arange(n * m, dtype=float).reshape(n, m) % 97 + np.arange(m)
        y = np.arange(n) % 7
        sample = dataset_sample.draw(X, y)
        self.assertEqual(dataset_sample.shape(sample), (256, 16, 3))
        self.assertEqual(dataset_sample.evenly_spaced(1000, 256)[:4], [0, 3, 7, 11])
        self.assertEqual(dataset_sample.evenly_spaced(40, 16)[:4], [0, 2, 5, 7])
        columns = dataset_sample.evenly_spaced(m, 16)
        rows = dataset_sample.evenly_spaced(n, 256)
        full = X[:, columns]
        expected = ((full - full.mean(axis=0)) / full.std(axis=0))[rows]
        np.testing.assert_allclose(matrix(sample, "values", 16), expected)
        # 7 classes of 143/143/143/143/143/143/142 rows: the first three labels 0, 1, 2.
        targets = matrix(sample, "targets", 3)
        np.testing.assert_array_equal(targets.argmax(axis=1)[targets.sum(axis=1) == 1],
                                      y[rows][y[rows] < 3])
        self.assertEqual(int(targets.sum()), int((y[rows] < 3).sum()))
        # Deterministic.
        self.assertEqual(dataset_sample.draw(X, y), sample)

    def test_categorical_columns_become_standardised_codes(self):
        X = np.array([["red", 1.0], ["blue", 2.0], [None, 3.0], ["red", 4.0]], dtype=object)
        sample = dataset_sample.draw(X, [0, 1, 0, 1])
        self.assertEqual(list(sample.column_kinds),
                         [study_pb2.COLUMN_KIND_CATEGORICAL, study_pb2.COLUMN_KIND_NUMERIC])
        codes = np.array([2.0, 1.0, 0.0, 2.0])  # sorted: "<missing>", "blue", "red"
        np.testing.assert_allclose(matrix(sample, "values", 2)[:, 0],
                                   (codes - codes.mean()) / codes.std())
        constant = dataset_sample.draw(np.ones((3, 1)), [0, 1, 1])
        self.assertEqual(list(constant.values), [0.0, 0.0, 0.0])

    def test_iris(self):
        X, y = sklearn.datasets.load_iris(return_X_y=True)
        sample = dataset_sample.draw(X, y)
        self.assertEqual(dataset_sample.shape(sample), (150, 4, 3))
        self.assertTrue(np.all(np.abs(np.array(sample.values)) < 4))

    def test_rejects_malformed_input(self):
        with self.assertRaisesRegex(ValueError, "X: 1 rows; a dataset sample needs at least 2"):
            dataset_sample.draw([[1.0]], [0])
        with self.assertRaisesRegex(ValueError, "y: 2 labels for 3 rows"):
            dataset_sample.draw(np.ones((3, 2)), [0, 1])
        with self.assertRaisesRegex(ValueError, "is not a number"):
            dataset_sample.draw(np.array([["a", 1], ["b", 2]], dtype=object), [0, 1],
                                categorical=[1])


class ExportTest(unittest.TestCase):
    def test_every_sklearn_pipelines_task_is_exported(self):
        data = shared_data_dir() / "sklearn-pipelines"
        if not (data / "tasks.csv").exists():
            self.skipTest(f"the sklearn-pipelines meta-dataset is absent from {data}")
        if shutil.which("Rscript") is None:
            self.skipTest("Rscript is absent (Debian: r-base-core)")
        packages = "MASS TH.data kernlab mlbench modeldata".split()
        check = subprocess.run(
            ["Rscript", "-e", f"quit(status = !all(sapply(c({', '.join(map(repr, packages))}), "
                              "requireNamespace, quietly = TRUE)))"],
            capture_output=True)
        if check.returncode != 0:
            self.skipTest("an R data package is absent (Debian: r-cran-mass r-cran-th.data "
                          "r-cran-kernlab r-cran-mlbench r-cran-modeldata)")
        with tempfile.TemporaryDirectory() as out:
            result = subprocess.run(
                [sys.executable,
                 str(ROOT / "data" / "prep" / "dataset_samples" / "export_samples.py"),
                 "--data", str(data), "--out", out],
                capture_output=True, text=True, env=dict(os.environ), check=True)
            self.assertIn("29 written, 0 with other counts than tasks.csv, 0 skipped",
                          result.stdout)
            with open(os.path.join(out, "mlbench_Soybean.json")) as f:
                soybean = json.load(f)
            self.assertEqual(soybean["num_targets"], 3)
            self.assertEqual(len(soybean["column_kinds"]), 16)
            self.assertEqual(len(soybean["values"]), 256 * 16)

    def test_collected_tasks_are_read_by_the_collectors_loader(self):
        # A merged folder's collected task: its table in the collector's format, with a class of
        # 4 rows that the protocol drops and an empty column that the loader drops; a second
        # task whose tasks.csv row disagrees, and one without a table.
        rng = np.random.default_rng(0)
        with tempfile.TemporaryDirectory() as work:
            tables = os.path.join(work, "tables")
            os.makedirs(tables)
            with open(os.path.join(tables, "pkg_toy.csv"), "w") as f:
                f.write("x,colour,empty,class\n")
                for i in range(44):
                    label = "a" if i < 20 else "b" if i < 40 else "c"
                    colour = "" if i % 7 == 0 else ("red", "blue")[i % 2]
                    f.write(f"{rng.normal():.6f},{colour},,{label}\n")
            with open(os.path.join(tables, "pkg_toy.kinds"), "w") as f:
                f.write("numeric\ncategorical\nnumeric\n")
            shutil.copy(os.path.join(tables, "pkg_toy.csv"), os.path.join(tables, "pkg_off.csv"))
            shutil.copy(os.path.join(tables, "pkg_toy.kinds"),
                        os.path.join(tables, "pkg_off.kinds"))
            data = os.path.join(work, "data")
            os.makedirs(data)
            with open(os.path.join(data, "tasks.csv"), "w") as f:
                f.write("task,name,split,n_rows,n_features,n_classes,source\n"
                        "pkg_toy,toy,train,40,2,2,collected\n"
                        "pkg_off,off,train,44,3,3,collected\n"
                        "pkg_none,none,train,10,1,2,collected\n")
            out = os.path.join(work, "out")
            empty = os.path.join(work, "r-tables")
            os.makedirs(empty)
            result = subprocess.run(
                [sys.executable,
                 str(ROOT / "data" / "prep" / "dataset_samples" / "export_samples.py"),
                 "--data", data, "--out", out, "--tables", empty,
                 "--collected-tables", tables],
                capture_output=True, text=True, env=dict(os.environ), check=True)
            self.assertIn("2 written, 1 with other counts than tasks.csv, 1 skipped",
                          result.stdout)
            self.assertIn("pkg_off: 40 rows, 2 features, 2 classes", result.stdout)
            self.assertIn("MISMATCH", result.stdout)
            self.assertFalse(os.path.exists(os.path.join(out, "pkg_none.json")))
            with open(os.path.join(out, "pkg_toy.json")) as f:
                toy = json.load(f)
            # The loader's table: x and colour (the empty column dropped), the 40 rows of a and b.
            self.assertEqual(toy["num_targets"], 2)
            self.assertEqual(toy["column_kinds"],
                             ["COLUMN_KIND_NUMERIC", "COLUMN_KIND_CATEGORICAL"])
            self.assertEqual(len(toy["values"]), 40 * 2)


if __name__ == "__main__":
    unittest.main()
