#!/usr/bin/env python3
"""Tunes a scikit-learn pipeline with metaopt: scaler x (SVM | k-NN) on a bundled dataset.

The server suggests a pipeline and its hyperparameters; this script scores it by k-fold
cross-validation and reports the mean accuracy back. With a running server:

    PYTHONPATH=build/clients/python python3 clients/python/examples/tune_sklearn.py \\
        --server localhost:50051 --trials 20 --algorithm gp

Run again with the same --study-id to continue the same study.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from typing import Any, Dict

import metaopt
from sklearn import datasets
from sklearn.model_selection import StratifiedKFold, cross_val_score
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import MinMaxScaler, StandardScaler
from sklearn.svm import SVC

SPACE = metaopt.search_space({
    "scaler": {"none": {}, "standard": {}, "minmax": {}},
    "estimator": {
        "svm": {"C": metaopt.Float(1e-2, 1e3, log=True),
                "gamma": metaopt.Float(1e-5, 1e-1, log=True)},
        "knn": {"n_neighbors": metaopt.Int(1, 30),
                "weights": metaopt.Categorical(["uniform", "distance"])},
    },
})

DATASETS = {"digits": datasets.load_digits, "breast_cancer": datasets.load_breast_cancer,
            "wine": datasets.load_wine}


def build_pipeline(trial: metaopt.Trial, seed: int) -> Pipeline:
    """The scikit-learn pipeline a trial describes."""
    choices = trial.assignments
    steps = []
    scaler = choices["scaler"].algorithm
    if scaler == "standard":
        steps.append(("scaler", StandardScaler()))
    elif scaler == "minmax":
        steps.append(("scaler", MinMaxScaler()))
    estimator = choices["estimator"]
    params: Dict[str, Any] = estimator.params
    if estimator.algorithm == "svm":
        steps.append(("svm", SVC(C=params["C"], gamma=params["gamma"], random_state=seed)))
    else:
        steps.append(("knn", KNeighborsClassifier(n_neighbors=params["n_neighbors"],
                                                  weights=params["weights"])))
    return Pipeline(steps)


def describe(trial: metaopt.Trial) -> str:
    """``minmax -> svm(C=12.3, gamma=0.00456)``."""
    steps = []
    for choice in trial.assignments.values():
        params = ", ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}"
                           for k, v in choice.params.items())
        steps.append(f"{choice.algorithm}({params})" if params else choice.algorithm)
    return " -> ".join(steps)


def main(argv: Any = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", default=os.environ.get("METAOPT_SERVER", "localhost:50051"),
                        help="host:port of the metaopt server (default $METAOPT_SERVER, else "
                             "localhost:50051)")
    parser.add_argument("--token", default=os.environ.get("METAOPT_TOKEN"),
                        help="bearer token, if the server requires one (default $METAOPT_TOKEN)")
    parser.add_argument("--root-cert", help="PEM file of the CA of the server's TLS certificate")
    parser.add_argument("--study-id", help="default: sklearn-DATASET-ALGORITHM")
    parser.add_argument("--algorithm", default="gp",
                        choices=["gp", "deeppipe", "mosaic", "random"])
    parser.add_argument("--dataset", default="digits", choices=sorted(DATASETS))
    parser.add_argument("--trials", type=int, default=20, help="trials to evaluate in this run")
    parser.add_argument("--initial-trials", type=int, default=5,
                        help="initial-design trials before the model takes over")
    parser.add_argument("--folds", type=int, default=3, help="cross-validation folds")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.trials < 1 or args.folds < 2:
        parser.error("--trials must be >= 1 and --folds >= 2")

    X, y = DATASETS[args.dataset](return_X_y=True)
    folds = StratifiedKFold(n_splits=args.folds, shuffle=True, random_state=args.seed)
    study_id = args.study_id or f"sklearn-{args.dataset}-{args.algorithm}"

    with metaopt.Client(args.server, token=args.token, root_certificates=args.root_cert) as client:
        study = client.create_study(
            study_id, SPACE, objective="cv_accuracy", goal="maximize",
            algorithm=args.algorithm, seed=args.seed,
            initial_trials=args.initial_trials)
        print(f"study {study.id} ({'created' if study.created else 'existing'}, "
              f"{args.algorithm}, bound model: {study.bound_model or 'none'})")
        for _ in range(args.trials):
            (trial,) = study.suggest()
            pipeline = build_pipeline(trial, args.seed)
            started = time.monotonic()
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    accuracy = float(cross_val_score(pipeline, X, y, cv=folds).mean())
            except Exception as e:  # a pipeline that cannot be fitted is a failed trial
                study.observe(trial, failed=f"{type(e).__name__}: {e}")
                print(f"trial {trial.id:3d} failed: {e}")
                continue
            seconds = time.monotonic() - started
            study.observe(trial, accuracy, metrics={"cv_seconds": seconds})
            print(f"trial {trial.id:3d} accuracy {accuracy:.4f} ({seconds:.2f} s, "
                  f"{trial.metadata.get('policy', '?')}): {describe(trial)}")

        best = study.best_trial()
        if best is None:
            print("no trial completed", file=sys.stderr)
            return 1
        print(f"best: trial {best.id} accuracy {best.value:.4f} after {study.trial_count} trials: "
              f"{describe(best)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
