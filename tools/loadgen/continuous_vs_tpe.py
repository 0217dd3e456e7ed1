#!/usr/bin/env python3
"""Suggest latency over a continuous 4-D or a mixed space: metaopt's GP through a real server and
the Python client, beside Optuna's TPE in-process, in one run (docs/performance.md, "Continuous
spaces at 1,000 observations").

One ask/tell loop each on the same function, f(x) = sum_d sin(7 x_d) + x_d^2 (bench/
suggest_benchmark's objective), minimised, to --observations observations, over --space:
continuous4, [0, 1]^4; or mixed (suggest_benchmark's space:mixed): x0 on [0, 1], x1 on
[0.001, 1] on a log scale, an integer k on [1, 10] and a categorical c of "a", "bb", "ccc" (a
category counts as its length / 3):

- metaopt: a fresh metaopt-server (--server-binary) on an empty SQLite database in a temporary
  folder, one GP study (seed --seed; one loop per --acquisition-samples value, each with its own
  server); each iteration times study.suggest() (one trial), then
  observes the value. The time is the client's: the RPC, the server's Suggest and its wait for
  the fit the server prepares after each Observe.
- tpe: optuna.create_study(sampler=TPESampler(seed=--seed)); each iteration times study.ask()
  and the four suggest_float calls (where TPE samples), then tells the value.

The latency "at n" is the median (and 90th percentile) of the Suggests made with n - 10 ... n + 9
observations. Prints a Markdown table; with --out also writes latency.csv (every Suggest) and
latency.svg (rolling medians over 21 Suggests) there.

    PYTHONPATH=build/clients/python /usr/bin/python3 tools/loadgen/continuous_vs_tpe.py \\
        --server-binary build/server/metaopt-server --out docs/performance
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Sequence, Tuple

import metaopt

DIM = 4
SPACES = ("continuous4", "mixed")
CHECKPOINTS = (100, 300, 1000)
HALF_WINDOW = 10


def objective(x: Sequence[float]) -> float:
    return sum(math.sin(7 * v) + v * v for v in x)


def domains(space: str) -> Dict[str, object]:
    """The parameters of `space` (SPACES) as the Python client declares them."""
    if space == "continuous4":
        return {f"x{d}": metaopt.Float(0, 1) for d in range(DIM)}
    return {"x0": metaopt.Float(0, 1), "x1": metaopt.Float(1e-3, 1, log=True),
            "k": metaopt.Int(1, 10), "c": metaopt.Categorical(["a", "bb", "ccc"])}


def numbers(space: str, params: Dict[str, object]) -> List[float]:
    """The objective's inputs of one configuration of `space`, in declaration order."""
    return [len(v) / 3 if isinstance(v, str) else float(v)
            for v in (params[name] for name in domains(space))]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(binary: str, work: str,
                 compute_threads: int = 0) -> Tuple[subprocess.Popen, str]:
    port = free_port()
    log = open(os.path.join(work, "server.log"), "w")
    threads = [f"--compute-threads={compute_threads}"] if compute_threads > 0 else []
    server = subprocess.Popen(
        [binary, f"--listen=127.0.0.1:{port}", f"--db={work}/study.db",
         f"--models={work}/no-models", "--models-poll-interval=0", "--log-level=error",
         "--metrics-listen=127.0.0.1:0", *threads],
        stdout=log, stderr=log)
    address = f"127.0.0.1:{port}"
    for _ in range(400):
        if server.poll() is not None:
            raise RuntimeError(f"metaopt-server exited with {server.returncode}; see its log")
        try:
            socket.create_connection(("127.0.0.1", port), 0.1).close()
            return server, address
        except OSError:
            time.sleep(0.05)
    server.kill()
    raise RuntimeError("metaopt-server did not start listening within 20 s")


def run_metaopt(binary: str, observations: int, seed: int, samples: int = 0,
                history: List[List[float]] = None,
                compute_threads: int = 0, space: str = "continuous4") -> List[Tuple[int, float]]:
    """(observations before the Suggest, Suggest milliseconds) per iteration; `samples`: the
    study's algorithm.acquisition_samples (0: the server's default); `compute_threads`: the
    server's --compute-threads (0: its default). Appends each trial's inputs (numbers()) and
    value to `history` when given."""
    times: List[Tuple[int, float]] = []
    with tempfile.TemporaryDirectory() as work:
        server, address = start_server(binary, work, compute_threads)
        try:
            with metaopt.Client(address) as client:
                spec = metaopt.study_spec(metaopt.flat_space(domains(space)), objective="loss",
                                          goal="minimize", algorithm="gp", seed=seed)
                spec.algorithm.acquisition_samples = samples
                study = client.create_study(space, spec=spec)
                for n in range(observations):
                    start = time.perf_counter()
                    (trial,) = study.suggest()
                    times.append((n, (time.perf_counter() - start) * 1e3))
                    x = numbers(space, trial.params)
                    value = objective(x)
                    if history is not None:
                        history.append(x + [value])
                    study.observe(trial, value)
        finally:
            server.terminate()
            server.wait(timeout=30)
    return times


def run_tpe(observations: int, seed: int, space: str = "continuous4") -> List[Tuple[int, float]]:
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=seed))
    times: List[Tuple[int, float]] = []
    parameters = domains(space)
    for n in range(observations):
        start = time.perf_counter()
        trial = study.ask()
        params = {}
        for name, domain in parameters.items():
            if isinstance(domain, metaopt.Float):
                params[name] = trial.suggest_float(name, domain.low, domain.high, log=domain.log)
            elif isinstance(domain, metaopt.Int):
                params[name] = trial.suggest_int(name, domain.low, domain.high, log=domain.log)
            else:
                params[name] = trial.suggest_categorical(name, list(domain.values))
        times.append((n, (time.perf_counter() - start) * 1e3))
        study.tell(trial, objective(numbers(space, params)))
    return times


def window(times: List[Tuple[int, float]], at: int) -> List[float]:
    return [ms for n, ms in times if at - HALF_WINDOW <= n < at + HALF_WINDOW]


def quantile(values: List[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def table(runs: Dict[str, List[Tuple[int, float]]]) -> str:
    names = list(runs)
    head = "| observations | " + " | ".join(
        f"{name} median ms | {name} p90 ms" for name in names) + " |"
    rule = "|---:|" + "---:|---:|" * len(names)
    rows = [head, rule]
    for at in CHECKPOINTS:
        cells = []
        for name in names:
            values = window(runs[name], at)
            cells += [f"{statistics.median(values):.1f}", f"{quantile(values, 0.9):.1f}"]
        rows.append(f"| {at:,} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def rolling_median(times: List[Tuple[int, float]], half: int = 10) -> List[Tuple[int, float]]:
    values = [ms for _, ms in times]
    return [(times[i][0], statistics.median(values[max(0, i - half):i + half + 1]))
            for i in range(len(values))]


def svg(runs: Dict[str, List[Tuple[int, float]]], title: str) -> str:
    width, height, left, right, top, bottom = 640, 360, 60, 150, 30, 45
    curves = {name: rolling_median(times) for name, times in runs.items()}
    x_max = max(n for c in curves.values() for n, _ in c) or 1
    y_max = max(ms for c in curves.values() for _, ms in c) * 1.1 or 1
    step = 10 ** math.floor(math.log10(y_max / 2))
    y_max = math.ceil(y_max / step) * step

    def px(n: float) -> float:
        return left + (width - left - right) * n / x_max

    def py(ms: float) -> float:
        return top + (height - top - bottom) * (1 - ms / y_max)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{left}" y="18" font-size="13">{title}</text>']
    tick = 0.0
    while tick <= y_max + 1e-9:
        out.append(f'<line x1="{left}" x2="{width - right}" y1="{py(tick):.1f}" '
                   f'y2="{py(tick):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 6}" y="{py(tick) + 4:.1f}" text-anchor="end">'
                   f'{tick:g}</text>')
        tick += step
    for n in range(0, x_max + 1, 200):
        out.append(f'<text x="{px(n):.1f}" y="{height - bottom + 16}" text-anchor="middle">'
                   f'{n}</text>')
    out.append(f'<text x="{(left + width - right) / 2}" y="{height - 8}" text-anchor="middle">'
               'observations</text>')
    out.append(f'<text x="14" y="{(top + height - bottom) / 2}" text-anchor="middle" '
               f'transform="rotate(-90 14 {(top + height - bottom) / 2})">'
               'Suggest ms (rolling median of 21)</text>')
    colours = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"]
    for i, (name, curve) in enumerate(curves.items()):
        points = " ".join(f"{px(n):.1f},{py(ms):.1f}" for n, ms in curve)
        out.append(f'<polyline fill="none" stroke="{colours[i % 4]}" stroke-width="1.5" '
                   f'points="{points}"/>')
        y = top + 10 + 18 * i
        out.append(f'<line x1="{width - right + 10}" x2="{width - right + 30}" y1="{y}" '
                   f'y2="{y}" stroke="{colours[i % 4]}" stroke-width="2"/>')
        out.append(f'<text x="{width - right + 36}" y="{y + 4}">{name}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server-binary", required=True)
    parser.add_argument("--observations", type=int, default=CHECKPOINTS[-1] + HALF_WINDOW)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", help="folder for latency.csv and latency.svg")
    parser.add_argument("--label", default="metaopt gp",
                        help="the metaopt run's name in the table and the plot")
    parser.add_argument("--acquisition-samples", default="0",
                        help="comma list: one metaopt loop per study "
                             "algorithm.acquisition_samples (0: the server's default)")
    parser.add_argument("--compute-threads", default="0",
                        help="comma list: one metaopt loop per server --compute-threads "
                             "(0: the server's default)")
    parser.add_argument("--space", choices=SPACES, default="continuous4",
                        help="the search space of every loop")
    parser.add_argument("--history-out",
                        help="CSV of the first metaopt loop's trials (its inputs, loss) in order: "
                             "suggest_benchmark's recorded history (bench/data/README.md)")
    args = parser.parse_args()
    try:
        budgets = [int(v) for v in args.acquisition_samples.split(",")]
    except ValueError:
        parser.error(f"--acquisition-samples {args.acquisition_samples!r}: "
                     "a comma list of integers >= 0")
    if not budgets or min(budgets) < 0:
        parser.error(f"--acquisition-samples {args.acquisition_samples!r}: "
                     "a comma list of integers >= 0")
    try:
        thread_counts = [int(v) for v in args.compute_threads.split(",")]
    except ValueError:
        thread_counts = []
    if not thread_counts or min(thread_counts) < 0:
        parser.error(f"--compute-threads {args.compute_threads!r}: "
                     "a comma list of integers >= 0")
    if args.observations < CHECKPOINTS[-1] + HALF_WINDOW:
        parser.error(f"--observations must be at least {CHECKPOINTS[-1] + HALF_WINDOW}")
    runs: Dict[str, List[Tuple[int, float]]] = {}
    seconds: Dict[str, float] = {}
    history: List[List[float]] = []
    for samples in budgets:
        for threads in thread_counts:
            label = args.label if samples == 0 else f"{args.label} ({samples} samples)"
            if threads > 0:
                label += f" ({threads} thread{'s' if threads > 1 else ''})"
            started = time.perf_counter()
            runs[label] = run_metaopt(args.server_binary, args.observations, args.seed, samples,
                                      history if not history else None, threads, args.space)
            seconds[label] = time.perf_counter() - started
    started = time.perf_counter()
    runs["optuna tpe"] = run_tpe(args.observations, args.seed, args.space)
    seconds["optuna tpe"] = time.perf_counter() - started
    print(table(runs))
    loops = ", ".join(f"{name} {s:.1f} s" for name, s in seconds.items())
    print(f"\nwhole loops ({args.observations} observations): {loops}; "
          f"load average {os.getloadavg()[0]:.1f}")
    if args.history_out:
        with open(args.history_out, "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(list(domains(args.space)) + ["loss"])
            writer.writerows([repr(v) for v in row] for row in history)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "latency.csv"), "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["method", "observations", "suggest_ms"])
            for name, times in runs.items():
                writer.writerows((name, n, f"{ms:.3f}") for n, ms in times)
        with open(os.path.join(args.out, "latency.svg"), "w") as f:
            title = ("continuous 4-D space" if args.space == "continuous4"
                     else "mixed space (2 floats, an integer, a categorical)")
            f.write(svg(runs, f"Suggest latency, {title}, one ask/tell loop"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
