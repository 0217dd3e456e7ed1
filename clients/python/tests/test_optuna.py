"""metaopt.integration.optuna.Sampler with Debian's Optuna against the real server: a
scikit-learn objective, failed and pruned trials, conditional parameters and the value mapping."""

from __future__ import annotations

import logging
import unittest
import warnings

try:
    import optuna
    from optuna.distributions import (CategoricalDistribution, FloatDistribution,
                                      IntDistribution)
except ImportError:  # pragma: no cover - scripts/install-deps.sh installs python3-optuna
    optuna = None

import metaopt
from server_process import ServerTestCase

if optuna is not None:
    from metaopt.integration.optuna import (CONSTRAINTS_ATTR, STUDY_ATTR, TRIAL_ATTR,
                                            TRIAL_NUMBER_METRIC, Sampler, _Codec)

    optuna.logging.set_verbosity(optuna.logging.ERROR)


def svm_objective(trial: "optuna.Trial") -> float:
    """3-fold accuracy of an SVM on scikit-learn's breast cancer data (standardized)."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import cross_val_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    X, y = load_breast_cancer(return_X_y=True)
    c = trial.suggest_float("C", 1e-3, 1e3, log=True)
    gamma = trial.suggest_float("gamma", 1e-5, 1e1, log=True)
    kernel = trial.suggest_categorical("kernel", ["rbf", "linear"])
    model = make_pipeline(StandardScaler(), SVC(C=c, gamma=gamma, kernel=kernel))
    return float(cross_val_score(model, X, y, cv=3).mean())


@unittest.skipIf(optuna is None, "no optuna (Debian: python3-optuna)")
class CodecTest(unittest.TestCase):
    """Optuna distributions as metaopt domains, and values both ways."""

    def test_stepped_and_categorical_distributions(self):
        stepped = _Codec("lr", FloatDistribution(0.0, 1.0, step=0.25))
        self.assertEqual(stepped.domain, metaopt.Int(0, 4))
        self.assertEqual(stepped.to_optuna(3), 0.75)
        self.assertEqual(stepped.to_metaopt(0.5), 2)
        even = _Codec("n", IntDistribution(2, 10, step=2))
        self.assertEqual(even.domain, metaopt.Int(0, 4))
        self.assertEqual(even.to_optuna(4.0), 10)
        log_int = _Codec("k", IntDistribution(1, 64, log=True))
        self.assertEqual(log_int.domain, metaopt.Int(1, 64, log=True))
        self.assertEqual(log_int.to_optuna(70.2), 64)  # clipped to the distribution
        mixed = _Codec("c", CategoricalDistribution([1, "1", None]))
        self.assertEqual(mixed.domain, metaopt.Categorical(["0:1", "1:1", "2:None"]))
        self.assertIsNone(mixed.to_optuna("2:None"))
        self.assertEqual(mixed.to_metaopt("1"), "1:1")
        self.assertEqual(_Codec("f", FloatDistribution(1e-3, 1.0, log=True)).domain,
                         metaopt.Float(1e-3, 1.0, log=True))

    def test_arguments_are_checked(self):
        with self.assertRaisesRegex(ValueError, "study_id"):
            Sampler("127.0.0.1:1", study_id="bad id")
        with self.assertRaisesRegex(ValueError, "algorithm"):
            Sampler("127.0.0.1:1", algorithm="tpe")
        with self.assertRaisesRegex(TypeError, "client"):
            Sampler(42)  # type: ignore[arg-type]
        with self.assertRaisesRegex(TypeError, "search_space"):
            Sampler("127.0.0.1:1", search_space={"x": (0, 1)})  # type: ignore[dict-item]


@unittest.skipIf(optuna is None, "no optuna (Debian: python3-optuna)")
class OptunaSamplerTest(ServerTestCase):

    def sampler(self, **options) -> "Sampler":
        sampler = Sampler(self.server.target, **options)
        self.addCleanup(sampler.close)
        return sampler

    def test_sklearn_study_runs_on_a_metaopt_gp_study(self):
        sampler = self.sampler(seed=3)
        study = optuna.create_study(study_name="svm cancer", direction="maximize",
                                    sampler=sampler)
        study.optimize(svm_objective, n_trials=14)

        self.assertEqual(len(study.trials), 14)
        self.assertTrue(all(t.state == optuna.trial.TrialState.COMPLETE for t in study.trials))
        self.assertGreaterEqual(study.best_value, 0.95)  # a bad SVM scores about 0.63

        # The first trial had no relative space (nothing finished yet); every later one was
        # asked from one metaopt study over C, gamma and kernel, named after the Optuna study.
        metaopt_study = sampler.metaopt_study()
        self.assertRegex(metaopt_study.id, r"^optuna-svm_cancer-[0-9a-f]{12}$")
        self.assertEqual(metaopt_study.spec.objective.goal, metaopt.v1.study_pb2.GOAL_MAXIMIZE)
        params = [p.name for p in metaopt_study.spec.search_space.stages[0].algorithms[0]
                  .parameters]
        self.assertEqual(params, ["C", "gamma", "kernel"])
        self.assertNotIn(STUDY_ATTR, study.trials[0].system_attrs)
        relative = study.trials[1:]
        self.assertTrue(all(t.system_attrs[STUDY_ATTR] == metaopt_study.id for t in relative))

        trials = list(metaopt_study.trials())
        # The first Optuna trial joined as a warm-start observation, the others as suggestions.
        self.assertEqual(len(trials), 14)
        self.assertEqual(sorted(int(t.metrics[TRIAL_NUMBER_METRIC]) for t in trials),
                         list(range(14)))
        self.assertTrue(all(t.state == metaopt.TrialState.COMPLETED for t in trials))
        by_id = {t.id: t for t in trials}
        for optuna_trial in relative:
            mirrored = by_id[optuna_trial.system_attrs[TRIAL_ATTR]]
            self.assertEqual(mirrored.value, optuna_trial.value)
            self.assertAlmostEqual(mirrored.params["C"], optuna_trial.params["C"])
            self.assertEqual(mirrored.params["kernel"], optuna_trial.params["kernel"])
        # The GP took over from the initial design.
        self.assertIn("gp/ei", {t.metadata.get("policy") for t in trials})

    def test_failed_trials_fail_and_pruned_trials_stop(self):
        space = {"x": FloatDistribution(-5, 5), "n": IntDistribution(1, 8)}
        sampler = self.sampler(study_id="outcomes", search_space=space, algorithm="random",
                               seed=1)

        def objective(trial: "optuna.Trial") -> float:
            x = trial.suggest_float("x", -5, 5)
            n = trial.suggest_int("n", 1, 8)
            if trial.number == 1:
                raise ValueError("diverged")
            if trial.number == 2:
                trial.report(float("nan"), step=0)  # not finite: not reported
                trial.report(x * x + 1, step=1)
                trial.report(x * x, step=3)
                raise optuna.TrialPruned()
            if trial.number == 4:
                trial.report(float("inf"), step=2)
                raise optuna.TrialPruned()
            return (x - 1) ** 2 + n

        study = optuna.create_study(sampler=sampler)
        study.optimize(objective, n_trials=5, catch=(ValueError,))
        states = [t.state for t in study.trials]
        self.assertEqual(states, [optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.FAIL,
                                  optuna.trial.TrialState.PRUNED,
                                  optuna.trial.TrialState.COMPLETE,
                                  optuna.trial.TrialState.PRUNED])
        # With a fixed search space even the first trial is asked from metaopt.
        metaopt_study = sampler.metaopt_study()
        self.assertTrue(metaopt_study.id.startswith("outcomes-"))
        trials = {int(t.metrics[TRIAL_NUMBER_METRIC]): t for t in metaopt_study.trials()}
        self.assertEqual(sorted(trials), [0, 1, 2, 3, 4])
        self.assertEqual(trials[0].state, metaopt.TrialState.COMPLETED)
        self.assertEqual(trials[0].value, study.trials[0].value)
        self.assertEqual(trials[1].state, metaopt.TrialState.FAILED)
        self.assertIn("failed", trials[1].failure_reason)
        # The pruned trial ends STOPPED with its last intermediate value, its curve reported.
        x = study.trials[2].params["x"]
        self.assertEqual(trials[2].state, metaopt.TrialState.STOPPED)
        self.assertEqual(trials[2].value, x * x)
        self.assertEqual([(v.step, v.value) for v in trials[2].intermediate_values],
                         [(1, x * x + 1), (3, x * x)])
        self.assertEqual(trials[2].metadata["stop_step"], "3")
        self.assertEqual(trials[2].metadata["stop_reason"],
                         "client: Optuna's MedianPruner pruned it at step 3")
        self.assertEqual(trials[2].failure_reason, "")
        self.assertEqual(trials[3].state, metaopt.TrialState.COMPLETED)
        # Pruned with no finite value to stop at: FAILED, as before.
        self.assertEqual(trials[4].state, metaopt.TrialState.FAILED)
        self.assertEqual(trials[4].failure_reason, "pruned at step 2")
        self.assertIsInstance(study.trials[0].params["n"], int)

    def test_trials_optunas_pruner_prunes_end_stopped(self):
        # Optuna's MedianPruner decides; the metaopt trials mirror it as STOPPED.
        space = {"x": FloatDistribution(-5, 5)}
        sampler = self.sampler(study_id="median-pruner", search_space=space, algorithm="random",
                               seed=4)

        def objective(trial: "optuna.Trial") -> float:
            x = trial.suggest_float("x", -5, 5)
            # Trials 0 and 1 train well; the later ones badly, and the pruner stops them.
            start = (1.0, 1.5)[trial.number] if trial.number < 2 else 50.0 + x
            loss = start
            for step in range(5):
                loss = start / (step + 1)
                trial.report(loss, step)
                if trial.should_prune():
                    raise optuna.TrialPruned()
            return loss

        study = optuna.create_study(
            sampler=sampler, pruner=optuna.pruners.MedianPruner(n_startup_trials=2))
        study.optimize(objective, n_trials=4)
        self.assertEqual([t.state for t in study.trials],
                         [optuna.trial.TrialState.COMPLETE] * 2 +
                         [optuna.trial.TrialState.PRUNED] * 2)
        trials = {int(t.metrics[TRIAL_NUMBER_METRIC]): t for t in sampler.metaopt_study().trials()}
        self.assertEqual([trials[n].state for n in range(4)],
                         [metaopt.TrialState.COMPLETED] * 2 + [metaopt.TrialState.STOPPED] * 2)
        for number in (2, 3):
            pruned = study.trials[number]
            self.assertEqual(trials[number].value, pruned.intermediate_values[pruned.last_step])
            self.assertEqual([v.step for v in trials[number].intermediate_values],
                             sorted(pruned.intermediate_values))
        # STOPPED trials are observations, never the best trial.
        self.assertEqual(sampler.metaopt_study().best_trial().metrics[TRIAL_NUMBER_METRIC], 0.0)

    def test_enqueued_values_supersede_the_suggestion(self):
        space = {"x": FloatDistribution(-5, 5), "n": IntDistribution(1, 8)}
        sampler = self.sampler(study_id="enqueued", search_space=space, algorithm="random",
                               seed=2)
        study = optuna.create_study(sampler=sampler)
        study.enqueue_trial({"x": 0.5, "n": 2})
        study.optimize(lambda t: (t.suggest_float("x", -5, 5) - 1) ** 2 + t.suggest_int("n", 1, 8),
                       n_trials=2)
        self.assertEqual(study.trials[0].params, {"x": 0.5, "n": 2})
        trials = list(sampler.metaopt_study().trials())
        first = [t for t in trials if t.metrics[TRIAL_NUMBER_METRIC] == 0]
        # The suggestion Optuna did not evaluate, then what it evaluated.
        self.assertEqual([t.state for t in first],
                         [metaopt.TrialState.FAILED, metaopt.TrialState.COMPLETED])
        self.assertTrue(first[0].failure_reason.startswith("superseded"))
        self.assertEqual(first[1].params, {"x": 0.5, "n": 2})
        self.assertEqual(first[1].value, 2.25)
        second = [t for t in trials if t.metrics[TRIAL_NUMBER_METRIC] == 1]
        self.assertEqual([t.state for t in second], [metaopt.TrialState.COMPLETED])
        self.assertEqual(second[0].id, study.trials[1].system_attrs[TRIAL_ATTR])

    def test_parallel_workers_get_distinct_trials(self):
        space = {"x": FloatDistribution(-5, 5), "n": IntDistribution(1, 8)}
        sampler = self.sampler(study_id="parallel", search_space=space, algorithm="random",
                               seed=4)
        study = optuna.create_study(sampler=sampler)
        study.optimize(lambda t: (t.suggest_float("x", -5, 5) - 1) ** 2 + t.suggest_int("n", 1, 8),
                       n_trials=8, n_jobs=2)
        ids = [t.system_attrs[TRIAL_ATTR] for t in study.trials]
        self.assertEqual(len(set(ids)), 8)
        trials = list(sampler.metaopt_study().trials())
        self.assertEqual(sorted(t.id for t in trials), sorted(ids))
        self.assertTrue(all(t.state == metaopt.TrialState.COMPLETED for t in trials))
        self.assertEqual(len({t.client_id for t in trials}), 8)

    def test_conditional_parameters_are_sampled_independently(self):
        sampler = self.sampler(study_id="conditional", seed=5)

        def objective(trial: "optuna.Trial") -> float:
            family = trial.suggest_categorical("family", ["quadratic", "abs"])
            shift = trial.suggest_float("shift", 0, 1, step=0.25)
            if family == "quadratic":
                x = trial.suggest_float("x", -3, 3)
                return x * x + shift
            y = trial.suggest_int("y", -4, 4, step=2)
            return abs(y) + shift

        study = optuna.create_study(sampler=sampler)
        # One trial of each family first, so that the intersection is {family, shift} from the
        # third trial on.
        study.enqueue_trial({"family": "quadratic"})
        study.enqueue_trial({"family": "abs"})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            study.optimize(objective, n_trials=10)
        self.assertEqual(len(study.trials), 10)
        self.assertTrue(all(t.state == optuna.trial.TrialState.COMPLETE for t in study.trials))
        # The latest space holds only the parameters every trial has; x and y were sampled by
        # the independent sampler.
        latest = sampler.metaopt_study()
        names = [p.name for p in latest.spec.search_space.stages[0].algorithms[0].parameters]
        self.assertEqual(names, ["family", "shift"])
        self.assertTrue(all(t.system_attrs[STUDY_ATTR] == latest.id for t in study.trials[2:]))
        recorded = list(latest.trials(metaopt.TrialState.COMPLETED))
        # Trials 0 and 1 cover the space: they joined as warm-start observations.
        self.assertEqual(sorted(int(t.metrics[TRIAL_NUMBER_METRIC]) for t in recorded),
                         list(range(10)))
        for trial in recorded:
            self.assertIn(trial.params["shift"], (0, 1, 2, 3, 4))  # the grid's indices
        for trial in study.trials:
            self.assertIn(trial.params["shift"], (0.0, 0.25, 0.5, 0.75, 1.0))
            self.assertEqual("x" in trial.params, trial.params["family"] == "quadratic")

    def test_multi_objective_study_with_constraints(self):
        # accuracy-like (maximized) against cost (minimized), feasible when x + y <= 1.2.
        def objective(trial):
            x = trial.suggest_float("x", 0, 1)
            y = trial.suggest_float("y", 0, 1)
            trial.set_user_attr("load", x + y)
            return x * 0.7 + y * 0.3, x * x + 0.2 * y

        sampler = self.sampler(study_id="multi", algorithm="gp", initial_trials=4, seed=2,
                               constraints_func=lambda t: (t.user_attrs["load"] - 1.2,))
        study = optuna.create_study(directions=["maximize", "minimize"], sampler=sampler)
        study.optimize(objective, n_trials=12)
        handle = sampler.metaopt_study()
        self.assertEqual(handle.objectives, [("value_0", "maximize"), ("value_1", "minimize")])
        self.assertEqual(handle.constraints, [("optuna_constraint_0", "<=", 0.0)])
        finished = study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))
        self.assertEqual(len(finished), 12)
        by_number = {t.number: t for t in finished}
        recorded = {int(t.metrics[TRIAL_NUMBER_METRIC]): t for t in handle.trials()}
        # Every Optuna trial reached the metaopt study (the first one by the warm start),
        # with both values and its feasibility.
        self.assertEqual(set(recorded), set(by_number))
        for number, trial in recorded.items():
            optuna_trial = by_number[number]
            self.assertEqual(trial.values, optuna_trial.values)
            self.assertEqual(optuna_trial.system_attrs[CONSTRAINTS_ATTR],
                             (optuna_trial.user_attrs["load"] - 1.2,))
            self.assertEqual(trial.feasible, optuna_trial.user_attrs["load"] <= 1.2)
        self.assertIn("gp/ehvi", {t.metadata.get("policy") for t in recorded.values()})
        # The metaopt front is Optuna's front of the feasible trials.
        feasible = [t for t in finished if t.user_attrs["load"] <= 1.2]
        expected = sorted(
            t.number for t in feasible
            if not any(o.values[0] >= t.values[0] and o.values[1] <= t.values[1]
                       and o.values != t.values for o in feasible))
        front = sorted(int(t.metrics[TRIAL_NUMBER_METRIC]) for t in handle.pareto_front())
        self.assertEqual(front, expected)

    def test_more_than_three_objectives_are_refused(self):
        sampler = self.sampler(study_id="four")
        study = optuna.create_study(directions=["minimize"] * 4, sampler=sampler)
        logging.getLogger("optuna").setLevel(logging.CRITICAL)
        with self.assertRaisesRegex(ValueError, "at most 3"):
            study.optimize(lambda t: (t.suggest_float("x", 0, 1), 1.0, 1.0, 1.0), n_trials=1)

if __name__ == "__main__":
    unittest.main()
