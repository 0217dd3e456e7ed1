// The metaopt client: a Client per server, a Study handle per study.
//
// Every call has one deadline (retries included). Idempotent calls (CreateStudy,
// GetStudy, ListStudies, DeleteStudy, GetTrial, ListTrials, ListModels,
// Heartbeat, ReportIntermediate, Suggest with a client_id, and Observe of a trial id) are
// retried on UNAVAILABLE and RESOURCE_EXHAUSTED (a server or proxy shedding load) with
// exponential backoff and jitter, within the call's one deadline; Observe of a configuration
// and FineTune never are. A retried Observe that finds its trial already observed
// (FAILED_PRECONDITION) reads the trial and succeeds when it holds exactly the outcome sent
// (an earlier attempt was stored, its answer lost). Failures are MetaoptError with the gRPC
// code and the server's message.
//
// Thread safety: Node runs one thread per isolate; a Client may serve any
// number of concurrent calls (awaited or not). It holds one gRPC channel;
// close() releases it.

import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';

import grpc from '@grpc/grpc-js';

import { MetaoptError, Status, fromServiceError, invalidArgument } from './errors.js';
import { loadProtos, normalize } from './messages.js';

// UNAVAILABLE: the server cannot be reached or is restarting. RESOURCE_EXHAUSTED: a server (or a
// proxy in front of it) shed the call without running it.
const retryable = new Set([Status.UNAVAILABLE, Status.RESOURCE_EXHAUSTED]);

const defaults = Object.freeze({
  target: 'localhost:50051',
  timeoutMs: 30_000,
  maxAttempts: 5,
  initialBackoffMs: 100,
  maxBackoffMs: 2_000,
});

// Large enough for a full page of trials with big configurations.
const maxReceiveMessageBytes = 64 << 20;

/** @param {unknown} value @param {string} name */
function checkPositive(value, name) {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw invalidArgument(`${name}: ${String(value)} is not a positive finite number`);
  }
  return value;
}

/** @param {unknown} value @param {string} name */
function checkString(value, name) {
  if (typeof value !== 'string' || value === '') {
    throw invalidArgument(`${name}: ${JSON.stringify(value) ?? String(value)} is not a non-empty string`);
  }
  return value;
}

/**
 * PEM text (a Buffer, or a string holding "-----BEGIN") or the path of a PEM file.
 * @param {unknown} value @param {string} name
 * @returns {Buffer | null}
 */
function pem(value, name) {
  if (value === undefined || value === null) return null;
  if (Buffer.isBuffer(value)) return value;
  if (typeof value === 'string' && value.includes('-----BEGIN')) return Buffer.from(value);
  if (typeof value === 'string' && value !== '') {
    try {
      return fs.readFileSync(value);
    } catch (error) {
      throw invalidArgument(`${name}: cannot read ${JSON.stringify(value)}: ${error.message}`);
    }
  }
  throw invalidArgument(`${name}: expected a Buffer, PEM text or a file path`);
}

/**
 * Channel credentials and extra channel options for `tls`.
 * @param {unknown} tls
 */
function credentialsFor(tls) {
  if (tls === undefined || tls === false || tls === null) {
    return { credentials: grpc.credentials.createInsecure(), options: {} };
  }
  if (tls === true) return { credentials: grpc.credentials.createSsl(), options: {} };
  if (typeof tls !== 'object' || Array.isArray(tls)) {
    throw invalidArgument(
      'tls: expected true, false or an object {rootCerts, certChain, privateKey, serverNameOverride}',
    );
  }
  const known = new Set(['rootCerts', 'certChain', 'privateKey', 'serverNameOverride']);
  for (const key of Object.keys(tls)) {
    if (!known.has(key)) throw invalidArgument(`tls.${key}: unknown option (expected ${[...known].join(', ')})`);
  }
  const rootCerts = pem(tls.rootCerts, 'tls.rootCerts');
  const certChain = pem(tls.certChain, 'tls.certChain');
  const privateKey = pem(tls.privateKey, 'tls.privateKey');
  if ((certChain === null) !== (privateKey === null)) {
    throw invalidArgument('tls: certChain and privateKey must be given together (mutual TLS)');
  }
  const options = {};
  if (tls.serverNameOverride !== undefined) {
    const name = checkString(tls.serverNameOverride, 'tls.serverNameOverride');
    options['grpc.ssl_target_name_override'] = name;
    options['grpc.default_authority'] = name;
  }
  return { credentials: grpc.credentials.createSsl(rootCerts, privateKey, certChain), options };
}

/** A client id unique to this process and handle: host, pid and random bits. */
function newClientId() {
  return `node-${os.hostname()}-${process.pid}-${randomBytes(4).toString('hex')}`;
}

/**
 * "completed" or "TRIAL_STATE_COMPLETED" -> "TRIAL_STATE_COMPLETED" (undefined stays undefined).
 * @param {unknown} value @param {string} prefix @param {string} name
 */
function enumName(value, prefix, name) {
  if (value === undefined) return undefined;
  if (typeof value === 'string' && /^[a-z_]+$/.test(value)) return `${prefix}${value.toUpperCase()}`;
  if (typeof value === 'string' || typeof value === 'number') return value;
  throw invalidArgument(`${name}: ${String(value)} is not an enum name`);
}

/** The trial id of a Trial object or an id. */
// The incarnation of the study a trial came from (Trial.study_incarnation),
// else the one of the study as last returned (Study.incarnation); undefined if
// neither is known. The server refuses a trial of a deleted study that had the
// same id when it is given.
function incarnationOf(trials, info) {
  const known = (value) =>
      value !== undefined && value !== null && String(value) !== '0';
  for (const trial of trials) {
    if (trial !== null && typeof trial === 'object') {
      const incarnation = trial.studyIncarnation ?? trial.study_incarnation;
      if (known(incarnation)) return incarnation;
    }
  }
  return known(info?.incarnation) ? info.incarnation : undefined;
}

function trialIdOf(trial, name) {
  if (trial !== null && typeof trial === 'object' && 'id' in trial) return trial.id;
  if (typeof trial === 'string' || typeof trial === 'number' || typeof trial === 'bigint') return trial;
  throw invalidArgument(`${name}: expected a Trial or a trial id, got ${typeof trial}`);
}

/**
 * Raise (throw) to abandon a trial the server told to stop (study.report() answered
 * shouldStop), as with Optuna's TrialPruned; study.observeStopped() then completes it with
 * its last reported value and it ends TRIAL_STATE_STOPPED. study.optimize() does both.
 */
export class Pruned extends Error {
  /** @param {string} [message] */
  constructor(message = 'the server stopped the trial') {
    super(message);
    this.name = 'Pruned';
  }
}

/** A ReportIntermediate request, checked before it is sent. */
function reportRequest(studyId, trialId, step, value, metrics, stopReason) {
  const integral = typeof step === 'bigint' || (typeof step === 'number' && Number.isInteger(step))
    || (typeof step === 'string' && /^-?[0-9]+$/.test(step));
  if (!integral) throw invalidArgument(`step: ${String(step)} is not an integer`);
  if (typeof value !== 'number') throw invalidArgument(`value: ${String(value)} is not a number`);
  if (stopReason !== undefined && (typeof stopReason !== 'string' || stopReason === '')) {
    throw invalidArgument(`stopReason: ${JSON.stringify(stopReason)} is not a non-empty string`);
  }
  const request = { study_id: studyId, trial_id: trialId, step: String(step), value };
  if (metrics !== undefined) request.metrics = metrics;
  if (stopReason !== undefined) request.client_stop_reason = stopReason;
  return request;
}

/** The response as {shouldStop, reason, trial}. */
function reportOf(response) {
  return { shouldStop: Boolean(response.shouldStop), reason: response.reason ?? '', trial: response.trial };
}

/**
 * An observation's outcome: a number, or {value} | {failed: reason} | {infeasible: reason},
 * with optional metrics.
 */
function outcomeOf(result) {
  if (typeof result === 'number') result = { value: result };
  if (result === null || typeof result !== 'object' || Array.isArray(result)) {
    throw invalidArgument('result: expected a number or {value | failed | infeasible, metrics}');
  }
  for (const key of Object.keys(result)) {
    if (!['value', 'failed', 'infeasible', 'metrics'].includes(key)) {
      throw invalidArgument(`result.${key}: unknown (expected value, failed, infeasible or metrics)`);
    }
  }
  const given = ['value', 'failed', 'infeasible'].filter((k) => result[k] !== undefined);
  // With several objectives or constraints, every value may come in metrics alone.
  const inMetrics = given.length === 0 && result.metrics !== null && typeof result.metrics === 'object' &&
    Object.keys(result.metrics).length > 0;
  if (given.length !== 1 && !inMetrics) {
    throw invalidArgument(`result: exactly one of value, failed, infeasible must be set (got ${given.length}), ` +
      'or every objective\'s value in metrics');
  }
  const out = {};
  if (inMetrics) {
    // Nothing but the metrics below.
  } else if (result.value !== undefined) {
    if (typeof result.value !== 'number' || !Number.isFinite(result.value)) {
      throw invalidArgument(`value: ${String(result.value)} is not a finite number`);
    }
    out.value = result.value;
  } else {
    const infeasible = result.infeasible !== undefined;
    const reason = infeasible ? result.infeasible : result.failed;
    if (typeof reason !== 'string') {
      throw invalidArgument(`${infeasible ? 'infeasible' : 'failed'}: expected a reason string`);
    }
    out.failure = { state: infeasible ? 'TRIAL_STATE_INFEASIBLE' : 'TRIAL_STATE_FAILED', reason };
  }
  if (result.metrics !== undefined) {
    if (result.metrics === null || typeof result.metrics !== 'object') {
      throw invalidArgument('metrics: expected an object of name -> number');
    }
    for (const [name, metric] of Object.entries(result.metrics)) {
      if (typeof metric !== 'number' || !Number.isFinite(metric)) {
        throw invalidArgument(`metrics[${JSON.stringify(name)}]: ${String(metric)} is not a finite number`);
      }
    }
    out.metrics = result.metrics;
  }
  return out;
}

/**
 * Whether `trial` (as returned by the server) holds the outcome `request` (an ObserveRequest
 * built by observe()) reports: the value and metrics, or the failure state and reason.
 */
const senses = { '<=': 'CONSTRAINT_SENSE_AT_MOST', '>=': 'CONSTRAINT_SENSE_AT_LEAST' };

/**
 * `spec` with its shorthands expanded: objectives as [name, goal] or [name, goal, reference]
 * ("maximize" or "minimize"), constraints as [metric, "<=" or ">=", bound]; the first objective
 * also as `objective`, and a single one as `objective` alone (the server's canonical form, so
 * that creating the study again compares equal).
 * @param {any} spec
 */
function withObjectives(spec) {
  if (spec === null || typeof spec !== 'object' || Array.isArray(spec)) return spec;
  const out = { ...spec };
  if (Array.isArray(spec.objectives)) {
    out.objectives = spec.objectives.map((o, i) => {
      if (!Array.isArray(o)) return o;
      if (o.length < 2 || o.length > 3 || typeof o[0] !== 'string' || typeof o[1] !== 'string') {
        throw invalidArgument(`spec.objectives[${i}]: expected [name, goal] or [name, goal, reference]`);
      }
      const objective = { name: o[0], goal: enumName(o[1], 'GOAL_', `spec.objectives[${i}].goal`) };
      if (o.length === 3) objective.reference = o[2];
      return objective;
    });
    if (out.objectives.length > 0 && out.objective === undefined) {
      out.objective = { ...out.objectives[0] };
      if (out.objectives.length === 1) delete out.objectives;
    }
  }
  if (Array.isArray(spec.constraints)) {
    out.constraints = spec.constraints.map((c, i) => {
      if (!Array.isArray(c)) return c;
      if (c.length !== 3 || typeof c[0] !== 'string' || !(c[1] in senses)) {
        throw invalidArgument(`spec.constraints[${i}]: expected [metric, "<=" or ">=", bound], got ` +
          `${JSON.stringify(c)}`);
      }
      return { metric: c[0], sense: senses[c[1]], bound: c[2] };
    });
  }
  return out;
}

function holdsOutcome(trial, request) {
  if (request.failure === undefined) {
    const metrics = trial.metrics ?? {};
    const sent = request.metrics ?? {};
    // STOPPED: observe() of a trial that an early-stopping rule stopped. In a study with several
    // objectives the server also stores the first objective's value among the metrics: a metric
    // not sent matches when it equals the trial's value.
    return ['TRIAL_STATE_COMPLETED', 'TRIAL_STATE_STOPPED'].includes(trial.state) &&
      (request.value === undefined || (trial.value ?? 0) === request.value) &&
      Object.entries(metrics).every(([name, metric]) => name in sent || metric === (trial.value ?? 0)) &&
      Object.entries(sent).every(([name, metric]) => metrics[name] === metric);
  }
  return request.failure !== undefined && trial.state === request.failure.state &&
    (trial.failureReason ?? '') === request.failure.reason;
}

/** A connection to one metaopt server. */
export class Client {
  #stub;
  #protos;
  #token;
  #options;

  /**
   * @param {import('./index.js').ClientOptions} [options]
   */
  constructor(options = {}) {
    if (options === null || typeof options !== 'object') throw invalidArgument('options: expected an object');
    const known = new Set([
      'target', 'token', 'tls', 'timeoutMs', 'maxAttempts', 'initialBackoffMs', 'maxBackoffMs',
      'protoDir', 'channelOptions', 'onRetry',
    ]);
    for (const key of Object.keys(options)) {
      if (!known.has(key)) throw invalidArgument(`options.${key}: unknown option (expected ${[...known].join(', ')})`);
    }
    const merged = { ...defaults, ...Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) };
    checkString(merged.target, 'options.target');
    checkPositive(merged.timeoutMs, 'options.timeoutMs');
    if (!Number.isInteger(merged.maxAttempts) || merged.maxAttempts < 1) {
      throw invalidArgument(`options.maxAttempts: ${String(merged.maxAttempts)} is not an integer >= 1`);
    }
    checkPositive(merged.initialBackoffMs, 'options.initialBackoffMs');
    checkPositive(merged.maxBackoffMs, 'options.maxBackoffMs');
    if (merged.onRetry !== undefined && typeof merged.onRetry !== 'function') {
      throw invalidArgument('options.onRetry: expected a function');
    }
    if (merged.token !== undefined) {
      checkString(merged.token, 'options.token');
      if (/[\s\x00-\x1f\x7f]/.test(merged.token)) {
        throw invalidArgument('options.token: must not contain whitespace or control characters');
      }
    }
    this.#token = merged.token;
    this.#options = merged;
    this.#protos = loadProtos(merged.protoDir);
    const { credentials, options: tlsOptions } = credentialsFor(merged.tls);
    const Service = grpc.loadPackageDefinition(this.#protos.packageDefinition).metaopt.v1.OptimizerService;
    this.#stub = new Service(merged.target, credentials, {
      'grpc.max_receive_message_length': maxReceiveMessageBytes,
      // Retries are done here, per method, with knowledge of idempotency.
      'grpc.enable_retries': 0,
      ...tlsOptions,
      ...(merged.channelOptions ?? {}),
    });
  }

  /** The server address this client talks to. */
  get target() {
    return this.#options.target;
  }

  /**
   * Calls one RPC by name (e.g. "GetStudy") with a request in the proto's shape. The low-level
   * path every other method takes; `idempotent` decides whether UNAVAILABLE and
   * RESOURCE_EXHAUSTED are retried.
   * @param {string} method
   * @param {object} request
   * @param {{timeoutMs?: number, idempotent?: boolean}} [callOptions]
   * @returns {Promise<any>}
   */
  async call(method, request, callOptions = {}) {
    return this.#invoke(method, request, callOptions, { retried: false });
  }

  /** call() that records in `state.retried` whether a failed attempt was retried. */
  async #invoke(method, request, callOptions, state) {
    const definition = this.#protos.packageDefinition['metaopt.v1.OptimizerService'][method];
    if (!definition) throw invalidArgument(`method: ${JSON.stringify(method)} is not an OptimizerService RPC`);
    const typeName = definition.requestType.type.name;
    const message = normalize(this.#protos, `metaopt.v1.${typeName}`, request);
    const timeoutMs = checkPositive(callOptions.timeoutMs ?? this.#options.timeoutMs, 'timeoutMs');
    const deadline = Date.now() + timeoutMs;
    const attempts = callOptions.idempotent ? this.#options.maxAttempts : 1;
    let backoff = this.#options.initialBackoffMs;
    for (let attempt = 1; ; ++attempt) {
      try {
        return await this.#unary(method, message, deadline);
      } catch (error) {
        if (!(error instanceof MetaoptError) || !retryable.has(error.code) || attempt >= attempts) throw error;
        // "Equal jitter": uniform in [backoff / 2, backoff].
        const delayMs = backoff * (0.5 + Math.random() / 2);
        if (Date.now() + delayMs >= deadline) throw error;
        state.retried = true;
        this.#options.onRetry?.({ method, attempt, error, delayMs });
        await sleep(delayMs);
        backoff = Math.min(backoff * 2, this.#options.maxBackoffMs);
      }
    }
  }

  #unary(method, message, deadline) {
    const metadata = new grpc.Metadata();
    if (this.#token !== undefined) metadata.set('authorization', `Bearer ${this.#token}`);
    return new Promise((resolve, reject) => {
      this.#stub[method](message, metadata, { deadline: new Date(deadline) }, (error, response) => {
        if (error) reject(fromServiceError(method, error));
        else resolve(response);
      });
    });
  }

  /**
   * Create-or-get: returns the study (a new one, or the existing one with an equal spec).
   * ALREADY_EXISTS when the id is taken by a study with another spec.
   * @param {string} studyId
   * @param {object} spec a metaopt.v1.StudySpec (snake_case or camelCase fields)
   * @param {{clientId?: string, timeoutMs?: number}} [options]
   * @returns {Promise<Study>}
   */
  async createStudy(studyId, spec, options = {}) {
    checkString(studyId, 'study_id');
    const request = {
      study_id: studyId,
      spec: normalize(this.#protos, 'metaopt.v1.StudySpec', withObjectives(spec), 'spec'),
    };
    const response = await this.call('CreateStudy', request, { idempotent: true, timeoutMs: options.timeoutMs });
    const study = new Study(this, studyId, { clientId: options.clientId });
    study.info = response.study;
    study.created = Boolean(response.created);
    return study;
  }

  /**
   * The study `studyId` as stored (NOT_FOUND if absent), as a Study handle.
   * @param {string} studyId
   * @param {{clientId?: string, timeoutMs?: number}} [options]
   * @returns {Promise<Study>}
   */
  async getStudy(studyId, options = {}) {
    const study = new Study(this, studyId, { clientId: options.clientId });
    await study.get({ timeoutMs: options.timeoutMs });
    return study;
  }

  /**
   * A handle on study `studyId` without a call to the server.
   * @param {string} studyId
   * @param {{clientId?: string}} [options]
   */
  study(studyId, options = {}) {
    return new Study(this, studyId, options);
  }

  /**
   * One page of studies, ordered by study_id.
   * @param {{pageSize?: number, pageToken?: string, timeoutMs?: number}} [options]
   * @returns {Promise<{studies: object[], nextPageToken: string}>}
   */
  async listStudies(options = {}) {
    const response = await this.call(
      'ListStudies',
      { page_size: options.pageSize, page_token: options.pageToken },
      { idempotent: true, timeoutMs: options.timeoutMs },
    );
    return { studies: response.studies ?? [], nextPageToken: response.nextPageToken ?? '' };
  }

  /**
   * Removes a study with its trials. A retry that finds it already gone (NOT_FOUND after an
   * UNAVAILABLE attempt) counts as success.
   * @param {string} studyId
   * @param {{timeoutMs?: number}} [options]
   */
  async deleteStudy(studyId, options = {}) {
    checkString(studyId, 'study_id');
    const state = { retried: false };
    try {
      const callOptions = { idempotent: true, timeoutMs: options.timeoutMs };
      await this.#invoke('DeleteStudy', { study_id: studyId }, callOptions, state);
    } catch (error) {
      if (!(state.retried && error.code === Status.NOT_FOUND)) throw error;
    }
  }

  /**
   * Observe of a trial id (`request`), retried like an idempotent call. When an attempt was
   * retried and the last one finds the trial already observed (FAILED_PRECONDITION), an earlier
   * attempt may have been stored with its answer lost: the trial is read, and returned when it
   * holds exactly this outcome; otherwise the FAILED_PRECONDITION stands.
   * @param {object} request an ObserveRequest with study_id and trial_id
   * @param {{timeoutMs?: number}} options
   * @returns {Promise<object>} the ObserveResponse
   */
  async observeTrial(request, options = {}) {
    const state = { retried: false };
    try {
      return await this.#invoke('Observe', request, { idempotent: true, timeoutMs: options.timeoutMs }, state);
    } catch (error) {
      if (!(state.retried && error.code === Status.FAILED_PRECONDITION)) throw error;
      const stored = await this.call(
        'GetTrial',
        { study_id: request.study_id, trial_id: request.trial_id },
        { idempotent: true, timeoutMs: options.timeoutMs },
      );
      if (stored.trial === undefined || !holdsOutcome(stored.trial, request)) throw error;
      return { trial: stored.trial };
    }
  }

  /**
   * Reports an intermediate value of ACTIVE trial `trialId` at `step` (>= 0); resolves to
   * {shouldStop, reason, trial}. Idempotent per (trial, step), so it is retried. With
   * `options.stopReason` the client stops the trial here by a rule of its own (say why, at most
   * 1000 bytes; client_stop_reason): the answer is shouldStop and observing the trial with a
   * value ends it TRIAL_STATE_STOPPED.
   * @param {string} studyId
   * @param {string | number | bigint} trialId
   * @param {number | bigint | string} step
   * @param {number} value
   * @param {Record<string, number>} [metrics]
   * @param {{timeoutMs?: number, stopReason?: string}} [options]
   * @returns {Promise<{shouldStop: boolean, reason: string, trial: any}>}
   */
  async reportIntermediate(studyId, trialId, step, value, metrics, options = {}) {
    checkString(studyId, 'study_id');
    const request = reportRequest(studyId, trialIdOf(trialId, 'trial_id'), step, value, metrics, options.stopReason);
    const response = await this.call('ReportIntermediate', request, { idempotent: true, timeoutMs: options.timeoutMs });
    return reportOf(response);
  }

  /**
   * The models the server's registry serves now.
   * @param {{timeoutMs?: number}} [options]
   * @returns {Promise<object[]>}
   */
  async listModels(options = {}) {
    const response = await this.call('ListModels', {}, { idempotent: true, timeoutMs: options.timeoutMs });
    return response.models ?? [];
  }

  /** Closes the channel; calls after this fail. */
  close() {
    this.#stub.close();
  }
}

/** A study on the server, with the client id its Suggest calls carry. */
export class Study {
  #client;

  /**
   * @param {Client} client
   * @param {string} studyId
   * @param {{clientId?: string}} [options]
   */
  constructor(client, studyId, options = {}) {
    checkString(studyId, 'study_id');
    this.#client = client;
    /** @type {string} */
    this.id = studyId;
    /** Sent with every Suggest; a retried Suggest gets this worker's ACTIVE trials back. */
    this.clientId = options.clientId === undefined ? newClientId() : checkString(options.clientId, 'client_id');
    /** The study as last returned by the server (CreateStudy or get()). @type {any} */
    this.info = undefined;
    /** Whether createStudy() created it (false: it existed with an equal spec). */
    this.created = false;
  }

  /**
   * Asks for up to `count` configurations to evaluate: ACTIVE trials. Fewer (or none) once a
   * catalogue study runs out of untried candidates.
   * @param {number} [count] 1..1000
   * @param {{timeoutMs?: number}} [options]
   * @returns {Promise<object[]>}
   */
  async suggest(count = 1, options = {}) {
    if (!Number.isInteger(count) || count < 1 || count > 1000) {
      throw invalidArgument(`count: ${String(count)} is not an integer in [1, 1000]`);
    }
    const response = await this.#client.call(
      'Suggest',
      { study_id: this.id, count, client_id: this.clientId },
      { idempotent: true, timeoutMs: options.timeoutMs },
    );
    return response.trials ?? [];
  }

  /**
   * Tells the result of a suggested trial: a number (the objective value), or
   * {value | failed: reason | infeasible: reason, metrics}. A study with several objectives or
   * constraints takes every objective's and constrained metric's value in metrics (`value`, if
   * given, is the first objective's): {metrics: {accuracy: 0.93, fit_seconds: 2.1}}. A trial
   * that violates a constraint completes with feasible false. Retried on UNAVAILABLE and
   * RESOURCE_EXHAUSTED (a trial is observed once, so a repeat cannot record it twice); a retry
   * that finds the trial already holding this outcome succeeds (Client.observeTrial).
   * @param {object | string | number | bigint} trial a Trial or its id
   * @param {number | {value?: number, failed?: string, infeasible?: string, metrics?: Record<string, number>}} result
   * @param {{timeoutMs?: number}} [options]
   * @returns {Promise<object>} the trial in its final state
   */
  async observe(trial, result, options = {}) {
    const request = { study_id: this.id, trial_id: trialIdOf(trial, 'trial'), ...outcomeOf(result) };
    const incarnation = incarnationOf([trial], this.info);
    if (incarnation !== undefined) request.study_incarnation = incarnation;
    const response = await this.#client.observeTrial(request, { timeoutMs: options.timeoutMs });
    return response.trial;
  }

  /**
   * Records an externally evaluated configuration as a new trial (warm start from earlier
   * results). Not retried: a repeat records a second trial.
   * @param {object} configuration a metaopt.v1.Configuration
   * @param {number | object} result as for observe()
   * @param {{timeoutMs?: number}} [options]
   * @returns {Promise<object>}
   */
  async observeConfiguration(configuration, result, options = {}) {
    const request = { study_id: this.id, configuration, ...outcomeOf(result) };
    const response = await this.#client.call('Observe', request, { timeoutMs: options.timeoutMs });
    return response.trial;
  }

  /**
   * The study as stored (spec, state, trial count, best trial); also kept in `info`.
   * @param {{timeoutMs?: number}} [options]
   */
  async get(options = {}) {
    const response = await this.#client.call(
      'GetStudy', { study_id: this.id }, { idempotent: true, timeoutMs: options.timeoutMs });
    this.info = response.study;
    return this.info;
  }

  /**
   * @param {object | string | number | bigint} trial a Trial or its id
   * @param {{timeoutMs?: number}} [options]
   */
  async getTrial(trial, options = {}) {
    const response = await this.#client.call(
      'GetTrial',
      { study_id: this.id, trial_id: trialIdOf(trial, 'trial') },
      { idempotent: true, timeoutMs: options.timeoutMs },
    );
    return response.trial;
  }

  /**
   * One page of trials by increasing id; `state` filters ("completed" or "TRIAL_STATE_COMPLETED").
   * @param {{state?: string, pageSize?: number, pageToken?: string, timeoutMs?: number}} [options]
   * @returns {Promise<{trials: object[], nextPageToken: string}>}
   */
  async listTrials(options = {}) {
    const response = await this.#client.call(
      'ListTrials',
      {
        study_id: this.id,
        state: enumName(options.state, 'TRIAL_STATE_', 'state'),
        page_size: options.pageSize,
        page_token: options.pageToken,
      },
      { idempotent: true, timeoutMs: options.timeoutMs },
    );
    return { trials: response.trials ?? [], nextPageToken: response.nextPageToken ?? '' };
  }

  /**
   * Every trial (all pages), optionally of one state.
   * @param {{state?: string, timeoutMs?: number}} [options]
   * @returns {Promise<object[]>}
   */
  async trials(options = {}) {
    const all = [];
    let pageToken;
    do {
      const page = await this.listTrials({ ...options, pageSize: 1000, pageToken });
      all.push(...page.trials);
      pageToken = page.nextPageToken;
    } while (pageToken);
    return all;
  }

  /**
   * One page of the study's Pareto front (GetParetoFront): its non-dominated feasible COMPLETED
   * trials by increasing id, with the whole front's summary {size, hypervolume, referencePoint}.
   * @param {{pageSize?: number, pageToken?: string, timeoutMs?: number}} [options]
   * @returns {Promise<{trials: object[], nextPageToken: string, summary: any}>}
   */
  async getParetoFront(options = {}) {
    const response = await this.#client.call(
      'GetParetoFront',
      { study_id: this.id, page_size: options.pageSize, page_token: options.pageToken },
      { idempotent: true, timeoutMs: options.timeoutMs },
    );
    return {
      trials: response.trials ?? [],
      nextPageToken: response.nextPageToken ?? '',
      summary: response.summary ?? {},
    };
  }

  /**
   * The whole Pareto front (every page) and its summary; with a single objective, the best
   * trials (all that tie). The summary is also kept in `info.paretoFront`.
   * @param {{timeoutMs?: number}} [options]
   * @returns {Promise<{trials: object[], summary: any}>}
   */
  async paretoFront(options = {}) {
    const trials = [];
    let pageToken;
    let summary;
    do {
      const page = await this.getParetoFront({ ...options, pageSize: 1000, pageToken });
      trials.push(...page.trials);
      summary ??= page.summary;
      pageToken = page.nextPageToken;
    } while (pageToken);
    if (this.info !== undefined) this.info = { ...this.info, paretoFront: summary };
    return { trials, summary };
  }

  /**
   * Fits the study's surrogate further on its observations ("kernel" or "full"). Not retried.
   * @param {{steps?: number, scope?: string, timeoutMs?: number}} [options]
   */
  async fineTune(options = {}) {
    return this.#client.call(
      'FineTune',
      {
        study_id: this.id,
        steps: options.steps,
        scope: enumName(options.scope ?? 'kernel', 'FINE_TUNE_SCOPE_', 'scope'),
      },
      { timeoutMs: options.timeoutMs },
    );
  }

  /**
   * Extends the leases of ACTIVE trials this worker is still evaluating.
   * @param {Array<object | string | number | bigint>} trials Trials or ids
   * @param {{timeoutMs?: number}} [options]
   * @returns {Promise<object[]>} the trials with their new lease_expire_time
   */
  async heartbeat(trials, options = {}) {
    if (!Array.isArray(trials)) throw invalidArgument('trials: expected an array of Trials or trial ids');
    const request = {
      study_id: this.id,
      trial_ids: trials.map((t, i) => trialIdOf(t, `trials[${i}]`))
    };
    const incarnation = incarnationOf(trials, this.info);
    if (incarnation !== undefined) request.study_incarnation = incarnation;
    const response = await this.#client.call('Heartbeat', request, {
      idempotent: true,
      timeoutMs: options.timeoutMs,
    });
    return response.trials ?? [];
  }

  /**
   * Reports an intermediate value of `trial` at `step` (epoch, iteration; >= 0); resolves to
   * {shouldStop, reason, trial}. On shouldStop, throw Pruned (or call observeStopped()). A
   * repeated step with the same value is a harmless retry; another value is
   * FAILED_PRECONDITION. Each report also extends the trial's lease. With `options.stopReason`
   * the client stops the trial by its own rule (as reportIntermediate): the answer is
   * shouldStop, and observeStopped() ends the trial TRIAL_STATE_STOPPED.
   * @param {object | string | number | bigint} trial a Trial or its id
   * @param {number | bigint | string} step
   * @param {number} value
   * @param {{metrics?: Record<string, number>, timeoutMs?: number, stopReason?: string}} [options]
   * @returns {Promise<{shouldStop: boolean, reason: string, trial: any}>}
   */
  async report(trial, step, value, options = {}) {
    const request = reportRequest(this.id, trialIdOf(trial, 'trial'), step, value, options.metrics, options.stopReason);
    const incarnation = incarnationOf([trial], this.info);
    if (incarnation !== undefined) request.study_incarnation = incarnation;
    const response = await this.#client.call('ReportIntermediate', request, { idempotent: true, timeoutMs: options.timeoutMs });
    return reportOf(response);
  }

  /**
   * Observes a trial the server told to stop with its last reported value (that of its largest
   * step, as stored); it ends TRIAL_STATE_STOPPED. INVALID_ARGUMENT if it reported nothing.
   * @param {object | string | number | bigint} trial a Trial or its id
   * @param {{timeoutMs?: number}} [options]
   * @returns {Promise<object>} the trial in its final state
   */
  async observeStopped(trial, options = {}) {
    const current = await this.getTrial(trial, options);
    const values = current.intermediateValues ?? [];
    if (values.length === 0) {
      throw invalidArgument(`trial ${String(current.id)}: no intermediate value was reported`);
    }
    return this.observe(current, values[values.length - 1].value ?? 0, options);
  }

  /**
   * Runs `nTrials` trials one after another: suggests one, awaits `objective(trial, report)`
   * (where `report(step, value, metrics?)` resolves to shouldStop) and observes the number it
   * returns. An objective that throws Pruned is observed with its last reported value (ends
   * STOPPED); any other error is observed as FAILED and thrown again.
   * @param {(trial: any, report: (step: number, value: number, metrics?: Record<string, number>) => Promise<boolean>) => Promise<number> | number} objective
   * @param {number} [nTrials]
   * @returns {Promise<object[]>} the observed trials
   */
  async optimize(objective, nTrials = 1) {
    const done = [];
    for (let i = 0; i < nTrials; ++i) {
      const [trial] = await this.suggest(1);
      if (trial === undefined) break;
      const report = async (step, value, metrics) => (await this.report(trial, step, value, { metrics })).shouldStop;
      let value;
      try {
        value = await objective(trial, report);
      } catch (error) {
        if (error instanceof Pruned) {
          done.push(await this.observeStopped(trial));
          continue;
        }
        await this.observe(trial, { failed: String(error?.message ?? error).slice(0, 1000) });
        throw error;
      }
      done.push(await this.observe(trial, value));
    }
    return done;
  }

  /**
   * Removes the study, its trials and its surrogate state.
   * @param {{timeoutMs?: number}} [options]
   */
  async delete(options = {}) {
    await this.#client.deleteStudy(this.id, options);
  }
}
