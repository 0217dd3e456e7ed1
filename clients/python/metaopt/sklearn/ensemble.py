"""Ensembles of the evaluated pipelines: greedy ensemble selection with replacement ("Ensemble
selection from libraries of models", Caruana, Niculescu-Mizil, Crew and Ksikes, ICML 2004), as
auto-sklearn and Mosaic build their final models.

:func:`tune` with ``ensemble=K`` keeps the validation class scores (:func:`class_scores`) of the
best :data:`LIBRARY_SIZE` pipelines it evaluates (:class:`_Library`), selects K members from them
by :func:`greedy_selection` on the same validation rows, and refits the members on all the data
as an :class:`Ensemble`.
"""

from __future__ import annotations

import dataclasses
import threading
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from metaopt.sklearn.evaluation import _Data, class_scores
from metaopt.sklearn.space import Configuration

# Pipelines whose validation scores tune keeps for the selection: the best this many by
# validation balanced accuracy. Memory: LIBRARY_SIZE x validation rows x classes x 4 bytes (the
# holdout's 30 % of the rows; with cross-validation every row), e.g. 50 x 450 x 3 x 4 = 270 kB
# for 1,500 rows and 3 classes.
LIBRARY_SIZE = 50


def balanced_accuracy(y_codes: np.ndarray, predicted_codes: np.ndarray, n_classes: int) -> float:
    """The mean recall over the classes present in ``y_codes`` (scikit-learn's
    balanced_accuracy_score on class indices in [0, n_classes))."""
    counts = np.bincount(y_codes, minlength=n_classes)
    hits = np.bincount(y_codes[predicted_codes == y_codes], minlength=n_classes)
    present = counts > 0
    return float(np.mean(hits[present] / counts[present]))


def _score(scores: np.ndarray, y_codes: np.ndarray, groups: Sequence[slice]) -> float:
    """The protocol's score of summed class scores: balanced accuracy of their argmax (the first
    class on ties), averaged over the splits' rows (``groups``)."""
    predicted = np.argmax(scores, axis=1)
    n_classes = scores.shape[1]
    return float(np.mean([balanced_accuracy(y_codes[g], predicted[g], n_classes)
                          for g in groups]))


@dataclasses.dataclass(frozen=True)
class Selection:
    """The outcome of :func:`greedy_selection`.

    Attributes:
        picks: the member chosen in each round (indices into the library, repeats allowed), all
            ``size`` rounds.
        scores: the ensemble's validation score after each round.
        best_size: the rounds kept: the first prefix of ``picks`` with the highest score (the
            paper selects the best of the nested ensembles on the hillclimb set).
    """

    picks: Tuple[int, ...]
    scores: Tuple[float, ...]
    best_size: int

    @property
    def value(self) -> float:
        """The validation score of the kept ensemble."""
        return self.scores[self.best_size - 1]

    def counts(self) -> List[Tuple[int, int]]:
        """(library index, times picked) of the kept ensemble's members, by first pick."""
        kept = self.picks[:self.best_size]
        return [(i, kept.count(i)) for i in dict.fromkeys(kept)]


def greedy_selection(predictions: Sequence[np.ndarray], y_codes: np.ndarray,
                     groups: Sequence[slice], size: int) -> Selection:
    """Greedy ensemble selection with replacement, from an empty ensemble.

    Each of ``size`` rounds adds the library member whose addition gives the best validation
    score of the ensemble (the average of its members' class scores, repeats counted), the lowest
    index among equals; the result keeps the best-scoring prefix.

    Args:
        predictions: per library member, its class scores on the validation rows (rows x
            classes, the same for all).
        y_codes: the validation rows' class indices (columns of the predictions).
        groups: the rows of each split (the protocol's score is the mean over splits).
        size: the rounds, >= 1.

    Raises:
        ValueError: an empty library, misshapen predictions or size < 1.
    """
    if size < 1:
        raise ValueError(f"size: {size} must be >= 1")
    if not predictions:
        raise ValueError("predictions: the library is empty")
    stacked = np.stack([np.asarray(p, dtype=np.float64) for p in predictions])
    if stacked.ndim != 3 or stacked.shape[1] != len(y_codes):
        raise ValueError(f"predictions: shape {stacked.shape} must be members x "
                         f"{len(y_codes)} rows x classes")
    total = np.zeros(stacked.shape[1:])
    picks: List[int] = []
    scores: List[float] = []
    for _ in range(size):
        # The argmax of a sum is the argmax of the average: no division needed.
        trial_scores = [_score(total + member, y_codes, groups) for member in stacked]
        best = int(np.argmax(trial_scores))
        picks.append(best)
        scores.append(trial_scores[best])
        total += stacked[best]
    best_size = int(np.argmax(scores)) + 1
    return Selection(tuple(picks), tuple(scores), best_size)


class _Library:
    """The validation class scores of the best ``capacity`` evaluated pipelines (by value, then
    the lower trial id). Thread-safe."""

    def __init__(self, capacity: int = LIBRARY_SIZE) -> None:
        self.capacity = capacity
        self._entries: List[Tuple[float, int, Configuration, np.ndarray]] = []
        self._lock = threading.Lock()

    def add(self, trial_id: int, configuration: Configuration, value: float,
            predictions: np.ndarray) -> None:
        with self._lock:
            self._entries.append((value, trial_id, configuration, predictions))
            self._entries.sort(key=lambda e: (-e[0], e[1]))
            del self._entries[self.capacity:]

    def entries(self) -> List[Tuple[float, int, Configuration, np.ndarray]]:
        """(value, trial id, configuration, class scores), best first."""
        with self._lock:
            return list(self._entries)


class Ensemble:
    """Fitted pipelines whose class scores (:func:`class_scores`) are averaged with weights.

    ``predict`` returns the class of the highest average score, ``predict_proba`` the averages
    (columns: ``classes_``). Members without predict_proba (the SVM) vote with their predicted
    class.

    Attributes:
        pipelines: the fitted member pipelines.
        weights: each member's weight (times picked / ensemble size), summing to 1.
        classes_: the class labels.
    """

    def __init__(self, pipelines: Sequence[Any], weights: Sequence[float],
                 classes: np.ndarray) -> None:
        if len(pipelines) != len(weights) or not pipelines:
            raise ValueError(f"pipelines, weights: {len(pipelines)} and {len(weights)} must be "
                             "equally many, at least one")
        self.pipelines = list(pipelines)
        self.weights = [float(w) for w in weights]
        self.classes_ = np.asarray(classes)

    def predict_proba(self, X: Any) -> np.ndarray:
        total = sum(w * class_scores(p, X, self.classes_).astype(np.float64)
                    for p, w in zip(self.pipelines, self.weights))
        return np.asarray(total) / sum(self.weights)

    def predict(self, X: Any) -> np.ndarray:
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]

    def __repr__(self) -> str:
        return f"Ensemble({len(self.pipelines)} pipelines, weights={self.weights})"


@dataclasses.dataclass(frozen=True)
class EnsembleSummary:
    """What :func:`tune` reports of its ensemble (``TuneResult.ensemble``).

    Attributes:
        size: the rounds of greedy selection asked for (``ensemble=K``).
        members: (trial id, times picked) of the kept ensemble's members, by first pick.
        value: the ensemble's validation balanced accuracy (its members' averaged class scores
            on the protocol's validation rows: selected on them, so optimistic).
        best_single_value: the best single pipeline's validation balanced accuracy among the
            same library (its trial's value).
        library_size: the pipelines the selection chose from (the best ones of this call,
            at most :data:`LIBRARY_SIZE`).
        scores: the ensemble's validation score after each round.
    """

    size: int
    members: Tuple[Tuple[int, int], ...]
    value: float
    best_single_value: float
    library_size: int
    scores: Tuple[float, ...]


def select(library: _Library, data: _Data, size: int) -> Optional[Tuple[EnsembleSummary,
                                                                       List[Configuration],
                                                                       List[float]]]:
    """Greedy selection over the library on ``data``'s validation rows: the summary and the
    members' configurations and weights; None if the library is empty."""
    entries = library.entries()
    if not entries:
        return None
    rows = data.validation_rows
    y_codes = np.searchsorted(data.classes, data.y[rows])
    groups, start = [], 0
    for _, test in data.splits:
        groups.append(slice(start, start + len(test)))
        start += len(test)
    selection = greedy_selection([e[3] for e in entries], y_codes, groups, size)
    members = selection.counts()
    summary = EnsembleSummary(
        size=size, members=tuple((entries[i][1], n) for i, n in members),
        value=selection.value, best_single_value=entries[0][0], library_size=len(entries),
        scores=selection.scores)
    return (summary, [entries[i][2] for i, _ in members],
            [n / selection.best_size for _, n in members])
