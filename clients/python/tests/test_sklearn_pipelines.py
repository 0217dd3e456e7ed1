"""metaopt.sklearn's pipelines against the sklearn-pipelines meta-dataset that they rebuild.

Fidelity: for the scikit-learn datasets in the meta-dataset (iris, wine, breast cancer, digits)
and a sample of its recorded configurations (per dataset, for each estimator and reducer, the
first configuration whose recorded fit took under 0.5 s of CPU: 24 per dataset), the rebuilt
pipeline on the README's split reproduces the recorded balanced accuracy:

- within 1e-6 (evaluations.csv keeps six significant digits) for every configuration whose
  pipeline is deterministic;
- within 0.02 for PCA with scikit-learn's randomized SVD (more than 500 rows, fewer components
  than 80 % of the columns: only digits here), whose random state the meta-dataset did not fix.
  The rebuilt PCA uses random_state 0; over the 24 sampled digits configurations the PCA ones
  differ by at most 0.013.

The split is the README's stratified 70/30 holdout with seed 0 on the class *names* (the
meta-dataset's labels were the loaders' target names; for breast cancer, "benign" < "malignant"
reverses the order of the numeric classes, and with it the split).

The meta-datasets are read from ``$METAOPT_DATA`` (or ``$METAOPT_SHARED_DATA``), else from the
meta-datasets folder beside the checkout; the tests that need them skip when they are absent.
"""

from __future__ import annotations

import csv
import json
import math
import signal
import threading
import time
import unittest
import warnings
from typing import Dict, List

import numpy as np
import sklearn.datasets

import metaopt
from metaopt import metafeatures
from metaopt import sklearn as mosk
from metaopt.sklearn import evaluation as mosk_evaluation
from test_metafeatures import shared_data_dir

EXACT_TOLERANCE = 1e-6
RANDOMIZED_PCA_TOLERANCE = 0.02
SAMPLE_FIT_SECONDS = 0.5

TASKS = {"iris": "sklearn_iris", "wine": "sklearn_wine",
         "breast_cancer": "sklearn_breast_cancer", "digits": "sklearn_digits"}


def folder():
    return shared_data_dir() / "sklearn-pipelines"


def sampled_rows() -> Dict[str, List[Dict[str, str]]]:
    """Per task, the first row of each (estimator, reducer) whose fit took < 0.5 CPU s."""
    picks: Dict[str, Dict[tuple, Dict[str, str]]] = {task: {} for task in TASKS.values()}
    with open(folder() / "evaluations.csv", newline="") as file:
        for row in csv.DictReader(file):
            chosen = picks.get(row["task"])
            key = (row["estimator"], row["reducer"])
            if (chosen is not None and key not in chosen
                    and float(row["fit_seconds"]) < SAMPLE_FIT_SECONDS):
                chosen[key] = row
    return {task: list(rows.values()) for task, rows in picks.items()}


def load(name: str):
    """A scikit-learn dataset with its class names as labels, as the meta-dataset used it."""
    bunch = getattr(sklearn.datasets, f"load_{name}")()
    return bunch.data, np.asarray(bunch.target_names)[bunch.target].astype(str)


def randomized_pca(config, info) -> bool:
    """Whether the configuration's PCA runs scikit-learn's randomized SVD (solver 'auto') on
    the data ``info`` describes."""
    algorithm, params = config["reducer"]
    if algorithm != "pca":
        return False
    n_components = mosk.build_pipeline(config, info).named_steps["reducer"].n_components
    shape = (info.n_rows, info.n_encoded)
    return max(shape) > 500 and n_components < 0.8 * min(shape)


class FidelityTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls) -> None:
        if not (folder() / "evaluations.csv").is_file():
            raise unittest.SkipTest(f"the sklearn-pipelines meta-dataset is absent from "
                                    f"{folder()} (set METAOPT_DATA to its parent folder)")
        cls.rows = sampled_rows()

    def test_space_is_the_meta_datasets(self) -> None:
        recorded = json.loads((folder() / "space.json").read_text())
        stages = {}
        for stage in recorded["stages"]:
            stages[stage["name"]] = {}
            for algorithm in stage["algorithms"]:
                params = {}
                for p in algorithm["params"]:
                    if p["type"] == "categorical":
                        params[p["name"]] = metaopt.Categorical(tuple(p["values"]))
                    else:
                        kind = metaopt.Float if p["type"] == "float" else metaopt.Int
                        params[p["name"]] = kind(p["low"], p["high"], p["log"])
                stages[stage["name"]][algorithm["name"]] = params
        self.assertEqual(mosk.SPACE, stages)
        self.assertEqual([list(s) for s in mosk.SPACE.values()],
                         [list(s) for s in stages.values()])  # the order binds the model
        self.assertEqual(recorded["objective"], {"name": mosk.OBJECTIVE, "goal": "maximize"})

    def check_task(self, name: str) -> None:
        X, y = load(name)
        rows = self.rows[TASKS[name]]
        self.assertEqual(len(rows), 24)
        data = mosk_evaluation._prepare(X, y, None, None)
        ((train, _),) = data.splits
        info = mosk.columns_info(X[train])
        worst_exact, worst_randomized, randomized = 0.0, 0.0, 0
        for row in rows:
            config = mosk.parse_configuration(row)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                value, _ = mosk_evaluation._fit_and_score(config, data, None)
            difference = abs(value - float(row["y"]))
            where = f"{name} config {row['config']} ({mosk.describe(config)})"
            if randomized_pca(config, info):
                randomized += 1
                worst_randomized = max(worst_randomized, difference)
                self.assertLessEqual(difference, RANDOMIZED_PCA_TOLERANCE, where)
            else:
                worst_exact = max(worst_exact, difference)
                self.assertLessEqual(difference, EXACT_TOLERANCE, where)
        print(f"{name}: {len(rows)} configurations, {randomized} with randomized PCA; largest "
              f"difference {worst_exact:.2g} (deterministic), {worst_randomized:.2g} "
              "(randomized PCA)")

    def test_iris(self) -> None:
        self.check_task("iris")

    def test_wine(self) -> None:
        self.check_task("wine")

    def test_breast_cancer(self) -> None:
        self.check_task("breast_cancer")

    def test_digits(self) -> None:
        self.check_task("digits")

    def test_evaluate_in_a_worker_process_agrees(self) -> None:
        X, y = load("wine")
        row = next(r for r in self.rows["sklearn_wine"] if r["estimator"] == "svm_rbf")
        evaluation = mosk.evaluate(row, X, y)
        self.assertEqual(evaluation.failure, "")
        self.assertAlmostEqual(evaluation.value, float(row["y"]), delta=EXACT_TOLERANCE)
        self.assertGreater(evaluation.fit_seconds, 0.0)


class PipelineTest(unittest.TestCase):
    """The preprocessing of mixed data, fraction rules and input validation (no data needed)."""

    CONFIG = {"imputer": metaopt.Choice("median", {}),
              "scaler": metaopt.Choice("standard", {}),
              "reducer": metaopt.Choice("select_kbest", {"k_frac": 0.5}),
              "estimator": metaopt.Choice("knn", {"n_neighbors": 50, "weights": "distance"})}

    def mixed(self):
        X = np.array([[1.0, "a", "x"], [math.nan, "b", "x"], [3.0, None, "y"],
                      [4.0, "a", "y"], [5.0, "c", math.nan], [6.0, "b", "x"]], dtype=object)
        return X, np.array([0, 1, 0, 1, 0, 1])

    def test_mixed_columns_are_imputed_and_one_hot_encoded(self) -> None:
        X, y = self.mixed()
        info = mosk.columns_info(X)
        self.assertEqual((info.numeric, info.categorical, info.n_rows), ((0,), (1, 2), 6))
        # 1 numeric + (a, b, c, missing) + (x, y, missing)
        self.assertEqual(info.n_encoded, 8)
        self.assertEqual(info.n_encoded, metafeatures.compute(X, y, landmarkers=False)[
            "NumberOfFeaturesOneHotEncoded"])
        pipeline = mosk.build_pipeline(self.CONFIG, info).fit(X, y)
        self.assertEqual(pipeline.named_steps["preprocess"].transform(X).shape, (6, 8))
        self.assertEqual(pipeline.named_steps["reducer"].k, 4)  # round(0.5 * 8)
        self.assertEqual(pipeline.named_steps["estimator"].n_neighbors, 6)  # clipped to rows
        # Unseen categories are ignored at prediction time.
        pipeline.predict(np.array([[2.0, "zzz", "x"]], dtype=object))

    def test_pca_fraction_of_rows_or_columns(self) -> None:
        config = dict(self.CONFIG, reducer=metaopt.Choice("pca", {"n_components_frac": 0.5}))
        wide = mosk.ColumnsInfo(numeric=tuple(range(30)), categorical=(), n_rows=10,
                                n_encoded=30)
        self.assertEqual(mosk.build_pipeline(config, wide).named_steps["reducer"].n_components, 5)
        config["reducer"] = metaopt.Choice("pca", {"n_components_frac": 0.1})
        narrow = mosk.ColumnsInfo(numeric=(0, 1, 2), categorical=(), n_rows=100, n_encoded=3)
        self.assertEqual(mosk.build_pipeline(config, narrow).named_steps["reducer"].n_components,
                         1)  # at least one

    def test_every_estimator_fits(self) -> None:
        X, y = self.mixed()
        rng = np.random.default_rng(0)
        for algorithm, domains in mosk.SPACE["estimator"].items():
            params = {}
            for param, domain in domains.items():
                if isinstance(domain, metaopt.Categorical):
                    params[param] = domain.values[0]
                elif isinstance(domain, metaopt.Int):
                    params[param] = int(rng.integers(domain.low, domain.high + 1))
                else:
                    params[param] = float(rng.uniform(domain.low, domain.high))
            config = dict(self.CONFIG, estimator=metaopt.Choice(algorithm, params))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                pipeline = mosk.build_pipeline(config, X).fit(X, y)
            self.assertEqual(pipeline.predict(X).shape, (6,), algorithm)

    def test_flat_rows_and_trials_give_the_same_configuration(self) -> None:
        row = {"task": "t", "imputer": "median", "scaler": "standard",
               "reducer": "select_kbest", "estimator": "knn", "select_kbest.k_frac": "0.5",
               "pca.n_components_frac": "", "knn.n_neighbors": "50", "knn.weights": "distance",
               "svm_rbf.C": "", "y": "0.9"}
        self.assertEqual(mosk.parse_configuration(row), self.CONFIG)
        self.assertEqual(mosk.describe(self.CONFIG),
                         "median/standard/select_kbest(k_frac=0.5)/knn(n_neighbors=50, "
                         "weights=distance)")

    def test_invalid_configurations_name_the_field_value_and_rule(self) -> None:
        cases = [
            ({k: v for k, v in self.CONFIG.items() if k != "scaler"},
             "stage 'scaler' is missing"),
            (dict(self.CONFIG, scaler=metaopt.Choice("quantile", {})),
             "configuration['scaler']: algorithm 'quantile' is not one of"),
            (dict(self.CONFIG, estimator=metaopt.Choice("knn", {"n_neighbors": 5})),
             "knn.weights: missing"),
            (dict(self.CONFIG, estimator=metaopt.Choice("knn", {"n_neighbors": 5.5,
                                                                "weights": "uniform"})),
             "knn.n_neighbors: 5.5 is not an integer"),
            (dict(self.CONFIG, estimator=metaopt.Choice("knn", {"n_neighbors": 51,
                                                                "weights": "uniform"})),
             "knn.n_neighbors: 51 is outside [1, 50]"),
            (dict(self.CONFIG, estimator=metaopt.Choice("knn", {"n_neighbors": 5,
                                                                "weights": "far"})),
             "knn.weights: 'far' is not one of ['uniform', 'distance']"),
            (dict(self.CONFIG, estimator=metaopt.Choice("gnb", {"var_smoothing": 1e-9})),
             "gnb has no parameter 'var_smoothing'"),
            (dict(self.CONFIG, extra=metaopt.Choice("x", {})), "unknown stage(s) ['extra']"),
            ([1, 2], "configuration: list is not a Trial or a mapping"),
        ]
        for config, message in cases:
            with self.subTest(message=message):
                with self.assertRaises(ValueError) as raised:
                    mosk.build_pipeline(config, mosk.ColumnsInfo((0,), (), 5, 1))
                self.assertIn(message, str(raised.exception))

    def test_invalid_data_is_named(self) -> None:
        X, y = self.mixed()
        with self.assertRaisesRegex(ValueError, "categorical: column index 7 is out of range"):
            mosk.columns_info(X, categorical=[7])
        with self.assertRaisesRegex(ValueError, r"y: 5 labels for 6 rows of X"):
            mosk.evaluate(self.CONFIG, X, y[:5])
        with self.assertRaisesRegex(ValueError, r"y: class 2 has 1 row\(s\)"):
            mosk.evaluate(self.CONFIG, X, np.array([0, 1, 0, 1, 0, 2]))
        with self.assertRaisesRegex(ValueError, "cv=4 needs at least 4 rows per class"):
            mosk.evaluate(self.CONFIG, X, y, cv=4)
        with self.assertRaisesRegex(ValueError, r"cv: 1 must be None"):
            mosk.evaluate(self.CONFIG, X, y, cv=1)
        with self.assertRaisesRegex(ValueError, r"fit_time_limit: -1 must be None"):
            mosk.evaluate(self.CONFIG, X, y, fit_time_limit=-1)


class TimeLimitTest(unittest.TestCase):
    # An MLP that takes many CPU seconds on digits.
    SLOW = {"imputer": metaopt.Choice("mean", {}), "scaler": metaopt.Choice("none", {}),
            "reducer": metaopt.Choice("none", {}),
            "estimator": metaopt.Choice("mlp", {"hidden_size": 128, "alpha": 1e-5,
                                                "learning_rate_init": 1e-4})}

    def test_a_fit_over_the_cpu_limit_fails_and_others_do_not(self) -> None:
        X, y = sklearn.datasets.load_digits(return_X_y=True)
        slow = self.SLOW
        evaluation = mosk.evaluate(slow, X, y, fit_time_limit=1)
        self.assertIsNone(evaluation.value)
        self.assertIn("CPU-time limit of 1 s", evaluation.failure)
        self.assertLess(evaluation.fit_seconds, 10)
        fast = dict(slow, estimator=metaopt.Choice("gnb", {}))
        evaluation = mosk.evaluate(fast, X, y, fit_time_limit=5)
        self.assertEqual(evaluation.failure, "")
        self.assertGreater(evaluation.value, 0.7)

    def test_a_process_killed_from_outside_is_lost_not_failed(self) -> None:
        X, y = sklearn.datasets.load_digits(return_X_y=True)
        slow = self.SLOW
        with mosk.Evaluator(X, y, fit_time_limit=60) as evaluator:
            def kill_once_running() -> None:
                time.sleep(1.0)
                evaluator._process.send_signal(signal.SIGTERM)
            killer = threading.Thread(target=kill_once_running)
            killer.start()
            evaluation = evaluator.evaluate(slow)
            killer.join()
            self.assertIsNone(evaluation.value)
            self.assertTrue(evaluation.lost)
            self.assertIn("SIGTERM", evaluation.failure)
            # The next evaluation starts a new process.
            again = evaluator.evaluate(dict(slow, estimator=metaopt.Choice("gnb", {})))
            self.assertFalse(again.lost)
            self.assertGreater(again.value, 0.7)
        over = mosk.evaluate(slow, X, y, fit_time_limit=1)
        self.assertFalse(over.lost)  # the CPU-time limit is the configuration's failure

    def test_the_evaluation_after_one_over_the_limit_runs(self) -> None:
        # The worker exits after a fit over the limit; the next configuration goes to a new one
        # (it used to be sent to the exiting process and come back "exited without a result").
        X, y = sklearn.datasets.load_digits(return_X_y=True)
        fast = dict(self.SLOW, estimator=metaopt.Choice("gnb", {}))
        with mosk.Evaluator(X, y, fit_time_limit=1) as evaluator:
            for _ in range(2):
                over = evaluator.evaluate(self.SLOW)
                self.assertIn("CPU-time limit", over.failure)
                after = evaluator.evaluate(fast)
                self.assertEqual(after.failure, "")
                self.assertGreater(after.value, 0.7)


if __name__ == "__main__":
    unittest.main()
