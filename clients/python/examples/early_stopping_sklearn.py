#!/usr/bin/env python3
"""Tunes a scikit-learn MLP epoch by epoch and stops the trials the server prunes.

Every trial trains an MLPClassifier with one ``partial_fit`` call per epoch and reports the
validation log loss after each epoch with ``trial.report(epoch, loss)``; when the study's
early-stopping rule (ASHA by default) says the trial is hopeless, the script stops training it and
observes the last loss (the trial ends STOPPED). With a running server:

    PYTHONPATH=build/clients/python python3 clients/python/examples/early_stopping_sklearn.py \\
        --server localhost:50051 --trials 30 --epochs 27 --rule asha

At the end it prints how many epochs the run trained and how many it would have trained
without stopping. Run again with the same --study-id to continue the same study.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from typing import Any, Tuple

import numpy as np

import metaopt
from metaopt.v1 import study_pb2
from sklearn import datasets
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import log_loss
from sklearn.model_selection import train_test_split
from sklearn.neural_network import MLPClassifier
from sklearn.preprocessing import StandardScaler

SPACE = metaopt.flat_space({
    "solver": metaopt.Categorical(["adam", "sgd"]),
    "learning_rate_init": metaopt.Float(1e-4, 0.3, log=True),
    "alpha": metaopt.Float(1e-6, 0.1, log=True),
    "hidden_size": metaopt.Int(8, 256, log=True),
    "batch_size": metaopt.Int(16, 256, log=True),
})

DATASETS = {"digits": datasets.load_digits, "breast_cancer": datasets.load_breast_cancer,
            "wine": datasets.load_wine}


def early_stopping(rule: str, epochs: int) -> study_pb2.EarlyStoppingSpec:
    """The study's rule: ASHA (rungs at 1, 3, 9, ... epochs), median stopping, or none."""
    spec = study_pb2.EarlyStoppingSpec()
    if rule == "asha":
        spec.asha.min_resource = 1
        spec.asha.reduction_factor = 3
    elif rule == "median":
        spec.median.start_step = max(1, epochs // 4)
        spec.median.min_trials = 3
    return spec


def load(name: str, seed: int) -> Tuple[Any, Any, Any, Any]:
    """Standardised stratified 70/30 train/validation split of a bundled dataset."""
    X, y = DATASETS[name](return_X_y=True)
    X_train, X_valid, y_train, y_valid = train_test_split(
        X, y, test_size=0.3, stratify=y, random_state=seed)
    scaler = StandardScaler().fit(X_train)
    return scaler.transform(X_train), y_train, scaler.transform(X_valid), y_valid


def main(argv: Any = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", default=os.environ.get("METAOPT_SERVER", "localhost:50051"),
                        help="host:port of the metaopt server (default $METAOPT_SERVER, else "
                             "localhost:50051)")
    parser.add_argument("--token", default=os.environ.get("METAOPT_TOKEN"),
                        help="bearer token, if the server requires one (default $METAOPT_TOKEN)")
    parser.add_argument("--root-cert", help="PEM file of the CA of the server's TLS certificate")
    parser.add_argument("--study-id", help="default: early-stopping-DATASET-RULE")
    parser.add_argument("--dataset", default="digits", choices=sorted(DATASETS))
    parser.add_argument("--rule", default="asha", choices=["asha", "median", "none"])
    parser.add_argument("--algorithm", default="random", choices=["random", "gp"])
    parser.add_argument("--trials", type=int, default=30, help="trials to evaluate in this run")
    parser.add_argument("--epochs", type=int, default=27, help="epochs of a trial run to its end")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.trials < 1 or args.epochs < 1:
        parser.error("--trials and --epochs must be >= 1")

    X_train, y_train, X_valid, y_valid = load(args.dataset, args.seed)
    classes = np.unique(y_train)
    study_id = args.study_id or f"early-stopping-{args.dataset}-{args.rule}"
    spec = metaopt.study_spec(SPACE, objective="valid_log_loss", goal="minimize",
                              algorithm=args.algorithm, seed=args.seed)
    if args.rule != "none":
        spec.early_stopping.CopyFrom(early_stopping(args.rule, args.epochs))

    trained = 0
    stopped = 0
    with metaopt.Client(args.server, token=args.token, root_certificates=args.root_cert) as client:
        study = client.create_study(study_id, spec=spec)
        print(f"study {study.id} ({'created' if study.created else 'existing'}, "
              f"{args.algorithm}, early stopping: {args.rule})")
        for _ in range(args.trials):
            (trial,) = study.suggest()
            p = trial.params
            model = MLPClassifier(hidden_layer_sizes=(p["hidden_size"],), solver=p["solver"],
                                  learning_rate_init=p["learning_rate_init"], alpha=p["alpha"],
                                  batch_size=p["batch_size"], random_state=args.seed)
            started = time.monotonic()
            loss = float("nan")
            epoch = 0
            pruned = False
            for epoch in range(1, args.epochs + 1):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    model.partial_fit(X_train, y_train, classes=classes)
                proba = model.predict_proba(X_valid)
                if not np.all(np.isfinite(proba)):  # the weights diverged: no use going on
                    break
                loss = float(log_loss(y_valid, proba, labels=classes))
                if trial.report(epoch, loss):  # the server says: stop this trial
                    pruned = True
                    break
            trained += epoch
            if np.isnan(loss):
                study.observe(trial, failed="the network diverged in its first epoch")
                print(f"trial {trial.id:3d} failed: diverged")
                continue
            # A pruned trial is observed with its last loss and ends STOPPED.
            study.observe(trial, loss)
            stopped += pruned
            print(f"trial {trial.id:3d} {'stopped after' if pruned else 'ran'} {epoch:2d} "
                  f"epochs, valid log loss {loss:.4f} ({time.monotonic() - started:.2f} s): "
                  f"{p['solver']} lr={p['learning_rate_init']:.3g} alpha={p['alpha']:.3g} "
                  f"hidden={p['hidden_size']} batch={p['batch_size']}")
        best = study.best_trial()
        full = args.trials * args.epochs
        print(f"trained {trained} epochs of {full} without stopping "
              f"({full / max(trained, 1):.2f}x less); {stopped} of {args.trials} trials stopped")
        if best is not None:
            print(f"best: trial {best.id} valid log loss {best.value:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
