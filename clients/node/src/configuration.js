// Reading suggested configurations.

import { invalidArgument } from './errors.js';

/** @param {any} trialOrConfiguration */
function assignmentsOf(trialOrConfiguration) {
  const configuration = trialOrConfiguration?.configuration ?? trialOrConfiguration;
  const assignments = configuration?.assignments;
  if (!Array.isArray(assignments)) {
    throw invalidArgument('configuration: expected a Trial or a Configuration with assignments');
  }
  return assignments;
}

/** @param {any} value a ParameterValue */
function plain(value) {
  if (typeof value?.number === 'number') return value.number;
  if (typeof value?.category === 'string') return value.category;
  throw invalidArgument(`parameter value: ${JSON.stringify(value)} has neither number nor category`);
}

/**
 * The parameter values of a Trial's (or a Configuration's) assignment as a plain object
 * {name: number | string}: of stage `stage`, or of every stage when parameter names do not
 * repeat across stages.
 * @param {any} trialOrConfiguration
 * @param {string} [stage]
 * @returns {Record<string, number | string>}
 */
export function parameters(trialOrConfiguration, stage) {
  const out = {};
  let matched = false;
  for (const assignment of assignmentsOf(trialOrConfiguration)) {
    if (stage !== undefined && assignment.stage !== stage) continue;
    matched = true;
    for (const [name, value] of Object.entries(assignment.parameters ?? {})) {
      if (Object.prototype.hasOwnProperty.call(out, name)) {
        throw invalidArgument(`parameters: ${JSON.stringify(name)} appears in several stages; pass the stage`);
      }
      out[name] = plain(value);
    }
  }
  if (stage !== undefined && !matched) {
    throw invalidArgument(`stage: ${JSON.stringify(stage)} is not in the configuration`);
  }
  return out;
}

/**
 * The algorithm chosen in each stage: {stage: algorithm} ("" where a stage's only algorithm
 * was left implicit).
 * @param {any} trialOrConfiguration
 * @returns {Record<string, string>}
 */
export function algorithms(trialOrConfiguration) {
  return Object.fromEntries(assignmentsOf(trialOrConfiguration).map((a) => [a.stage, a.algorithm ?? '']));
}

/**
 * A google.protobuf.Timestamp from a response ({seconds: "…", nanos}) as a Date (undefined stays
 * undefined).
 * @param {{seconds?: string | number, nanos?: number} | undefined} timestamp
 * @returns {Date | undefined}
 */
export function toDate(timestamp) {
  if (timestamp === undefined || timestamp === null) return undefined;
  return new Date(Number(timestamp.seconds ?? 0) * 1000 + Math.floor((timestamp.nanos ?? 0) / 1e6));
}
