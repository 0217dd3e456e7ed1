#!/usr/bin/python3
"""Merges a meta-dataset folder with collected tasks over the same space into one folder.

    data/prep/collect/merge_meta_datasets.py BASE COLLECTED OUT

BASE keeps its tasks and their splits (its test split stays test: nothing trains on it);
COLLECTED's tasks join as train tasks. Both must share space.json and evaluations.csv's header.
metafeatures.csv keeps BASE's columns, in its order (a collected task's missing feature is an
empty cell). OUT is written whole (into OUT.partial, then renamed). Used to meta-train the
sklearn-pipelines models on its train and valid tasks plus data/sklearn-pipelines-collected
(docs/meta_datasets.md).
"""

import csv
import os
import shutil
import sys


def read(path):
    with open(path, newline="") as file:
        rows = list(csv.reader(file))
    return rows[0], rows[1:]


def main(argv):
    if len(argv) != 4:
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    base, collected, out = argv[1:]
    with open(os.path.join(base, "space.json")) as a, \
            open(os.path.join(collected, "space.json")) as b:
        if a.read() != b.read():
            print(f"merge: {base} and {collected} have different space.json", file=sys.stderr)
            return 1
    header, base_rows = read(os.path.join(base, "evaluations.csv"))
    other_header, collected_rows = read(os.path.join(collected, "evaluations.csv"))
    if header != other_header:
        print("merge: evaluations.csv headers differ", file=sys.stderr)
        return 1
    task_header, base_tasks = read(os.path.join(base, "tasks.csv"))
    other_task_header, collected_tasks = read(os.path.join(collected, "tasks.csv"))
    names = {row[0] for row in base_tasks}
    clash = sorted(names & {row[0] for row in collected_tasks})
    if clash:
        print(f"merge: tasks in both folders: {clash}", file=sys.stderr)
        return 1
    feature_header, base_features = read(os.path.join(base, "metafeatures.csv"))
    other_feature_header, collected_features = read(os.path.join(collected, "metafeatures.csv"))
    column = {name: j for j, name in enumerate(other_feature_header)}

    partial = out.rstrip("/") + ".partial"
    shutil.rmtree(partial, ignore_errors=True)
    os.makedirs(partial)
    shutil.copy(os.path.join(base, "space.json"), partial)
    with open(os.path.join(partial, "evaluations.csv"), "w", newline="") as file:
        writer = csv.writer(file, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(base_rows)
        writer.writerows(collected_rows)
    with open(os.path.join(partial, "tasks.csv"), "w", newline="") as file:
        writer = csv.writer(file, lineterminator="\n")
        writer.writerow(task_header)
        writer.writerows(base_tasks)
        at = {name: j for j, name in enumerate(other_task_header)}
        for row in collected_tasks:
            writer.writerow([row[at[name]] if name in at else "" for name in task_header])
    with open(os.path.join(partial, "metafeatures.csv"), "w", newline="") as file:
        writer = csv.writer(file, lineterminator="\n")
        writer.writerow(feature_header)
        writer.writerows(base_features)
        for row in collected_features:
            writer.writerow([row[column[name]] if name in column else ""
                             for name in feature_header])
    with open(os.path.join(partial, "README.md"), "w") as file:
        file.write(f"# {os.path.basename(base.rstrip('/'))} and collected tasks\n\n"
                   f"Written by data/prep/collect/merge_meta_datasets.py: the {len(base_tasks)} "
                   f"tasks of the base folder with their splits and the {len(collected_tasks)} "
                   "collected tasks as train tasks. Generated: do not edit.\n")
    shutil.rmtree(out, ignore_errors=True)
    os.rename(partial, out)
    print(f"merge: wrote {out}: {len(base_tasks)} + {len(collected_tasks)} tasks, "
          f"{len(base_rows) + len(collected_rows)} evaluations", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
