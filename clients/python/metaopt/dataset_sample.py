"""A raw sample of a classification dataset, for ``StudySpec.dataset_sample``.

::

    from sklearn.datasets import load_wine
    import metaopt.dataset_sample

    X, y = load_wine(return_X_y=True)
    sample = metaopt.dataset_sample.draw(X, y)   # a metaopt.v1.DatasetSample
    sample.num_targets  # 3

Models that read the data itself (GROSI with a Dataset2Vec extractor: "Dataset2Vec: Learning
Dataset Meta-Features", Jomaa, Schmidt-Thieme and Grabocka) condition on this sample of at most
256 rows x 16 columns x 3 one-hot classes. The rule is deterministic given the data, so the same
dataset always gives the same sample (and the same suggestions):

1. Columns: with more than 16, the columns ``floor(k * M / 16)`` for k = 0..15 (evenly spaced in
   the given order).
2. Each kept column over all N rows: a numeric column's missing values take the mean of the
   others; a categorical column's values become codes, the index of each value among the
   column's distinct values sorted as text (missing is one more value, ``"<missing>"``). Then
   every column is standardised, ``(v - mean) / std`` with the population standard deviation
   over all N rows (a constant column becomes 0).
3. Rows: with more than 256, the rows ``floor(k * N / 256)`` for k = 0..255 (evenly spaced in
   the given order, so a table sorted by class keeps its class proportions).
4. Targets: the classes sorted by frequency over all N rows (most frequent first, ties by the
   label's text), the first min(3, C) of them one-hot (``num_targets`` columns); a row of another
   class has all zeros.

Needs numpy (and pandas if ``X`` is a DataFrame). Stateless and thread-safe.
"""

from typing import Any, List, Tuple

import numpy as np

from metaopt import metafeatures as _mf
from metaopt.v1 import study_pb2

MAX_ROWS = 256
MAX_COLUMNS = 16
MAX_TARGETS = 3
MIN_ROWS = 2


def evenly_spaced(total: int, limit: int) -> List[int]:
    """``floor(k * total / limit)`` for k < limit, or every index when total <= limit."""
    if total <= limit:
        return list(range(total))
    return [(k * total) // limit for k in range(limit)]


def draw(X: Any, y: Any, categorical: Any = None) -> study_pb2.DatasetSample:
    """The sample of the classification dataset ``(X, y)`` (rule in the module docstring).

    Args:
        X: rows by columns: a 2-D numpy array (or nested sequence) or a pandas DataFrame;
            missing values are NaN (None in object columns).
        y: the class labels, one per row (numbers or strings; none missing).
        categorical: which columns are categorical, as for :func:`metaopt.metafeatures.compute`
            (a boolean mask or column indices; None infers them).

    Raises:
        ValueError: malformed input (fewer than 2 rows, a non-numeric value in a numeric column,
            a missing label); the message names the argument and the rule.
    """
    columns, names, inferred = _mf._columns(X)
    n_rows = len(columns[0])
    if n_rows < MIN_ROWS:
        raise ValueError(f"X: {n_rows} rows; a dataset sample needs at least {MIN_ROWS}")
    labels = _mf._labels(y, n_rows)
    mask = inferred if categorical is None else _mf._categorical_mask(categorical, len(columns))
    kept = evenly_spaced(len(columns), MAX_COLUMNS)
    rows = evenly_spaced(n_rows, MAX_ROWS)

    values = np.empty((len(rows), len(kept)))
    kinds = []
    for out, j in enumerate(kept):
        column = columns[j]
        missing = _mf._missing(column)
        if mask[j]:
            kinds.append(study_pb2.COLUMN_KIND_CATEGORICAL)
            text = ["<missing>" if m else str(v) for v, m in zip(column, missing)]
            codes = {v: i for i, v in enumerate(sorted(set(text)))}
            full = np.array([codes[t] for t in text], dtype=np.float64)
        else:
            kinds.append(study_pb2.COLUMN_KIND_NUMERIC)
            full = _mf._numeric_column(column, missing, names[j])
            present = ~np.isnan(full)
            fill = float(full[present].mean()) if present.any() else 0.0
            full = np.where(present, full, fill)
        std = float(full.std())
        standardised = (full - full.mean()) / std if std > 0 else np.zeros_like(full)
        values[:, out] = standardised[rows]

    classes = _class_order(labels)[:MAX_TARGETS]
    targets = np.zeros((len(rows), len(classes)))
    for k, label in enumerate(classes):
        targets[:, k] = (labels[rows] == label).astype(np.float64)

    sample = study_pb2.DatasetSample(num_targets=len(classes))
    sample.column_kinds.extend(kinds)
    sample.values.extend(float(v) for v in values.reshape(-1))
    sample.targets.extend(float(v) for v in targets.reshape(-1))
    return sample


def _class_order(labels: np.ndarray) -> List[Any]:
    """Distinct labels by decreasing frequency, ties by their text."""
    counts: dict = {}
    for label in labels.tolist():
        counts[label] = counts.get(label, 0) + 1
    return [label for label, _ in sorted(counts.items(), key=lambda kv: (-kv[1], str(kv[0])))]


def shape(sample: study_pb2.DatasetSample) -> Tuple[int, int, int]:
    """(rows, columns, targets) of a sample."""
    m = len(sample.column_kinds)
    return (len(sample.values) // m if m else 0, m, sample.num_targets)
