"""optuna_replay.py: metaopt-bench's seeds and task selection, the nearest free catalogue entry,
and (with Optuna installed) whole replays that are deterministic and never repeat an entry."""

import importlib.util
import json
import os
import tempfile
import unittest

import numpy as np

import optuna_replay as replay

SPACE = {
    "name": "toy",
    "objective": {"name": "error", "goal": "minimize"},
    "stages": [{"name": "model", "algorithms": [
        {"name": "knn", "params": [{"name": "k", "type": "int", "low": 1, "high": 16, "log": True}]},
        {"name": "svm", "params": [
            {"name": "C", "type": "float", "low": 0.01, "high": 100.0, "log": True},
            {"name": "kernel", "type": "categorical", "values": ["rbf", "poly"]}]},
    ]}],
}
ROWS = [  # task, model, knn.k, svm.C, svm.kernel, y, seconds
    ("t1", "knn", "1", "", "", 0.3, 0.01),
    ("t1", "knn", "16", "", "", 0.2, 0.02),
    ("t1", "svm", "", "0.01", "rbf", 0.5, 1.0),
    ("t1", "svm", "", "100", "poly", 0.1, 9.0),
    ("flat", "knn", "1", "", "", 0.4, 0.1),
    ("flat", "knn", "2", "", "", 0.4, 0.2),
    ("t2", "knn", "4", "", "", 0.6, 0.1),
    ("t2", "svm", "", "1", "rbf", 0.2, 2.0),
]


class OptunaReplayTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        d = self.dir.name
        with open(os.path.join(d, "space.json"), "w") as f:
            json.dump(SPACE, f)
        with open(os.path.join(d, "tasks.csv"), "w") as f:
            f.write("task,name,split,n_rows,n_features\nt1,,test,,\nflat,,test,,\nt2,,test,,\n")
        with open(os.path.join(d, "evaluations.csv"), "w") as f:
            f.write("task,model,knn.k,svm.C,svm.kernel,y,seconds\n")
            for row in ROWS:
                f.write(",".join(str(c) for c in row) + "\n")
        self.space = replay.Space(SPACE)

    def tearDown(self):
        self.dir.cleanup()

    def test_seeds_are_metaopt_bench_study_seeds(self):
        # FNV-1a-64's published values.
        self.assertEqual(replay.fnv1a64(""), 0xCBF29CE484222325)
        self.assertEqual(replay.fnv1a64("a"), 0xAF63DC4C8601EC8C)
        self.assertEqual(replay.study_seed("a", 3), 0xAF63DC4C8601EC8C + 3)

    def test_tasks_without_spread_are_left_out_and_capped(self):
        tasks = replay.read_tasks(self.dir.name, "test", self.space, ["seconds"], 0)
        self.assertEqual([t.id for t in tasks], ["t1", "t2"])
        self.assertEqual(tasks[0].y, [0.3, 0.2, 0.5, 0.1])
        self.assertEqual(tasks[0].columns["seconds"], [0.01, 0.02, 1.0, 9.0])
        capped = replay.read_tasks(self.dir.name, "test", self.space, [], 1)
        self.assertEqual([t.id for t in capped], ["t1"])

    def test_nearest_free_entry(self):
        task = replay.read_tasks(self.dir.name, "test", self.space, [], 0)[0]
        catalogue = replay.Catalogue(self.space, task)
        free = np.ones(4, dtype=bool)
        # svm with C = 50 and kernel poly: row 3 is 0.075 away (C on the log scale), row 2
        # 0.925 + 1 (C and the kernel).
        svm = {(0, "svm.C"): 50.0, (0, "svm.kernel"): "poly"}
        self.assertEqual(catalogue.nearest(svm, [1], free), 3)
        free[3] = False
        self.assertEqual(catalogue.nearest(svm, [1], free), 2)
        free[2] = False
        # No svm left: the nearest knn entry.
        self.assertIn(catalogue.nearest(svm, [1], free), (0, 1))
        knn = {(0, "knn.k"): 12}
        self.assertEqual(catalogue.nearest(knn, [0], np.ones(4, dtype=bool)), 1)

    @unittest.skipUnless(importlib.util.find_spec("optuna"), "needs python3-optuna")
    def test_replays_are_deterministic_and_never_repeat(self):
        tasks = replay.read_tasks(self.dir.name, "test", self.space, ["seconds"], 0)
        for sampler in ("nsga2", "tpe"):
            for objectives, constraint in ((["y", "seconds"], ""), (["y"], "seconds")):
                job = (self.space, tasks[0], sampler, 1, 10, objectives, constraint)
                rows = replay.replay(job)
                entries = [r[4] for r in rows]
                self.assertEqual(sorted(entries), [0, 1, 2, 3])  # 4 entries: all, once each
                self.assertEqual([r[3] for r in rows], [1, 2, 3, 4])
                self.assertEqual(entries, [r[4] for r in replay.replay(job)])


if __name__ == "__main__":
    unittest.main()
