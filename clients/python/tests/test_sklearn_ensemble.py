"""metaopt.sklearn.ensemble: greedy ensemble selection with replacement on a hand-worked case,
the balanced accuracy it scores with, the library's bound and the fitted Ensemble; the
evaluation process's validation predictions. (tune with ensemble=K runs in test_sklearn_tune.)"""

from __future__ import annotations

import unittest

import numpy as np
import sklearn.datasets
from sklearn.metrics import balanced_accuracy_score

from metaopt import sklearn as mosk
from metaopt.sklearn import ensemble as mosk_ensemble

# Four validation rows, classes [0, 0, 1, 1]; class scores of three pipelines.
Y = np.array([0, 0, 1, 1])
# A: right on rows 0-2, wrong on row 3: balanced accuracy (1 + 1/2) / 2 = 0.75.
A = np.array([[.9, .1], [.9, .1], [.4, .6], [.6, .4]])
# B: class 1 everywhere (0.5 alone), but sure of row 3, where A is wrong: A + B is right on all.
B = np.array([[.3, .7], [.3, .7], [.4, .6], [.0, 1.]])
# C: as good as A alone (0.75), and wrong where A is: A + C stays at 0.75.
C = np.array([[.8, .2], [.8, .2], [.3, .7], [.7, .3]])


class GreedySelectionTest(unittest.TestCase):

    def test_hand_worked_case_picks_the_complement_not_the_next_best(self) -> None:
        selection = mosk.greedy_selection([A, B, C], Y, [slice(0, 4)], size=3)
        # Round 1: A 0.75, B 0.5, C 0.75: A (the lower index of equals). Round 2: A+A 0.75,
        # A+B 1.0, A+C 0.75: B. Round 3: A+B+A, A+B+B (row 0 ties 1.5 : 1.5, the first class
        # wins: right) and A+B+C all 1.0: A. The best prefix is the first two rounds.
        self.assertEqual(selection.picks, (0, 1, 0))
        self.assertEqual(selection.scores, (0.75, 1.0, 1.0))
        self.assertEqual(selection.best_size, 2)
        self.assertEqual(selection.value, 1.0)
        self.assertEqual(selection.counts(), [(0, 1), (1, 1)])

    def test_one_round_is_the_best_single_member(self) -> None:
        selection = mosk.greedy_selection([B, C, A], Y, [slice(0, 4)], size=1)
        self.assertEqual(selection.picks, (1,))
        self.assertEqual(selection.value, 0.75)

    def test_repeats_weigh_a_member(self) -> None:
        # D alone is perfect; adding anything can only tie or hurt, so D is picked every round
        # and the kept ensemble is D alone.
        D = np.array([[.6, .4], [.6, .4], [.4, .6], [.4, .6]])
        selection = mosk.greedy_selection([A, B, D], Y, [slice(0, 4)], size=4)
        self.assertEqual(selection.picks[0], 2)
        self.assertEqual(selection.best_size, 1)
        self.assertEqual(selection.counts(), [(2, 1)])

    def test_splits_are_scored_separately_and_averaged(self) -> None:
        # Two splits of two rows each: [0, 1] and [1, 1]... the protocol's mean over splits.
        y = np.array([0, 1, 1, 1])
        p = np.array([[.9, .1], [.9, .1], [.1, .9], [.1, .9]])
        selection = mosk.greedy_selection([p], y, [slice(0, 2), slice(2, 4)], size=1)
        # Split 1: recall of class 0 is 1, of class 1 is 0: 0.5. Split 2: only class 1, all
        # right: 1.0. Mean 0.75 (over all four rows at once it would be (1 + 2/3) / 2).
        self.assertEqual(selection.value, 0.75)

    def test_invalid_arguments_are_named(self) -> None:
        with self.assertRaisesRegex(ValueError, "size: 0 must be >= 1"):
            mosk.greedy_selection([A], Y, [slice(0, 4)], size=0)
        with self.assertRaisesRegex(ValueError, "the library is empty"):
            mosk.greedy_selection([], Y, [slice(0, 4)], size=1)
        with self.assertRaisesRegex(ValueError, r"shape \(1, 3, 2\) must be members x 4 rows"):
            mosk.greedy_selection([A[:3]], Y, [slice(0, 4)], size=1)

    def test_balanced_accuracy_matches_scikit_learn(self) -> None:
        rng = np.random.RandomState(0)
        for n_classes in (2, 3, 5):
            y = rng.randint(n_classes, size=60)
            predicted = rng.randint(n_classes, size=60)
            self.assertAlmostEqual(
                mosk_ensemble.balanced_accuracy(y, predicted, n_classes),
                balanced_accuracy_score(y, predicted), places=12)


class LibraryAndEnsembleTest(unittest.TestCase):

    def test_library_keeps_the_best_by_value_then_trial_id(self) -> None:
        library = mosk_ensemble._Library(capacity=2)
        for trial_id, value in ((1, 0.5), (2, 0.9), (3, 0.7), (4, 0.9)):
            library.add(trial_id, {}, value, np.zeros((1, 2)))
        self.assertEqual([(e[0], e[1]) for e in library.entries()], [(0.9, 2), (0.9, 4)])

    def test_ensemble_averages_class_scores_and_svm_votes(self) -> None:
        X, y = sklearn.datasets.load_iris(return_X_y=True)
        info = mosk.columns_info(X)
        gnb = {"imputer": "mean", "scaler": "none", "reducer": "none", "estimator": "gnb"}
        svm = {"imputer": "mean", "scaler": "standard", "reducer": "none",
               "estimator": "svm_rbf", "svm_rbf.C": 1.0, "svm_rbf.gamma": 0.1}
        members = [mosk.build_pipeline(c, info).fit(X, y) for c in (gnb, svm)]
        ensemble = mosk.Ensemble(members, [0.75, 0.25], np.unique(y))
        proba = ensemble.predict_proba(X)
        np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-6)
        # The SVM has no predict_proba: its class scores are its votes.
        votes = mosk.class_scores(members[1], X, np.unique(y))
        np.testing.assert_array_equal(votes.argmax(axis=1), members[1].predict(X))
        self.assertEqual(set(votes.ravel()), {0.0, 1.0})
        expected = 0.75 * members[0].predict_proba(X) + 0.25 * votes
        np.testing.assert_allclose(proba, expected, atol=1e-6)  # float32 class scores
        np.testing.assert_array_equal(ensemble.predict(X), np.unique(y)[expected.argmax(axis=1)])
        with self.assertRaisesRegex(ValueError, "equally many"):
            mosk.Ensemble(members, [1.0], np.unique(y))

    def test_evaluator_returns_validation_predictions_that_score_its_value(self) -> None:
        X, y = sklearn.datasets.load_wine(return_X_y=True)
        logreg = {"imputer": "mean", "scaler": "standard", "reducer": "none",
                  "estimator": "logreg", "logreg.C": 0.5}
        for cv in (None, 3):
            with self.subTest(cv=cv):
                evaluator = mosk.Evaluator(X, y, cv=cv, keep_predictions=True)
                with evaluator:
                    evaluation = evaluator.evaluate(logreg)
                data = evaluator.data
                rows = data.validation_rows
                self.assertEqual(evaluation.predictions.shape, (len(rows), 3))
                self.assertEqual(evaluation.predictions.dtype, np.float32)
                groups, start = [], 0
                for _, test in data.splits:
                    groups.append(slice(start, start + len(test)))
                    start += len(test)
                selection = mosk.greedy_selection([evaluation.predictions],
                                                  np.searchsorted(data.classes, y[rows]),
                                                  groups, size=1)
                self.assertAlmostEqual(selection.value, evaluation.value, places=9)
                # Without keep_predictions nothing is sent back.
                with mosk.Evaluator(X, y, cv=cv) as plain:
                    self.assertIsNone(plain.evaluate(logreg).predictions)


if __name__ == "__main__":
    unittest.main()
