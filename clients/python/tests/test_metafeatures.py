"""Tests of metaopt.metafeatures: hand-computed cases, input validation, and agreement with the
meta-features the bundled meta-datasets record for the scikit-learn datasets they contain.

The meta-datasets are read from ``$METAOPT_DATA`` (or ``$METAOPT_SHARED_DATA``), else from the
meta-datasets folder beside the checkout; the tests that need them skip when they are absent.
"""

from __future__ import annotations

import csv
import importlib.util
import math
import os
import unittest
from pathlib import Path
from typing import Dict, Optional

import numpy as np
import sklearn.datasets

from metaopt import metafeatures

# The simple features are counts and closed forms: equal up to rounding.
SIMPLE_TOLERANCE = 1e-9
# Landmarkers are cross-validated accuracies; the recorded ones came from OpenML's copies of the
# data (row order and values may differ slightly) and another scikit-learn version.
LANDMARK_TOLERANCE = 0.01
# The distribution features are closed forms too, but oboe's file records them in single
# precision.
DISTRIBUTION_TOLERANCE = 1e-5

# scikit-learn loader -> (sklearn-pipelines task, OpenML dataset id in oboe or None).
SKLEARN_DATASETS = {
    "iris": ("sklearn_iris", "61"),
    "wine": ("sklearn_wine", "187"),
    "breast_cancer": ("sklearn_breast_cancer", "1510"),
    "digits": ("sklearn_digits", None),
}


def shared_data_dir() -> Path:
    for variable in ("METAOPT_DATA", "METAOPT_SHARED_DATA"):
        if os.environ.get(variable):
            return Path(os.environ[variable])
    return Path(__file__).resolve().parents[3] / ".." / "shared" / "data"


def read_metafeatures(folder: str) -> Optional[Dict[str, Dict[str, float]]]:
    """metafeatures.csv of a meta-dataset folder, task -> name -> value (None if absent)."""
    path = shared_data_dir() / folder / "metafeatures.csv"
    if not path.is_file():
        return None
    with open(path, newline="") as file:
        return {row.pop("task"): {name: float(value) for name, value in row.items() if value}
                for row in csv.DictReader(file)}


def openml_iris():
    """Iris as OpenML (dataset 61) and the UCI file have it: scikit-learn's copy corrects two
    rows (35 and 38) after Fisher's paper."""
    X, y = sklearn.datasets.load_iris(return_X_y=True)
    X = X.copy()
    X[34] = X[37] = [4.9, 3.1, 1.5, 0.1]
    return X, y


def hand_made():
    """5 rows: a numeric column and two categorical ones, three missing values."""
    X = np.array([[1.0, "a", "x"],
                  [math.nan, "b", "x"],
                  [3.0, None, "x"],
                  [4.0, "a", "y"],
                  [5.0, "c", math.nan]], dtype=object)
    y = ["p", "p", "q", "q", "q"]
    return X, y


class KnownCasesTest(unittest.TestCase):

    def test_hand_made_dataset_with_missing_values_and_categoricals(self) -> None:
        X, y = hand_made()
        p, q = 2 / 5, 3 / 5
        expected = {
            "ClassEntropy": -(p * math.log2(p) + q * math.log2(q)),  # 0.97095...
            "ClassProbabilityMax": 0.6, "ClassProbabilityMean": 0.5,
            "ClassProbabilityMin": 0.4, "ClassProbabilitySTD": 0.1,
            "DatasetRatio": 3 / 5, "InverseDatasetRatio": 5 / 3,
            "LogDatasetRatio": math.log(3 / 5), "LogInverseDatasetRatio": math.log(5 / 3),
            "LogNumberOfFeatures": math.log(3), "LogNumberOfInstances": math.log(5),
            "NumberOfCategoricalFeatures": 2, "NumberOfClasses": 2, "NumberOfFeatures": 3,
            # 1 numeric + (a, b, c, missing) + (x, y, missing).
            "NumberOfFeaturesOneHotEncoded": 8,
            "NumberOfFeaturesWithMissingValues": 3, "NumberOfInstances": 5,
            "NumberOfInstancesWithMissingValues": 3, "NumberOfMissingValues": 3,
            "NumberOfNumericFeatures": 1,
            "PercentageOfFeaturesWithMissingValues": 1.0,
            "PercentageOfInstancesWithMissingValues": 3 / 5,
            "PercentageOfMissingValues": 3 / 15,
            "RatioNominalToNumerical": 2.0, "RatioNumericalToNominal": 0.5,
            # Distinct values (a, b, c) and (x, y), missing ones not counted.
            "SymbolsMax": 3, "SymbolsMean": 2.5, "SymbolsMin": 2, "SymbolsSTD": 0.5,
            "SymbolsSum": 5,
        }
        for categorical in (None, [1, 2], [False, True, True], np.array([False, True, True])):
            with self.subTest(categorical=categorical):
                # Five rows allow no ten folds: no landmarkers.
                features = metafeatures.compute(X, y, categorical)
                self.assertEqual(sorted(features),
                                 sorted([*expected, *metafeatures.DISTRIBUTION_FEATURES]))
                for name, value in expected.items():
                    self.assertAlmostEqual(features[name], value, places=12, msg=name)
                    self.assertIsInstance(features[name], float)

    def test_symbols_skip_columns_without_a_value_but_count_in_the_sum_and_maximum(self) -> None:
        X = np.array([[None, "a", 1.0], [None, "b", 2.0], [None, "c", 3.0], [None, "d", 4.0]],
                     dtype=object)
        features = metafeatures.compute(X, [0, 1, 0, 1], categorical=[0, 1])
        self.assertEqual([features[f"Symbols{s}"] for s in ("Max", "Mean", "Min", "STD", "Sum")],
                         [4.0, 4.0, 4.0, 0.0, 4.0])
        numeric = metafeatures.compute(np.arange(8.0).reshape(4, 2), [0, 1, 0, 1])
        self.assertEqual([numeric[f"Symbols{s}"] for s in ("Max", "Mean", "Min", "STD", "Sum")],
                         [0.0] * 5)

    def test_skewness_and_kurtosis_of_a_binary_and_a_constant_column(self) -> None:
        # Column 0 is Bernoulli(1/4): skewness (1 - 2p) / sqrt(p q) = 2 / sqrt(3), excess
        # kurtosis (1 - 6 p q) / (p q) = -2/3. Column 1 is constant: skewness 0, kurtosis -3.
        X = np.array([[0.0, 5.0], [0.0, 5.0], [0.0, 5.0], [1.0, 5.0]])
        features = metafeatures.compute(X, [0, 1, 0, 1])
        skew = 2 / math.sqrt(3)
        expected = {
            "SkewnessMax": skew, "SkewnessMin": 0.0, "SkewnessMean": skew / 2,
            "SkewnessSTD": skew / 2,
            "KurtosisMax": -2 / 3, "KurtosisMin": -3.0, "KurtosisMean": -11 / 6,
            "KurtosisSTD": 7 / 6,
            # One column varies: one component of two explains all the variance. It is
            # column 0, oriented so that the farthest row (the 1) is positive.
            "PCAFractionOfComponentsFor95PercentVariance": 0.5,
            "PCASkewnessFirstPC": skew, "PCAKurtosisFirstPC": -2 / 3,
        }
        for name, value in expected.items():
            self.assertAlmostEqual(features[name], value, places=12, msg=name)
        # The sign convention orients the component, whatever the rows' order or the column's
        # direction.
        for variant in (X[::-1], 1.0 - X, (1.0 - X)[::-1]):
            self.assertAlmostEqual(
                metafeatures.compute(variant, [0, 1, 0, 1])["PCASkewnessFirstPC"], skew,
                places=12)

    def test_pca_counts_the_components_for_95_percent_of_the_variance(self) -> None:
        # Standardized, columns 0 and 1 are the same z = (-1, -1, 1, 1) and column 2 is
        # w = (-1, 1, -1, 1), uncorrelated with z: the components z + z and w explain 2/3 and
        # 1/3 of the variance, so both are needed (2 of the 3 columns). The first projects
        # the rows to +-1: skewness 0, kurtosis 1 - 3.
        X = np.array([[1.0, 10.0, 1.0], [1.0, 10.0, 3.0], [3.0, 30.0, 1.0], [3.0, 30.0, 3.0]])
        features = metafeatures.compute(X, [0, 1, 0, 1])
        self.assertAlmostEqual(features["PCAFractionOfComponentsFor95PercentVariance"], 2 / 3,
                               places=12)
        self.assertAlmostEqual(features["PCASkewnessFirstPC"], 0.0, places=12)
        self.assertAlmostEqual(features["PCAKurtosisFirstPC"], -2.0, places=12)
        # Without column 2, one component of the two suffices.
        self.assertEqual(metafeatures.compute(X[:, :2], [0, 1, 0, 1])[
            "PCAFractionOfComponentsFor95PercentVariance"], 0.5)

    def test_constant_data_has_no_principal_components(self) -> None:
        features = metafeatures.compute(np.ones((4, 3)), [0, 1, 0, 1])
        self.assertFalse({name for name in features if name.startswith("PCA")})
        self.assertEqual((features["KurtosisMax"], features["SkewnessMax"]), (-3.0, 0.0))

    def test_numeric_codes_marked_categorical(self) -> None:
        X = np.array([[1.0, 0.5], [2.0, 0.7], [1.0, math.nan], [3.0, 0.1]])
        features = metafeatures.compute(X, [0, 1, 0, 1], categorical=[0])
        self.assertEqual(features["NumberOfCategoricalFeatures"], 1.0)
        self.assertEqual(features["NumberOfFeaturesOneHotEncoded"], 4.0)  # 1, 2, 3 + numeric
        self.assertEqual(features["NumberOfMissingValues"], 1.0)
        self.assertEqual(features["ClassEntropy"], 1.0)

    def test_nested_lists_keep_numeric_columns_numeric(self) -> None:
        features = metafeatures.compute([[1, "a"], [2.5, None], [None, "b"]], ["u", "v", "u"])
        self.assertEqual(features["NumberOfNumericFeatures"], 1.0)
        # 1 numeric + (a, b, missing).
        self.assertEqual(features["NumberOfFeaturesOneHotEncoded"], 4.0)
        self.assertEqual(features["NumberOfMissingValues"], 2.0)

    def test_separable_classes_give_perfect_landmarkers(self) -> None:
        X = np.concatenate([np.arange(10.0), 100 + np.arange(10.0)])[:, None]
        y = np.repeat(["low", "high"], 10)
        features = metafeatures.compute(X, y)
        for name in metafeatures.LANDMARKERS:
            self.assertEqual(features[name], 1.0, name)
        self.assertFalse(set(metafeatures.LANDMARKERS)
                         & set(metafeatures.compute(X, y, landmarkers=False)))

    def test_one_class_has_zero_entropy_and_no_landmarkers(self) -> None:
        features = metafeatures.compute(np.ones((12, 2)), ["a"] * 12)
        self.assertEqual(features["ClassEntropy"], 0.0)
        self.assertEqual(features["ClassProbabilitySTD"], 0.0)
        self.assertFalse(set(metafeatures.LANDMARKERS) & set(features))

    @unittest.skipUnless(__import__("importlib").util.find_spec("pandas"), "pandas not installed")
    def test_dataframe_infers_categorical_columns_from_dtypes(self) -> None:
        import pandas
        X, y = hand_made()
        frame = pandas.DataFrame({"n": X[:, 0].astype(float), "c1": X[:, 1], "c2": X[:, 2]})
        frame["c2"] = frame["c2"].astype("category")
        expected = metafeatures.compute(X, y)
        self.assertEqual(metafeatures.compute(frame, pandas.Series(y)), expected)
        # pandas' own missing value in a string column.
        frame["c1"] = frame["c1"].astype("string")
        self.assertIs(frame["c1"][2], pandas.NA)
        self.assertEqual(metafeatures.compute(frame, y), expected)


class ValidationTest(unittest.TestCase):

    def assert_rejects(self, message: str, X, y, categorical=None) -> None:
        with self.assertRaises(ValueError) as raised:
            metafeatures.compute(X, y, categorical)
        self.assertIn(message, str(raised.exception))

    def test_rejects_malformed_arguments(self) -> None:
        X, y = hand_made()
        self.assert_rejects("X: an array of shape (3,)", [1.0, 2.0, 3.0], [0, 1, 0])
        self.assert_rejects("X: an array of shape (0, 2)", np.zeros((0, 2)), [])
        self.assert_rejects("y: 4 labels for 5 rows of X", X, y[:4])
        self.assert_rejects("y: an array of shape (5, 2)", X, np.zeros((5, 2)))
        self.assert_rejects("y, row 1: None is a missing label", X, ["p", None, "q", "q", "q"])
        self.assert_rejects("y, row 0: nan is a missing label", X, [math.nan, 1, 1, 0, 0])
        self.assert_rejects("categorical: column index 3 is out of range for 3 columns", X, y,
                            [3])
        self.assert_rejects("categorical: column index 1 is given twice", X, y, [1, 1])
        self.assert_rejects("categorical: a boolean mask of 2 entries for 3 columns", X, y,
                            [True, False])
        self.assert_rejects("categorical: 'a' is not a column index", X, y, ["a"])
        self.assert_rejects("categorical: 'c1' is not a boolean mask", X, y, "c1")
        self.assert_rejects("categorical: 1 is not a boolean mask", X, y, 1)
        self.assert_rejects("X column 1, row 0: 'a' is not a number", X, y, [2])
        self.assert_rejects("X column 0, row 1: inf is not finite",
                            np.array([[1.0], [math.inf]]), [0, 1])


class SharedMetaDatasetsTest(unittest.TestCase):
    """compute() on scikit-learn's copies of the datasets that the meta-datasets record."""

    @classmethod
    def setUpClass(cls) -> None:
        cls.pipelines = read_metafeatures("sklearn-pipelines")
        cls.oboe = read_metafeatures("oboe")
        if cls.pipelines is None or cls.oboe is None:
            raise unittest.SkipTest(
                f"the meta-datasets are absent from {shared_data_dir()} (set METAOPT_DATA to the "
                "shared/data folder)")
        cls.computed = {name: metafeatures.compute(
            *getattr(sklearn.datasets, f"load_{name}")(return_X_y=True))
            for name in SKLEARN_DATASETS}
        cls.computed["openml_iris"] = metafeatures.compute(*openml_iris())

    def test_simple_features_equal_sklearn_pipelines_rows(self) -> None:
        for dataset, (task, _) in SKLEARN_DATASETS.items():
            recorded = self.pipelines[task]
            self.assertEqual(set(recorded) - set(self.computed[dataset]), set(), task)
            for name, value in recorded.items():
                with self.subTest(task=task, feature=name):
                    self.assertLessEqual(abs(self.computed[dataset][name] - value),
                                         SIMPLE_TOLERANCE * max(1.0, abs(value)))

    def test_landmarkers_and_simple_features_equal_oboe_rows(self) -> None:
        for dataset, (_, openml_id) in SKLEARN_DATASETS.items():
            if openml_id is None:
                continue
            recorded = self.oboe[openml_id]
            for name in metafeatures.LANDMARKERS + metafeatures.SIMPLE_FEATURES:
                if name not in recorded:  # oboe has no NumberOfFeaturesOneHotEncoded
                    continue
                tolerance = (LANDMARK_TOLERANCE if name in metafeatures.LANDMARKERS
                             else SIMPLE_TOLERANCE * max(1.0, abs(recorded[name])))
                with self.subTest(openml_id=openml_id, feature=name):
                    self.assertLessEqual(abs(self.computed[dataset][name] - recorded[name]),
                                         tolerance)

    def test_distribution_features_equal_oboe_rows(self) -> None:
        # Iris as OpenML has it: scikit-learn's corrected rows move the kurtoses by up to 0.06.
        for dataset, openml_id in (("openml_iris", "61"), ("wine", "187"),
                                   ("breast_cancer", "1510")):
            recorded = self.oboe[openml_id]
            self.assertEqual(set(recorded) - set(self.computed[dataset]), set(), openml_id)
            for name in metafeatures.DISTRIBUTION_FEATURES:
                computed = self.computed[dataset][name]
                if name == "PCASkewnessFirstPC":
                    # A component's sign is arbitrary, and the recorded ones follow no rule
                    # (breast cancer's is the opposite of scikit-learn's convention).
                    computed, recorded_value = abs(computed), abs(recorded[name])
                else:
                    recorded_value = recorded[name]
                with self.subTest(openml_id=openml_id, feature=name):
                    self.assertLessEqual(abs(computed - recorded_value),
                                         DISTRIBUTION_TOLERANCE * max(1.0, abs(recorded_value)))


class CoverageTableTest(unittest.TestCase):
    """docs/metafeatures.md's table of the features each bundled model reads is the one that
    scripts/metafeature_coverage.py computes from the artifacts."""

    def test_docs_table_matches_the_bundled_models(self) -> None:
        root = Path(__file__).resolve().parents[3]
        script = root / "scripts" / "metafeature_coverage.py"
        spec = importlib.util.spec_from_file_location("metafeature_coverage", script)
        coverage = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(coverage)
        table = coverage.coverage_table(root / "models")
        self.assertIn("| `oboe-pmf@2` | PMF nearest training tasks (46); task-aware design (40) "
                      "| 46 | 46 | none |", table)
        self.assertIn(table, (root / "docs" / "metafeatures.md").read_text(),
                      "docs/metafeatures.md's coverage table is stale; regenerate it with "
                      "scripts/metafeature_coverage.py")


if __name__ == "__main__":
    unittest.main()
