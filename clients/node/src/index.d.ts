// Types of the metaopt Node client (the implementation is plain ESM in this directory).
//
// Requests take the proto messages' shape with snake_case or camelCase field names; responses
// come back with camelCase names, int64 values as decimal strings, enums as names and fields at
// their default value left out.

import type { Metadata } from '@grpc/grpc-js';

/** gRPC status codes by name (`Status.NOT_FOUND === 5`). */
export declare const Status: Readonly<Record<string, number>>;
/** `codeName(5) === 'NOT_FOUND'`. */
export declare function codeName(code: number): string;

/** A failed call: the gRPC status code and the server's (or the client's) message. */
export declare class MetaoptError extends Error {
  readonly name: 'MetaoptError';
  /** The gRPC status code (see `Status`). */
  readonly code: number;
  /** Its name, e.g. "NOT_FOUND". */
  readonly codeName: string;
  /** The server's message, or the client's for a request it rejected before sending. */
  readonly details: string;
  /** The RPC that failed ("Suggest"); undefined for client-side checks. */
  readonly method?: string;
  readonly metadata?: Metadata;
  constructor(code: number, details: string, extra?: { method?: string; metadata?: Metadata; cause?: unknown });
}

/** The repository's proto/ directory, from which the service definition is loaded. */
export declare const defaultProtoDir: string;

export type Int64 = string | number | bigint;

/** PEM text (Buffer or string containing "-----BEGIN") or the path of a PEM file. */
export type Pem = Buffer | string;

export interface TlsOptions {
  /** CA certificates that sign the server's certificate; default: the system's roots. */
  rootCerts?: Pem;
  /** Client certificate chain and key, for mutual TLS (both or neither). */
  certChain?: Pem;
  privateKey?: Pem;
  /** Name expected in the server's certificate when it differs from the target's host. */
  serverNameOverride?: string;
}

export interface RetryInfo {
  method: string;
  /** The attempt that failed (1 for the first). */
  attempt: number;
  error: MetaoptError;
  delayMs: number;
}

export interface ClientOptions {
  /** gRPC target, e.g. "localhost:50051" or "dns:///metaopt.example:50051". Default "localhost:50051". */
  target?: string;
  /** Sent as `authorization: Bearer <token>` with every call. */
  token?: string;
  /** true: TLS with the system's roots; an object: see TlsOptions; false/absent: plaintext. */
  tls?: boolean | TlsOptions;
  /** Deadline of one call, retries included. Default 30000. */
  timeoutMs?: number;
  /** Attempts of an idempotent call that keeps failing with UNAVAILABLE or RESOURCE_EXHAUSTED (1: no retry). Default 5. */
  maxAttempts?: number;
  /** Backoff before the second attempt, doubled per attempt up to maxBackoffMs; the sleep is uniform in [b/2, b]. */
  initialBackoffMs?: number;
  maxBackoffMs?: number;
  /** Directory holding metaopt/v1/*.proto; default $METAOPT_PROTO_DIR, else the repository's proto/. */
  protoDir?: string;
  /** Extra grpc-js channel options. */
  channelOptions?: Record<string, string | number>;
  /** Called before each retry (for logging). */
  onRetry?: (info: RetryInfo) => void;
}

export interface CallOptions {
  /** Overrides ClientOptions.timeoutMs for this call. */
  timeoutMs?: number;
}

export interface Timestamp {
  seconds?: string;
  nanos?: number;
}

export interface Duration {
  seconds?: string;
  nanos?: number;
}

export type TrialStateName =
  | 'TRIAL_STATE_ACTIVE'
  | 'TRIAL_STATE_COMPLETED'
  | 'TRIAL_STATE_FAILED'
  | 'TRIAL_STATE_INFEASIBLE'
  | 'TRIAL_STATE_ABANDONED'
  | 'TRIAL_STATE_STALE'
  | 'TRIAL_STATE_STOPPED';
export type TrialStateShort = 'active' | 'completed' | 'failed' | 'infeasible' | 'abandoned' | 'stale' | 'stopped';

/** StudySpec.early_stopping: one rule (docs/api.md, "Early stopping"); zero fields take defaults. */
export interface EarlyStoppingSpec {
  median?: { start_step?: Int64; startStep?: Int64; min_trials?: number; minTrials?: number };
  successive_halving?: {
    min_resource?: Int64;
    minResource?: Int64;
    reduction_factor?: number;
    reductionFactor?: number;
    cohort_size: number;
  };
  successiveHalving?: { minResource?: Int64; reductionFactor?: number; cohortSize: number };
  asha?: {
    min_resource?: Int64;
    minResource?: Int64;
    reduction_factor?: number;
    reductionFactor?: number;
    grace_period?: Int64;
    gracePeriod?: Int64;
  };
  threshold?: { threshold: number; start_step?: Int64; startStep?: Int64 };
}

export interface IntermediateValue {
  step?: string;
  value?: number;
  metrics?: Record<string, number>;
  reportTime?: Timestamp;
}

/** What ReportIntermediate answered. */
export interface ReportResult {
  /** Stop now: throw Pruned, or observeStopped(); the trial ends TRIAL_STATE_STOPPED. */
  shouldStop: boolean;
  reason: string;
  trial: Trial;
}

/** Throw to abandon a trial the server told to stop (see Study.optimize). */
export declare class Pruned extends Error {
  constructor(message?: string);
}

export interface ParameterValue {
  number?: number;
  category?: string;
}

export interface Assignment {
  stage?: string;
  algorithm?: string;
  parameters?: Record<string, ParameterValue>;
}

export interface Configuration {
  assignments?: Assignment[];
}

export interface Parameter {
  name: string;
  float_domain?: { low: number; high: number; log?: boolean };
  floatDomain?: { low: number; high: number; log?: boolean };
  int_domain?: { low: Int64; high: Int64; log?: boolean };
  intDomain?: { low: Int64; high: Int64; log?: boolean };
  categorical_domain?: { values: string[] };
  categoricalDomain?: { values: string[] };
}

export interface StudySpec {
  search_space?: { stages: Array<{ name: string; algorithms: Array<{ name: string; parameters?: Parameter[] }> }> };
  searchSpace?: StudySpec['search_space'];
  objective?: { name?: string; goal: 'GOAL_MINIMIZE' | 'GOAL_MAXIMIZE' | number };
  algorithm?: {
    kind:
      | 'ALGORITHM_KIND_RANDOM'
      | 'ALGORITHM_KIND_GP'
      | 'ALGORITHM_KIND_DEEPPIPE'
      | 'ALGORITHM_KIND_PMF'
      | 'ALGORITHM_KIND_MOSAIC'
      | 'ALGORITHM_KIND_GROSI'
      | 'ALGORITHM_KIND_FSBO'
      | number;
    model?: string;
    initial_trials?: number;
    initialTrials?: number;
    mosaic?: Record<string, unknown>;
  };
  candidates?: Configuration[];
  dataset_features?: Record<string, number>;
  datasetFeatures?: Record<string, number>;
  seed?: Int64;
  early_stopping?: EarlyStoppingSpec;
  earlyStopping?: EarlyStoppingSpec;
  /**
   * Several objectives (2 or 3) optimized together, as messages or as shorthand
   * [name, goal] / [name, goal, reference] ("maximize" or "minimize"); the
   * first is also sent as `objective`.
   */
  objectives?: Array<Objective | [string, GoalShort] | [string, GoalShort, number]>;
  /** Limits on observed metrics, as messages or as [metric, "<=" or ">=", bound]. */
  constraints?: Array<Constraint | [string, '<=' | '>=', number]>;
}

export type GoalShort = 'maximize' | 'minimize';

export interface Objective {
  name: string;
  goal: 'GOAL_MINIMIZE' | 'GOAL_MAXIMIZE' | GoalShort | number;
  /** This objective's coordinate of the hypervolume's reference point. */
  reference?: number;
}

export interface Constraint {
  metric: string;
  sense: 'CONSTRAINT_SENSE_AT_MOST' | 'CONSTRAINT_SENSE_AT_LEAST' | number;
  bound: number;
}

/** A study's Pareto front summarized (ParetoFrontSummary; size is a decimal string). */
export interface ParetoFrontSummary {
  size?: string;
  hypervolume?: number;
  referencePoint?: number[];
}

export interface Trial {
  id: string;
  configuration?: Configuration;
  state?: TrialStateName;
  value?: number;
  metrics?: Record<string, number>;
  clientId?: string;
  failureReason?: string;
  createTime?: Timestamp;
  completeTime?: Timestamp;
  metadata?: Record<string, string>;
  leaseExpireTime?: Timestamp;
  /**
   * Study.incarnation of the study that handed the trial out (a decimal
   * string).
   */
  studyIncarnation?: string;
  intermediateValues?: IntermediateValue[];
  /** Studies with constraints, COMPLETED trials: whether every constraint is met. */
  feasible?: boolean;
}

export interface StudyInfo {
  studyId: string;
  spec?: Record<string, unknown>;
  state?: 'STUDY_STATE_ACTIVE' | 'STUDY_STATE_EXHAUSTED';
  trialCount?: string;
  bestTrial?: Trial;
  createTime?: Timestamp;
  boundModel?: string;
  owner?: string;
  /** Tells this study from deleted ones with the same id (a decimal string). */
  incarnation?: string;
  /** Studies with several objectives: their Pareto front now. */
  paretoFront?: ParetoFrontSummary;
}

export interface Model {
  name?: string;
  version?: string;
  kind?: string;
  searchSpaceSummary?: string;
  trainingData?: string;
  createTime?: Timestamp;
  validationMetrics?: Record<string, number>;
  portfolioSize?: number;
}

export interface FineTuneResult {
  lossBefore?: number;
  lossAfter?: number;
  stepsRun?: number;
  elapsed?: Duration;
}

/** An observation: the objective value, or why there is none; optional extra metrics. */
export type Outcome =
  | number
  | { value: number; metrics?: Record<string, number> }
  | { failed: string; metrics?: Record<string, number> }
  | { infeasible: string; metrics?: Record<string, number> }
  /** Several objectives or constraints: every objective's value in metrics. */
  | { metrics: Record<string, number> };

export declare class Client {
  constructor(options?: ClientOptions);
  readonly target: string;
  /** Low-level: one RPC by name with a request in the proto's shape. */
  call(method: string, request: object, options?: CallOptions & { idempotent?: boolean }): Promise<any>;
  /**
   * Observe of a trial id, retried on UNAVAILABLE and RESOURCE_EXHAUSTED; a retry that finds the
   * trial already holding this outcome (an earlier attempt stored, its answer lost) succeeds.
   */
  observeTrial(request: object, options?: CallOptions): Promise<any>;
  /** Create-or-get; ALREADY_EXISTS when the id is taken by another spec. */
  createStudy(studyId: string, spec: StudySpec, options?: CallOptions & { clientId?: string }): Promise<Study>;
  /** NOT_FOUND when absent. */
  getStudy(studyId: string, options?: CallOptions & { clientId?: string }): Promise<Study>;
  /** A handle without a call. */
  study(studyId: string, options?: { clientId?: string }): Study;
  listStudies(
    options?: CallOptions & { pageSize?: number; pageToken?: string },
  ): Promise<{ studies: StudyInfo[]; nextPageToken: string }>;
  deleteStudy(studyId: string, options?: CallOptions): Promise<void>;
  listModels(options?: CallOptions): Promise<Model[]>;
  /**
   * Idempotent per (trial, step); retried. `stopReason` (client_stop_reason): the client stops
   * the trial by its own rule; the answer is shouldStop.
   */
  reportIntermediate(
    studyId: string,
    trialId: Int64,
    step: Int64,
    value: number,
    metrics?: Record<string, number>,
    options?: CallOptions & { stopReason?: string },
  ): Promise<ReportResult>;
  close(): void;
}

export declare class Study {
  constructor(client: Client, studyId: string, options?: { clientId?: string });
  readonly id: string;
  /** Sent with every Suggest; a retried Suggest gets this worker's ACTIVE trials back. */
  readonly clientId: string;
  /** The study as last returned by the server. */
  info: StudyInfo | undefined;
  /** Whether createStudy() created it. */
  created: boolean;
  suggest(count?: number, options?: CallOptions): Promise<Trial[]>;
  observe(trial: Trial | Int64, result: Outcome, options?: CallOptions): Promise<Trial>;
  observeConfiguration(configuration: Configuration, result: Outcome, options?: CallOptions): Promise<Trial>;
  get(options?: CallOptions): Promise<StudyInfo>;
  getTrial(trial: Trial | Int64, options?: CallOptions): Promise<Trial>;
  listTrials(
    options?: CallOptions & { state?: TrialStateName | TrialStateShort; pageSize?: number; pageToken?: string },
  ): Promise<{ trials: Trial[]; nextPageToken: string }>;
  trials(options?: CallOptions & { state?: TrialStateName | TrialStateShort }): Promise<Trial[]>;
  /** One page of the Pareto front (GetParetoFront) with the whole front's summary. */
  getParetoFront(
    options?: CallOptions & { pageSize?: number; pageToken?: string },
  ): Promise<{ trials: Trial[]; nextPageToken: string; summary: ParetoFrontSummary }>;
  /** The whole Pareto front (every page) and its summary. */
  paretoFront(options?: CallOptions): Promise<{ trials: Trial[]; summary: ParetoFrontSummary }>;
  fineTune(
    options?: CallOptions & {
      steps?: number;
      scope?: 'kernel' | 'full' | 'FINE_TUNE_SCOPE_KERNEL' | 'FINE_TUNE_SCOPE_FULL';
    },
  ): Promise<FineTuneResult>;
  heartbeat(trials: Array<Trial | Int64>, options?: CallOptions): Promise<Trial[]>;
  /** `stopReason` (client_stop_reason): the client stops the trial by its own rule. */
  report(
    trial: Trial | Int64,
    step: Int64,
    value: number,
    options?: CallOptions & { metrics?: Record<string, number>; stopReason?: string },
  ): Promise<ReportResult>;
  /** Observes with the value of the trial's largest reported step; it ends TRIAL_STATE_STOPPED. */
  observeStopped(trial: Trial | Int64, options?: CallOptions): Promise<Trial>;
  /** Suggest, objective, observe, nTrials times; Pruned ends a trial STOPPED. */
  optimize(
    objective: (
      trial: Trial,
      report: (step: number, value: number, metrics?: Record<string, number>) => Promise<boolean>,
    ) => Promise<number> | number,
    nTrials?: number,
  ): Promise<Trial[]>;
  delete(options?: CallOptions): Promise<void>;
}

/** {name: number | string} of one stage's assignment, or of all stages when names do not repeat. */
export declare function parameters(
  trialOrConfiguration: Trial | Configuration,
  stage?: string,
): Record<string, number | string>;
/** {stage: algorithm}. */
export declare function algorithms(trialOrConfiguration: Trial | Configuration): Record<string, string>;
/** A response Timestamp as a Date. */
export declare function toDate(timestamp: Timestamp | undefined): Date | undefined;
