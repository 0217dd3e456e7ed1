// Unit tests of the dashboard's modules that need no browser: enum and state names (states a
// newer server adds are shown by name), the search-space axes and each trial's value on them
// (conditional parameters absent), the plots' thinning, several objectives' front and hypervolume, and the trial store's paged loading
// and updates (against a fake /api/v1/ that counts what is fetched).
//   node --test dashboard/test/units_test.mjs
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { shortEnum, statesOf, trialState, unsettled } from '../src/format.js';
import {
  constraintsText, dominates, hypervolume2D, hypervolume3D, hypervolumeHistory, nonDominated, objectivesOf, valuesOf,
} from '../src/pareto.js';
import { thin } from '../src/plot.js';
import { axesOf, scaleOf, valueReader } from '../src/space.js';
import { TrialStore } from '../src/trials.js';

test('unknown enum values are shown by name, unknown numbers as numbers', () => {
  assert.equal(shortEnum('TRIAL_STATE_COMPLETED', 'TRIAL_STATE_'), 'COMPLETED');
  assert.equal(shortEnum('TRIAL_STATE_PAUSED', 'TRIAL_STATE_'), 'PAUSED');
  assert.equal(shortEnum(9, 'TRIAL_STATE_'), '9');
  assert.equal(shortEnum(undefined, 'TRIAL_STATE_'), '');
  const trials = [{ state: 'TRIAL_STATE_COMPLETED' }, { state: 'TRIAL_STATE_PAUSED' }, { state: 'TRIAL_STATE_STOPPED' }];
  assert.deepEqual(statesOf(trials),
    ['ACTIVE', 'COMPLETED', 'FAILED', 'INFEASIBLE', 'STOPPED', 'ABANDONED', 'STALE', 'PAUSED']);
  assert.equal(trialState(trials[1]), 'PAUSED');
  assert.equal(unsettled({ state: 'TRIAL_STATE_ACTIVE' }), true);
  assert.equal(unsettled({ state: 'TRIAL_STATE_STOPPED', completeTime: '2026-01-01T00:00:00Z' }), false);
});

const spec = {
  searchSpace: { stages: [
    { name: 'scaler', algorithms: [{ name: 'none' }, { name: 'standard' }] },
    { name: 'estimator', algorithms: [
      { name: 'svm', parameters: [
        { name: 'C', floatDomain: { low: 0.001, high: 1000, log: true } },
        { name: 'kernel', categoricalDomain: { values: ['rbf', 'linear'] } }] },
      { name: 'knn', parameters: [{ name: 'k', intDomain: { low: '1', high: '50' } }] }] }] },
};

test('axes: algorithm choices, parameters, conditional values absent', () => {
  const axes = axesOf(spec);
  assert.deepEqual(axes.map((a) => [a.key, a.label, a.kind]), [
    ['scaler', 'scaler', 'algorithm'],
    ['estimator', 'estimator', 'algorithm'],
    ['estimator/svm/C', 'svm.C', 'numeric'],
    ['estimator/svm/kernel', 'svm.kernel', 'categorical'],
    ['estimator/knn/k', 'knn.k', 'numeric'],
  ]);
  assert.equal(axes[2].log, true);
  assert.equal(axes[4].high, 50); // int64 bounds arrive as strings
  const read = valueReader(spec);
  const knn = { configuration: { assignments: [
    { stage: 'scaler', algorithm: 'standard' },
    { stage: 'estimator', algorithm: 'knn', parameters: { k: { number: 7 } } }] } };
  assert.deepEqual(axes.map((a) => read(knn, a)), ['standard', 'knn', undefined, undefined, 7]);
  const svm = { configuration: { assignments: [
    { stage: 'scaler', algorithm: 'none' },
    { stage: 'estimator', algorithm: 'svm', parameters: { C: { number: 1 }, kernel: { category: 'linear' } } }] } };
  assert.deepEqual(axes.map((a) => read(svm, a)), ['none', 'svm', 1, 'linear', undefined]);
  // Scales: log middle, category bands, clamping.
  assert.ok(Math.abs(scaleOf(axes[2])(1) - 0.5) < 1e-12);
  assert.equal(scaleOf(axes[3])('linear'), 0.75);
  assert.equal(scaleOf(axes[4])(500), 1);
});

test('a one-stage, one-algorithm space reads assignments without stage or algorithm', () => {
  const one = { searchSpace: { stages: [{ name: 'f', algorithms: [{ name: 'f', parameters: [
    { name: 'x', floatDomain: { low: -1, high: 1 } }] }] }] } };
  const axes = axesOf(one);
  assert.deepEqual(axes.map((a) => a.label), ['x']);
  assert.equal(valueReader(one)({ configuration: { assignments: [{ parameters: { x: { number: 0.5 } } }] } }, axes[0]), 0.5);
  assert.equal(valueReader(one)({ configuration: { assignments: [{ parameters: { x: {} } }] } }, axes[0]), 0);
});

test('thin keeps the best fifth and samples the rest, worst drawn first', () => {
  const trials = Array.from({ length: 1000 }, (_, i) => ({ id: String(i + 1), value: (i * 37) % 1000 }));
  const less = (a, b) => a < b;
  const kept = thin(trials, 100, less);
  assert.equal(kept.length, 100);
  assert.equal(new Set(kept.map((t) => t.id)).size, 100);
  const values = kept.map((t) => t.value);
  for (let v = 0; v < 20; v += 1) assert.ok(values.includes(v), `best value ${v} kept`);
  assert.equal(values[values.length - 1], 0); // the best last, on top
  assert.equal(thin(trials.slice(0, 10), 100, less).length, 10);
});

// A fake /api/v1/studies/s/trials: `trials` by id, pages of page_size (tokens "trial:<last id>"
// in base64, like the server's); counts the trials it sends.
function fakeServer(trials) {
  const served = { trials: 0, requests: 0 };
  globalThis.sessionStorage = { getItem: () => null, setItem() {}, removeItem() {} };
  globalThis.fetch = async (url) => {
    const query = new URL(url, 'http://x/').searchParams;
    const size = Number(query.get('page_size')) || 100;
    const token = query.get('page_token');
    const after = token ? Number(Buffer.from(token, 'base64').toString().split(':')[1]) : 0;
    const page = trials.slice(after, after + size);
    const body = { trials: page.map((t) => ({ ...t })) };
    if (after + size < trials.length) body.nextPageToken = Buffer.from(`trial:${after + size}`).toString('base64');
    served.trials += page.length;
    served.requests += 1;
    return { ok: true, status: 200, json: async () => body };
  };
  return served;
}

const done = (id) => ({ id: String(id), state: 'TRIAL_STATE_COMPLETED', value: id, completeTime: 't' });
const active = (id) => ({ id: String(id), state: 'TRIAL_STATE_ACTIVE' });

test('the trial store loads page by page and then fetches only what can change', async () => {
  const trials = Array.from({ length: 3500 }, (_, i) => done(i + 1));
  trials[1199] = active(1200); // on the second page
  const served = fakeServer(trials);
  const store = new TrialStore('studies/s/trials');
  let pages = 0;
  await store.load(() => { pages += 1; });
  assert.equal(pages, 4);
  assert.equal(store.size, 3500);
  assert.equal(served.trials, 3500);
  assert.deepEqual(store.trials.slice(0, 2).map((t) => t.id), ['1', '2']);

  // Nothing changed: the update fetches the page with the ACTIVE trial and the last one.
  served.trials = 0;
  assert.equal(await store.update(3500), false);
  assert.equal(served.trials, 1000 + 500);

  // The ACTIVE trial completes and 20 trials arrive.
  trials[1199] = done(1200);
  for (let id = 3501; id <= 3520; id += 1) trials.push(done(id));
  served.trials = 0;
  assert.equal(await store.update(3520), true);
  assert.equal(store.size, 3520);
  assert.equal(store.trials[1199].state, 'TRIAL_STATE_COMPLETED');
  assert.equal(store.trials[3519].id, '3520');
  assert.equal(served.trials, 1000 + 520);

  // All settled: only the last page.
  served.trials = 0;
  assert.equal(await store.update(3520), false);
  assert.equal(served.trials, 520);

  // Fewer trials than held: another study under the same id; loaded afresh.
  trials.length = 10;
  assert.equal(await store.update(10), true);
  assert.equal(store.size, 10);
});

test('Pareto: dominance, the front, exact 2-D and 3-D hypervolume, the history', () => {
  assert.equal(dominates([1, 2], [1, 3]), true);
  assert.equal(dominates([1, 3], [1, 3]), false);
  assert.equal(dominates([0, 4], [1, 3]), false);
  assert.deepEqual(nonDominated([[1, 3], [2, 2], [2, 3], [3, 1], [1, 3]]), [0, 1, 3, 4]);
  // Three staircase points against (4, 4): 3 + 2 + 1 cells.
  assert.equal(hypervolume2D([[1, 3], [2, 2], [3, 1]], [4, 4]), 6);
  // A point outside the reference box adds nothing; a dominated one adds nothing.
  assert.equal(hypervolume2D([[1, 3], [5, 0], [2, 3.5]], [4, 4]), 3);
  // One point: a box; two points: the union of two boxes (2*2*2 + 1*1*3 - overlap 1*1*2 = 9).
  assert.equal(hypervolume3D([[1, 1, 1]], [3, 3, 3]), 8);
  assert.equal(hypervolume3D([[1, 1, 1], [2, 2, 0]], [3, 3, 3]), 9);
  // Counted unit cells of a random integer front in [0, 6)^3 against (6, 6, 6).
  let seed = 7;
  const random = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % 6; };
  const cloud = Array.from({ length: 12 }, () => [random(), random(), random()]);
  let cells = 0;
  for (let x = 0; x < 6; x += 1) for (let y = 0; y < 6; y += 1) for (let z = 0; z < 6; z += 1) {
    if (cloud.some((p) => p[0] <= x && p[1] <= y && p[2] <= z)) cells += 1;
  }
  assert.equal(hypervolume3D(cloud, [6, 6, 6]), cells);
  // accuracy (max) against seconds (min); trial 3 violates a constraint, trial 4 is dominated.
  const objectives = objectivesOf({ objectives: [
    { name: 'accuracy', goal: 'GOAL_MAXIMIZE' }, { name: 'seconds', goal: 'GOAL_MINIMIZE' }] });
  const trial = (id, accuracy, seconds, feasible = true) => ({
    id: String(id), state: 'TRIAL_STATE_COMPLETED', value: accuracy, metrics: { accuracy, seconds }, feasible });
  const trials = [trial(1, 0.6, 1), trial(2, 0.7, 2), trial(3, 0.9, 0.5, false), trial(4, 0.65, 3),
    { id: '5', state: 'TRIAL_STATE_FAILED' }, trial(6, 0.8, 4)];
  assert.deepEqual(valuesOf(trials[1], objectives), [0.7, 2]);
  const history = hypervolumeHistory(trials, objectives, [0.5, 5]);
  assert.deepEqual(history.map((p) => p.id), [1, 2, 4, 6]);
  assert.ok(Math.abs(history[0].hypervolume - 0.1 * 4) < 1e-12);
  assert.equal(history[2].hypervolume, history[1].hypervolume); // a dominated trial adds nothing
  const front = [[-0.6, 1], [-0.7, 2], [-0.8, 4]];
  assert.ok(Math.abs(history[3].hypervolume - hypervolume2D(front, [-0.5, 5])) < 1e-12);
  assert.deepEqual(constraintsText({ constraints: [{ metric: 'memory_mb', sense: 'CONSTRAINT_SENSE_AT_MOST', bound: 300 }] }),
    ['memory_mb ≤ 300']);
});
