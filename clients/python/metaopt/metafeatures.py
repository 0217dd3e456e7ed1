"""Meta-features of a classification dataset, for ``StudySpec.dataset_features``.

::

    from sklearn.datasets import load_wine
    import metaopt.metafeatures

    X, y = load_wine(return_X_y=True)
    features = metaopt.metafeatures.compute(X, y)
    features["ClassEntropy"]  # 1.5668... (bits)

The names and definitions are auto-sklearn's (Feurer et al., "Efficient and Robust Automated
Machine Learning", NeurIPS 2015, supplement: the meta-features), the ones the bundled meta-datasets
record: every feature of sklearn-pipelines' and of oboe's (PMF's) ``metafeatures.csv``.
docs/metafeatures.md lists each definition, the agreement with those files, and which features each
bundled model reads.

Needs numpy, scipy and scikit-learn; pandas only if ``X`` is a DataFrame. Stateless: ``compute``
may run in several threads at once.
"""

import math
import numbers
import warnings
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

# The simple features: counts, ratios and natural logs of the data's shape, the class
# distribution (entropy in bits) and missing values. Always computed.
SIMPLE_FEATURES: Tuple[str, ...] = (
    "ClassEntropy", "ClassProbabilityMax", "ClassProbabilityMean", "ClassProbabilityMin",
    "ClassProbabilitySTD", "DatasetRatio", "InverseDatasetRatio", "LogDatasetRatio",
    "LogInverseDatasetRatio", "LogNumberOfFeatures", "LogNumberOfInstances",
    "NumberOfCategoricalFeatures", "NumberOfClasses", "NumberOfFeatures",
    "NumberOfFeaturesOneHotEncoded", "NumberOfFeaturesWithMissingValues", "NumberOfInstances",
    "NumberOfInstancesWithMissingValues", "NumberOfMissingValues", "NumberOfNumericFeatures",
    "PercentageOfFeaturesWithMissingValues", "PercentageOfInstancesWithMissingValues",
    "PercentageOfMissingValues", "RatioNominalToNumerical", "RatioNumericalToNominal",
    "SymbolsMax", "SymbolsMean", "SymbolsMin", "SymbolsSTD", "SymbolsSum",
)

# The shape of the encoded data's distribution (the landmarkers' encoding, below): skewness and
# kurtosis of each column, and a principal component analysis. Always computed.
DISTRIBUTION_FEATURES: Tuple[str, ...] = (
    "KurtosisMax", "KurtosisMean", "KurtosisMin", "KurtosisSTD",
    "PCAFractionOfComponentsFor95PercentVariance", "PCAKurtosisFirstPC", "PCASkewnessFirstPC",
    "SkewnessMax", "SkewnessMean", "SkewnessMin", "SkewnessSTD",
)

# Cross-validated accuracies of simple learners (Pfahringer et al., "Meta-Learning by
# Landmarking Various Learning Algorithms", ICML 2000), as auto-sklearn computes them.
LANDMARKERS: Tuple[str, ...] = (
    "Landmark1NN", "LandmarkDecisionNodeLearner", "LandmarkDecisionTree", "LandmarkLDA",
    "LandmarkNaiveBayes", "LandmarkRandomNodeLearner",
)

# Landmarkers: stratified folds over the rows shuffled once with this seed (auto-sklearn's).
LANDMARK_FOLDS = 10
LANDMARK_SEED = 42


def compute(X: Any, y: Any, categorical: Any = None, *,
            landmarkers: bool = True) -> Dict[str, float]:
    """The meta-features of the classification dataset ``(X, y)``, by name.

    Args:
        X: the features, rows by columns: a 2-D numpy array (or nested sequence), or a pandas
            DataFrame. Missing values are NaN, or None in object columns.
        y: the class labels, one per row of ``X`` (numbers or strings; none missing).
        categorical: which columns of ``X`` are categorical: a boolean mask with one entry per
            column, or a list of column indices. None: the columns of a DataFrame whose dtype is
            object, category, string or bool, and the columns of an object array that hold a
            value other than a number or a missing value.
        landmarkers: also fit the landmark learners (ten-fold cross-validation; the only part
            whose cost grows faster than the data's size).

    Returns:
        Every name of :data:`SIMPLE_FEATURES` and :data:`DISTRIBUTION_FEATURES`, and of
        :data:`LANDMARKERS` when ``landmarkers`` is set and the data allow ten stratified folds
        (at least two classes, the largest with at least ten rows). The three ``PCA*`` features
        are left out when every column is constant, and a landmarker whose learner fails on the
        data (LDA on collinear features); no value is NaN or infinite.

    Raises:
        ValueError: an argument is malformed; the message names it, its value and the rule.
    """
    columns, names, inferred = _columns(X)
    n_rows = len(columns[0])
    labels = _labels(y, n_rows)
    is_categorical = inferred if categorical is None else _categorical_mask(
        categorical, len(columns))
    missing = np.column_stack([_missing(column) for column in columns])
    numeric = {j: _numeric_column(columns[j], missing[:, j], names[j])
               for j in range(len(columns)) if not is_categorical[j]}
    symbols = {j: _symbols(columns[j], missing[:, j])
               for j in range(len(columns)) if is_categorical[j]}

    features = _simple_features(labels, missing, is_categorical, symbols)
    encoded = _encoded(numeric, symbols, columns, missing, n_rows)
    features.update(_distribution_features(encoded))
    if landmarkers:
        features.update(_landmarkers(encoded, labels))
    return {name: features[name] for name in sorted(features)}


def _columns(X: Any) -> Tuple[List[np.ndarray], List[str], List[bool]]:
    """X's columns (each a 1-D array), their names for messages, and the inferred mask."""
    frame = _as_dataframe(X)
    if frame is not None:
        if frame.ndim != 2 or frame.shape[0] == 0 or frame.shape[1] == 0:
            raise ValueError(f"X: a DataFrame of shape {frame.shape}; it needs at least one row "
                             "and one column")
        columns = [frame.iloc[:, j].to_numpy() for j in range(frame.shape[1])]
        names = [f"column {j} ({frame.columns[j]!r})" for j in range(frame.shape[1])]
        inferred = [_is_categorical_dtype(frame.dtypes.iloc[j]) for j in range(frame.shape[1])]
        return columns, names, inferred
    try:
        array = np.asarray(X)
        if not isinstance(X, np.ndarray) and array.dtype.kind not in "biuf":
            # Nested lists that mix numbers and text: keep the numbers numbers.
            array = np.asarray(X, dtype=object)
    except ValueError as error:  # ragged nested sequences
        raise ValueError(f"X: not a rectangular table of rows and columns ({error})") from None
    if array.ndim != 2 or array.shape[0] == 0 or array.shape[1] == 0:
        raise ValueError(f"X: an array of shape {array.shape}; it must be 2-D (rows, columns) "
                         "with at least one row and one column")
    if array.dtype.kind not in "biufO":
        # Strings of a fixed width: every column is text, hence categorical.
        array = array.astype(object)
    columns = [array[:, j] for j in range(array.shape[1])]
    names = [f"column {j}" for j in range(array.shape[1])]
    inferred = [array.dtype == object and any(_is_symbol(v) for v in column)
                for column in columns]
    return columns, names, inferred


def _as_dataframe(X: Any) -> Any:
    """X if it is a pandas DataFrame (None without pandas or for anything else)."""
    try:
        import pandas
    except ImportError:
        return None
    return X if isinstance(X, pandas.DataFrame) else None


def _is_categorical_dtype(dtype: Any) -> bool:
    return dtype.kind in "OSUb" or str(dtype) in ("category", "string", "boolean")


def _is_missing(value: Any) -> bool:
    if value is None:
        return True
    try:
        return bool(value != value)  # NaN, and pandas' NA and NaT
    except (TypeError, ValueError):  # pandas.NA refuses bool()
        return True


def _is_symbol(value: Any) -> bool:
    """Whether a cell of an object column is neither a number nor missing."""
    return not (_is_missing(value) or (isinstance(value, numbers.Real)
                                       and not isinstance(value, bool)))


def _missing(column: np.ndarray) -> np.ndarray:
    if column.dtype.kind == "f":
        return np.isnan(column)
    if column.dtype.kind in "biu":
        return np.zeros(len(column), dtype=bool)
    return np.fromiter((_is_missing(v) for v in column), dtype=bool, count=len(column))


def _numeric_column(column: np.ndarray, missing: np.ndarray, name: str) -> np.ndarray:
    """A numeric column as floats (NaN where missing); its values must be finite numbers."""
    if column.dtype.kind in "biuf":
        values = column.astype(np.float64)
    else:
        values = np.full(len(column), np.nan)
        for i, value in enumerate(column):
            if missing[i]:
                continue
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                raise ValueError(
                    f"X {name}, row {i}: {value!r} is not a number; a numeric column holds "
                    "numbers or missing values (mark text columns in categorical=)")
            values[i] = float(value)
    infinite = np.isinf(values)
    if infinite.any():
        row = int(np.flatnonzero(infinite)[0])
        raise ValueError(f"X {name}, row {row}: {values[row]!r} is not finite; a numeric column "
                         "holds finite numbers or NaN for missing values")
    return values


def _symbols(column: np.ndarray, missing: np.ndarray) -> List[Any]:
    """A categorical column's distinct values, missing ones left out, in a fixed order."""
    distinct = {column[i] for i in range(len(column)) if not missing[i]}
    return sorted(distinct, key=lambda v: (type(v).__name__, repr(v)))


def _labels(y: Any, n_rows: int) -> np.ndarray:
    labels = np.asarray(y.to_numpy() if hasattr(y, "to_numpy") else y)
    if labels.ndim == 2 and labels.shape[1] == 1:
        labels = labels[:, 0]
    if labels.ndim != 1:
        raise ValueError(f"y: an array of shape {labels.shape}; it must hold one class label "
                         "per row")
    if len(labels) != n_rows:
        raise ValueError(f"y: {len(labels)} labels for {n_rows} rows of X; give one label "
                         "per row")
    missing = _missing(labels)
    if missing.any():
        row = int(np.flatnonzero(missing)[0])
        raise ValueError(f"y, row {row}: {labels[row]!r} is a missing label; every row needs "
                         "its class")
    return labels


def _categorical_mask(categorical: Any, n_columns: int) -> List[bool]:
    if isinstance(categorical, (str, bytes)) or not hasattr(categorical, "__iter__"):
        raise ValueError(f"categorical: {categorical!r} is not a boolean mask or a list of "
                         "column indices")
    values = list(np.asarray(categorical, dtype=object).ravel())
    if values and all(isinstance(v, (bool, np.bool_)) for v in values):
        if len(values) != n_columns:
            raise ValueError(f"categorical: a boolean mask of {len(values)} entries for "
                             f"{n_columns} columns; give one entry per column")
        return [bool(v) for v in values]
    mask = [False] * n_columns
    for v in values:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral):
            raise ValueError(f"categorical: {v!r} is not a column index; give a boolean mask "
                             "or a list of integer column indices")
        if not 0 <= int(v) < n_columns:
            raise ValueError(f"categorical: column index {int(v)} is out of range for "
                             f"{n_columns} columns (0 to {n_columns - 1})")
        if mask[int(v)]:
            raise ValueError(f"categorical: column index {int(v)} is given twice")
        mask[int(v)] = True
    return mask


def _simple_features(labels: np.ndarray, missing: np.ndarray, is_categorical: Sequence[bool],
                     symbols: Dict[int, List[Any]]) -> Dict[str, float]:
    n_rows, n_columns = missing.shape
    n_categorical = sum(bool(c) for c in is_categorical)
    n_numeric = n_columns - n_categorical
    _, counts = np.unique(labels.astype(str) if labels.dtype == object else labels,
                          return_counts=True)
    probabilities = counts / n_rows
    # One-hot width as the sklearn-pipelines preprocessing builds it: a numeric column is one
    # column; a categorical one is one per value, plus one for "missing" if any is missing.
    one_hot = n_numeric + sum(len(values) + int(missing[:, j].any())
                              for j, values in symbols.items())
    n_missing = int(missing.sum())
    rows_with_missing = int(missing.any(axis=1).sum())
    columns_with_missing = int(missing.any(axis=0).sum())
    return {
        "ClassEntropy": float(-(probabilities * np.log2(probabilities)).sum()) + 0.0,
        "ClassProbabilityMax": float(probabilities.max()),
        "ClassProbabilityMean": float(probabilities.mean()),
        "ClassProbabilityMin": float(probabilities.min()),
        "ClassProbabilitySTD": float(probabilities.std()),  # population (ddof 0)
        "DatasetRatio": n_columns / n_rows,
        "InverseDatasetRatio": n_rows / n_columns,
        "LogDatasetRatio": math.log(n_columns / n_rows),
        "LogInverseDatasetRatio": math.log(n_rows / n_columns),
        "LogNumberOfFeatures": math.log(n_columns),
        "LogNumberOfInstances": math.log(n_rows),
        "NumberOfCategoricalFeatures": float(n_categorical),
        "NumberOfClasses": float(len(counts)),
        "NumberOfFeatures": float(n_columns),
        "NumberOfFeaturesOneHotEncoded": float(one_hot),
        "NumberOfFeaturesWithMissingValues": float(columns_with_missing),
        "NumberOfInstances": float(n_rows),
        "NumberOfInstancesWithMissingValues": float(rows_with_missing),
        "NumberOfMissingValues": float(n_missing),
        "NumberOfNumericFeatures": float(n_numeric),
        "PercentageOfFeaturesWithMissingValues": columns_with_missing / n_columns,
        "PercentageOfInstancesWithMissingValues": rows_with_missing / n_rows,
        "PercentageOfMissingValues": n_missing / (n_rows * n_columns),
        # auto-sklearn's convention: 0 when the denominator is 0.
        "RatioNominalToNumerical": n_categorical / n_numeric if n_numeric else 0.0,
        "RatioNumericalToNominal": n_numeric / n_categorical if n_categorical else 0.0,
        **_symbol_features([len(values) for values in symbols.values()]),
    }


def _symbol_features(counts: List[int]) -> Dict[str, float]:
    """Of the numbers of distinct values (symbols) of the categorical columns, missing values not
    counted. As auto-sklearn: the sum and maximum over all of them, the minimum, mean and
    population standard deviation over those with a symbol; each 0 without such a column."""
    present = [count for count in counts if count > 0]
    return {
        "SymbolsMax": float(max(counts, default=0)),
        "SymbolsMean": float(np.mean(present)) if present else 0.0,
        "SymbolsMin": float(min(present, default=0)),
        "SymbolsSTD": float(np.std(present)) if present else 0.0,
        "SymbolsSum": float(sum(counts)),
    }


def _moments(values: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Skewness m3 / m2^1.5 and excess kurtosis m4 / m2^2 - 3 of each column (biased central
    moments), as the scipy.stats.skew and kurtosis of auto-sklearn's recorded features computed
    them: a constant column has skewness 0 and kurtosis -3."""
    centered = values - values.mean(axis=0)
    m2 = (centered ** 2).mean(axis=0)
    m3 = (centered ** 3).mean(axis=0)
    m4 = (centered ** 4).mean(axis=0)
    varying = m2 > 0
    safe = np.where(varying, m2, 1.0)
    skewness = np.where(varying, m3 / safe ** 1.5, 0.0)
    kurtosis = np.where(varying, m4 / safe ** 2, 0.0) - 3.0
    return skewness, kurtosis


def _distribution_features(encoded: np.ndarray) -> Dict[str, float]:
    """Skewness and kurtosis of the encoded columns (their maximum, mean, minimum and population
    standard deviation) and of the first principal component, and the fraction of the components
    that explain 95 % of the variance. The PCA* features are left out when every column is
    constant (no component has a direction)."""
    skewness, kurtosis = _moments(encoded)
    features = {}
    for prefix, values in (("Skewness", skewness), ("Kurtosis", kurtosis)):
        features[f"{prefix}Max"] = float(values.max())
        features[f"{prefix}Mean"] = float(values.mean())
        features[f"{prefix}Min"] = float(values.min())
        features[f"{prefix}STD"] = float(values.std())
    centered = encoded - encoded.mean(axis=0)
    try:
        _, singular, directions = np.linalg.svd(centered, full_matrices=False)
    except np.linalg.LinAlgError:
        return features
    variance = singular ** 2
    if not variance.sum() > 0:
        return features
    # The fewest leading components whose variance ratios add up to at least 0.95, as a
    # fraction of the encoded columns.
    cumulative = np.cumsum(variance / variance.sum())
    components = min(int(np.searchsorted(cumulative, 0.95)) + 1, len(variance))
    features["PCAFractionOfComponentsFor95PercentVariance"] = components / encoded.shape[1]
    # A component's sign is arbitrary; scikit-learn's PCA (auto-sklearn's) puts the row that lies
    # farthest from the mean along it on the positive side.
    first = centered @ directions[0]
    if first[np.argmax(np.abs(first))] < 0:
        first = -first
    first_skewness, first_kurtosis = _moments(first[:, None])
    features["PCASkewnessFirstPC"] = float(first_skewness[0])
    features["PCAKurtosisFirstPC"] = float(first_kurtosis[0])
    return features


def _encoded(numeric: Dict[int, np.ndarray], symbols: Dict[int, List[Any]],
             columns: List[np.ndarray], missing: np.ndarray, n_rows: int) -> np.ndarray:
    """The landmarkers' input: numeric columns mean-imputed (0 if all missing), categorical
    ones one-hot (missing as its own value), every column standardized (constant ones 0)."""
    blocks = []
    for j in range(len(columns)):
        if j in numeric:
            values = numeric[j].copy()
            present = ~missing[:, j]
            values[~present] = values[present].mean() if present.any() else 0.0
            blocks.append(values[:, None])
        else:
            index = {value: k for k, value in enumerate(symbols[j])}
            one_hot = np.zeros((n_rows, len(index) + int(missing[:, j].any())))
            for i, value in enumerate(columns[j]):
                one_hot[i, len(index) if missing[i, j] else index[value]] = 1.0
            blocks.append(one_hot)
    encoded = np.hstack(blocks)
    scale = encoded.std(axis=0)
    scale[scale == 0] = 1.0
    return (encoded - encoded.mean(axis=0)) / scale


def _landmarkers(encoded: np.ndarray, labels: np.ndarray) -> Dict[str, float]:
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
    from sklearn.model_selection import StratifiedKFold
    from sklearn.naive_bayes import GaussianNB
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.tree import DecisionTreeClassifier

    _, classes = np.unique(labels.astype(str) if labels.dtype == object else labels,
                           return_inverse=True)
    counts = np.bincount(classes)
    if len(counts) < 2 or counts.max() < LANDMARK_FOLDS:
        return {}
    order = np.arange(len(classes))
    np.random.RandomState(LANDMARK_SEED).shuffle(order)
    data, target = encoded[order], classes[order]
    learners = {
        "Landmark1NN": lambda: KNeighborsClassifier(n_neighbors=1),
        "LandmarkDecisionNodeLearner": lambda: DecisionTreeClassifier(
            criterion="entropy", max_depth=1, random_state=LANDMARK_SEED),
        "LandmarkDecisionTree": lambda: DecisionTreeClassifier(random_state=LANDMARK_SEED),
        "LandmarkLDA": LinearDiscriminantAnalysis,
        "LandmarkNaiveBayes": GaussianNB,
        "LandmarkRandomNodeLearner": lambda: DecisionTreeClassifier(
            criterion="entropy", max_depth=1, max_features=1, random_state=LANDMARK_SEED),
    }
    folds = list(StratifiedKFold(n_splits=LANDMARK_FOLDS).split(data, target))
    features = {}
    with warnings.catch_warnings():
        # Classes smaller than the fold count, and LDA's collinearity warning.
        warnings.simplefilter("ignore")
        for name, make in learners.items():
            try:
                accuracies = [
                    float(np.mean(make().fit(data[train], target[train]).predict(data[test])
                                  == target[test]))
                    for train, test in folds]
            except (ValueError, np.linalg.LinAlgError):
                continue
            features[name] = float(np.mean(accuracies))
    return features
