"""Several objectives and constraints through the Python client against the real server
(127.0.0.1, port 0): accuracy (maximized) against fit seconds (minimized), subject to
memory_mb <= 300, with GP; the Pareto front paged, its summary, feasibility and the errors."""

from __future__ import annotations

import math
import unittest
from typing import Dict, List, Tuple

import metaopt
from metaopt.v1 import study_pb2
from server_process import ServerTestCase

OBJECTIVES = [("accuracy", "maximize"), ("fit_seconds", "minimize")]
CONSTRAINTS = [("memory_mb", "<=", 300.0)]


def space() -> study_pb2.SearchSpace:
    return metaopt.flat_space({"lr": metaopt.Float(1e-5, 1.0, log=True),
                               "depth": metaopt.Int(2, 10)})


def evaluate(params: Dict[str, float]) -> Dict[str, float]:
    """A trade-off: deeper trees and larger learning rates are more accurate and slower; memory
    grows with depth (depth > 7 violates the constraint)."""
    lr = math.log10(params["lr"]) + 5
    depth = params["depth"]
    return {"accuracy": 1 - 0.5 * math.exp(-0.3 * depth - 0.4 * lr),
            "fit_seconds": depth * depth * (1 + lr) / 10,
            "memory_mb": 40.0 * depth}


def non_dominated(points: List[Tuple[int, float, float]]) -> List[int]:
    """The ids of the (id, accuracy, seconds) points no other point dominates (accuracy
    maximized, seconds minimized), by increasing id."""
    front = []
    for i, a, s in points:
        dominated = any((a2 >= a and s2 <= s) and (a2 > a or s2 < s) for _, a2, s2 in points)
        if not dominated:
            front.append(i)
    return sorted(front)


class ObjectivesTest(ServerTestCase):

    def client(self) -> metaopt.Client:
        client = metaopt.Client(self.server.target, initial_backoff=0.01)
        self.addCleanup(client.close)
        return client

    def test_two_objectives_and_a_constraint_end_to_end(self):
        client = self.client()
        study = client.create_study("mo-gp", space(), objectives=OBJECTIVES,
                                    constraints=CONSTRAINTS, algorithm="gp", initial_trials=5,
                                    seed=3)
        self.assertEqual(study.objectives, OBJECTIVES)
        self.assertEqual(study.constraints, CONSTRAINTS)
        # The server's canonical form: the first objective is also `objective`.
        self.assertEqual(study.spec.objective.name, "accuracy")
        # Create-or-get compares equal to what was stored.
        again = client.create_study("mo-gp", space(), objectives=OBJECTIVES,
                                    constraints=CONSTRAINTS, algorithm="gp", initial_trials=5,
                                    seed=3)
        self.assertFalse(again.created)

        for i in range(14):
            (trial,) = study.suggest()
            outcome = evaluate(trial.params)
            if i % 2:
                done = study.observe(trial, outcome)  # all values as a mapping
            else:  # the first objective as value, the rest as metrics
                done = study.observe(trial, outcome["accuracy"],
                                     metrics={k: v for k, v in outcome.items()
                                              if k != "accuracy"})
            self.assertEqual(done.state, metaopt.TrialState.COMPLETED)
            self.assertEqual(done.value, outcome["accuracy"])
            self.assertEqual(done.metrics, outcome)
            self.assertEqual(done.values, [outcome["accuracy"], outcome["fit_seconds"]])
            self.assertEqual(done.feasible, outcome["memory_mb"] <= 300)
        trials = list(study.trials())
        self.assertIn("gp/ehvi", {t.metadata.get("policy") for t in trials})
        self.assertTrue(any(t.feasible is False for t in trials), "no infeasible trial kept")

        feasible = [(t.id, t.metrics["accuracy"], t.metrics["fit_seconds"])
                    for t in trials if t.feasible]
        front = study.pareto_front(page_size=2)  # pages of two
        self.assertEqual([t.id for t in front], non_dominated(feasible))
        for t in front:
            self.assertTrue(t.feasible)
            self.assertEqual(set(t.metrics), {"accuracy", "fit_seconds", "memory_mb"})
        summary = study.pareto_front_summary
        self.assertEqual(summary.size, len(front))
        self.assertEqual(len(summary.reference_point), 2)
        # The default reference point: the worst feasible values, a tenth of the range further.
        accuracies = [a for _, a, _ in feasible]
        seconds = [s for _, _, s in feasible]
        self.assertAlmostEqual(summary.reference_point[0],
                               min(accuracies) - 0.1 * (max(accuracies) - min(accuracies)))
        self.assertAlmostEqual(summary.reference_point[1],
                               max(seconds) + 0.1 * (max(seconds) - min(seconds)))
        # The 2-D hypervolume of the front against the reference point, computed here.
        ref_a, ref_s = summary.reference_point
        points = sorted(((t.metrics["fit_seconds"], t.metrics["accuracy"]) for t in front))
        volume, best_accuracy = 0.0, ref_a
        for i, (s, a) in enumerate(points):
            next_s = points[i + 1][0] if i + 1 < len(points) else ref_s
            best_accuracy = max(best_accuracy, a)
            volume += (next_s - s) * (best_accuracy - ref_a)
        self.assertAlmostEqual(summary.hypervolume, volume)
        # GetStudy reports the same summary; the best trial is the front's most accurate.
        best = study.best_trial()
        self.assertEqual(study.pareto_front_summary, summary)
        self.assertTrue(best.feasible)
        self.assertEqual(best.value, max(t.value for t in front))

    def test_a_missing_objective_or_constrained_metric_is_refused_naming_it(self):
        study = self.client().create_study("mo-missing", space(), objectives=OBJECTIVES,
                                           constraints=CONSTRAINTS, algorithm="random")
        (trial,) = study.suggest()
        with self.assertRaisesRegex(metaopt.InvalidArgumentError, 'metrics\\["fit_seconds"\\]'):
            study.observe(trial, {"accuracy": 0.9, "memory_mb": 10})
        with self.assertRaisesRegex(metaopt.InvalidArgumentError, 'metrics\\["memory_mb"\\]'):
            study.observe(trial, 0.9, metrics={"fit_seconds": 1.0})
        self.assertEqual(study.get_trial(trial.id).state, metaopt.TrialState.ACTIVE)
        violating = study.observe(trial, {"accuracy": 0.9, "fit_seconds": 1.0,
                                          "memory_mb": 301})
        self.assertIs(violating.feasible, False)
        self.assertEqual(study.pareto_front(), [])
        self.assertEqual(study.pareto_front_summary.size, 0)
        self.assertIsNone(study.best_trial())

    def test_specs_are_checked(self):
        with self.assertRaisesRegex(ValueError, "objectives, or objective and goal"):
            metaopt.study_spec(space(), objective="a", objectives=OBJECTIVES)
        with self.assertRaisesRegex(ValueError, r"constraints\[0\]: sense '<'"):
            metaopt.study_spec(space(), constraints=[("m", "<", 1)])
        with self.assertRaisesRegex(ValueError, r"constraints\[0\]: bound nan"):
            metaopt.study_spec(space(), constraints=[("m", "<=", float("nan"))])
        with self.assertRaisesRegex(ValueError, r"objectives\[1\].goal"):
            metaopt.study_spec(space(), objectives=[("a", "maximize"), ("b", "lower")])
        spec = metaopt.study_spec(space(), objectives=[("a", "maximize", 0.5),
                                                       ("b", "minimize")])
        self.assertEqual(spec.objectives[0].reference, 0.5)
        self.assertFalse(spec.objectives[1].HasField("reference"))
        # One objective is stored as `objective` alone.
        one = metaopt.study_spec(space(), objectives=[("loss", "minimize")])
        self.assertEqual(len(one.objectives), 0)
        self.assertEqual(one.objective.name, "loss")
        # The server names the field and the rule.
        with self.assertRaisesRegex(metaopt.InvalidArgumentError, "ALGORITHM_KIND_GROSI"):
            self.client().create_study("mo-grosi", space(), objectives=OBJECTIVES,
                                       algorithm="grosi")
        with self.assertRaisesRegex(metaopt.InvalidArgumentError, "spec.early_stopping"):
            self.client().create_study("mo-stopping", space(), objectives=OBJECTIVES,
                                       early_stopping=metaopt.median_stopping())

    def test_a_reference_point_given_is_reported(self):
        study = self.client().create_study(
            "mo-reference", space(), algorithm="random", seed=1,
            objectives=[("accuracy", "maximize", 0.0), ("fit_seconds", "minimize", 100.0)])
        for _ in range(4):
            (trial,) = study.suggest()
            study.observe(trial, evaluate(trial.params))
        study.pareto_front()
        self.assertEqual(study.pareto_front_summary.reference_point, (0.0, 100.0))
        self.assertGreater(study.pareto_front_summary.hypervolume, 0)


if __name__ == "__main__":
    unittest.main()
