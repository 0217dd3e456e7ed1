"""metaopt.collect against the real server: fidelity, resuming after kill -9, the folder it writes.

Fidelity: iris and wine (scikit-learn's, the sklearn-pipelines meta-dataset's tasks) are written
as tables, and a catalogue of 16 of the meta-dataset's recorded configurations (two per
estimator, the fastest recorded fits) is collected through the server by two workers. Every
collected y must equal the recorded one within 1e-6 (evaluations.csv keeps six significant
digits; neither dataset runs scikit-learn's randomized PCA). Then a collection killed with
SIGKILL part-way resumes to the same folder, each configuration exactly once.

Needs the meta-datasets ($METAOPT_DATA, else the data folder beside the checkout): skipped with a message when it is absent.
"""

from __future__ import annotations

import contextlib
import csv
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest
from typing import Dict, List, Tuple

import numpy as np
import sklearn.datasets

from metaopt import Client, collect
from metaopt import sklearn as pipelines
from server_process import ServerProcess
from test_metafeatures import shared_data_dir

TOLERANCE = 1e-6
PER_ESTIMATOR = 2
TASKS = {"sklearn_iris": "iris", "sklearn_wine": "wine"}


def source_folder():
    return shared_data_dir() / "sklearn-pipelines"


def write_catalogue(directory: str) -> Dict[Tuple[str, int], float]:
    """A catalogue folder of the fastest recorded configurations per estimator (their rows on
    both tasks); returns the recorded y by (task, config)."""
    with open(source_folder() / "evaluations.csv", newline="") as file:
        reader = csv.reader(file)
        header = next(reader)
        rows = [row for row in reader if row[0] in TASKS]
    at = {name: header.index(name) for name in ("estimator", "fit_seconds", "config", "y")}
    slowest: Dict[str, float] = {}
    for row in rows:  # a configuration's cost: its slower fit over the two tasks
        key = row[at["config"]]
        slowest[key] = max(slowest.get(key, 0.0), float(row[at["fit_seconds"]]))
    chosen = set()
    for estimator in pipelines.SPACE["estimator"]:
        ids = sorted({row[at["config"]] for row in rows if row[at["estimator"]] == estimator},
                     key=lambda c: (slowest[c], int(c)))
        chosen.update(ids[:PER_ESTIMATOR])
    kept = [row for row in rows if row[at["config"]] in chosen]
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "evaluations.csv"), "w", newline="") as file:
        writer = csv.writer(file, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(kept)
    with open(source_folder() / "space.json") as src, \
            open(os.path.join(directory, "space.json"), "w") as dst:
        dst.write(src.read())
    return {(row[0], int(row[at["config"]])): float(row[at["y"]]) for row in kept}


def write_tables(directory: str) -> None:
    """iris and wine as <task>.csv (class names as labels, as the meta-dataset used them) with
    their .kinds."""
    os.makedirs(directory, exist_ok=True)
    for task, name in TASKS.items():
        bunch = getattr(sklearn.datasets, f"load_{name}")()
        labels = np.asarray(bunch.target_names)[bunch.target]
        with open(os.path.join(directory, task + ".csv"), "w", newline="") as file:
            writer = csv.writer(file, lineterminator="\n")
            writer.writerow([f"x{j}" for j in range(bunch.data.shape[1])] + ["class"])
            for values, label in zip(bunch.data, labels):
                writer.writerow([repr(float(v)) for v in values] + [label])
        with open(os.path.join(directory, task + ".kinds"), "w") as file:
            file.write("numeric\n" * bunch.data.shape[1])


def read_folder(directory: str) -> Dict[Tuple[str, int], float]:
    with open(os.path.join(directory, "evaluations.csv"), newline="") as file:
        return {(row["task"], int(row["config"])): float(row["y"])
                for row in csv.DictReader(file)}


class CollectTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls) -> None:
        if not (source_folder() / "evaluations.csv").is_file():
            raise unittest.SkipTest(f"the sklearn-pipelines meta-dataset is absent from "
                                    f"{source_folder()} (set METAOPT_DATA to its parent folder)")

    def setUp(self) -> None:
        self.directory = tempfile.TemporaryDirectory()
        root = self.directory.name
        self.catalogue = os.path.join(root, "catalogue")
        self.tables = os.path.join(root, "tables")
        self.recorded = write_catalogue(self.catalogue)
        write_tables(self.tables)
        self.server = ServerProcess(os.path.join(root, "server"))
        self.server.start()
        self.client = Client(self.server.target)

    def tearDown(self) -> None:
        self.client.close()
        self.server.stop()
        self.directory.cleanup()

    def args(self, command: str, *extra: str) -> List[str]:
        return [command, "--server", self.server.target, "--catalogue", self.catalogue,
                "--datasets", self.tables, *extra]

    def check_folder(self, out: str) -> None:
        collected = read_folder(out)
        self.assertEqual(set(collected), set(self.recorded))
        worst = max(abs(collected[key] - self.recorded[key]) for key in collected)
        print(f"collect: {len(collected)} evaluations, largest difference to the recorded y "
              f"{worst:.2g}")
        for key, value in collected.items():
            self.assertLessEqual(abs(value - self.recorded[key]), TOLERANCE, key)
        with open(os.path.join(out, "tasks.csv"), newline="") as file:
            tasks = {row["task"]: row for row in csv.DictReader(file)}
        self.assertEqual(set(tasks), set(TASKS))
        self.assertEqual(tasks["sklearn_iris"]["n_rows"], "150")
        with open(os.path.join(out, "metafeatures.csv"), newline="") as file:
            features = {row["task"]: row for row in csv.DictReader(file)}
        self.assertEqual(float(features["sklearn_wine"]["NumberOfFeatures"]), 13.0)
        with open(os.path.join(out, "README.md")) as file:
            self.assertIn("Failed fits", file.read())

    def test_collects_the_recorded_values(self) -> None:
        out = os.path.join(self.directory.name, "out")
        self.assertEqual(collect.main(self.args("run", "--workers", "2", "--out", out)), 0)
        self.check_folder(out)

    def test_write_refuses_incomplete_studies(self) -> None:
        out = os.path.join(self.directory.name, "out")
        self.assertEqual(collect.main(self.args("write", "--out", out)), 1)
        self.assertFalse(os.path.exists(out))
        # One dataset collected: --complete-only writes it and lists the other.
        self.assertEqual(collect.main(self.args("run", "--only", "sklearn_iris")), 0)
        self.assertEqual(collect.main(self.args("write", "--out", out)), 1)
        self.assertEqual(collect.main(self.args("write", "--out", out, "--complete-only")), 0)
        self.assertEqual({task for task, _ in read_folder(out)}, {"sklearn_iris"})
        with open(os.path.join(out, "README.md")) as file:
            self.assertIn("sklearn_wine (no study)", file.read())

    def test_resumes_after_kill(self) -> None:
        env = dict(os.environ)
        command = [sys.executable, "-m", "metaopt.collect", *self.args("run")]
        process = subprocess.Popen(command, env=env, stderr=subprocess.DEVNULL,
                                   start_new_session=True)
        # Kill it once some trials are observed (and, most likely, one is being evaluated).
        deadline = time.monotonic() + 120
        observed = 0
        while time.monotonic() < deadline and observed < 5:
            time.sleep(0.2)
            observed = sum(len(list(s.trials())) for s in self._studies())
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        self.assertGreaterEqual(observed, 5, "the first run observed too little to test resuming")
        out = os.path.join(self.directory.name, "out")
        self.assertEqual(collect.main(self.args("run", "--out", out)), 0)
        self.check_folder(out)
        for study in self._studies():  # each configuration observed once, nothing left active
            configs = [collect.configuration_key(pipelines.parse_configuration(t))
                       for t in study.trials() if t.state.name != "STALE"]
            self.assertEqual(len(configs), len(set(configs)), study.id)

    def test_lost_evaluation_processes_are_evaluated_again(self) -> None:
        # Evaluation processes killed from outside (SIGTERM, as a careless pkill does) are not
        # the configurations' failures: their trials are evaluated again and get their values.
        process = subprocess.Popen([sys.executable, "-m", "metaopt.collect", *self.args("run")],
                                   stderr=subprocess.PIPE, text=True)
        # The first evaluation process is killed as soon as it exists (it starts in about a
        # second, its interpreter importing scikit-learn, and the run takes a few): once only,
        # since a trial whose retry is lost too is recorded as failed.
        killed = 0
        deadline = time.monotonic() + 60
        while not killed and process.poll() is None and time.monotonic() < deadline:
            children = subprocess.run(["pgrep", "-P", str(process.pid)], capture_output=True,
                                      text=True).stdout.split()
            for child in children:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(child), signal.SIGTERM)
                    killed += 1
            time.sleep(0.02)
        _, stderr = process.communicate(timeout=300)
        self.assertEqual(process.returncode, 0, stderr)
        self.assertGreater(killed, 0, "no evaluation process was running to kill")
        failed = [t.id for s in self._studies() for t in s.trials() if t.state.name == "FAILED"]
        self.assertEqual(failed, [], stderr)
        out = os.path.join(self.directory.name, "out")
        self.assertEqual(collect.main(self.args("write", "--out", out)), 0)
        self.check_folder(out)

    def test_a_lost_evaluation_is_retried_once(self) -> None:
        # Deterministic: the first evaluation's process is reported lost, then the second attempt
        # of the same trial runs for real; a trial lost twice is recorded as failed.
        descriptor = pipelines.Evaluator.__dict__["_of"]
        original = pipelines.Evaluator._of
        lost_first = {"left": 1}
        calls: List[str] = []

        def losing_of(data, fit_time_limit):
            evaluator = original(data, fit_time_limit)
            evaluate = evaluator.evaluate

            def flaky(configuration, **kwargs):
                calls.append(str(configuration))
                if lost_first["left"] > 0:
                    lost_first["left"] -= 1
                    return pipelines.Evaluation(None, 0.0, 0.0, "the evaluating process died "
                                                "of signal SIGTERM", lost=True)
                return evaluate(configuration, **kwargs)
            evaluator.evaluate = flaky
            return evaluator

        pipelines.Evaluator._of = staticmethod(losing_of)
        try:
            self.assertEqual(collect.main(self.args("run", "--only", "sklearn_iris")), 0)
            self.assertEqual(calls[0], calls[1])  # the same configuration, evaluated again
            self.assertEqual(len(calls), 17)
            failed = [t.id for s in self._studies() for t in s.trials()
                      if t.state.name == "FAILED"]
            self.assertEqual(failed, [])
            lost_first["left"] = 2  # twice in a row on the next dataset: recorded as failed
            self.assertEqual(collect.main(self.args("run", "--only", "sklearn_wine")), 0)
        finally:
            pipelines.Evaluator._of = descriptor
        failed = [t for s in self._studies() for t in s.trials() if t.state.name == "FAILED"]
        self.assertEqual(len(failed), 1)

    def test_sigterm_stops_without_recording_failures(self) -> None:
        process = subprocess.Popen([sys.executable, "-m", "metaopt.collect", *self.args("run")],
                                   stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        observed = 0
        while time.monotonic() < deadline and observed < 3 and process.poll() is None:
            time.sleep(0.1)
            observed = sum(len(list(s.trials())) for s in self._studies())
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=120)
        if observed < 3:
            self.skipTest("the collection finished before it could be stopped")
        self.assertEqual(process.returncode, 130, stderr)
        self.assertIn("interrupted", stderr)
        failed = [t.id for s in self._studies() for t in s.trials() if t.state.name == "FAILED"]
        self.assertEqual(failed, [])

    def _studies(self):
        return [s for s in self.client.list_studies() if s.id.startswith(collect.STUDY_PREFIX)]


class TableTest(unittest.TestCase):

    def test_protocol_preprocessing(self) -> None:
        with tempfile.TemporaryDirectory() as directory:
            rows = [[str(i % 7), "a" if i % 2 else "", f"c{i % 3}" if i < 2500 else "rare"]
                    for i in range(2505)]
            with open(os.path.join(directory, "t.csv"), "w", newline="") as file:
                writer = csv.writer(file, lineterminator="\n")
                writer.writerow(["x", "k", "class"])
                writer.writerows(rows)
            with open(os.path.join(directory, "t.kinds"), "w") as file:
                file.write("numeric\ncategorical\n")
            table = collect.read_table(directory, "t")
            self.assertEqual(table.n_rows_raw, 2505)
            self.assertLessEqual(len(table.labels), collect.MAX_ROWS)
            self.assertNotIn("rare", set(table.labels))  # 5 rows: under the class minimum
            self.assertEqual(table.categorical, [False, True])
            missing = [i for i in range(len(table.labels)) if table.X[i, 1] is None]
            self.assertTrue(missing)  # a missing category stays missing for the meta-features
            self.assertEqual(collect.evaluation_view(table)[missing[0], 1],
                             collect.CATEGORICAL_MISSING)

    def test_collected_features_are_the_committed_folders_columns(self) -> None:
        # A resumed collection sends the features its studies were created with: the pinned set
        # must not follow metaopt.metafeatures as it grows.
        path = os.path.join(os.path.dirname(__file__), "..", "..", "..", "data",
                            "sklearn-pipelines-collected", "metafeatures.csv")
        with open(path, newline="") as file:
            header = next(csv.reader(file))
        self.assertEqual(list(collect.COLLECTED_FEATURES), header[1:])

    def test_bad_kinds_are_named(self) -> None:
        with tempfile.TemporaryDirectory() as directory:
            with open(os.path.join(directory, "t.csv"), "w") as file:
                file.write("x,class\nabc,a\n1,b\n")
            with open(os.path.join(directory, "t.kinds"), "w") as file:
                file.write("numeric\n")
            with self.assertRaisesRegex(ValueError, "'abc' is not a number"):
                collect.read_table(directory, "t")


if __name__ == "__main__":
    unittest.main()
