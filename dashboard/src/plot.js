// The optimization history as an SVG: every completed value (a dot), the best-so-far line, and
// failed / infeasible trials as crosses on the bottom edge. Above `maxPoints` completed trials
// the dots are thinned to every k-th one (the improvements of the best are always kept), so
// 10,000-trial studies stay light; data-* attributes say how many were drawn.
import { s } from './dom.js';
import { number, trialState } from './format.js';

const WIDTH = 900;
const HEIGHT = 300;
const PAD = { left: 64, right: 16, top: 12, bottom: 36 };

export function historyPlot(trials, maximize, maxPoints = 2000) {
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
    }, s('title', {}, `trial ${t.id}: ${trialState(t).toLowerCase()} ${t.failureReason ?? ''}`));
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
  dots.map((t) => s('circle', { class: 'point', cx: x(Number(t.id)), cy: y(t.value), r: 3 },
    s('title', {}, `trial ${t.id}: ${number(t.value)}`))),
  best.length > 0 ? s('path', { class: 'best', d: line }) : null,
  failed.map((t) => cross(t, 'failed')),
  infeasible.map((t) => cross(t, 'infeasible')));
}
