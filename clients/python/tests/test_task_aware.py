"""A new user's first study: meta-features of a scikit-learn dataset choose its first trials.

Computes iris's meta-features with metaopt.metafeatures, creates a study over the
sklearn-pipelines space (read from the meta-datasets) on a server whose registry holds the bundled
sklearn-pipelines models, and checks that the study starts from the task-aware design for that
dataset. Skips when the meta-datasets are absent.
"""

from __future__ import annotations

import json
import shutil
import unittest
from pathlib import Path

import sklearn.datasets

import metaopt
from metaopt import metafeatures
from server_process import TempServer
from test_metafeatures import shared_data_dir

PROJECT = Path(__file__).resolve().parents[3]
# A bundled version that carries a task-aware design.
DESIGN_MODEL = "sklearn-pipelines-deeppipe@3"


def sklearn_pipelines_space(path: Path):
    """The space of a meta-dataset's space.json as a SearchSpace."""
    types = {"float": metaopt.Float, "int": metaopt.Int}
    stages = {}
    for stage in json.loads(path.read_text())["stages"]:
        stages[stage["name"]] = {
            algorithm["name"]: {
                p["name"]: (metaopt.Categorical(p["values"]) if p["type"] == "categorical"
                            else types[p["type"]](p["low"], p["high"], p.get("log", False)))
                for p in algorithm["params"]}
            for algorithm in stage["algorithms"]}
    return metaopt.search_space(stages)


class TaskAwareStudyTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls) -> None:
        cls.space_json = shared_data_dir() / "sklearn-pipelines" / "space.json"
        if not cls.space_json.exists():
            raise unittest.SkipTest(f"the meta-datasets are absent from {shared_data_dir()}")
        cls.server = TempServer()
        for name in ("sklearn-pipelines-deeppipe", "sklearn-pipelines-grosi-d2v"):
            shutil.copytree(PROJECT / "models" / name, Path(cls.server.models) / name)
        cls.server.start()

    @classmethod
    def tearDownClass(cls) -> None:
        if hasattr(cls, "server"):
            cls.server.__exit__(None, None, None)

    def test_dataset_features_choose_the_first_suggestions(self) -> None:
        space = sklearn_pipelines_space(self.space_json)
        X, y = sklearn.datasets.load_iris(return_X_y=True)
        with metaopt.Client(self.server.target) as client:
            # The version with a Metabu design (the newest has none: the fixed portfolio won
            # the cross-validation, docs/benchmarks.md).
            study = client.create_study("iris", space, objective="balanced_accuracy",
                                        goal="maximize", algorithm="deeppipe",
                                        model=DESIGN_MODEL, dataset=(X, y))
            self.assertEqual(study.bound_model, DESIGN_MODEL)
            metadata = dict(study.proto.metadata)
            self.assertIn(metadata["zero_shot_design"], {"metabu", "nearest"})
            self.assertEqual(metadata["imputed_features"], "none")
            neighbours = metadata["design_neighbours"].split(",")
            self.assertGreaterEqual(len(neighbours), 3)
            # iris is a training task of the meta-dataset: it is its own nearest one.
            self.assertEqual(neighbours[0], "sklearn_iris")
            trials = study.suggest(count=3)
            self.assertEqual(len(trials), 3)
            self.assertTrue(all(t.metadata["policy"].startswith("deeppipe/metabu")
                                or t.metadata["policy"].startswith("deeppipe/nearest")
                                for t in trials), [t.metadata for t in trials])

            # Without features the same space starts from the fixed portfolio.
            plain = client.create_study("plain", space, objective="balanced_accuracy",
                                        goal="maximize", algorithm="deeppipe",
                                        model=DESIGN_MODEL)
            self.assertEqual(dict(plain.proto.metadata)["zero_shot_design"], "portfolio")
            (first,) = plain.suggest()
            self.assertTrue(first.metadata["policy"].startswith("deeppipe/portfolio"))

            # Partial features: the missing ones are imputed and named.
            partial = {k: v for k, v in metafeatures.compute(X, y).items()
                       if not k.startswith("Class")}
            study = client.create_study("partial", space, objective="balanced_accuracy",
                                        goal="maximize", algorithm="deeppipe",
                                        model=DESIGN_MODEL, dataset_features=partial)
            imputed = dict(study.proto.metadata)["imputed_features"].split(",")
            self.assertIn("ClassEntropy", imputed)

    def test_dataset_sample_conditions_grosi_with_dataset2vec(self) -> None:
        space = sklearn_pipelines_space(self.space_json)
        X, y = sklearn.datasets.load_wine(return_X_y=True)
        with metaopt.Client(self.server.target) as client:
            study = client.create_study("wine-d2v", space, objective="balanced_accuracy",
                                        goal="maximize", algorithm="grosi",
                                        model="sklearn-pipelines-grosi-d2v", dataset=(X, y))
            self.assertEqual(study.bound_model, "sklearn-pipelines-grosi-d2v@1")
            metadata = dict(study.proto.metadata)
            self.assertEqual(metadata["task_conditioning"], "dataset2vec")
            self.assertEqual(metadata["dataset_sample"], "used")
            trials = study.suggest(count=3)
            self.assertEqual(len(trials), 3)
            self.assertTrue(all(t.metadata["policy"] == "grosi/zero-shot" for t in trials),
                            [t.metadata for t in trials])

            # Without a sample the model says what stands in for it.
            plain = client.create_study("no-sample", space, objective="balanced_accuracy",
                                        goal="maximize", algorithm="grosi",
                                        model="sklearn-pipelines-grosi-d2v")
            self.assertTrue(dict(plain.proto.metadata)["dataset_sample"].startswith("absent"))
            self.assertEqual(len(plain.suggest()), 1)


if __name__ == "__main__":
    unittest.main()
