// The dashboard in a real browser: Debian's chromium (headless), driven by playwright-core (no
// browser download), against the real metaopt-server with --tokens and studies made through the
// Node client. Checks that the pages render, the history plot has one dot per completed trial
// and one cross per failed or infeasible one, the parallel-coordinates and slice plots have a
// line or dot per completed trial (conditional parameters absent where they should be), the
// FineTune run and the exact last activity are shown, a 10,000-trial study loads in pages with
// thinned plots (its load and draw times are printed, not asserted), the trials table filters
// by state and source, the page refreshes itself when trials arrive, the models view shows the
// study bound to a model, studies with two and three objectives show their Pareto front (the
// server's), infeasible trials and a hypervolume curve that ends at the server's hypervolume, a
// wrong token is refused and the right one is kept for the session,
// and the browser logs no errors. Saves screenshots to $METAOPT_SCREENSHOTS.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { createRequire } from 'node:module';

import { chromium } from 'playwright-core';

import { Client } from '../../clients/node/src/index.js';

const here = path.dirname(fileURLToPath(import.meta.url));
// protobufjs, which the Node client's @grpc/proto-loader brings, reads the bundled models.
const protobuf = createRequire(path.join(here, '..', '..', 'clients', 'node', 'package.json'))('protobufjs');
const TOKEN = 'dashboard-test-token-0123456789';
const WRONG = 'not-the-token-9876543210abcdef';
const screenshots = process.env.METAOPT_SCREENSHOTS;
fs.mkdirSync(screenshots, { recursive: true });
// The database on tmpfs where there is one: durability is not under test here, and the
// 10,000-trial study is made faster without a disk sync per Observe.
const tmp = fs.mkdtempSync(path.join(fs.existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir(), 'metaopt-dashboard-'));
fs.writeFileSync(path.join(tmp, 'tokens'), `alice:${TOKEN}\n`);

// The server, on free ports; resolves to {grpc, http} once it logs both.
function startServer() {
  const child = spawn(process.env.METAOPT_SERVER, [
    '--listen', '127.0.0.1:0', '--db', path.join(tmp, 'metaopt.db'),
    '--models', path.join(here, '..', '..', 'models'), '--models-poll-interval', '0',
    '--tokens', path.join(tmp, 'tokens'), '--http-listen', '127.0.0.1:0',
    '--dashboard-dir', process.env.METAOPT_DASHBOARD_DIST,
  ], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${log}`)), 60_000);
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk) => {
      log += chunk;
      const grpc = /listening on [0-9.]+:([0-9]+)/.exec(log);
      const http = /dashboard at (http:\/\/[0-9.]+:[0-9]+\/)/.exec(log);
      if (grpc && http) {
        clearTimeout(timer);
        resolve({ child, grpc: `127.0.0.1:${grpc[1]}`, url: http[1] });
      }
    });
    child.on('exit', (code) => reject(new Error(`server exited (${code}):\n${log}`)));
  });
}

// A two-stage pipeline space: the algorithm of each stage is a categorical choice and the
// estimator's parameters are conditional on it (svm's C and kernel are absent for knn and
// tree trials).
function pipelineSpec(kind) {
  return {
    search_space: { stages: [
      { name: 'scaler', algorithms: [{ name: 'none' }, { name: 'standard' }] },
      { name: 'estimator', algorithms: [
        { name: 'svm', parameters: [
          { name: 'C', float_domain: { low: 0.001, high: 1000, log: true } },
          { name: 'kernel', categorical_domain: { values: ['rbf', 'linear', 'poly'] } }] },
        { name: 'knn', parameters: [{ name: 'n_neighbors', int_domain: { low: 1, high: 50 } }] },
        { name: 'tree', parameters: [
          { name: 'max_depth', int_domain: { low: 1, high: 30 } },
          { name: 'criterion', categorical_domain: { values: ['gini', 'entropy'] } }] }] }] },
    objective: { name: 'accuracy', goal: 'GOAL_MAXIMIZE' },
    algorithm: { kind },
    seed: 11,
  };
}

// A smooth accuracy over pipelineSpec configurations.
function pipelineAccuracy(configuration) {
  const [scaler, estimator] = configuration.assignments;
  const p = estimator.parameters;
  let accuracy = scaler.algorithm === 'standard' ? 0.05 : 0;
  if (estimator.algorithm === 'svm') {
    accuracy += 0.9 - 0.04 * Math.log10(p.C.number) ** 2 - (p.kernel.category === 'poly' ? 0.1 : 0);
  } else if (estimator.algorithm === 'knn') {
    accuracy += 0.8 - 0.002 * Math.abs(p.n_neighbors.number - 15);
  } else {
    accuracy += 0.75 - 0.004 * Math.abs(p.max_depth.number - 8) + (p.criterion.category === 'gini' ? 0.01 : 0);
  }
  return accuracy;
}

// A random pipelineSpec configuration from `random` (a () => [0, 1) function).
function randomPipeline(random) {
  const pick = (values) => values[Math.floor(random() * values.length)];
  const estimator = pick(['svm', 'knn', 'tree']);
  const parameters = {
    svm: () => ({ C: { number: 10 ** (random() * 6 - 3) }, kernel: { category: pick(['rbf', 'linear', 'poly']) } }),
    knn: () => ({ n_neighbors: { number: 1 + Math.floor(random() * 50) } }),
    tree: () => ({ max_depth: { number: 1 + Math.floor(random() * 30) }, criterion: { category: pick(['gini', 'entropy']) } }),
  }[estimator]();
  return { assignments: [
    { stage: 'scaler', algorithm: pick(['none', 'standard']) },
    { stage: 'estimator', algorithm: estimator, parameters }] };
}

// A seeded generator (mulberry32), so that the big study is the same on every run.
function seeded(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6D2B79F5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// The search space of a bundled registry model (its model.pb, a metaopt.v1.ModelArtifact), so
// that a study can be bound to it by name.
async function modelSpace(modelDir) {
  const root = new protobuf.Root();
  const protoDir = path.join(here, '..', '..', 'proto');
  const fallback = root.resolvePath;
  root.resolvePath = (origin, target) => (fs.existsSync(path.join(protoDir, target))
    ? path.join(protoDir, target) : fallback(origin, target));
  await root.load('metaopt/v1/model.proto', { keepCase: true });
  const Artifact = root.lookupType('metaopt.v1.ModelArtifact');
  const artifact = Artifact.decode(fs.readFileSync(path.join(modelDir, 'model.pb')));
  return Artifact.toObject(artifact, { longs: String, enums: String }).search_space;
}

// Records `count` externally evaluated configurations in `study`, `inFlight` at a time; every
// 20th fails and every 50th is infeasible.
async function observeMany(study, count, inFlight = 32) {
  const random = seeded(19);
  const jobs = Array.from({ length: count }, (_, i) => {
    const configuration = randomPipeline(random);
    if (i % 20 === 19) return [configuration, { failed: 'out of memory' }];
    if (i % 50 === 49) return [configuration, { infeasible: 'did not converge' }];
    return [configuration, pipelineAccuracy(configuration)];
  });
  let next = 0;
  await Promise.all(Array.from({ length: inFlight }, async () => {
    while (next < jobs.length) {
      const [configuration, result] = jobs[next];
      next += 1;
      await study.observeConfiguration(configuration, result);
    }
  }));
}

// What the page computes of a study's trials, from the API's own answer: how many completed
// trials have a value on each parameter.
function presentCounts(trials) {
  const counts = {};
  for (const t of trials) {
    if (t.state !== 'TRIAL_STATE_COMPLETED') continue;
    for (const a of t.configuration.assignments) {
      for (const name of Object.keys(a.parameters ?? {})) {
        const key = `${a.stage}/${a.algorithm}/${name}`;
        counts[key] = (counts[key] ?? 0) + 1;
      }
    }
  }
  return counts;
}

const branin = (x1, x2) => (x2 - (5.1 / (4 * Math.PI ** 2)) * x1 ** 2 + (5 / Math.PI) * x1 - 6) ** 2 +
  10 * (1 - 1 / (8 * Math.PI)) * Math.cos(x1) + 10;

function braninSpec(kind) {
  return {
    search_space: { stages: [{ name: 'branin', algorithms: [{ name: 'branin', parameters: [
      { name: 'x1', float_domain: { low: -5, high: 10 } },
      { name: 'x2', float_domain: { low: 0, high: 15 } }] }] }] },
    objective: { name: 'branin', goal: 'GOAL_MINIMIZE' },
    algorithm: { kind },
    seed: 7,
  };
}

// Runs `count` trials; the trial numbers in `failed` / `infeasible` (1-based) fail.
async function runTrials(study, count, { failed = [], infeasible = [], offset = 0 } = {}) {
  for (let i = 1; i <= count; i += 1) {
    const [trial] = await study.suggest(1);
    const n = offset + i;
    const { assignments } = trial.configuration;
    const p = assignments[0].parameters;
    const value = branin(p.x1.number, p.x2.number);
    if (failed.includes(n)) await study.observe(trial, { failed: 'worker crashed' });
    else if (infeasible.includes(n)) await study.observe(trial, { infeasible: 'diverged' });
    else await study.observe(trial, value);
  }
}

const { child, grpc, url } = await startServer();
const client = new Client({ target: grpc, token: TOKEN });
const browser = await chromium.launch({
  executablePath: process.env.METAOPT_CHROMIUM,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const errors = [];
let passed = 0;
async function step(name, fn) {
  await fn();
  passed += 1;
  console.log(`ok ${passed} - ${name}`);
}
try {
  const gp = (await client.createStudy('branin-gp', braninSpec('ALGORITHM_KIND_GP')));
  await runTrials(gp, 15, { failed: [4, 9], infeasible: [12] });
  const random = await client.createStudy('branin-random', braninSpec('ALGORITHM_KIND_RANDOM'));
  await runTrials(random, 6);
  // A pipeline study (categorical algorithm axes, conditional parameters) with a FineTune run.
  const pipeline = await client.createStudy('pipeline-gp', pipelineSpec('ALGORITHM_KIND_GP'));
  for (let i = 0; i < 14; i += 1) {
    const [trial] = await pipeline.suggest(1);
    if (i === 5) await pipeline.observe(trial, { failed: 'worker crashed' });
    else await pipeline.observe(trial, pipelineAccuracy(trial.configuration));
  }
  const tuned = await pipeline.fineTune({ steps: 20, scope: 'kernel' });
  // A study bound to a registry model by name (the bundled fcnet portfolio), over its space.
  const fcnetSpace = await modelSpace(path.join(here, '..', '..', 'models', 'fcnet-portfolio', '1'));
  const bound = await client.createStudy('fcnet-bound', {
    search_space: fcnetSpace,
    objective: { name: 'loss', goal: 'GOAL_MINIMIZE' },
    algorithm: { kind: 'ALGORITHM_KIND_GP', model: 'fcnet-portfolio' },
    seed: 3,
  });
  for (let i = 0; i < 8; i += 1) {
    const [trial] = await bound.suggest(1);
    await bound.observe(trial, 0.1 + 0.01 * i);
  }
  // 10,000 trials: externally evaluated configurations (Observe without a trial id).
  const big = await client.createStudy('big', pipelineSpec('ALGORITHM_KIND_RANDOM'));
  const bigStart = performance.now();
  await observeMany(big, 10_000);
  console.log(`# made the 10,000-trial study in ${((performance.now() - bigStart) / 1000).toFixed(1)} s`);
  const bigTrials = await big.trials();
  const bigCompleted = bigTrials.filter((t) => t.state === 'TRIAL_STATE_COMPLETED').length;

  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  // 401s are expected while the token is asked for; every other console error fails the test.
  page.on('console', (message) => {
    if (message.type() === 'error' && !/status of 401/.test(message.text())) errors.push(message.text());
  });
  page.on('pageerror', (error) => errors.push(`page error: ${error.message}`));
  // A reload aborts a refresh in flight (net::ERR_ABORTED); any other failure is an error.
  page.on('requestfailed', (request) => {
    if (request.failure()?.errorText !== 'net::ERR_ABORTED') {
      errors.push(`request failed: ${request.url()} ${request.failure()?.errorText}`);
    }
  });

  await step('without a token the page asks for one', async () => {
    await page.goto(url);
    await page.waitForSelector('#token-form');
    await page.screenshot({ path: path.join(screenshots, 'dashboard-token.png') });
  });

  await step('a wrong token is refused', async () => {
    await page.fill('#token', WRONG);
    await page.click('#token-form button');
    await page.waitForSelector('#token-error');
    assert.match(await page.textContent('#token-error'), /refused/);
    assert.equal(await page.evaluate(() => sessionStorage.getItem('metaopt.token')), null);
  });

  await step('the right token opens the study list', async () => {
    await page.fill('#token', TOKEN);
    await page.click('#token-form button');
    await page.waitForSelector('#studies tbody tr');
    assert.equal(await page.locator('#studies tbody tr').count(), 5);
    const row = page.locator('#studies tbody tr[data-study="branin-gp"] td');
    assert.deepEqual((await row.allTextContents()).slice(0, 5), ['branin-gp', 'gp', '', 'active', '15']);
    // Last activity is the study's update time: the pipeline study's FineTune run.
    const { info } = await client.getStudy('pipeline-gp');
    const activity = await page.locator('#studies tbody tr[data-study="pipeline-gp"] td').nth(7).textContent();
    assert.equal(activity, new Date(Number(info.updateTime.seconds) * 1000 +
      Math.floor(info.updateTime.nanos / 1e6)).toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z'));
    assert.equal(info.fineTuneRuns.length, 1);
    assert.deepEqual(info.updateTime, info.fineTuneRuns[0].time);
    // The cell's title is the timestamp itself, to the nanosecond.
    const exact = await page.locator('#studies tbody tr[data-study="pipeline-gp"] td:nth-child(8) span').getAttribute('title');
    const [, whole, fraction = ''] = /^(.*?)(?:\.(\d+))?Z$/.exec(exact);
    assert.equal(Date.parse(`${whole}Z`) / 1000, Number(info.updateTime.seconds));
    assert.equal(Number(fraction.padEnd(9, '0')), info.updateTime.nanos);
    assert.ok(!page.url().includes(TOKEN), 'the token is not in the URL');
    assert.equal(await page.evaluate(() => sessionStorage.getItem('metaopt.token')), TOKEN);
    await page.screenshot({ path: path.join(screenshots, 'dashboard-studies.png') });
  });

  await step('the study list sorts and searches', async () => {
    await page.click('#studies th[data-key="trials"]');  // ascending
    assert.equal(await page.locator('#studies tbody tr').first().getAttribute('data-study'), 'branin-random');
    await page.click('#studies th[data-key="trials"]');  // descending
    assert.equal(await page.locator('#studies tbody tr').first().getAttribute('data-study'), 'big');
    await page.fill('#search', 'branin-r');
    assert.equal(await page.locator('#studies tbody tr').count(), 1);
    assert.match(await page.textContent('#study-count'), /1 of 5/);
    await page.fill('#search', '');
  });

  await step('the study view plots every value and marks failures', async () => {
    await page.click('#studies a[href="#/studies/branin-gp"]');
    await page.waitForSelector('#study-view[data-complete="true"]');
    assert.equal(new URL(page.url()).hash, '#/studies/branin-gp');
    const plot = page.locator('#history svg');
    assert.equal(await plot.getAttribute('data-completed'), '12');
    assert.equal(await plot.locator('circle.point').count(), 12);
    assert.equal(await plot.locator('path.failed').count(), 2);
    assert.equal(await plot.locator('path.infeasible').count(), 1);
    assert.equal(await plot.locator('path.best').count(), 1);
    assert.equal(await page.locator('#trials tbody tr').count(), 15);
    assert.equal(await page.textContent('#study-counts'), '12 / 2 / 1');
    const first = page.locator('#trials tbody tr[data-trial="1"] td');
    assert.match(await first.nth(3).textContent(), /^branin: branin\(x1=.*, x2=.*\)$/);
    assert.notEqual(await first.nth(4).textContent(), '', 'each trial says where it came from');
    await page.screenshot({ path: path.join(screenshots, 'dashboard-study.png') });
  });

  await step('the pipeline study plots its parameters, slices and FineTune run', async () => {
    await page.goto(`${url}#/studies/pipeline-gp`);
    await page.waitForSelector('#study-view[data-complete="true"]');
    const trials = await pipeline.trials();
    const completed = trials.filter((t) => t.state === 'TRIAL_STATE_COMPLETED').length;
    assert.equal(completed, 13);
    // Parallel coordinates: axes scaler, estimator, svm.C, svm.kernel, knn.n_neighbors,
    // tree.max_depth, tree.criterion, objective; one line per completed trial.
    const parallel = page.locator('#parallel svg');
    assert.equal(await parallel.getAttribute('data-axes'), '8');
    assert.equal(await parallel.getAttribute('data-lines'), String(completed));
    assert.equal(await parallel.locator('path.pc-line').count(), completed);
    assert.deepEqual(await parallel.locator('g.pc-axis').evaluateAll((gs) => gs.map((g) => g.dataset.kind)),
      ['algorithm', 'algorithm', 'numeric', 'categorical', 'numeric', 'numeric', 'categorical', 'numeric']);
    // Conditional parameters: the trials without svm cross svm.C's axis at "absent".
    const present = presentCounts(trials);
    const absent = (await parallel.getAttribute('data-absent')).split(',').map(Number);
    assert.equal(absent[2], completed - (present['estimator/svm/C'] ?? 0));
    assert.equal(absent[4], completed - (present['estimator/knn/n_neighbors'] ?? 0));
    assert.equal(absent[0], 0);
    // One slice per axis but the objective, with a dot per completed trial that has the value.
    const slices = page.locator('#slices svg');
    assert.equal(await slices.count(), 7);
    for (const key of ['estimator/svm/C', 'estimator/svm/kernel', 'estimator/knn/n_neighbors',
      'estimator/tree/max_depth', 'estimator/tree/criterion']) {
      const slice = page.locator(`#slices svg[data-axis="${key}"]`);
      assert.equal(await slice.locator('circle.slice-point').count(), present[key] ?? 0, key);
    }
    assert.equal(await page.locator('#slices svg[data-axis="scaler"] circle.slice-point').count(), completed);
    // The FineTune run, as the client saw it.
    const run = page.locator('#fine-tune tbody tr');
    assert.equal(await run.count(), 1);
    const cells = await run.locator('td').allTextContents();
    assert.equal(cells[0], '1');
    assert.equal(cells[2], 'kernel');
    assert.equal(cells[3], `${tuned.stepsRun} / 20`);
    assert.equal(Number(cells[4]), Number(tuned.lossBefore.toPrecision(6)));
    assert.equal(Number(cells[5]), Number(tuned.lossAfter.toPrecision(6)));
    assert.equal(cells[7], '13 trials');
    assert.match(cells[8], /^[0-9.]+ m?s$/);
    assert.equal(await page.textContent('#study-fine-tunes'), '1');
    // Where each trial came from: a source on every row, and the filter by source.
    const sources = await page.locator('#trials tbody tr td:nth-child(5)').allTextContents();
    assert.equal(sources.length, 14);
    assert.ok(sources.every((x) => /^gp\//.test(x)), sources.join(', '));
    const fineTuneBottom = await page.locator('#fine-tune').evaluate((e) => e.getBoundingClientRect().bottom + window.scrollY);
    await page.screenshot({ path: path.join(screenshots, 'dashboard-parameters.png'), fullPage: true,
      clip: { x: 0, y: 0, width: 1280, height: Math.ceil(fineTuneBottom) + 16 } });
    const first = sources[sources.length - 1];
    await page.selectOption('#source-filter', first);
    assert.equal(await page.locator('#trials tbody tr').count(), sources.filter((x) => x === first).length);
    await page.selectOption('#source-filter', '');
  });

  await step('a 10,000-trial study loads in pages and draws thinned plots', async () => {
    await page.goto(`${url}#/studies/big`);
    await page.waitForSelector('#study-view[data-complete="true"]', { timeout: 120_000 });
    const timing = await page.evaluate(() => window.metaoptTiming);
    assert.equal(timing.trials, 10_000);
    console.log(`# 10,000-trial study view: trials loaded in ${timing.loadMs} ms, ` +
      `drawn (layout and paint) in ${timing.renderMs} ms, ${timing.totalMs} ms in all`);
    fs.writeFileSync(path.join(screenshots, 'big-study-timing.json'), `${JSON.stringify(timing)}\n`);
    assert.equal(await page.textContent('#study-trials'), '10000');
    const history = page.locator('#history svg');
    assert.equal(await history.getAttribute('data-completed'), String(bigCompleted));
    assert.equal(await history.getAttribute('data-failed'), '500');
    assert.ok(Number(await history.getAttribute('data-points')) <= 1500 + Number(await history.getAttribute('data-best-steps')));
    assert.equal(await history.locator('circle.point').count(), Number(await history.getAttribute('data-points')));
    const parallel = page.locator('#parallel svg');
    assert.equal(await parallel.getAttribute('data-completed'), String(bigCompleted));
    assert.equal(await parallel.locator('path.pc-line').count(), 500);
    for (const slice of await page.locator('#slices svg').all()) {
      assert.equal(await slice.getAttribute('data-points'), '300');
      assert.equal(await slice.locator('circle.slice-point').count(), Number(await slice.getAttribute('data-points')));
    }
    assert.equal(await page.locator('#trials tbody tr').count(), 100);
    assert.equal(await page.locator('#trials tbody tr').first().getAttribute('data-trial'), '10000');
    assert.match(await page.textContent('.pager'), /page 1 of 100/);
    assert.match(await page.textContent('#study-sources'), /^external 10000$/);
    // JPEG: a PNG of 10,000 trials' plots is four times the size.
    await page.screenshot({ path: path.join(screenshots, 'dashboard-big-study.jpg'), fullPage: true,
      clip: { x: 0, y: 0, width: 1280, height: 2000 }, type: 'jpeg', quality: 80 });
    // Live: new trials of the big study arrive without a reload.
    await observeMany(big, 5, 1);
    await page.waitForFunction(() => document.querySelector('#study-trials')?.textContent === '10005',
      null, { timeout: 15_000 });
    await page.waitForFunction(() => document.querySelector('#trials tbody tr')?.dataset.trial === '10005',
      null, { timeout: 15_000 });
  });

  await step('the trials table filters by state', async () => {
    await page.goto(`${url}#/studies/branin-gp`);
    await page.waitForSelector('#study-view[data-complete="true"]');
    await page.selectOption('#state-filter', 'FAILED');
    assert.equal(await page.locator('#trials tbody tr').count(), 2);
    assert.match(await page.textContent('#trials tbody'), /worker crashed/);
    await page.selectOption('#state-filter', 'INFEASIBLE');
    assert.equal(await page.locator('#trials tbody tr').count(), 1);
    await page.selectOption('#state-filter', '');
  });

  await step('the study view refreshes itself as trials arrive', async () => {
    await runTrials(gp, 3, { offset: 15 });
    await page.waitForFunction(() => document.querySelector('#study-trials')?.textContent === '18',
      null, { timeout: 15_000 });
    await page.waitForFunction(() => document.querySelectorAll('#history circle.point').length === 15,
      null, { timeout: 15_000 });
  });

  await step('a shared link opens the study directly, the token kept for the session', async () => {
    const other = await context.newPage();
    other.on('pageerror', (error) => errors.push(`page error: ${error.message}`));
    // A new tab of the same context has its own sessionStorage: it asks again.
    await other.goto(`${url}#/studies/branin-random`);
    await other.waitForSelector('#token-form');
    await other.close();
    await page.reload();
    await page.waitForSelector('#study-view[data-complete="true"]');
    assert.equal(await page.locator('#history circle.point').count(), 15);
  });

  await step('the models view lists the registry and the studies bound to each', async () => {
    const { info: boundInfo } = await client.getStudy('fcnet-bound');
    assert.match(boundInfo.boundModel, /^fcnet-portfolio@1$/);
    await page.goto(`${url}#/models`);
    await page.waitForSelector('#models tbody tr');
    assert.ok(await page.locator('#models tbody tr').count() >= 1);
    const row = page.locator(`#models tbody tr[data-model="${boundInfo.boundModel}"]`);
    assert.deepEqual(await row.locator('td.bound a').allTextContents(), ['fcnet-bound']);
    // The others bind no study.
    const links = await page.locator('#models tbody tr td.bound a').allTextContents();
    assert.deepEqual(links, ['fcnet-bound']);
    await row.locator('a').click();
    await page.waitForSelector('#study-view[data-complete="true"]');
    assert.equal(await page.textContent('#study-model'), boundInfo.boundModel);
    assert.match(await page.textContent('#study-sources'), /gp\//);
    await page.goto(`${url}#/models`);
    await page.waitForSelector('#models tbody tr');
    await page.screenshot({ path: path.join(screenshots, 'dashboard-models.png') });
  });

  // Several objectives: accuracy (max) against seconds (min) subject to memory_mb <= 200 with GP,
  // and three objectives with random search; made now so that the study list above keeps its five.
  const paretoOutcome = (p) => ({
    accuracy: 1 - branin(p.x1.number, p.x2.number) / 300,
    seconds: p.x1.number + 5 + p.x2.number / 3,
    memory_mb: 20 * p.x2.number,
  });
  async function paretoStudy(id, objectives, constraints, kind, count) {
    const study = await client.createStudy(id, {
      ...braninSpec(kind), objective: undefined, objectives, constraints,
      algorithm: { kind, initial_trials: 5 },
    });
    for (let i = 0; i < count; i += 1) {
      const [trial] = await study.suggest(1);
      const outcome = paretoOutcome(trial.configuration.assignments[0].parameters);
      await study.observe(trial, { metrics: { ...outcome, balance: Math.abs(outcome.accuracy - 0.9) } });
    }
    return study;
  }
  // Checks the study view's front, marks and hypervolume against the server's GetParetoFront.
  async function checkPareto(study, scatters) {
    await page.goto(`${url}#/studies/${study.id}`);
    await page.waitForSelector('#study-view[data-complete="true"]');
    const trials = await study.trials();
    const { trials: front, summary } = await study.paretoFront();
    const frontIds = front.map((t) => t.id).sort();
    assert.ok(front.length > 0 && Number(summary.size) === front.length);
    const plots = page.locator('#pareto-scatters svg');
    assert.equal(await plots.count(), scatters);
    for (let k = 0; k < scatters; k += 1) {
      const plot = plots.nth(k);
      assert.equal(await plot.getAttribute('data-points'), String(trials.length));
      assert.equal(await plot.getAttribute('data-front'), String(front.length));
      const marked = await plot.locator('circle.front-point').evaluateAll((marks) => marks.map((m) => m.dataset.trial));
      assert.deepEqual(marked.sort(), frontIds, 'the front the page computes is the server\'s');
      const infeasible = trials.filter((t) => t.feasible === false).length;
      assert.equal(await plot.locator('path.infeasible').count(), infeasible);
    }
    assert.equal(await page.getAttribute('#front-size', 'data-size'), String(front.length));
    assert.match(await page.textContent('#study-front'), new RegExp(`^${front.length} trials, hypervolume `));
    const hv = page.locator('#pareto svg.hypervolume');
    const last = Number(await hv.getAttribute('data-last'));
    assert.ok(Math.abs(last - summary.hypervolume) <= 1e-9 * Math.max(1, summary.hypervolume),
      `the browser's hypervolume ${last}, the server's ${summary.hypervolume}`);
    assert.equal(await hv.getAttribute('data-steps'), String(trials.filter((t) => t.feasible !== false).length));
    return trials;
  }

  await step('a study with two objectives and a constraint shows its front and hypervolume', async () => {
    const study = await paretoStudy('pareto-gp', [['accuracy', 'maximize'], ['seconds', 'minimize']],
      [['memory_mb', '<=', 200]], 'ALGORITHM_KIND_GP', 16);
    const trials = await checkPareto(study, 1);
    const violating = trials.filter((t) => t.feasible === false).length;
    assert.ok(violating > 0, 'no trial violates the constraint');
    assert.equal(await page.textContent('#study-violating'), String(violating));
    assert.equal(await page.locator('#trials tbody tr[data-feasible="false"]').count(), violating);
    assert.equal(await page.textContent('#study-objectives'), 'accuracy (max), seconds (min)');
    assert.equal(await page.textContent('#study-constraints'), 'memory_mb ≤ 200');
    await page.locator('#pareto').screenshot({ path: path.join(screenshots, 'dashboard-pareto.png') });
  });

  await step('a study with three objectives shows pairwise scatters', async () => {
    const study = await paretoStudy('pareto-three', [['accuracy', 'maximize'], ['seconds', 'minimize'],
      ['balance', 'minimize']], [], 'ALGORITHM_KIND_RANDOM', 14);
    await checkPareto(study, 3);
    await page.locator('#pareto').screenshot({ path: path.join(screenshots, 'dashboard-pareto-three.png') });
  });

  await step('forgetting the token asks for it again', async () => {
    await page.click('#signout');
    await page.waitForSelector('#token-form');
    assert.equal(await page.evaluate(() => sessionStorage.getItem('metaopt.token')), null);
  });

  await step('the browser logged no errors', async () => {
    assert.deepEqual(errors, []);
  });
  console.log(`dashboard_browser_test: ${passed} checks passed; screenshots in ${screenshots}`);
} finally {
  await browser.close();
  client.close();
  child.kill('SIGTERM');
  fs.rmSync(tmp, { recursive: true, force: true });
}
