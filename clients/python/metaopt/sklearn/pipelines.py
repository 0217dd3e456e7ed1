"""The pipelines of the space: :func:`build_pipeline` rebuilds, for any configuration, the exact
scikit-learn pipeline the sklearn-pipelines meta-dataset evaluated (its README is the
specification: fixed preprocessing of numeric and categorical columns, then scaler, reducer and
estimator with the stated defaults)."""

from __future__ import annotations

import dataclasses
import inspect
import warnings
from typing import Any, Mapping, Tuple

import numpy as np

from metaopt import metafeatures
from metaopt.sklearn.space import RANDOM_STATE, ParamValue, parse_configuration

@dataclasses.dataclass(frozen=True)
class ColumnsInfo:
    """What :func:`build_pipeline` needs to know about the data the pipeline will be fitted on.

    Attributes:
        numeric: positions of the numeric columns (imputed with the imputer stage's strategy).
        categorical: positions of the categorical columns (missing -> 'c_missing', one-hot).
        n_rows: rows of the training data (PCA's component count and k-NN's neighbours are
            clipped to it).
        n_encoded: columns after the preprocessing: numeric columns with at least one value,
            plus, per categorical column, its distinct values and one more if any is missing.
    """

    numeric: Tuple[int, ...]
    categorical: Tuple[int, ...]
    n_rows: int
    n_encoded: int


def columns_info(X: Any, categorical: Any = None) -> ColumnsInfo:
    """The :class:`ColumnsInfo` of the training data ``X`` (array or DataFrame).

    ``categorical`` is as in :func:`metaopt.metafeatures.compute`: a boolean mask or column
    indices; None infers it (a DataFrame's object/category/string/bool columns, an object array's
    text columns). Raises ValueError for malformed input, naming it.
    """
    columns, names, inferred = metafeatures._columns(X)
    mask = inferred if categorical is None else metafeatures._categorical_mask(
        categorical, len(columns))
    n_encoded = 0
    for j, column in enumerate(columns):
        missing = metafeatures._missing(column)
        if mask[j]:
            n_encoded += len(set(_to_text(column[~missing][:, None])[:, 0])) + int(missing.any())
        else:
            metafeatures._numeric_column(column, missing, names[j])
            n_encoded += int(not missing.all())
    return ColumnsInfo(numeric=tuple(j for j in range(len(columns)) if not mask[j]),
                       categorical=tuple(j for j in range(len(columns)) if mask[j]),
                       n_rows=len(columns[0]), n_encoded=n_encoded)


def _cell_is_missing(value: Any) -> bool:
    return metafeatures._is_missing(value)


def _to_float(X: Any) -> np.ndarray:
    """Numeric columns as float64, missing cells (NaN, None, pandas' NA) as NaN."""
    array = np.asarray(X)
    if array.dtype.kind in "biuf":
        return array.astype(np.float64)
    array = np.asarray(X, dtype=object)
    out = np.full(array.shape, np.nan)
    for index, value in np.ndenumerate(array):
        if not _cell_is_missing(value):
            out[index] = float(value)
    return out


def _to_text(X: Any) -> np.ndarray:
    """Categorical columns as text, missing cells as NaN (which the 'c_missing' fill replaces)."""
    array = np.asarray(X, dtype=object)
    out = np.empty(array.shape, dtype=object)
    for index, value in np.ndenumerate(array):
        out[index] = np.nan if _cell_is_missing(value) else str(value)
    return out


def f_classif_nan_to_zero(X: Any, y: Any) -> Tuple[np.ndarray, np.ndarray]:
    """scikit-learn's ANOVA F-test with NaN scores (constant columns) set to 0, as the
    meta-dataset's select_kbest used it."""
    from sklearn.feature_selection import f_classif

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        scores, pvalues = f_classif(X, y)
    return np.nan_to_num(scores, nan=0.0), pvalues


# -- pipelines ---------------------------------------------------------------------------------

def import_sklearn() -> None:
    """Imports every scikit-learn module :func:`build_pipeline` and the protocol's scoring use.

    They are imported lazily (where they are used); a fresh evaluation process imports them
    before its first configuration, so that this second or so of start-up overlaps the
    caller's work instead of counting in the first trial's fit (and its CPU-time limit).
    """
    import sklearn.compose  # noqa: F401
    import sklearn.decomposition  # noqa: F401
    import sklearn.ensemble  # noqa: F401
    import sklearn.feature_selection  # noqa: F401
    import sklearn.impute  # noqa: F401
    import sklearn.linear_model  # noqa: F401
    import sklearn.metrics  # noqa: F401
    import sklearn.naive_bayes  # noqa: F401
    import sklearn.neighbors  # noqa: F401
    import sklearn.neural_network  # noqa: F401
    import sklearn.pipeline  # noqa: F401
    import sklearn.preprocessing  # noqa: F401
    import sklearn.svm  # noqa: F401


def _one_hot_encoder() -> Any:
    from sklearn.preprocessing import OneHotEncoder

    # scikit-learn 1.2 renamed `sparse` to `sparse_output`.
    if "sparse_output" in inspect.signature(OneHotEncoder).parameters:
        return OneHotEncoder(handle_unknown="ignore", sparse_output=False)
    return OneHotEncoder(handle_unknown="ignore", sparse=False)


def _estimator(algorithm: str, params: Mapping[str, ParamValue], n_rows: int) -> Any:
    from sklearn import ensemble, linear_model, naive_bayes, neighbors, neural_network, svm

    if algorithm == "logreg":
        return linear_model.LogisticRegression(C=params["C"], solver="lbfgs", max_iter=300,
                                               random_state=RANDOM_STATE)
    if algorithm == "svm_rbf":
        return svm.SVC(kernel="rbf", C=params["C"], gamma=params["gamma"], max_iter=200000,
                       random_state=RANDOM_STATE)
    if algorithm == "knn":
        return neighbors.KNeighborsClassifier(n_neighbors=min(int(params["n_neighbors"]), n_rows),
                                              weights=params["weights"], n_jobs=1)
    if algorithm in ("rf", "extra_trees"):
        forest = (ensemble.RandomForestClassifier if algorithm == "rf"
                  else ensemble.ExtraTreesClassifier)
        return forest(n_estimators=int(params["n_estimators"]), max_depth=int(params["max_depth"]),
                      max_features=params["max_features"], random_state=RANDOM_STATE, n_jobs=1)
    if algorithm == "gbt":
        return ensemble.HistGradientBoostingClassifier(
            learning_rate=params["learning_rate"], max_depth=int(params["max_depth"]),
            max_iter=int(params["max_iter"]), max_leaf_nodes=31, early_stopping=False,
            random_state=RANDOM_STATE)
    if algorithm == "gnb":
        return naive_bayes.GaussianNB()
    if algorithm == "mlp":
        return neural_network.MLPClassifier(
            hidden_layer_sizes=(int(params["hidden_size"]),), alpha=params["alpha"],
            learning_rate_init=params["learning_rate_init"], solver="adam", max_iter=200,
            random_state=RANDOM_STATE)
    raise AssertionError(f"unknown estimator {algorithm!r}")


def build_pipeline(configuration: Any, X_columns_info: Any) -> Any:
    """The scikit-learn ``Pipeline`` the sklearn-pipelines meta-dataset evaluated for a
    configuration of :data:`SPACE` (unfitted).

    Steps: ``preprocess`` (a ColumnTransformer: numeric columns -> SimpleImputer with the imputer
    stage's strategy; categorical columns -> constant 'c_missing' for missing values ->
    OneHotEncoder(handle_unknown='ignore'), dense), ``scaler`` (on all columns), ``reducer``
    (PCA with round(n_components_frac * min(n_rows, n_encoded)) components, or SelectKBest with
    the F-test and k = round(k_frac * n_encoded), both at least 1), ``estimator`` (the
    meta-dataset's defaults, random_state 0, one thread; k-NN's neighbours clipped to n_rows).

    Args:
        configuration: anything :func:`parse_configuration` accepts (a Trial, a stage mapping, a
            flat evaluations.csv row).
        X_columns_info: the :class:`ColumnsInfo` of the data the pipeline will be fitted on,
            or that data itself (then :func:`columns_info` infers the categorical columns).
    """
    from sklearn.compose import ColumnTransformer
    from sklearn.decomposition import PCA
    from sklearn.feature_selection import SelectKBest
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import (FunctionTransformer, MinMaxScaler, RobustScaler,
                                       StandardScaler)

    config = parse_configuration(configuration)
    info = (X_columns_info if isinstance(X_columns_info, ColumnsInfo)
            else columns_info(X_columns_info))
    if info.n_rows < 1 or info.n_encoded < 1:
        raise ValueError(f"X_columns_info: {info!r} describes no data; it needs at least one row "
                         "and one column with a value")

    branches = []
    if info.numeric:
        branches.append(("numeric", Pipeline([
            ("as_float", FunctionTransformer(_to_float)),
            ("impute", SimpleImputer(strategy=config["imputer"].algorithm)),
        ]), list(info.numeric)))
    if info.categorical:
        branches.append(("categorical", Pipeline([
            ("as_text", FunctionTransformer(_to_text)),
            ("impute", SimpleImputer(strategy="constant", fill_value="c_missing")),
            ("one_hot", _one_hot_encoder()),
        ]), list(info.categorical)))
    preprocess = ColumnTransformer(branches, remainder="drop", sparse_threshold=0.0)

    scalers = {"none": lambda: "passthrough", "standard": StandardScaler,
               "minmax": MinMaxScaler, "robust": RobustScaler}
    scaler = scalers[config["scaler"].algorithm]()

    reducer_name, reducer_params = config["reducer"]
    reducer: Any = "passthrough"
    if reducer_name == "pca":
        n = max(1, round(reducer_params["n_components_frac"] * min(info.n_rows, info.n_encoded)))
        reducer = PCA(n_components=int(n), random_state=RANDOM_STATE)
    elif reducer_name == "select_kbest":
        k = max(1, round(reducer_params["k_frac"] * info.n_encoded))
        reducer = SelectKBest(f_classif_nan_to_zero, k=int(k))

    estimator_name, estimator_params = config["estimator"]
    estimator = _estimator(estimator_name, estimator_params, info.n_rows)
    return Pipeline([("preprocess", preprocess), ("scaler", scaler), ("reducer", reducer),
                     ("estimator", estimator)])
