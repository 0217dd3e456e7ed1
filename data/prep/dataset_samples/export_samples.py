#!/usr/bin/python3
"""Writes the Dataset2Vec samples of the sklearn-pipelines tasks, for metaopt-train and metaopt-bench.

    PYTHONPATH=build/clients/python /usr/bin/python3 data/prep/dataset_samples/export_samples.py \\
        --data $METAOPT_DATA/sklearn-pipelines --out build/dataset-samples/sklearn-pipelines

With --collected-tables DIR (the tables `python -m metaopt.collect` read, as
data/prep/collect/collect_extra.sh exports them), the tasks of a merged folder
(data/prep/collect/merge_meta_datasets.py) that are collected datasets are written too, read and
preprocessed by the collector's own loader (metaopt.collect.read_table), so that their samples
come from exactly the table that was evaluated.

For every task of tasks.csv it rebuilds the evaluated table from its source (the R packages
MASS, TH.data, kernlab, mlbench and modeldata through data/prep/dataset_samples/export_r_tables.R,
and scikit-learn's bundled datasets), applies the meta-dataset's preprocessing (README,
"Datasets": the class column split off, id columns dropped, a stratified subsample with seed 0 to
at most 2000 rows, classes with fewer than 6 rows after it dropped) and writes OUT/<task>.json:
the metaopt.v1.DatasetSample that metaopt.dataset_sample.draw makes of it, in the protobuf JSON
mapping (the format of `metaoptctl create-study --dataset-sample`). The README's generator is not
in the meta-dataset, so the 2000-row subsample is scikit-learn's stratified train_test_split
with random_state 0: the rows may differ from the evaluated ones, with the same class proportions.
Row, feature and class counts are checked against tasks.csv; a mismatch is reported and the task
still written. A task whose R package is missing is skipped with a message (Debian:
r-cran-mass r-cran-th.data r-cran-kernlab r-cran-mlbench r-cran-modeldata). Deterministic.
"""

import argparse
import csv
import os
import subprocess
import sys
import tempfile

import numpy as np

from google.protobuf import json_format
from metaopt import collect, dataset_sample

# task -> (class column, columns dropped besides it)
R_TASKS = {
    "MASS_birthwt": ("low", ["bwt"]),
    "THdata_GlaucomaM": ("Class", []),
    "kernlab_musk": ("Class", []),
    "kernlab_promotergene": ("Class", []),
    "kernlab_spam": ("type", []),
    "mlbench_DNA": ("Class", []),
    "mlbench_Glass": ("Type", []),
    "mlbench_HouseVotes84": ("Class", []),
    "mlbench_LetterRecognition": ("lettr", []),
    "mlbench_PimaIndiansDiabetes2": ("diabetes", []),
    "mlbench_Satellite": ("classes", []),
    "mlbench_Shuttle": ("Class", []),
    "mlbench_Sonar": ("Class", []),
    "mlbench_Soybean": ("Class", []),
    "mlbench_Vehicle": ("Class", []),
    "mlbench_Zoo": ("type", []),
    "modeldata_attrition": ("Attrition", []),
    "modeldata_bivariate": ("Class", []),
    "modeldata_cells": ("class", ["case"]),
    "modeldata_credit_data": ("Status", []),
    "modeldata_hpc_data": ("class", []),
    "modeldata_mlc_churn": ("churn", []),
    "modeldata_oils": ("class", []),
    "modeldata_scat": ("Species", []),
    "modeldata_stackoverflow": ("Remote", []),
}
SKLEARN_TASKS = ("sklearn_breast_cancer", "sklearn_digits", "sklearn_iris", "sklearn_wine")


def read_r_table(tables, task):
    """(X as an object array, categorical mask, labels) of an exported R table."""
    path = os.path.join(tables, task + ".csv")
    if not os.path.exists(path):
        return None
    with open(os.path.join(tables, task + ".kinds")) as f:
        kinds = [line.strip() for line in f if line.strip()]
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    target, dropped = R_TASKS[task]
    keep = [j for j, name in enumerate(header) if name != target and name not in dropped]
    t = header.index(target)
    labels = np.array([row[t] for row in body], dtype=object)
    X = np.empty((len(body), len(keep)), dtype=object)
    mask = []
    for out, j in enumerate(keep):
        categorical = kinds[j] == "categorical"
        mask.append(categorical)
        for i, row in enumerate(body):
            cell = row[j]
            if cell == "":
                X[i, out] = None
            else:
                X[i, out] = cell if categorical else float(cell)
    return X, mask, labels


def read_sklearn(task):
    from sklearn import datasets
    loader = {"sklearn_breast_cancer": datasets.load_breast_cancer,
              "sklearn_digits": datasets.load_digits, "sklearn_iris": datasets.load_iris,
              "sklearn_wine": datasets.load_wine}[task]
    X, y = loader(return_X_y=True)
    return X.astype(object), [False] * X.shape[1], y.astype(object)


def read_collected(folder, task):
    """(X, categorical mask, labels) of a collected dataset, already preprocessed by the
    collector's loader; None without the folder or the table."""
    if folder is None or not os.path.isfile(os.path.join(folder, task + ".kinds")):
        return None
    table = collect.read_table(folder, task)
    return table.X, table.categorical, table.labels


def preprocess(X, mask, labels):
    """The README's subsample: stratified (seed 0) to 2,000 rows, then small classes dropped."""
    rows = collect.protocol_rows(labels)
    return X[rows], mask, labels[rows]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="the sklearn-pipelines meta-dataset folder")
    parser.add_argument("--out", required=True, help="output folder (created if needed)")
    parser.add_argument("--tables", help="R tables already exported by export_r_tables.R "
                                         "(default: export them into a temporary folder)")
    parser.add_argument("--collected-tables",
                        help="the collected datasets' tables (<task>.csv with <task>.kinds, as "
                             "metaopt.collect reads them): tasks found there are written too")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.data, "tasks.csv"), newline="") as f:
        tasks = list(csv.DictReader(f))
    temporary = None
    tables = args.tables
    if tables is None:
        temporary = tempfile.TemporaryDirectory()
        tables = temporary.name
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "export_r_tables.R")
        try:
            subprocess.run(["Rscript", script, tables], check=True)
        except (OSError, subprocess.CalledProcessError) as error:
            print(f"export_samples: Rscript failed ({error}); R tasks are skipped", file=sys.stderr)
    written = mismatched = skipped = 0
    for task in tasks:
        name = task["task"]
        if name in SKLEARN_TASKS:
            table = preprocess(*read_sklearn(name))
        elif name in R_TASKS:
            table = read_r_table(tables, name)
            table = None if table is None else preprocess(*table)
        else:
            table = read_collected(args.collected_tables, name)
        if table is None:
            print(f"skip {name}: no source table (R package missing, or a collected task "
                  "without --collected-tables?)", file=sys.stderr)
            skipped += 1
            continue
        X, mask, labels = table
        got = (len(labels), X.shape[1], len(set(str(v) for v in labels)))
        want = (int(task["n_rows"]), int(task["n_features"]), int(task["n_classes"]))
        note = ""
        if got != want:
            mismatched += 1
            note = f"  MISMATCH: tasks.csv has rows/features/classes {want}"
        sample = dataset_sample.draw(X, labels, categorical=mask)
        with open(os.path.join(args.out, name + ".json"), "w") as f:
            f.write(json_format.MessageToJson(sample, preserving_proto_field_name=True,
                                              indent=None))
            f.write("\n")
        n, m, c = dataset_sample.shape(sample)
        print(f"{name}: {got[0]} rows, {got[1]} features, {got[2]} classes -> sample "
              f"{n} x {m} x {c}{note}")
        written += 1
    print(f"export_samples: {written} written, {mismatched} with other counts than tasks.csv, "
          f"{skipped} skipped")
    if temporary is not None:
        temporary.cleanup()


if __name__ == "__main__":
    main()
