// The study's plots, as SVG.
//
// The optimization history: an SVG: every completed value (a dot), the best-so-far line, and
// failed / infeasible trials as crosses on the bottom edge. Above `maxPoints` completed trials
// the dots are thinned to every k-th one (the improvements of the best are always kept), so
// 10,000-trial studies stay light; data-* attributes say how many were drawn. Marks carry their
// tooltip in data-tip (one handler shows it: see main.js), not in <title> elements, which
// would double the elements to build and lay out.
import { s } from './dom.js';
import { number, trialState } from './format.js';
import { scaleOf } from './space.js';

const WIDTH = 900;
const HEIGHT = 300;
const PAD = { left: 64, right: 16, top: 12, bottom: 36 };

export function historyPlot(trials, maximize, maxPoints = 1500) {
  const sorted = [...trials].sort((a, b) => Number(a.id) - Number(b.id));
  const completed = sorted.filter((t) => trialState(t) === 'COMPLETED' && Number.isFinite(t.value));
  const failed = sorted.filter((t) => trialState(t) === 'FAILED');
  const infeasible = sorted.filter((t) => trialState(t) === 'INFEASIBLE');

  // Best so far after each completed trial, and which trials improved it.
  const best = [];
  const improved = new Set();
  for (const t of completed) {
    const previous = best.length > 0 ? best[best.length - 1].value : undefined;
    if (previous === undefined || (maximize ? t.value > previous : t.value < previous)) {
      improved.add(t);
      best.push({ id: Number(t.id), value: t.value });
    } else {
      best.push({ id: Number(t.id), value: previous });
    }
  }
  const stride = Math.max(1, Math.ceil(completed.length / maxPoints));
  const dots = completed.filter((t, i) => i % stride === 0 || improved.has(t));

  const ids = sorted.map((t) => Number(t.id));
  const xMin = ids.length > 0 ? Math.min(...ids) : 0;
  const xMax = ids.length > 0 ? Math.max(...ids) : 1;
  const values = completed.map((t) => t.value);
  let yMin = values.length > 0 ? Math.min(...values) : 0;
  let yMax = values.length > 0 ? Math.max(...values) : 1;
  if (yMin === yMax) {
    yMin -= 0.5;
    yMax += 0.5;
  }
  const x = (id) => PAD.left + ((id - xMin) / Math.max(1, xMax - xMin)) * (WIDTH - PAD.left - PAD.right);
  const y = (v) => PAD.top + (1 - (v - yMin) / (yMax - yMin)) * (HEIGHT - PAD.top - PAD.bottom);
  const bottom = HEIGHT - PAD.bottom;

  const cross = (t, className) => {
    const cx = x(Number(t.id));
    return s('path', {
      class: className,
      d: `M${cx - 4},${bottom - 4}L${cx + 4},${bottom + 4}M${cx - 4},${bottom + 4}L${cx + 4},${bottom - 4}`,
      'data-tip': `trial ${t.id}: ${trialState(t).toLowerCase()} ${t.failureReason ?? ''}`,
    });
  };
  // The best-so-far as a step line.
  let line = '';
  for (const [i, p] of best.entries()) {
    line += i === 0 ? `M${x(p.id)},${y(p.value)}` : `H${x(p.id)}V${y(p.value)}`;
  }
  return s('svg', {
    class: 'plot history',
    viewBox: `0 0 ${WIDTH} ${HEIGHT}`,
    width: '100%',
    role: 'img',
    'aria-label': 'optimization history',
    'data-points': dots.length,
    'data-completed': completed.length,
    'data-failed': failed.length,
    'data-infeasible': infeasible.length,
    'data-best-steps': best.length,
  },
  s('line', { class: 'axis', x1: PAD.left, y1: bottom, x2: WIDTH - PAD.right, y2: bottom }),
  s('line', { class: 'axis', x1: PAD.left, y1: PAD.top, x2: PAD.left, y2: bottom }),
  s('text', { x: PAD.left - 6, y: y(yMax) + 4, 'text-anchor': 'end' }, number(yMax)),
  s('text', { x: PAD.left - 6, y: y(yMin) + 4, 'text-anchor': 'end' }, number(yMin)),
  s('text', { x: PAD.left, y: HEIGHT - 8 }, `trial ${xMin}`),
  s('text', { x: WIDTH - PAD.right, y: HEIGHT - 8, 'text-anchor': 'end' }, `trial ${xMax}`),
  dots.map((t) => s('circle', {
    class: 'point', cx: x(Number(t.id)).toFixed(1), cy: y(t.value).toFixed(1), r: 3,
    'data-tip': `trial ${t.id}: ${number(t.value)}`,
  })),
  best.length > 0 ? s('path', { class: 'best', d: line }) : null,
  failed.map((t) => cross(t, 'failed')),
  infeasible.map((t) => cross(t, 'infeasible')));
}

// `completed` sorted from the best value to the worst.
function bestFirst(completed, better) {
  return [...completed].sort((a, b) => (better(a.value, b.value) ? -1 : better(b.value, a.value) ? 1 : 0));
}

// At most `max` of `completed` (trials with a value), the best fifth of them always among
// them and the rest every k-th; worst first, so that the best are drawn on top. `better(a, b)`
// is true when value a beats value b.
export function thin(completed, max, better) {
  const ranked = bestFirst(completed, better);
  if (ranked.length <= max) return ranked.reverse();
  const top = Math.floor(max / 5);
  const rest = ranked.slice(top);
  const stride = rest.length / (max - top);
  const kept = ranked.slice(0, top);
  for (let i = 0; i < max - top; i += 1) kept.push(rest[Math.floor(i * stride)]);
  return kept.reverse();
}

// A colour from the best (strong blue, rank 0) to the worst (pale grey, rank 1).
function rankColour(rank) {
  const r = Math.max(0, Math.min(1, rank));
  return `hsl(${221 - 6 * r}, ${Math.round(83 - 63 * r)}%, ${Math.round(45 + 35 * r)}%)`;
}

// Rank in [0, 1] of each completed trial's value (0 = best), by trial id.
function ranks(completed, better) {
  const sorted = bestFirst(completed, better);
  const rank = new Map();
  sorted.forEach((t, i) => rank.set(t.id, sorted.length > 1 ? i / (sorted.length - 1) : 0));
  return rank;
}

// [lowest, highest] value of `completed`, widened around a single value; [0, 1] for none.
export function valueRange(completed) {
  let lo = Infinity;
  let hi = -Infinity;
  for (const t of completed) {
    if (t.value < lo) lo = t.value;
    if (t.value > hi) hi = t.value;
  }
  if (!Number.isFinite(lo)) return [0, 1];
  return lo === hi ? [lo - 0.5, hi + 0.5] : [lo, hi];
}

function axisTicks(axis) {
  if (axis.kind === 'numeric') return [];
  return axis.categories;
}

function clipLabel(text, length) {
  return text.length > length ? `${text.slice(0, length - 1)}…` : text;
}

// The parallel-coordinates plot: one vertical axis per algorithm choice (categorical) and per
// parameter (see space.js), then the objective; each completed trial a line across them,
// coloured by its rank (best: strong blue). A trial without a value on a conditional
// parameter (it chose another algorithm) crosses that axis at the "absent" mark below it.
// Above `maxLines` completed trials the lines are thinned (see thin); data-* attributes say
// how many were drawn.
export function parallelCoordinates(axes, completed, read, maximize, maxLines = 500) {
  const better = maximize ? (a, b) => a > b : (a, b) => a < b;
  const [yLo, yHi] = valueRange(completed);
  const objective = { key: 'objective', label: 'objective', kind: 'numeric', low: yLo, high: yHi, log: false };
  const all = [...axes, objective];
  const width = Math.max(900, 120 * all.length);
  const height = 360;
  const pad = { left: 60, right: 60, top: 30, bottom: 52 };
  const bottom = height - pad.bottom;
  const absentY = bottom + 20;
  const step = all.length > 1 ? (width - pad.left - pad.right) / (all.length - 1) : 0;
  const x = (i) => pad.left + i * step;
  const scales = all.map((axis) => (axis === objective
    ? (v) => (v - yLo) / (yHi - yLo)
    : scaleOf(axis)));
  const y = (u) => bottom - u * (bottom - pad.top);
  const rank = ranks(completed, better);
  const drawn = thin(completed, maxLines, better);
  const absent = new Array(all.length).fill(0);

  const lines = drawn.map((t) => {
    let d = '';
    all.forEach((axis, i) => {
      const v = axis === objective ? t.value : read(t, axis);
      let py;
      if (v === undefined) {
        py = absentY;
        absent[i] += 1;
      } else {
        py = y(scales[i](v));
      }
      d += `${i === 0 ? 'M' : 'L'}${x(i).toFixed(1)},${py.toFixed(1)}`;
    });
    return s('path', {
      class: 'pc-line', d, stroke: rankColour(rank.get(t.id)), 'data-trial': t.id,
      'data-tip': `trial ${t.id}: ${number(t.value)}`,
    });
  });

  const axisMarks = all.map((axis, i) => {
    const ticks = axisTicks(axis);
    const n = ticks.length;
    return s('g', { class: 'pc-axis', 'data-axis': axis.key, 'data-kind': axis.kind },
      s('line', { class: 'axis', x1: x(i), y1: pad.top, x2: x(i), y2: bottom }),
      s('text', { class: 'axis-label', x: x(i), y: pad.top - 12, 'text-anchor': 'middle' },
        clipLabel(axis.label, 18), s('title', {}, axis.key)),
      axis.kind === 'numeric'
        ? [s('text', { x: x(i) + 4, y: pad.top + 4 }, number(axis.high)),
          s('text', { x: x(i) + 4, y: bottom }, number(axis.low))]
        : (n <= 16 ? ticks.map((c, k) => s('text', { x: x(i) + 4, y: y((k + 0.5) / n) + 4 }, clipLabel(c, 14))) : []),
      axis.conditional
        ? s('text', { class: 'absent', x: x(i), y: absentY + 4, 'text-anchor': 'middle' }, '∅ absent')
        : null);
  });
  return s('svg', {
    class: 'plot parallel',
    viewBox: `0 0 ${width} ${height}`,
    // Scaled to the page up to 11 axes; wider ones keep their size and scroll.
    width: width <= 1360 ? '100%' : width,
    role: 'img',
    'aria-label': 'parallel coordinates',
    'data-lines': drawn.length,
    'data-completed': completed.length,
    'data-axes': all.length,
    'data-absent': absent.join(','),
  },
  axisMarks,
  s('g', { class: 'pc-lines' }, lines));
}

// Deterministic jitter in [-0.5, 0.5) of a trial id, for categorical strips.
function jitter(id) {
  let h = Number(id) * 2654435761;
  h = (h ^ (h >>> 16)) >>> 0;
  return (h % 1000) / 1000 - 0.5;
}

// The slice plot of one axis: each completed trial with a value on it as a dot at (its value
// there, its objective value); categorical values (and algorithm choices) as jittered strips.
// `yRange` is shared by a study's slices. Thinned above `maxPoints` like the other plots.
export function slicePlot(axis, completed, read, maximize, yRange, maxPoints = 300) {
  const better = maximize ? (a, b) => a > b : (a, b) => a < b;
  const width = 320;
  const height = 210;
  const pad = { left: 60, right: 12, top: 24, bottom: 34 };
  const present = completed.filter((t) => read(t, axis) !== undefined);
  const rank = ranks(present, better);
  const drawn = thin(present, maxPoints, better);
  const scale = scaleOf(axis);
  const [yLo, yHi] = yRange;
  const px = (u) => pad.left + u * (width - pad.left - pad.right);
  const py = (v) => pad.top + (1 - (v - yLo) / (yHi - yLo)) * (height - pad.top - pad.bottom);
  const band = axis.kind === 'numeric' ? 0 : 0.6 / Math.max(1, axis.categories.length);
  const bottom = height - pad.bottom;
  const n = axis.categories?.length ?? 0;
  return s('svg', {
    class: 'plot slice',
    viewBox: `0 0 ${width} ${height}`,
    role: 'img',
    'aria-label': `slice ${axis.label}`,
    width: '100%',
    'data-axis': axis.key,
    'data-kind': axis.kind,
    'data-points': drawn.length,
    'data-present': present.length,
  },
  s('text', { class: 'axis-label', x: pad.left, y: 14 }, clipLabel(axis.label, 30),
    s('tspan', { class: 'muted' }, `  ${present.length} of ${completed.length}`)),
  s('line', { class: 'axis', x1: pad.left, y1: bottom, x2: width - pad.right, y2: bottom }),
  s('line', { class: 'axis', x1: pad.left, y1: pad.top, x2: pad.left, y2: bottom }),
  s('text', { x: pad.left - 4, y: pad.top + 4, 'text-anchor': 'end' }, number(yHi)),
  s('text', { x: pad.left - 4, y: bottom, 'text-anchor': 'end' }, number(yLo)),
  axis.kind === 'numeric'
    ? [s('text', { x: pad.left, y: height - 16 }, number(axis.low)),
      s('text', { x: width - pad.right, y: height - 16, 'text-anchor': 'end' },
        `${number(axis.high)}${axis.log ? ' (log)' : ''}`)]
    : (n <= 8 ? axis.categories.map((c, k) => s('text', {
      x: px((k + 0.5) / n), y: height - 16, 'text-anchor': 'middle',
    }, clipLabel(c, Math.max(4, Math.floor(40 / n))))) : []),
  drawn.map((t) => {
    const v = read(t, axis);
    const u = scale(v) + (band > 0 ? jitter(t.id) * band : 0);
    return s('circle', {
      class: 'slice-point', cx: px(u).toFixed(1), cy: py(t.value).toFixed(1), r: 2.6,
      fill: rankColour(rank.get(t.id)),
      'data-tip': `trial ${t.id}: ${axis.label}=${typeof v === 'number' ? number(v) : v} → ${number(t.value)}`,
    });
  }));
}
