// The Node client against the real metaopt-server on 127.0.0.1 (port 0).

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';

import * as metaopt from '../src/index.js';
import { Client, MetaoptError, Status, algorithms, codeName, parameters, toDate } from '../src/index.js';
import { ServerProcess, serverBinary, tempDir } from './server_process.js';

const run = promisify(execFile);
const repoRoot = new URL('../../../', import.meta.url).pathname;

const quadraticSpec = {
  search_space: {
    stages: [
      {
        name: 'f',
        algorithms: [
          {
            name: 'f',
            parameters: [
              { name: 'x', float_domain: { low: -5, high: 5 } },
              { name: 'n', int_domain: { low: '1', high: '10' } },
              { name: 'kind', categorical_domain: { values: ['a', 'b'] } },
            ],
          },
        ],
      },
    ],
  },
  objective: { name: 'loss', goal: 'GOAL_MINIMIZE' },
  algorithm: { kind: 'ALGORITHM_KIND_RANDOM' },
  seed: 7,
};

/** Asserts that `promise` rejects with a MetaoptError of `code` whose message contains `text`. */
async function rejectsWith(promise, code, text) {
  await assert.rejects(promise, (error) => {
    assert.ok(error instanceof MetaoptError, `expected MetaoptError, got ${error}`);
    assert.equal(error.codeName, codeName(code));
    assert.equal(error.code, code);
    assert.ok(error.message.includes(text), `"${error.message}" lacks "${text}"`);
    return true;
  });
}

/** A port nothing listens on (bound, read, released). */
async function freePort() {
  const probe = net.createServer();
  await new Promise((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address();
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/** Whether metaopt-server's --help lists `flag`. */
async function serverHasFlag(flag) {
  const { stdout } = await run(serverBinary(), ['--help']);
  return stdout.includes(flag);
}

describe('against one server', () => {
  const temp = tempDir();
  const server = new ServerProcess({ db: path.join(temp.dir, 'metaopt.db') });
  let client;

  before(async () => {
    await server.start();
    client = new Client({ target: server.address, timeoutMs: 20_000 });
  });

  after(async () => {
    client?.close();
    await server.stop();
    temp.cleanup();
  });

  test('ask/tell loop: create, suggest, observe, best trial, list', async () => {
    const study = await client.createStudy('loop', quadraticSpec);
    assert.equal(study.created, true);
    assert.equal(study.info.studyId, 'loop');
    assert.equal(study.info.spec.algorithm.kind, 'ALGORITHM_KIND_RANDOM');

    const trials = await study.suggest(3);
    assert.equal(trials.length, 3);
    assert.deepEqual(new Set(trials.map((t) => t.id)).size, 3);
    const values = new Map();
    for (const trial of trials) {
      assert.equal(trial.state, 'TRIAL_STATE_ACTIVE');
      assert.equal(trial.clientId, study.clientId);
      assert.ok(toDate(trial.createTime) instanceof Date);
      const { x, n, kind } = parameters(trial);
      assert.ok(x >= -5 && x <= 5, `x = ${x}`);
      assert.ok(Number.isInteger(n) && n >= 1 && n <= 10, `n = ${n}`);
      assert.ok(kind === 'a' || kind === 'b', `kind = ${kind}`);
      assert.deepEqual(algorithms(trial), { f: 'f' });
      values.set(trial.id, (x - 1) ** 2 + n);
    }
    const [first, second, third] = trials;
    const done = await study.observe(first, { value: values.get(first.id), metrics: { seconds: 0.5 } });
    assert.equal(done.state, 'TRIAL_STATE_COMPLETED');
    assert.equal(done.value, values.get(first.id));
    assert.deepEqual(done.metrics, { seconds: 0.5 });
    await study.observe(second.id, values.get(second.id));
    const failed = await study.observe(BigInt(third.id), { failed: 'out of memory' });
    assert.equal(failed.state, 'TRIAL_STATE_FAILED');
    assert.equal(failed.failureReason, 'out of memory');

    const info = await study.get();
    assert.equal(info.trialCount, '3');
    const bestId = values.get(first.id) <= values.get(second.id) ? first.id : second.id;
    assert.equal(info.bestTrial.id, bestId);
    assert.equal(study.info, info);

    const completed = await study.trials({ state: 'completed' });
    assert.deepEqual(completed.map((t) => t.id).sort(), [first.id, second.id].sort());
    const page = await study.listTrials({ pageSize: 2 });
    assert.deepEqual(page.trials.map((t) => t.id), [first.id, second.id]);
    assert.notEqual(page.nextPageToken, '');
    const rest = await study.listTrials({ pageSize: 2, pageToken: page.nextPageToken });
    assert.deepEqual(rest.trials.map((t) => t.id), [third.id]);
    assert.equal(rest.nextPageToken, '');
    assert.equal((await study.getTrial(first)).value, values.get(first.id));

    const again = await client.createStudy('loop', quadraticSpec);
    assert.equal(again.created, false);
    const listed = await client.listStudies();
    assert.ok(listed.studies.some((s) => s.studyId === 'loop'));
    assert.deepEqual(await client.listModels(), []);
  });

  test('a retried Suggest with the same client id gets the same trials; another client new ones', async () => {
    await client.createStudy('retry-same-id', quadraticSpec);
    const worker = client.study('retry-same-id', { clientId: 'worker-1' });
    const firstIds = (await worker.suggest(2)).map((t) => t.id);
    const secondIds = (await client.study('retry-same-id', { clientId: 'worker-1' }).suggest(2)).map((t) => t.id);
    assert.deepEqual(secondIds, firstIds);
    const otherIds = (await client.study('retry-same-id', { clientId: 'worker-2' }).suggest(2)).map((t) => t.id);
    assert.equal(otherIds.filter((id) => firstIds.includes(id)).length, 0);
  });

  test(
      'a trial of a deleted study is not taken for the trial with its id in a new one',
      async () => {
        const old = await client.createStudy('reborn', quadraticSpec);
        const [stale] = await old.suggest(1);
        assert.ok(stale.studyIncarnation && stale.studyIncarnation !== '0');
        assert.equal(stale.studyIncarnation, old.info.incarnation);
        await old.delete();
        const reborn = await client.createStudy('reborn', quadraticSpec);
        const [fresh] = await reborn.suggest(1);
        assert.equal(fresh.id, stale.id);
        assert.notEqual(fresh.studyIncarnation, stale.studyIncarnation);
        await rejectsWith(
            reborn.observe(stale, 1.0), Status.NOT_FOUND,
            'is not the incarnation of study "reborn"');
        await rejectsWith(
            old.observe(stale.id, 1.0), Status.NOT_FOUND, 'was deleted');
        await rejectsWith(
            old.heartbeat([stale.id]), Status.NOT_FOUND, 'was deleted');
        assert.equal(
            (await reborn.observe(fresh, 1.0)).state, 'TRIAL_STATE_COMPLETED');
      });

  test('an externally evaluated configuration becomes a completed trial', async () => {
    const spec = JSON.parse(fs.readFileSync(path.join(repoRoot, 'docs/examples/study_spec.json'), 'utf8'));
    const configuration = JSON.parse(fs.readFileSync(path.join(repoRoot, 'docs/examples/configuration.json'), 'utf8'));
    const study = await client.createStudy('svm-knn', spec);
    const trial = await study.observeConfiguration(configuration, 0.91);
    assert.equal(trial.state, 'TRIAL_STATE_COMPLETED');
    assert.equal(trial.metadata.source, 'external');
    assert.equal(trial.value, 0.91);
  });

  test('server errors arrive as MetaoptError with code and message', async () => {
    await rejectsWith(client.getStudy('no-such-study'), Status.NOT_FOUND, 'no-such-study');
    const study = await client.createStudy('errors', quadraticSpec);
    const other = { ...quadraticSpec, seed: 8 };
    await rejectsWith(client.createStudy('errors', other), Status.ALREADY_EXISTS, 'errors');
    const [trial] = await study.suggest();
    await study.observe(trial, 1);
    await rejectsWith(study.observe(trial, 2), Status.FAILED_PRECONDITION, 'observed once');
    await rejectsWith(study.observe('999', 2), Status.NOT_FOUND, '999');
    await rejectsWith(study.fineTune({ steps: 5 }), Status.FAILED_PRECONDITION, 'ALGORITHM_KIND_RANDOM');
    const badSpace = structuredClone(quadraticSpec);
    badSpace.search_space.stages[0].algorithms[0].parameters[0].float_domain = { low: 5, high: 1 };
    await rejectsWith(client.createStudy('bad-space', badSpace), Status.INVALID_ARGUMENT, 'parameters[0]');
    await rejectsWith(client.createStudy('bad id!', quadraticSpec), Status.INVALID_ARGUMENT, 'bad id!');
    await study.delete();
    await rejectsWith(study.get(), Status.NOT_FOUND, 'errors');
    await rejectsWith(client.deleteStudy('errors'), Status.NOT_FOUND, 'errors');
  });

  test('malformed requests are rejected before sending, naming field, value and rule', async () => {
    const study = client.study('never-created');
    await rejectsWith(study.suggest(0), Status.INVALID_ARGUMENT, 'count: 0 is not an integer in [1, 1000]');
    await rejectsWith(study.observe('1', Number.NaN), Status.INVALID_ARGUMENT, 'value: NaN is not a finite number');
    await rejectsWith(study.observe('1', { value: 1, failed: 'x' }), Status.INVALID_ARGUMENT, 'exactly one of');
    await rejectsWith(study.observe('1', { value: 1, metrics: { t: Infinity } }), Status.INVALID_ARGUMENT,
      'metrics["t"]: Infinity is not a finite number');
    await rejectsWith(study.observe('x1', 1), Status.INVALID_ARGUMENT, 'trial_id: "x1" is not an int64');
    const typo = structuredClone(quadraticSpec);
    typo.search_space.stages[0].nmae = 'f';
    await rejectsWith(client.createStudy('typo', typo), Status.INVALID_ARGUMENT,
      'spec.search_space.stages[0].nmae: unknown field of metaopt.v1.Stage');
    const wrongEnum = { ...quadraticSpec, objective: { name: 'loss', goal: 'MINIMIZE' } };
    await rejectsWith(client.createStudy('enum', wrongEnum), Status.INVALID_ARGUMENT,
      'spec.objective.goal: "MINIMIZE"');
    const wrongType = { ...quadraticSpec, seed: 1.5 };
    await rejectsWith(client.createStudy('seed', wrongType), Status.INVALID_ARGUMENT, 'spec.seed: 1.5 is not a uint64');
    await rejectsWith(client.call('NoSuchRpc', {}), Status.INVALID_ARGUMENT, 'NoSuchRpc');
    // None of these reached the server.
    await rejectsWith(client.getStudy('typo'), Status.NOT_FOUND, 'typo');
  });

  test('camelCase requests work as snake_case ones do', async () => {
    const camel = JSON.parse(fs.readFileSync(path.join(repoRoot, 'docs/examples/study_spec.json'), 'utf8'));
    assert.ok('searchSpace' in camel);
    const study = await client.createStudy('camel', camel);
    const [trial] = await study.suggest();
    assert.equal(algorithms(trial).scaler === 'none' || algorithms(trial).scaler === 'standard', true);
    const response = await client.call('GetTrial', { studyId: 'camel', trialId: trial.id }, { idempotent: true });
    assert.equal(response.trial.id, trial.id);
  });

  test('heartbeat extends leases (when the server implements it)', async (t) => {
    const study = await client.createStudy('heartbeat', quadraticSpec);
    const [trial] = await study.suggest();
    let beaten;
    try {
      beaten = await study.heartbeat([trial]);
    } catch (error) {
      if (error.code === Status.UNIMPLEMENTED) {
        t.skip('this server does not implement Heartbeat yet');
        return;
      }
      throw error;
    }
    assert.deepEqual(beaten.map((b) => b.id), [trial.id]);
    assert.ok(toDate(beaten[0].leaseExpireTime) > new Date());
  });

  test('report: the threshold rule stops a trial, which ends STOPPED', async () => {
    const spec = { ...quadraticSpec, early_stopping: { threshold: { threshold: 1.0, start_step: 1 } } };
    const study = await client.createStudy('early-threshold', spec);
    const [trial] = await study.suggest();
    assert.equal((await study.report(trial, 0, 5.0)).shouldStop, false);
    const going = await study.report(trial, 1, 0.8, { metrics: { accuracy: 0.7 } });
    assert.equal(going.shouldStop, false);
    assert.equal(going.reason, '');
    const stop = await study.report(trial, 2, 1.5);
    assert.equal(stop.shouldStop, true);
    assert.ok(stop.reason.includes('threshold 1'), stop.reason);
    // Proto3 JSON-style defaults are omitted: step 0 is absent.
    assert.deepEqual(stop.trial.intermediateValues.map((v) => v.step ?? '0'), ['0', '1', '2']);
    assert.equal(stop.trial.intermediateValues[1].metrics.accuracy, 0.7);
    // A retry answers the same; another value for the step is refused.
    const again = await client.reportIntermediate('early-threshold', trial.id, 2, 1.5);
    assert.equal(again.shouldStop, true);
    await rejectsWith(study.report(trial, 2, 1.6), Status.FAILED_PRECONDITION, 'already recorded');
    await rejectsWith(study.report(trial, -1, 1.6), Status.INVALID_ARGUMENT, 'step: -1');
    await assert.rejects(study.report(trial, 1.5, 1.0), /step: 1.5 is not an integer/);
    const stopped = await study.observeStopped(trial);
    assert.equal(stopped.state, 'TRIAL_STATE_STOPPED');
    assert.equal(stopped.value, 1.5);
    const listed = await study.trials({ state: 'stopped' });
    assert.deepEqual(listed.map((t) => t.id), [trial.id]);
  });

  test('report: stopReason stops a trial by the client\'s own rule, which ends STOPPED', async () => {
    // No early-stopping rule in the spec: only the client's stop can mark the trial.
    const study = await client.createStudy('early-client-stop', quadraticSpec);
    const [first, second] = await study.suggest(2);
    assert.equal((await study.report(first, 0, 3.0)).shouldStop, false);
    const report = await study.report(first, 1, 2.5, { stopReason: 'loss plateaued' });
    assert.equal(report.shouldStop, true);
    assert.equal(report.reason, 'client: loss plateaued');
    assert.equal(report.trial.metadata.stop_reason, 'client: loss plateaued');
    await assert.rejects(study.report(second, 0, 1.0, { stopReason: '' }), /stopReason: "" is not a non-empty string/);
    await assert.rejects(study.report(second, 0, 1.0, { stopReason: 7 }), /stopReason: 7 is not a non-empty string/);
    // Longer than the server's 1000 bytes: INVALID_ARGUMENT from the server.
    await rejectsWith(study.report(second, 0, 1.0, { stopReason: 'x'.repeat(1001) }),
      Status.INVALID_ARGUMENT, 'client_stop_reason');
    const stopped = await study.observeStopped(first);
    assert.equal(stopped.state, 'TRIAL_STATE_STOPPED');
    assert.equal(stopped.value, 2.5);
    assert.equal(stopped.metadata.stop_step, '1');
    // The client-level call does the same; without stopReason the trial goes on.
    assert.equal((await client.reportIntermediate('early-client-stop', second.id, 3, 1.2)).shouldStop, false);
    const byClient = await client.reportIntermediate('early-client-stop', second.id, 4, 1.0, undefined,
      { stopReason: 'budget' });
    assert.equal(byClient.shouldStop, true);
    assert.equal(byClient.reason, 'client: budget');
    assert.equal((await study.observeStopped(second)).state, 'TRIAL_STATE_STOPPED');
  });

  test('optimize observes Pruned trials as STOPPED (median rule)', async () => {
    const spec = { ...quadraticSpec, seed: 3, earlyStopping: { median: { minTrials: 2 } } };
    const study = await client.createStudy('early-median', spec);
    const done = await study.optimize(async (trial, report) => {
      const start = { 1: 1.0, 2: 0.9 }[trial.id] ?? 10.0;
      let loss = start;
      for (let epoch = 0; epoch < 5; ++epoch) {
        loss = start / (epoch + 1);
        if (await report(epoch, loss)) throw new metaopt.Pruned(`epoch ${epoch}`);
      }
      return loss;
    }, 4);
    assert.deepEqual(done.map((t) => t.state), [
      'TRIAL_STATE_COMPLETED', 'TRIAL_STATE_COMPLETED', 'TRIAL_STATE_STOPPED', 'TRIAL_STATE_STOPPED',
    ]);
    assert.equal(done[2].value, 10);
    assert.equal((await study.get()).bestTrial.id, '2');
  });

  test('two objectives and a constraint: feasibility, the Pareto front and its summary', async () => {
    const spec = {
      search_space: quadraticSpec.search_space,
      objectives: [['accuracy', 'maximize'], ['fit_seconds', 'minimize']],
      constraints: [['memory_mb', '<=', 300]],
      algorithm: { kind: 'ALGORITHM_KIND_GP', initial_trials: 4 },
      seed: 3,
    };
    const study = await client.createStudy('node-pareto', spec);
    assert.equal(study.created, true);
    assert.equal(study.info.spec.objective.name, 'accuracy');
    assert.equal(study.info.spec.objectives.length, 2);
    assert.equal(study.info.spec.constraints[0].sense, 'CONSTRAINT_SENSE_AT_MOST');
    assert.equal((await client.createStudy('node-pareto', spec)).created, false);
    const feasible = [];
    let infeasible = 0;
    const policies = new Set();
    for (let i = 0; i < 12; ++i) {
      const [trial] = await study.suggest();
      const { x, n } = parameters(trial);
      const outcome = { accuracy: 1 - (x - 1) ** 2 / 40, fit_seconds: Number(n) + x, memory_mb: Number(n) * 40 };
      const done = i % 2
        ? await study.observe(trial, { metrics: outcome })
        : await study.observe(trial, {
          value: outcome.accuracy,
          metrics: { fit_seconds: outcome.fit_seconds, memory_mb: outcome.memory_mb },
        });
      assert.equal(done.state, 'TRIAL_STATE_COMPLETED');
      assert.equal(done.value, outcome.accuracy);
      assert.deepEqual(done.metrics, outcome);
      assert.equal(done.feasible, outcome.memory_mb <= 300);
      if (done.feasible) feasible.push({ id: done.id, ...outcome });
      else ++infeasible;
      policies.add(done.metadata?.policy);
    }
    assert.ok(infeasible > 0, 'no infeasible trial');
    assert.ok(policies.has('gp/ehvi'), [...policies].join());
    const expected = feasible
      .filter((p) => !feasible.some((q) => q.accuracy >= p.accuracy && q.fit_seconds <= p.fit_seconds &&
        (q.accuracy > p.accuracy || q.fit_seconds < p.fit_seconds)))
      .map((p) => p.id)
      .sort((a, b) => Number(a) - Number(b));
    const { trials, summary } = await study.paretoFront();
    assert.deepEqual(trials.map((t) => t.id), expected);
    assert.equal(summary.size, String(expected.length));
    assert.equal(summary.referencePoint.length, 2);
    assert.ok(summary.hypervolume > 0);
    assert.deepEqual(study.info.paretoFront, summary);
    const page = await study.getParetoFront({ pageSize: 1 });
    assert.equal(page.trials.length, 1);
    assert.equal(page.nextPageToken !== '', expected.length > 1);
    // A missing objective value names the metric.
    const [next] = await study.suggest();
    await rejectsWith(study.observe(next, { metrics: { accuracy: 0.5, memory_mb: 1 } }), Status.INVALID_ARGUMENT,
      'metrics["fit_seconds"]: missing');
    await assert.rejects(study.observe(next, {}), /exactly one of value, failed, infeasible/);
    await assert.rejects(client.createStudy('node-bad', { ...spec, constraints: [['m', '<', 1]] }),
      /spec.constraints\[0\]: expected \[metric, "<=" or ">=", bound\]/);
  });

  test('the example optimizes Branin with a GP study', async () => {
    const { stdout } = await run(process.execPath, [
      path.join(repoRoot, 'clients/node/examples/ask_tell.mjs'),
      '--target', server.address, '--trials', '16', '--study-id', 'branin-example',
    ]);
    const best = /best: trial [0-9]+ x1=\S+ x2=\S+ value=([0-9.]+)/.exec(stdout);
    assert.ok(best, stdout);
    assert.ok(Number(best[1]) < 5, `best Branin value ${best[1]} after 16 trials`);
    const study = await client.getStudy('branin-example');
    assert.equal(study.info.trialCount, '16');
  });
});

describe('API surface', () => {
  test('everything src/index.d.ts declares exists at run time', () => {
    const declarations = fs.readFileSync(new URL('../src/index.d.ts', import.meta.url), 'utf8');
    const exported = [...declarations.matchAll(/^export declare (?:const|function|class) (\w+)/gm)].map((m) => m[1]);
    assert.ok(exported.length >= 8, exported.join());
    for (const name of exported) assert.ok(name in metaopt, `${name} is declared but not exported`);
    let checked = 0;
    for (const [, name, body] of declarations.matchAll(/^export declare class (\w+)[^{]*\{\n([\s\S]*?)^\}/gm)) {
      const methods = [...body.matchAll(/^  (\w+)\(/gm)].map((m) => m[1]).filter((m) => m !== 'constructor');
      for (const method of methods) {
        assert.equal(typeof metaopt[name].prototype[method], 'function', `${name}.${method} is declared but missing`);
        checked += 1;
      }
    }
    assert.ok(checked >= 15, `only ${checked} declared methods found`);
  });
});

describe('client options', () => {
  test('bad options are INVALID_ARGUMENT naming the option', () => {
    const cases = [
      [{ target: '' }, 'options.target'],
      [{ timeoutMs: 0 }, 'options.timeoutMs: 0 is not a positive finite number'],
      [{ maxAttempts: 0 }, 'options.maxAttempts: 0'],
      [{ token: 'two words' }, 'options.token: must not contain whitespace'],
      [{ tls: { certChain: '-----BEGIN CERTIFICATE-----' } }, 'certChain and privateKey must be given together'],
      [{ tls: { rootCerts: '/no/such/ca.pem' } }, 'tls.rootCerts: cannot read'],
      [{ tlss: true }, 'options.tlss: unknown option'],
      [{ protoDir: '/no/such/dir' }, 'protoDir: cannot load'],
    ];
    for (const [options, text] of cases) {
      assert.throws(() => new Client(options), (error) => {
        assert.ok(error instanceof MetaoptError);
        assert.equal(error.code, Status.INVALID_ARGUMENT);
        assert.ok(error.message.includes(text), `"${error.message}" lacks "${text}"`);
        return true;
      });
    }
  });
});

describe('retries and deadlines', () => {
  test('UNAVAILABLE is retried (Suggest with the same client id, Observe) until the server is back', async () => {
    const temp = tempDir();
    const port = await freePort();
    const db = path.join(temp.dir, 'metaopt.db');
    const server = new ServerProcess({ db, listen: `127.0.0.1:${port}` });
    const retries = [];
    const client = new Client({
      target: `127.0.0.1:${port}`,
      maxAttempts: 100,
      initialBackoffMs: 50,
      maxBackoffMs: 200,
      timeoutMs: 30_000,
      onRetry: (info) => retries.push(info),
    });
    try {
      await server.start();
      const study = await client.createStudy('restart', quadraticSpec);
      const [trial] = await study.suggest();
      await server.stop('SIGKILL');

      // Suggest carries the study's client id; while the server is down it is retried, and once
      // the server is back (same port, same database) it returns the same ACTIVE trial.
      const pending = study.suggest();
      await new Promise((resolve) => setTimeout(resolve, 300));
      await server.start();
      const [again] = await pending;
      assert.equal(again.id, trial.id);
      assert.ok(retries.length >= 1, 'no retry happened');
      assert.ok(retries.every((r) => r.method === 'Suggest' && r.error.code === Status.UNAVAILABLE));

      // Observe of a trial id is safe to repeat: retried the same way, stored once the server is
      // back.
      await server.stop('SIGKILL');
      retries.length = 0;
      const observing = study.observe(trial, 1);
      await new Promise((resolve) => setTimeout(resolve, 300));
      await server.start();
      const observed = await observing;
      assert.equal(observed.state, 'TRIAL_STATE_COMPLETED');
      assert.equal(observed.value, 1);
      assert.ok(retries.length >= 1, 'no retry happened');
      assert.ok(retries.every((r) => r.method === 'Observe' && r.error.code === Status.UNAVAILABLE));
    } finally {
      client.close();
      await server.stop();
      temp.cleanup();
    }
  });

  test('a call to a server that never answers ends at its deadline', async () => {
    // Accepts TCP connections and says nothing.
    const sockets = new Set();
    const silent = net.createServer((socket) => sockets.add(socket));
    await new Promise((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const client = new Client({ target: `127.0.0.1:${silent.address().port}`, timeoutMs: 500 });
    try {
      const start = Date.now();
      await rejectsWith(client.getStudy('any'), Status.DEADLINE_EXCEEDED, '');
      const elapsed = Date.now() - start;
      assert.ok(elapsed >= 400 && elapsed < 5_000, `took ${elapsed} ms`);
    } finally {
      client.close();
      for (const socket of sockets) socket.destroy();
      silent.close();
    }
  });
});

describe('security', () => {
  test('bearer token: calls without it are UNAUTHENTICATED (when the server has --tokens)', async (t) => {
    if (!(await serverHasFlag('--tokens'))) {
      t.skip('this metaopt-server has no --tokens flag yet');
      return;
    }
    const temp = tempDir();
    const tokens = path.join(temp.dir, 'tokens');
    fs.writeFileSync(tokens, '# owner:token\nteam-a:secret-a-0123456789abcdef\n');
    const server = new ServerProcess({ db: path.join(temp.dir, 'metaopt.db'), args: ['--tokens', tokens] });
    await server.start();
    const anonymous = new Client({ target: server.address });
    const wrong = new Client({ target: server.address, token: 'nope-0123456789abcdef' });
    const owner = new Client({ target: server.address, token: 'secret-a-0123456789abcdef' });
    try {
      await rejectsWith(anonymous.listStudies(), Status.UNAUTHENTICATED, '');
      await rejectsWith(wrong.listStudies(), Status.UNAUTHENTICATED, '');
      const study = await owner.createStudy('private', quadraticSpec);
      assert.equal((await study.suggest()).length, 1);
    } finally {
      for (const c of [anonymous, wrong, owner]) c.close();
      await server.stop();
      temp.cleanup();
    }
  });

  test('TLS with a private CA (when the server has --tls-cert)', async (t) => {
    if (!(await serverHasFlag('--tls-cert'))) {
      t.skip('this metaopt-server has no --tls-cert flag yet');
      return;
    }
    const temp = tempDir();
    const cert = path.join(temp.dir, 'server.pem');
    const key = path.join(temp.dir, 'server.key');
    try {
      await run('openssl', [
        'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=localhost',
        '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1', '-keyout', key, '-out', cert,
      ]);
    } catch (error) {
      temp.cleanup();
      t.skip(`openssl could not make a certificate: ${error.message}`);
      return;
    }
    const server = new ServerProcess({
      db: path.join(temp.dir, 'metaopt.db'), args: ['--tls-cert', cert, '--tls-key', key],
    });
    await server.start();
    const secure = new Client({ target: `localhost:${server.port}`, tls: { rootCerts: cert } });
    const plain = new Client({ target: server.address, maxAttempts: 1, timeoutMs: 5_000 });
    try {
      const study = await secure.createStudy('over-tls', quadraticSpec);
      assert.equal((await study.suggest()).length, 1);
      await assert.rejects(plain.listStudies(), (error) => error instanceof MetaoptError);
    } finally {
      secure.close();
      plain.close();
      await server.stop();
      temp.cleanup();
    }
  });
});

// A fake OptimizerService (grpc-js in this process) that sheds the first `shed` calls with `code`,
// then answers GetStudy; every call is counted by method.
async function sheddingServer(shed, code) {
  const grpc = (await import('@grpc/grpc-js')).default;
  const { loadProtos } = await import('../src/messages.js');
  const definition = loadProtos().packageDefinition['metaopt.v1.OptimizerService'];
  const calls = [];
  const answer = (method, reply) => (call, callback) => {
    calls.push(method);
    if (shed-- > 0) callback({ code, details: 'server overloaded' });
    else callback(null, reply(call.request));
  };
  const server = new grpc.Server();
  server.addService(definition, {
    GetStudy: answer('GetStudy', (request) => ({ study: { studyId: request.studyId } })),
    FineTune: answer('FineTune', () => ({})),
  });
  const port = await new Promise((resolve, reject) => {
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) =>
      error ? reject(error) : resolve(bound));
  });
  return { calls, target: `127.0.0.1:${port}`, close: () => server.forceShutdown() };
}

// A fake OptimizerService holding one trial (id 7) of study 's'. Observe sheds the first `shed`
// calls with `code`; then it stores the outcome once (FAILED_PRECONDITION after that, or at once
// when `stored`, a value, was set before). With `loseFirstAnswer` the first Observe that stores
// answers UNAVAILABLE, as if the connection dropped after the commit. GetTrial returns the trial;
// every call is counted by method.
async function observingServer({ shed = 0, code = Status.UNAVAILABLE, loseFirstAnswer = false, stored } = {}) {
  const grpc = (await import('@grpc/grpc-js')).default;
  const { loadProtos } = await import('../src/messages.js');
  const definition = loadProtos().packageDefinition['metaopt.v1.OptimizerService'];
  const calls = [];
  let trial = stored === undefined ?
    { id: '7', state: 'TRIAL_STATE_ACTIVE' } :
    { id: '7', state: 'TRIAL_STATE_COMPLETED', value: stored };
  const server = new grpc.Server();
  server.addService(definition, {
    Observe: (call, callback) => {
      calls.push('Observe');
      if (shed-- > 0) return callback({ code, details: 'server overloaded' });
      if (trial.state !== 'TRIAL_STATE_ACTIVE') {
        return callback({ code: Status.FAILED_PRECONDITION, details: 'trial 7 is already observed' });
      }
      const request = call.request;
      trial = request.failure ?
        { id: '7', state: request.failure.state, failureReason: request.failure.reason } :
        { id: '7', state: 'TRIAL_STATE_COMPLETED', value: request.value, metrics: request.metrics };
      if (loseFirstAnswer) {
        loseFirstAnswer = false;
        return callback({ code: Status.UNAVAILABLE, details: 'connection reset' });
      }
      return callback(null, { trial });
    },
    GetTrial: (call, callback) => {
      calls.push('GetTrial');
      callback(null, { trial });
    },
  });
  const port = await new Promise((resolve, reject) => {
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) =>
      error ? reject(error) : resolve(bound));
  });
  return { calls, target: `127.0.0.1:${port}`, close: () => server.forceShutdown() };
}

describe('retries against a fake server that sheds load', () => {
  for (const code of [Status.RESOURCE_EXHAUSTED, Status.UNAVAILABLE]) {
    test(`${codeName(code)} is retried for a safe call`, async () => {
      const fake = await sheddingServer(2, code);
      const client = new Client({ target: fake.target, maxAttempts: 3, initialBackoffMs: 1, maxBackoffMs: 2 });
      try {
        const response = await client.call('GetStudy', { study_id: 's' }, { idempotent: true });
        assert.equal(response.study.studyId, 's');
        assert.deepEqual(fake.calls, ['GetStudy', 'GetStudy', 'GetStudy']);
      } finally {
        client.close();
        fake.close();
      }
    });
  }

  test('retries end after maxAttempts with the last error', async () => {
    const fake = await sheddingServer(100, Status.RESOURCE_EXHAUSTED);
    const client = new Client({ target: fake.target, maxAttempts: 3, initialBackoffMs: 1, maxBackoffMs: 2 });
    try {
      await rejectsWith(client.call('GetStudy', { study_id: 's' }, { idempotent: true }),
        Status.RESOURCE_EXHAUSTED, 'server overloaded');
      assert.deepEqual(fake.calls, ['GetStudy', 'GetStudy', 'GetStudy']);
    } finally {
      client.close();
      fake.close();
    }
  });

  for (const code of [Status.RESOURCE_EXHAUSTED, Status.UNAVAILABLE]) {
    test(`${codeName(code)} is retried for Observe of a trial id`, async () => {
      const fake = await observingServer({ shed: 2, code });
      const client = new Client({ target: fake.target, maxAttempts: 3, initialBackoffMs: 1, maxBackoffMs: 2 });
      try {
        const trial = await client.study('s').observe('7', { value: 0.5, metrics: { acc: 0.9 } });
        assert.equal(trial.state, 'TRIAL_STATE_COMPLETED');
        assert.equal(trial.value, 0.5);
        assert.deepEqual(fake.calls, ['Observe', 'Observe', 'Observe']);
      } finally {
        client.close();
        fake.close();
      }
    });
  }

  test('a retried Observe whose lost attempt was stored succeeds with the stored trial', async () => {
    // The first attempt is stored but its answer is lost (UNAVAILABLE); the retry finds the
    // trial observed (FAILED_PRECONDITION) and reads it back.
    const fake = await observingServer({ loseFirstAnswer: true });
    const client = new Client({ target: fake.target, maxAttempts: 3, initialBackoffMs: 1, maxBackoffMs: 2 });
    try {
      const trial = await client.study('s').observe('7', { failed: 'out of memory' });
      assert.equal(trial.state, 'TRIAL_STATE_FAILED');
      assert.equal(trial.failureReason, 'out of memory');
      assert.deepEqual(fake.calls, ['Observe', 'Observe', 'GetTrial']);
    } finally {
      client.close();
      fake.close();
    }
  });

  test('a retried Observe of a trial holding another outcome fails FAILED_PRECONDITION', async () => {
    // The first attempt is shed; the trial holds 0.25 (stored by someone else) when the retry
    // comes.
    const fake = await observingServer({ shed: 1, code: Status.UNAVAILABLE, stored: 0.25 });
    const client = new Client({ target: fake.target, maxAttempts: 3, initialBackoffMs: 1, maxBackoffMs: 2 });
    try {
      await rejectsWith(client.study('s').observe('7', 0.5), Status.FAILED_PRECONDITION, 'already observed');
      assert.deepEqual(fake.calls, ['Observe', 'Observe', 'GetTrial']);
    } finally {
      client.close();
      fake.close();
    }
  });

  test('an Observe that was not retried keeps its FAILED_PRECONDITION', async () => {
    const fake = await observingServer({ stored: 0.5 });
    const client = new Client({ target: fake.target, maxAttempts: 3, initialBackoffMs: 1, maxBackoffMs: 2 });
    try {
      // The same value, but no attempt of this call was lost: the trial was observed before.
      await rejectsWith(client.study('s').observe('7', 0.5), Status.FAILED_PRECONDITION, 'already observed');
      assert.deepEqual(fake.calls, ['Observe']);
    } finally {
      client.close();
      fake.close();
    }
  });

  test('Observe of a configuration is not retried (a repeat records a second trial)', async () => {
    const fake = await observingServer({ shed: 100, code: Status.RESOURCE_EXHAUSTED });
    const client = new Client({ target: fake.target, maxAttempts: 3, initialBackoffMs: 1, maxBackoffMs: 2 });
    try {
      await rejectsWith(client.study('s').observeConfiguration({ assignments: [] }, 0.5),
        Status.RESOURCE_EXHAUSTED, 'server overloaded');
      assert.deepEqual(fake.calls, ['Observe']);
    } finally {
      client.close();
      fake.close();
    }
  });

  test('a call that is not safe to repeat is not retried', async () => {
    const fake = await sheddingServer(100, Status.RESOURCE_EXHAUSTED);
    const client = new Client({ target: fake.target, maxAttempts: 3, initialBackoffMs: 1, maxBackoffMs: 2 });
    try {
      await rejectsWith(client.call('FineTune', { study_id: 's' }), Status.RESOURCE_EXHAUSTED, 'server overloaded');
      assert.deepEqual(fake.calls, ['FineTune']);
    } finally {
      client.close();
      fake.close();
    }
  });
});
