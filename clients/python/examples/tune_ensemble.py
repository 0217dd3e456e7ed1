#!/usr/bin/env python3
"""Held-out balanced accuracy of metaopt.sklearn.tune's ensemble (``ensemble=K``) against its best
single pipeline, on compare_tuners.py's carData datasets.

For each dataset and seed s: the stratified 75/25 split of compare_tuners (seed s); one tune call
on the design part (25 trials, study seed s, ``ensemble=K``), whose ``result.pipeline`` is the
selected ensemble refitted on the design part; the best single configuration refitted on the
design part too; both scored on the held-out part.

    PYTHONPATH=build/clients/python python3 clients/python/examples/tune_ensemble.py \\
        --server localhost:50051 --seeds 3 --ensemble 50

prints one row per run and a Markdown table (mean ± standard deviation over the seeds, and the
paired difference ensemble − best single over all runs).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
import warnings

import numpy as np
import pandas as pd
from sklearn.metrics import balanced_accuracy_score
from sklearn.model_selection import train_test_split

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare_tuners  # noqa: E402  (the datasets, from beside this file)

from metaopt import sklearn as mosk  # noqa: E402

TRIALS = 25


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", default="localhost:50051")
    parser.add_argument("--datasets", default=",".join(compare_tuners.DATASETS))
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--ensemble", type=int, default=50)
    parser.add_argument("--csv-dir", default="",
                        help="read <name>.csv files from here instead of exporting with Rscript")
    args = parser.parse_args()
    names = [n for n in args.datasets.split(",") if n]
    unknown = sorted(set(names) - set(compare_tuners.DATASETS))
    if unknown:
        parser.error(f"--datasets: {unknown} are not among {sorted(compare_tuners.DATASETS)}")
    if args.seeds < 1:
        parser.error(f"--seeds: {args.seeds} must be >= 1")
    if args.csv_dir:
        frames = {n: pd.read_csv(os.path.join(args.csv_dir, f"{n}.csv")) for n in names}
    else:
        with tempfile.TemporaryDirectory() as directory:
            frames = compare_tuners.export(names, directory)
    warnings.simplefilter("ignore")

    rows = []
    for name in names:
        X, y = compare_tuners.dataset(frames[name], compare_tuners.DATASETS[name])
        for seed in range(args.seeds):
            X_design, X_test, y_design, y_test = train_test_split(
                X, y, test_size=0.25, stratify=y, random_state=seed)
            X_design, X_test = X_design.reset_index(drop=True), X_test.reset_index(drop=True)
            result = mosk.tune(X_design, y_design, n_trials=TRIALS, server=args.server,
                               seed=seed, progress=False, ensemble=args.ensemble,
                               study_id=f"ensemble-{name}-{seed}-{time.time_ns()}")
            summary = result.ensemble
            assert summary is not None
            single = mosk.build_pipeline(result.best_configuration, mosk.columns_info(X_design))
            single.fit(X_design, y_design)
            row = {
                "dataset": name, "rows": len(y), "seed": seed,
                "single_validation": summary.best_single_value,
                "ensemble_validation": summary.value,
                "single_heldout": balanced_accuracy_score(y_test, single.predict(X_test)),
                "ensemble_heldout": balanced_accuracy_score(y_test,
                                                            result.pipeline.predict(X_test)),
                "members": len(summary.members),
                "rounds": sum(n for _, n in summary.members),
            }
            rows.append(row)
            print(f"{name} seed {seed}: validation single {row['single_validation']:.4f} "
                  f"ensemble {row['ensemble_validation']:.4f}; held-out single "
                  f"{row['single_heldout']:.4f} ensemble {row['ensemble_heldout']:.4f}; "
                  f"{row['members']} members, {row['rounds']} rounds kept", flush=True)

    def cell(selected, key):
        values = [r[key] for r in selected]
        return f"{np.mean(values):.3f} ± {np.std(values):.3f}"

    print("\n| dataset | validation: best single | validation: ensemble | held-out: best single "
          "| held-out: ensemble | members (rounds kept) |")
    print("|---|---|---|---|---|---|")
    for name in names:
        selected = [r for r in rows if r["dataset"] == name]
        print(f"| {name} ({selected[0]['rows']} rows) | {cell(selected, 'single_validation')} | "
              f"{cell(selected, 'ensemble_validation')} | {cell(selected, 'single_heldout')} | "
              f"{cell(selected, 'ensemble_heldout')} | "
              f"{np.mean([r['members'] for r in selected]):.1f} "
              f"({np.mean([r['rounds'] for r in selected]):.1f}) |")
    print(f"| all ({len(rows)} runs) | {cell(rows, 'single_validation')} | "
          f"{cell(rows, 'ensemble_validation')} | {cell(rows, 'single_heldout')} | "
          f"{cell(rows, 'ensemble_heldout')} | "
          f"{np.mean([r['members'] for r in rows]):.1f} "
          f"({np.mean([r['rounds'] for r in rows]):.1f}) |")
    differences = [r["ensemble_heldout"] - r["single_heldout"] for r in rows]
    error = (np.std(differences, ddof=1) / math.sqrt(len(differences))
             if len(differences) > 1 else 0.0)
    print(f"\nheld-out, ensemble − best single: {np.mean(differences):+.4f} ± {error:.4f} "
          f"(standard error); ensemble better / equal / worse in "
          f"{sum(d > 0 for d in differences)} / {sum(d == 0 for d in differences)} / "
          f"{sum(d < 0 for d in differences)} of {len(differences)} runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
