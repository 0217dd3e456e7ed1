#!/usr/bin/env python3
"""The wall time of metaopt.sklearn.tune against random search for 25 trials, stage by stage.

Runs one method over compare_tuners.py's carData datasets (each design part of its seed's 75/25
split, as there): ``tune`` (one call, 25 trials, study seed = the seed, no refit) or ``random``
(compare_tuners.run_random: 25 uniform draws through one Evaluator). Time the whole command
from outside (``/usr/bin/time -v``) for the comparison; ``--profile`` adds where the time went
(the client's calls, the evaluation processes' start-up and fits, the meta-features), and each
trial's value and pipeline are printed so that two versions can be checked for the same results:

    PYTHONPATH=build/clients/python python3 clients/python/examples/tune_overhead.py \\
        --method tune --server localhost:50051 --profile
    PYTHONPATH=build/clients/python python3 clients/python/examples/tune_overhead.py \\
        --method random --profile

``--csv-dir`` reads the datasets from ``<name>.csv`` files there (as compare_tuners.export
writes them) instead of exporting them with Rscript on every run.
"""

from __future__ import annotations

import argparse
import collections
import functools
import os
import sys
import tempfile
import time
from typing import Any, Callable, Dict

import pandas as pd
from sklearn.model_selection import train_test_split

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare_tuners  # noqa: E402  (the datasets and the random search, from beside this file)

from metaopt import client as metaopt_client  # noqa: E402
from metaopt import metafeatures  # noqa: E402
from metaopt.sklearn import evaluation  # noqa: E402

TRIALS = 25


class Profile:
    """Wall seconds and calls per stage, by wrapping the functions that make up each stage."""

    def __init__(self) -> None:
        self.seconds: Dict[str, float] = collections.defaultdict(float)
        self.calls: Dict[str, int] = collections.Counter()

    def wrap(self, owner: Any, name: str, stage: str,
             on_result: Callable[[Any], None] = lambda result: None) -> None:
        original = getattr(owner, name)

        @functools.wraps(original)
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.monotonic()
            try:
                result = original(*args, **kwargs)
            finally:
                self.seconds[stage] += time.monotonic() - start
                self.calls[stage] += 1
            on_result(result)
            return result

        setattr(owner, name, timed)

    def install(self) -> None:
        study = metaopt_client.Study
        self.wrap(metaopt_client.Client, "create_study", "CreateStudy")
        self.wrap(study, "suggest", "Suggest")
        self.wrap(study, "observe", "Observe")
        self.wrap(study, "trials", "ListTrials")
        self.wrap(metafeatures, "compute", "meta-features")
        self.wrap(evaluation.Evaluator, "close", "evaluation process: close")

        # The first evaluation of each Evaluator waits for its process's start-up (an
        # interpreter importing scikit-learn and reading the data): a stage of its own.
        original = evaluation.Evaluator.evaluate
        seen = set()

        @functools.wraps(original)
        def evaluate(evaluator: evaluation.Evaluator, *args: Any, **kwargs: Any) -> Any:
            first = id(evaluator) not in seen
            seen.add(id(evaluator))
            stage = ("first evaluation (with the process's start-up)" if first
                     else "other evaluations (wall, from the caller)")
            start = time.monotonic()
            result = original(evaluator, *args, **kwargs)
            self.seconds[stage] += time.monotonic() - start
            self.calls[stage] += 1
            self.seconds["fits: CPU s in the processes (all evaluations)"] += result.fit_seconds
            return result

        evaluation.Evaluator.evaluate = evaluate

    def report(self, total: float) -> str:
        lines = [f"{'stage':48s} {'seconds':>8s} {'calls':>6s} {'share':>6s}"]
        for stage, seconds in self.seconds.items():
            lines.append(f"{stage:48s} {seconds:8.2f} {self.calls.get(stage, 0):6d} "
                         f"{100 * seconds / total:5.1f}%")
        lines.append(f"{'total':48s} {total:8.2f}")
        return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--method", choices=("tune", "random"), required=True)
    parser.add_argument("--server", default="localhost:50051")
    parser.add_argument("--datasets", default=",".join(compare_tuners.DATASETS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--csv-dir", default="")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    names = [n for n in args.datasets.split(",") if n]
    unknown = sorted(set(names) - set(compare_tuners.DATASETS))
    if unknown:
        parser.error(f"--datasets: {unknown} are not among {sorted(compare_tuners.DATASETS)}")
    if args.csv_dir:
        frames = {n: pd.read_csv(os.path.join(args.csv_dir, f"{n}.csv")) for n in names}
    else:
        with tempfile.TemporaryDirectory() as directory:
            frames = compare_tuners.export(names, directory)
    profile = Profile()
    if args.profile:
        profile.install()

    from metaopt import sklearn as mosk

    total = 0.0
    for name in names:
        X, y = compare_tuners.dataset(frames[name], compare_tuners.DATASETS[name])
        X_design, _, y_design, _ = train_test_split(X, y, test_size=0.25, stratify=y,
                                                    random_state=args.seed)
        X_design = X_design.reset_index(drop=True)
        start = time.monotonic()
        if args.method == "tune":
            result = mosk.tune(X_design, y_design, n_trials=TRIALS, server=args.server,
                               seed=args.seed, refit=False, progress=False,
                               study_id=f"overhead-{name}-{args.seed}-{time.time_ns()}")
            history = [(r.value, r.pipeline) for r in result.trials]
        else:
            runs, _ = compare_tuners.run_random(X_design, y_design, args.seed)
            history = [(value, mosk.describe(config)) for value, config in runs]
        elapsed = time.monotonic() - start
        total += elapsed
        print(f"{name}: {args.method} {TRIALS} trials {elapsed:.2f} s", flush=True)
        for k, (value, pipeline) in enumerate(history):
            shown = "failed" if value is None else f"{value:.6f}"
            print(f"  {k + 1:2d} {shown} {pipeline}")
    print(f"all datasets: {total:.2f} s")
    if args.profile:
        print(profile.report(total))
    return 0


if __name__ == "__main__":
    sys.exit(main())
