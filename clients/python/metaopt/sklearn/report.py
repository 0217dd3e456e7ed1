"""The report of a tuning study: its trials with the best so far (:class:`TrialRecord`), the
best-so-far plot (:func:`svg_line_plot`) and :class:`TuneResult` (table, CSV, SVG, Markdown)."""

from __future__ import annotations

import csv
import dataclasses
import html
import math
import os
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from metaopt.sklearn.ensemble import EnsembleSummary
from metaopt.sklearn.space import Configuration, describe, parse_configuration
from metaopt.trial import Trial

@dataclasses.dataclass(frozen=True)
class TrialRecord:
    """One trial of a tuning study, as the report lists it."""

    id: int
    state: str  # COMPLETED, FAILED, INFEASIBLE, ACTIVE, STALE, ...
    value: Optional[float]
    best_so_far: Optional[float]  # the best value among this trial and the earlier ones
    pipeline: str  # describe() of its configuration
    fit_seconds: Optional[float]  # CPU seconds (metric fit_seconds)
    policy: str  # how the server chose it, e.g. deeppipe/metabu or deeppipe/ei
    client_id: str
    failure_reason: str
    configuration: Optional[Configuration] = None  # None if not a configuration of SPACE


def _records(trials: Iterable[Trial]) -> List[TrialRecord]:
    records = []
    best: Optional[float] = None
    for trial in sorted(trials, key=lambda t: t.id):
        if trial.value is not None:
            best = trial.value if best is None else max(best, trial.value)
        try:
            config: Optional[Configuration] = parse_configuration(trial)
            pipeline = describe(config)
        except ValueError:
            config, pipeline = None, "(not a configuration of this space)"
        records.append(TrialRecord(
            id=trial.id, state=trial.state.name, value=trial.value, best_so_far=best,
            pipeline=pipeline, fit_seconds=trial.metrics.get("fit_seconds"),
            policy=trial.metadata.get("policy", trial.metadata.get("source", "")),
            client_id=trial.client_id, failure_reason=trial.failure_reason,
            configuration=config))
    return records


def _nice_ticks(low: float, high: float, count: int = 5) -> List[float]:
    if not high > low:
        return [low]
    raw = (high - low) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = min((m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw),
               default=10 * magnitude)
    first = math.ceil(low / step - 1e-9) * step
    ticks = []
    value = first
    while value <= high + 1e-9 * step:
        ticks.append(round(value, 10))
        value += step
    return ticks


_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b")


def svg_line_plot(series: Mapping[str, Sequence[Tuple[float, float]]], *, title: str,
                  x_label: str, y_label: str, width: int = 640, height: int = 400,
                  y_range: Optional[Tuple[float, float]] = None) -> str:
    """A standalone SVG of step-free line series ``{name: [(x, y), ...]}`` with axes, ticks and
    a legend (no plotting library needed)."""
    points = [p for values in series.values() for p in values]
    if not points:
        raise ValueError("series: no points to plot")
    x_low, x_high = min(p[0] for p in points), max(p[0] for p in points)
    y_low, y_high = y_range or (min(p[1] for p in points), max(p[1] for p in points))
    if x_high == x_low:
        x_low, x_high = x_low - 1, x_high + 1
    if y_high == y_low:
        y_low, y_high = y_low - 0.01, y_high + 0.01
    pad = 0.05 * (y_high - y_low)
    y_low, y_high = y_low - (0 if y_range else pad), y_high + (0 if y_range else pad)
    left, right, top, bottom = 70, 20, 40, 76  # the legend goes in one row under the x label
    plot_w, plot_h = width - left - right, height - top - bottom

    def sx(x: float) -> float:
        return left + (x - x_low) / (x_high - x_low) * plot_w

    def sy(y: float) -> float:
        return top + (y_high - y) / (y_high - y_low) * plot_h

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{width / 2:.1f}" y="22" text-anchor="middle" font-size="14">'
           f'{html.escape(title)}</text>']
    for tick in _nice_ticks(y_low, y_high):
        y = sy(tick)
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + plot_w}" y2="{y:.1f}" '
                   'stroke="#e0e0e0"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{tick:g}</text>')
    for tick in _nice_ticks(x_low, x_high):
        x = sx(tick)
        out.append(f'<line x1="{x:.1f}" y1="{top + plot_h}" x2="{x:.1f}" y2="{top + plot_h + 5}" '
                   'stroke="black"/>')
        out.append(f'<text x="{x:.1f}" y="{top + plot_h + 18}" text-anchor="middle">{tick:g}'
                   '</text>')
    out.append(f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="none" '
               'stroke="black"/>')
    out.append(f'<text x="{left + plot_w / 2:.1f}" y="{top + plot_h + 36}" '
               f'text-anchor="middle">{html.escape(x_label)}</text>')
    out.append(f'<text x="16" y="{top + plot_h / 2:.1f}" text-anchor="middle" '
               f'transform="rotate(-90 16 {top + plot_h / 2:.1f})">{html.escape(y_label)}</text>')
    for i, (name, values) in enumerate(series.items()):
        colour = _COLOURS[i % len(_COLOURS)]
        path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in values)
        out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for x, y in values:
            out.append(f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="2.5" fill="{colour}"/>')
        lx, ly = left + 140 * i, height - 10
        out.append(f'<line x1="{lx}" y1="{ly - 4}" x2="{lx + 20}" y2="{ly - 4}" '
                   f'stroke="{colour}" stroke-width="2"/>')
        out.append(f'<text x="{lx + 26}" y="{ly}">{html.escape(name)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


@dataclasses.dataclass
class TuneResult:
    """What :func:`tune` returns.

    Attributes:
        pipeline: the best configuration's pipeline refitted on all of ``(X, y)``; with
            ``ensemble=K``, the selected :class:`~metaopt.sklearn.ensemble.Ensemble` refitted on
            all of ``(X, y)`` (None with ``refit=False``).
        best_configuration: ``{stage: Choice(algorithm, params)}`` of the best trial.
        best_value: its balanced accuracy under the evaluation protocol.
        best_trial_id: its trial id in the study.
        study_id: the study (pass it to tune again to resume).
        bound_model: the registry model the study is bound to (``name@version``).
        zero_shot_design: how the first suggestions were chosen: ``portfolio`` (the model's
            fixed portfolio), or ``metabu`` / ``nearest`` for a model version with a task-aware
            design.
        trials: every trial of the study by id (:class:`TrialRecord`).
        protocol: ``"holdout 70/30"`` or ``"stratified k-fold (k=...)"``.
        wall_seconds: the wall-clock time of this call.
        ensemble: with ``ensemble=K``, the selected ensemble's members and validation score
            beside the best single pipeline's (None without, or when this call evaluated no
            pipeline).
    """

    pipeline: Any
    best_configuration: Configuration
    best_value: float
    best_trial_id: int
    study_id: str
    bound_model: str
    zero_shot_design: str
    trials: List[TrialRecord]
    protocol: str
    wall_seconds: float
    ensemble: Optional[EnsembleSummary] = None

    def table(self) -> str:
        """The trials as a fixed-width text table."""
        header = ("trial", "state", "balanced acc.", "best so far", "CPU s", "policy", "pipeline")
        rows = [header]
        for r in self.trials:
            rows.append((str(r.id), r.state, "" if r.value is None else f"{r.value:.4f}",
                         "" if r.best_so_far is None else f"{r.best_so_far:.4f}",
                         "" if r.fit_seconds is None else f"{r.fit_seconds:.3f}", r.policy,
                         r.pipeline + (f"  [{r.failure_reason}]" if r.failure_reason else "")))
        widths = [max(len(row[i]) for row in rows) for i in range(len(header) - 1)]
        return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)) + "  " + row[-1]
                         for row in rows)

    def best_so_far_svg(self) -> str:
        """An SVG plot of the best balanced accuracy so far against the trial number."""
        points = [(float(i + 1), r.best_so_far) for i, r in enumerate(self.trials)
                  if r.best_so_far is not None]
        return svg_line_plot({"best so far": points}, title=f"metaopt tune: {self.study_id}",
                             x_label="trial", y_label=f"balanced accuracy ({self.protocol})")

    def to_csv(self, path: Union[str, "os.PathLike[str]"]) -> None:
        """Writes the trials as CSV: one row per trial, the fields of :class:`TrialRecord` but
        the configuration (its ``pipeline`` column describes it)."""
        with open(path, "w", newline="") as file:
            writer = csv.writer(file, lineterminator="\n")
            fields = [f.name for f in dataclasses.fields(TrialRecord) if f.name != "configuration"]
            writer.writerow(fields)
            for record in self.trials:
                writer.writerow(["" if v is None else v
                                 for v in (getattr(record, f) for f in fields)])

    def save(self, directory: Union[str, "os.PathLike[str]"]) -> None:
        """Writes ``trials.csv``, ``best_so_far.svg`` and ``report.md`` into ``directory``."""
        os.makedirs(directory, exist_ok=True)
        self.to_csv(os.path.join(directory, "trials.csv"))
        with open(os.path.join(directory, "best_so_far.svg"), "w") as file:
            file.write(self.best_so_far_svg())
        with open(os.path.join(directory, "report.md"), "w") as file:
            file.write(f"# metaopt tune: study {self.study_id}\n\n{self.summary()}\n\n"
                       "![best so far](best_so_far.svg)\n\n```\n" + self.table() + "\n```\n")

    def summary(self) -> str:
        counts: Dict[str, int] = {}
        for record in self.trials:
            counts[record.state] = counts.get(record.state, 0) + 1
        states = ", ".join(f"{n} {state.lower()}" for state, n in sorted(counts.items()))
        ensemble = ""
        if self.ensemble is not None:
            members = ", ".join(f"trial {t} x{n}" for t, n in self.ensemble.members)
            ensemble = (f"ensemble: validation balanced accuracy {self.ensemble.value:.4f} "
                        f"(best single pipeline {self.ensemble.best_single_value:.4f}), "
                        f"{sum(n for _, n in self.ensemble.members)} of {self.ensemble.size} "
                        f"rounds kept from {self.ensemble.library_size} pipelines: {members}\n")
        return (ensemble
                + f"best: trial {self.best_trial_id}, balanced accuracy {self.best_value:.4f} "
                f"({self.protocol}): {describe(self.best_configuration)}\n"
                f"study {self.study_id}: {len(self.trials)} trials ({states}); model "
                f"{self.bound_model or 'none'}, first suggestions from the "
                f"{self.zero_shot_design or 'unknown'} design; this call took "
                f"{self.wall_seconds:.1f} s")

    def __repr__(self) -> str:
        return (f"TuneResult(study_id={self.study_id!r}, best_value={self.best_value:.4f}, "
                f"best={describe(self.best_configuration)!r}, trials={len(self.trials)})")
