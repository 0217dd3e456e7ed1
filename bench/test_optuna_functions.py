"""optuna_functions.py: the functions give the C++ ones' values (bench/functions_test.cc), the
study seeds are metaopt-bench's, and (with Optuna installed) a whole run writes a trace that is
deterministic and carries the evaluated values."""

import csv
import importlib.util
import math
import os
import tempfile
import unittest

import optuna_functions as of


def value(name, params):
    return of.FUNCTIONS[name][1](params)


def box(values):
    return {f"x{i}": v for i, v in enumerate(values)}


class FunctionsTest(unittest.TestCase):
    def test_minima(self):
        self.assertAlmostEqual(value("branin", {"x0": -math.pi, "x1": 12.275}), 0.397887, 6)
        self.assertAlmostEqual(value("branin", {"x0": math.pi, "x1": 2.275}), 0.397887, 6)
        self.assertAlmostEqual(value("branin", {"x0": 3 * math.pi, "x1": 2.475}), 0.397887, 6)
        self.assertAlmostEqual(value("hartmann3", box([0.114614, 0.555649, 0.852547])),
                               -3.86278, 5)
        h6 = [0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573]
        self.assertAlmostEqual(value("hartmann6", box(h6)), -3.32237, 5)
        self.assertEqual(value("ackley4", box([0, 0, 0, 0])) < 1e-12, True)
        self.assertEqual(value("levy4", box([1, 1, 1, 1])) < 1e-12, True)
        self.assertEqual(value("rosenbrock4", box([1, 1, 1, 1])), 0)
        mixed = box([x + 0.2 for x in h6[:5]])
        mixed.update(k=6, shift="b")
        self.assertAlmostEqual(value("hartmann6_mixed", mixed), -3.32237, 5)
        lr = 10 ** (4 * (math.pi + 5) / 15 - 4)
        self.assertAlmostEqual(
            value("branin_logmixed", {"lr": lr, "x1": 2.275, "layers": 3, "optimizer": "adam"}),
            0.397887, 6)
        for name, (_, f, f_star) in of.FUNCTIONS.items():
            self.assertTrue(math.isfinite(f_star), name)

    def test_values_of_the_cpp_functions(self):
        # The numbers bench/functions_test.cc checks the C++ definitions against.
        cases = [
            ("branin", {"x0": 0, "x1": 0}, 55.602112642270264),
            ("hartmann3", box([0.5] * 3), -0.6280220150705942),
            ("hartmann6", box([0.5] * 6), -0.5053149917022333),
            ("ackley4", box([1] * 4), 20 - 20 * math.exp(-0.2)),
            ("levy4", box([0] * 4), 0.8975336623509235),
            ("styblinski_tang4", box([1] * 4), -20.0),
            ("rosenbrock4", box([0] * 4), 3.0),
            ("sin4", box([1] * 4), 4 * (math.sin(7) + 1)),
            ("hartmann6_mixed", dict(box([0.5] * 5), k=3, shift="c"), 0.17772323087458042),
            ("branin_logmixed", {"lr": 1e-2, "x1": 5, "layers": 7, "optimizer": "rmsprop"},
             14.295224875769486),
        ]
        self.assertEqual(sorted(c[0] for c in cases), sorted(of.FUNCTIONS))
        for name, params, expected in cases:
            self.assertAlmostEqual(value(name, params), expected, 10, name)

    def test_study_seed_is_metaopt_benchs(self):
        # FNV-1a-64 of the empty string is the offset basis; seeds add.
        self.assertEqual(of.study_seed("", 0), 0xCBF29CE484222325)
        self.assertEqual(of.study_seed("branin", 3), of.study_seed("branin", 0) + 3)

    @unittest.skipUnless(importlib.util.find_spec("optuna"), "needs python3-optuna")
    def test_whole_run_is_deterministic_and_carries_values(self):
        with tempfile.TemporaryDirectory() as d:
            outs = []
            for i in range(2):
                path = os.path.join(d, f"trace{i}.csv")
                self.assertEqual(of.main(["--functions", "branin,branin_logmixed", "--trials",
                                          "12", "--seeds", "2", "--out", path]), 0)
                with open(path, newline="") as f:
                    outs.append(list(csv.reader(f)))
            header, rows = outs[0][0], outs[0][1:]
            self.assertEqual(header, ["method", "task", "seed", "trial", "value", "suggest_ms"])
            self.assertEqual(len(rows), 2 * 2 * 2 * 12)  # functions x samplers x seeds x trials
            strip = lambda table: [r[:5] for r in table]  # noqa: E731
            self.assertEqual(strip(outs[0]), strip(outs[1]))
            methods = {r[0] for r in rows}
            self.assertEqual(methods, {"optuna-tpe", "optuna-random"})
            for r in rows:
                f_star = of.FUNCTIONS[r[1]][2]
                self.assertGreaterEqual(float(r[4]), f_star - 1e-9)
            self.assertEqual([r[3] for r in rows[:12]], [str(t) for t in range(1, 13)])


if __name__ == "__main__":
    unittest.main()
