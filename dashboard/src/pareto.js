// Studies with several objectives: their objectives and constraints, each trial's objective
// values, the Pareto front (non-dominated feasible trials), exact 2-D and 3-D hypervolume, and
// the hypervolume after each trial, all computed here from the trials against the reference
// point the server reports (Study.pareto_front.reference_point); and the plots: a scatter of
// two objectives with the front highlighted and infeasible trials marked, and the hypervolume
// over trials. Points are minimized internally: a maximized objective's value is negated.
import { s } from './dom.js';
import { number, trialState } from './format.js';

const WIDTH = 440;
const HEIGHT = 330;
const PAD = { left: 64, right: 16, top: 24, bottom: 44 };

// [{name, maximize}] of a study spec: its objectives, or its one objective.
export function objectivesOf(spec) {
  const list = spec?.objectives?.length > 0 ? spec.objectives : [spec?.objective ?? {}];
  return list.map((o) => ({ name: o.name ?? '', maximize: o.goal === 'GOAL_MAXIMIZE' }));
}

// "memory_mb <= 300" for each of a spec's constraints.
export function constraintsText(spec) {
  return (spec?.constraints ?? []).map((c) =>
    `${c.metric} ${c.sense === 'CONSTRAINT_SENSE_AT_LEAST' ? '≥' : '≤'} ${number(c.bound ?? 0)}`);
}

// A COMPLETED trial's objective values in objective order (own units), or undefined.
export function valuesOf(trial, objectives) {
  if (trialState(trial) !== 'COMPLETED' || !Number.isFinite(trial.value)) return undefined;
  const values = [trial.value];
  for (const o of objectives.slice(1)) {
    const v = trial.metrics?.[o.name];
    if (!Number.isFinite(v)) return undefined;
    values.push(v);
  }
  return values;
}

// Values in objective order as a point to minimize.
export function minimized(values, objectives) {
  return values.map((v, i) => (objectives[i].maximize ? -v : v));
}

// Whether point a dominates point b (both minimized): no worse anywhere, better somewhere.
export function dominates(a, b) {
  let better = false;
  for (let i = 0; i < a.length; i += 1) {
    if (a[i] > b[i]) return false;
    if (a[i] < b[i]) better = true;
  }
  return better;
}

// Indexes of the points no other point dominates (equal points all stay), in input order.
export function nonDominated(points) {
  return points.map((_, i) => i).filter((i) => !points.some((q, j) => j !== i && dominates(q, points[i])));
}

// The area dominated by 2-D minimized `points` and bounded by `ref`; points not strictly better
// than ref in both coordinates add nothing.
export function hypervolume2D(points, ref) {
  const inside = points.filter((p) => p[0] < ref[0] && p[1] < ref[1]).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let volume = 0;
  let lowest = ref[1];
  for (let i = 0; i < inside.length; i += 1) {
    lowest = Math.min(lowest, inside[i][1]);
    const next = i + 1 < inside.length ? inside[i + 1][0] : ref[0];
    volume += (next - inside[i][0]) * (ref[1] - lowest);
  }
  return volume;
}

// The volume dominated by 3-D minimized `points` and bounded by `ref`: slabs between successive
// third coordinates, each the 2-D area of the points below it.
export function hypervolume3D(points, ref) {
  const inside = points.filter((p) => p[0] < ref[0] && p[1] < ref[1] && p[2] < ref[2]).sort((a, b) => a[2] - b[2]);
  let volume = 0;
  for (let i = 0; i < inside.length; i += 1) {
    const top = i + 1 < inside.length ? inside[i + 1][2] : ref[2];
    if (top > inside[i][2]) volume += hypervolume2D(inside.slice(0, i + 1), ref) * (top - inside[i][2]);
  }
  return volume;
}

export function hypervolume(points, ref) {
  if (ref.length === 2) return hypervolume2D(points, ref);
  if (ref.length === 3) return hypervolume3D(points, ref);
  throw new Error(`hypervolume: ${ref.length} objectives (2 or 3 are supported)`);
}

// The hypervolume after each COMPLETED feasible trial (by increasing id) against `reference`
// (own units, objective order): [{id, hypervolume}]. The front is kept as trials arrive; the
// volume is computed again only when a trial joins it.
export function hypervolumeHistory(trials, objectives, reference) {
  const ref = minimized(reference, objectives);
  const sorted = [...trials].sort((a, b) => Number(a.id) - Number(b.id));
  let front = [];
  let volume = 0;
  const history = [];
  for (const t of sorted) {
    const values = valuesOf(t, objectives);
    if (values === undefined || t.feasible === false) continue;
    const p = minimized(values, objectives);
    if (!front.some((q) => dominates(q, p))) {
      front = front.filter((q) => !dominates(p, q));
      front.push(p);
      volume = hypervolume(front, ref);
    }
    history.push({ id: Number(t.id), hypervolume: volume });
  }
  return history;
}

function range(values) {
  let lo = Math.min(...values);
  let hi = Math.max(...values);
  if (!Number.isFinite(lo)) return [0, 1];
  if (lo === hi) {
    lo -= 0.5;
    hi += 0.5;
  }
  const margin = (hi - lo) * 0.04;
  return [lo - margin, hi + margin];
}

// The scatter of objectives i (x) and j (y) of the completed trials, in their own units: the
// front's trials (`frontIds`) highlighted and joined as a staircase (two objectives), infeasible
// trials as crosses, the reference point as a corner mark. `trials` are COMPLETED ones with
// their values (valuesOf).
export function paretoScatter(objectives, trials, frontIds, i, j, reference) {
  const items = trials.map((t) => ({ t, values: valuesOf(t, objectives) })).filter((x) => x.values !== undefined);
  const xs = items.map((x) => x.values[i]);
  const ys = items.map((x) => x.values[j]);
  if (reference?.length === objectives.length) {
    xs.push(reference[i]);
    ys.push(reference[j]);
  }
  const [x0, x1] = range(xs);
  const [y0, y1] = range(ys);
  const px = (v) => PAD.left + ((v - x0) / (x1 - x0)) * (WIDTH - PAD.left - PAD.right);
  const py = (v) => PAD.top + (1 - (v - y0) / (y1 - y0)) * (HEIGHT - PAD.top - PAD.bottom);
  const bottom = HEIGHT - PAD.bottom;
  const onFront = items.filter((x) => frontIds.has(String(x.t.id)));
  const infeasible = items.filter((x) => x.t.feasible === false);
  const others = items.filter((x) => !frontIds.has(String(x.t.id)) && x.t.feasible !== false);
  const tip = (x) => `trial ${x.t.id}: ${objectives.map((o, k) => `${o.name}=${number(x.values[k])}`).join(', ')}` +
    `${x.t.feasible === false ? ' (infeasible)' : ''}${frontIds.has(String(x.t.id)) ? ' (front)' : ''}`;
  // Two objectives: the front as the staircase of the region it dominates.
  let stairs = '';
  if (objectives.length === 2 && onFront.length > 0) {
    const sign = objectives.map((o) => (o.maximize ? -1 : 1));
    const sorted = [...onFront].sort((a, b) => sign[i] * (a.values[i] - b.values[i]));
    sorted.forEach((x, k) => {
      const [vx, vy] = [px(x.values[i]), py(x.values[j])];
      stairs += k === 0 ? `M${vx.toFixed(1)},${vy.toFixed(1)}` : `H${vx.toFixed(1)}V${vy.toFixed(1)}`;
    });
  }
  const label = (o) => `${o.name} (${o.maximize ? 'max' : 'min'})`;
  return s('svg', {
    class: 'plot pareto',
    viewBox: `0 0 ${WIDTH} ${HEIGHT}`,
    width: '100%',
    role: 'img',
    'aria-label': `${objectives[i].name} against ${objectives[j].name}`,
    'data-x': objectives[i].name,
    'data-y': objectives[j].name,
    'data-points': items.length,
    'data-front': onFront.length,
    'data-infeasible': infeasible.length,
  },
  s('line', { class: 'axis', x1: PAD.left, y1: bottom, x2: WIDTH - PAD.right, y2: bottom }),
  s('line', { class: 'axis', x1: PAD.left, y1: PAD.top, x2: PAD.left, y2: bottom }),
  s('text', { class: 'axis-label', x: (PAD.left + WIDTH - PAD.right) / 2, y: HEIGHT - 6, 'text-anchor': 'middle' }, label(objectives[i])),
  s('text', { class: 'axis-label', x: 12, y: PAD.top - 8 }, label(objectives[j])),
  s('text', { x: PAD.left, y: bottom + 14 }, number(x0)),
  s('text', { x: WIDTH - PAD.right, y: bottom + 14, 'text-anchor': 'end' }, number(x1)),
  s('text', { x: PAD.left - 4, y: bottom, 'text-anchor': 'end' }, number(y0)),
  s('text', { x: PAD.left - 4, y: PAD.top + 8, 'text-anchor': 'end' }, number(y1)),
  reference?.length === objectives.length
    ? s('path', {
      class: 'reference',
      d: `M${px(reference[i]) - 6},${py(reference[j])}h12M${px(reference[i])},${py(reference[j]) - 6}v12`,
      'data-tip': `reference point: ${objectives.map((o, k) => `${o.name}=${number(reference[k])}`).join(', ')}`,
    })
    : null,
  stairs ? s('path', { class: 'front-line', d: stairs }) : null,
  others.map((x) => s('circle', {
    class: 'point', cx: px(x.values[i]).toFixed(1), cy: py(x.values[j]).toFixed(1), r: 3, 'data-tip': tip(x),
  })),
  infeasible.map((x) => {
    const [cx, cy] = [px(x.values[i]), py(x.values[j])];
    return s('path', {
      class: 'infeasible', 'data-trial': x.t.id, 'data-tip': tip(x),
      d: `M${cx - 4},${cy - 4}L${cx + 4},${cy + 4}M${cx - 4},${cy + 4}L${cx + 4},${cy - 4}`,
    });
  }),
  onFront.map((x) => s('circle', {
    class: 'front-point', cx: px(x.values[i]).toFixed(1), cy: py(x.values[j]).toFixed(1), r: 5,
    'data-trial': x.t.id, 'data-tip': tip(x),
  })));
}

// The hypervolume after each feasible completed trial (hypervolumeHistory) as a step line.
export function hypervolumePlot(history) {
  const width = 900;
  const height = 240;
  const pad = { left: 64, right: 16, top: 16, bottom: 36 };
  const ids = history.map((p) => p.id);
  const xMin = ids.length > 0 ? Math.min(...ids) : 0;
  const xMax = ids.length > 0 ? Math.max(...ids) : 1;
  const yMax = history.length > 0 ? Math.max(...history.map((p) => p.hypervolume)) || 1 : 1;
  const x = (id) => pad.left + ((id - xMin) / Math.max(1, xMax - xMin)) * (width - pad.left - pad.right);
  const y = (v) => pad.top + (1 - v / yMax) * (height - pad.top - pad.bottom);
  const bottom = height - pad.bottom;
  let line = '';
  history.forEach((p, k) => {
    line += k === 0 ? `M${x(p.id).toFixed(1)},${y(p.hypervolume).toFixed(1)}`
      : `H${x(p.id).toFixed(1)}V${y(p.hypervolume).toFixed(1)}`;
  });
  const last = history.length > 0 ? history[history.length - 1].hypervolume : 0;
  return s('svg', {
    class: 'plot hypervolume',
    viewBox: `0 0 ${width} ${height}`,
    width: '100%',
    role: 'img',
    'aria-label': 'hypervolume over trials',
    'data-steps': history.length,
    'data-last': last,
  },
  s('line', { class: 'axis', x1: pad.left, y1: bottom, x2: width - pad.right, y2: bottom }),
  s('line', { class: 'axis', x1: pad.left, y1: pad.top, x2: pad.left, y2: bottom }),
  s('text', { x: pad.left - 6, y: y(yMax) + 4, 'text-anchor': 'end' }, number(yMax)),
  s('text', { x: pad.left - 6, y: bottom, 'text-anchor': 'end' }, '0'),
  s('text', { x: pad.left, y: height - 8 }, `trial ${xMin}`),
  s('text', { x: width - pad.right, y: height - 8, 'text-anchor': 'end' }, `trial ${xMax}`),
  line ? s('path', { class: 'best', d: line }) : null,
  history.map((p) => s('circle', {
    class: 'hv-point', cx: x(p.id).toFixed(1), cy: y(p.hypervolume).toFixed(1), r: 2,
    'data-tip': `after trial ${p.id}: hypervolume ${number(p.hypervolume)}`,
  })));
}
