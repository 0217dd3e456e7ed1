"""From a dataset to a tuned scikit-learn pipeline in one call.

::

    from sklearn.datasets import load_breast_cancer
    import metaopt.sklearn

    X, y = load_breast_cancer(return_X_y=True)
    result = metaopt.sklearn.tune(X, y, n_trials=25, server="localhost:50051")
    result.pipeline.predict(X[:5])     # the best pipeline, refitted on all of (X, y)
    print(result.table())              # every trial, with the best so far
    result.save("report/")             # trials.csv, best_so_far.svg, report.md

The search space is the sklearn-pipelines meta-dataset's (:data:`SPACE`): an imputer, a scaler, a
reducer and one of eight estimators, with their hyperparameters. :func:`tune` creates a DeepPipe
study over it, bound to the server's bundled ``sklearn-pipelines-deeppipe`` model, with the
dataset's meta-features (:mod:`metaopt.metafeatures`). The first suggestions are the model's
portfolio (pipelines chosen to be good across its training tasks; a model version with a
task-aware design starts from the best pipelines of the training tasks most like this one
instead, which cross-validation found worse for this space) and the model's meta-learned kernel
ranks the rest. Every suggestion is evaluated here, on this machine, with the meta-dataset's
protocol (a stratified 70/30 holdout split with seed 0, balanced accuracy) or by stratified
k-fold cross-validation, in worker processes under a per-fit CPU-time limit.

:func:`build_pipeline` rebuilds, for any configuration of the space, the exact pipeline the
meta-dataset evaluated (its README is the specification: fixed preprocessing of numeric and
categorical columns, then scaler, reducer and estimator with the stated defaults).

Needs numpy, scipy and scikit-learn (Debian's ``python3-sklearn``); pandas only for DataFrames.
Evaluation runs in worker processes (fresh interpreters): POSIX only.

The package, by concept: :mod:`~metaopt.sklearn.space` (the space, its constants and
configurations), :mod:`~metaopt.sklearn.pipelines` (building the pipelines),
:mod:`~metaopt.sklearn.evaluation` (the protocol, worker processes and the CPU-time limit),
:mod:`~metaopt.sklearn.ensemble` (greedy ensemble selection over the evaluated pipelines),
:mod:`~metaopt.sklearn.report` (the trial table and plot) and :mod:`~metaopt.sklearn.tune` (the
loop). Everything public is importable from ``metaopt.sklearn``.
"""

from metaopt.sklearn.ensemble import Ensemble, EnsembleSummary, Selection, greedy_selection
from metaopt.sklearn.evaluation import Evaluation, Evaluator, class_scores, evaluate
from metaopt.sklearn.pipelines import (ColumnsInfo, build_pipeline, columns_info,
                                      f_classif_nan_to_zero)
from metaopt.sklearn.report import TrialRecord, TuneResult, svg_line_plot
from metaopt.sklearn.space import (DEFAULT_FIT_TIME_LIMIT, HOLDOUT_TEST_SIZE, OBJECTIVE,
                                   RANDOM_STATE, SPACE, SPLIT_SEED, STAGES, Configuration,
                                   describe, parse_configuration, search_space_proto)
from metaopt.sklearn.tune import INTERRUPTED, MODEL, tune

__all__ = [
    "SPACE", "STAGES", "OBJECTIVE", "MODEL", "HOLDOUT_TEST_SIZE", "SPLIT_SEED", "RANDOM_STATE",
    "DEFAULT_FIT_TIME_LIMIT", "INTERRUPTED", "Configuration", "search_space_proto",
    "parse_configuration", "describe", "ColumnsInfo", "columns_info", "f_classif_nan_to_zero",
    "build_pipeline", "Evaluation", "Evaluator", "evaluate", "class_scores", "Ensemble",
    "EnsembleSummary", "Selection", "greedy_selection", "TrialRecord", "TuneResult",
    "svg_line_plot", "tune",
]
