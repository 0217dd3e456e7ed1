// The dashboard in a real browser: Debian's chromium (headless), driven by playwright-core (no
// browser download), against the real metaopt-server with --tokens and studies made through the
// Node client. Checks that the pages render, the plot has one dot per completed trial and one
// cross per failed or infeasible one, the trials table filters by state, the page refreshes
// itself when trials arrive, a wrong token is refused and the right one is kept for the session,
// and the browser logs no errors. Saves screenshots to $METAOPT_SCREENSHOTS.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { chromium } from 'playwright-core';

import { Client } from '../../clients/node/src/index.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const TOKEN = 'dashboard-test-token-0123456789';
const WRONG = 'not-the-token-9876543210abcdef';
const screenshots = process.env.METAOPT_SCREENSHOTS;
fs.mkdirSync(screenshots, { recursive: true });
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'metaopt-dashboard-'));
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
    assert.equal(await page.locator('#studies tbody tr').count(), 2);
    const row = page.locator('#studies tbody tr[data-study="branin-gp"] td');
    assert.deepEqual((await row.allTextContents()).slice(0, 5), ['branin-gp', 'gp', '', 'active', '15']);
    assert.ok(!page.url().includes(TOKEN), 'the token is not in the URL');
    assert.equal(await page.evaluate(() => sessionStorage.getItem('metaopt.token')), TOKEN);
    await page.screenshot({ path: path.join(screenshots, 'dashboard-studies.png') });
  });

  await step('the study list sorts and searches', async () => {
    await page.click('#studies th[data-key="trials"]');  // ascending
    assert.equal(await page.locator('#studies tbody tr').first().getAttribute('data-study'), 'branin-random');
    await page.click('#studies th[data-key="trials"]');  // descending
    assert.equal(await page.locator('#studies tbody tr').first().getAttribute('data-study'), 'branin-gp');
    await page.fill('#search', 'random');
    assert.equal(await page.locator('#studies tbody tr').count(), 1);
    assert.match(await page.textContent('#study-count'), /1 of 2/);
    await page.fill('#search', '');
  });

  await step('the study view plots every value and marks failures', async () => {
    await page.click('#studies a[href="#/studies/branin-gp"]');
    await page.waitForSelector('#history svg');
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

  await step('the trials table filters by state', async () => {
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
    await page.waitForSelector('#history svg');
    assert.equal(await page.locator('#history circle.point').count(), 15);
  });

  await step('the models view lists the registry', async () => {
    await page.goto(`${url}#/models`);
    await page.waitForSelector('#models tbody tr');
    assert.ok(await page.locator('#models tbody tr').count() >= 1);
    await page.screenshot({ path: path.join(screenshots, 'dashboard-models.png') });
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
