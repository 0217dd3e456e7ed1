// Loads metaopt.v1 from the repository's proto/ at run time and checks request
// objects against it before they are sent.
//
// Requests are plain objects in the shape of the proto messages. Field names
// may be snake_case (as in the .proto files and the docs' JSON) or camelCase
// (as in responses); int64 values may be numbers, bigints or decimal strings;
// enums are names or numbers. normalize() rejects unknown fields, wrong types
// and out-of-range numbers with INVALID_ARGUMENT naming the field path (in
// snake_case, like the server's messages), the value and the rule, because
// protobufjs would otherwise drop or coerce them silently.

import path from 'node:path';
import { fileURLToPath } from 'node:url';

import protoLoader from '@grpc/proto-loader';
import protobuf from 'protobufjs';

import { invalidArgument } from './errors.js';

/** The repository's proto/ directory (clients/node/src -> proto). */
export const defaultProtoDir = fileURLToPath(new URL('../../../proto/', import.meta.url));

const serviceFile = 'metaopt/v1/optimizer_service.proto';

/** How responses are decoded (see the README's "Responses"). */
export const loaderOptions = Object.freeze({
  keepCase: false,
  longs: String,
  enums: String,
  defaults: false,
  oneofs: false,
});

/**
 * The service definition and reflection types of one proto directory.
 * @typedef {{
 *   packageDefinition: import('@grpc/proto-loader').PackageDefinition,
 *   root: protobuf.Root,
 * }} Protos
 */

/** @type {Map<string, Protos>} */
const cache = new Map();

/**
 * Loads (once per directory) metaopt/v1/optimizer_service.proto and its imports.
 * @param {string} [protoDir] directory holding metaopt/v1/*.proto
 * @returns {Protos}
 */
export function loadProtos(protoDir = process.env.METAOPT_PROTO_DIR || defaultProtoDir) {
  const dir = path.resolve(protoDir);
  let protos = cache.get(dir);
  if (protos) return protos;
  let packageDefinition;
  try {
    packageDefinition = protoLoader.loadSync(serviceFile, { ...loaderOptions, includeDirs: [dir] });
  } catch (error) {
    throw invalidArgument(`protoDir: cannot load ${serviceFile} from ${dir}: ${error.message}`);
  }
  // The same files with their original (snake_case) field names, for checking requests.
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => path.join(dir, target);
  root.loadSync(serviceFile, { keepCase: true });
  root.resolveAll();
  protos = { packageDefinition, root };
  cache.set(dir, protos);
  return protos;
}

const int32Range = [-(2 ** 31), 2 ** 31 - 1];
const uint32Range = [0, 2 ** 32 - 1];
const scalarRanges = {
  int32: int32Range,
  sint32: int32Range,
  sfixed32: int32Range,
  uint32: uint32Range,
  fixed32: uint32Range,
};
const signed64 = [-(2n ** 63n), 2n ** 63n - 1n];
const unsigned64 = [0n, 2n ** 64n - 1n];
const int64Ranges = {
  int64: signed64,
  sint64: signed64,
  sfixed64: signed64,
  uint64: unsigned64,
  fixed64: unsigned64,
};

/** @param {unknown} value */
function show(value) {
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'boolean' || value == null) return String(value);
  if (Array.isArray(value)) return 'an array';
  return `a ${typeof value}`;
}

/** "an int32", "an sint64", "a uint64" (by sound). @param {string} kind */
function article(kind) {
  return /^(int|s)/.test(kind) ? `an ${kind}` : `a ${kind}`;
}

/** @param {unknown} value */
function isPlainObject(value) {
  return typeof value === 'object' && value !== null && !Array.isArray(value) &&
    !(value instanceof Uint8Array) && !(value instanceof Date);
}

/** Field name lookup (snake_case and camelCase) per message type. */
const fieldIndex = new WeakMap();

/** @param {protobuf.Type} type */
function fieldsOf(type) {
  let index = fieldIndex.get(type);
  if (!index) {
    index = new Map();
    for (const field of type.fieldsArray) {
      index.set(field.name, field);
      index.set(protobuf.util.camelCase(field.name), field);
    }
    fieldIndex.set(type, index);
  }
  return index;
}

/**
 * A checked copy of `value` for message `type` with camelCase field names, as
 * the grpc-js serializer expects.
 * @param {protobuf.Type} type
 * @param {unknown} value
 * @param {string} where the field path, for messages
 * @returns {Record<string, unknown>}
 */
function normalizeMessage(type, value, where) {
  if (!isPlainObject(value)) {
    const expected = type.fullName.slice(1);
    throw invalidArgument(`${where || 'request'}: ${show(value)} is not an object (expected ${expected})`);
  }
  const out = {};
  /** @type {Map<string, string>} oneof name -> the member set so far */
  const oneofSet = new Map();
  for (const [key, fieldValue] of Object.entries(value)) {
    if (fieldValue === undefined || fieldValue === null) continue;
    const field = fieldsOf(type).get(key);
    if (!field) {
      throw invalidArgument(`${join(where, key)}: unknown field of ${type.fullName.slice(1)}`);
    }
    const path = join(where, field.name);
    if (field.partOf && !field.partOf.name.startsWith('_')) {
      const other = oneofSet.get(field.partOf.name);
      if (other !== undefined && other !== field.name) {
        throw invalidArgument(`${path}: only one of ${field.partOf.oneof.join(', ')} may be set (${other} is set too)`);
      }
      oneofSet.set(field.partOf.name, field.name);
    }
    out[protobuf.util.camelCase(field.name)] = normalizeField(field, fieldValue, path);
  }
  return out;
}

/** @param {string} where @param {string} name */
function join(where, name) {
  return where ? `${where}.${name}` : name;
}

/**
 * @param {protobuf.Field} field
 * @param {unknown} value
 * @param {string} where
 */
function normalizeField(field, value, where) {
  if (field.map) {
    if (!isPlainObject(value) && !(value instanceof Map)) {
      throw invalidArgument(`${where}: ${show(value)} is not an object (expected a map)`);
    }
    const entries = value instanceof Map ? [...value.entries()] : Object.entries(value);
    const out = {};
    for (const [key, item] of entries) {
      if (typeof key !== 'string' || key === '') {
        throw invalidArgument(`${where}: map key ${show(key)} is not a non-empty string`);
      }
      out[key] = normalizeValue(field, item, `${where}[${JSON.stringify(key)}]`);
    }
    return out;
  }
  if (field.repeated) {
    if (!Array.isArray(value)) throw invalidArgument(`${where}: ${show(value)} is not an array`);
    return value.map((item, i) => normalizeValue(field, item, `${where}[${i}]`));
  }
  return normalizeValue(field, value, where);
}

/**
 * One value of `field` (an element, for repeated and map fields).
 * @param {protobuf.Field} field
 * @param {unknown} value
 * @param {string} where
 */
function normalizeValue(field, value, where) {
  const resolved = field.resolvedType;
  if (resolved instanceof protobuf.Type) return normalizeMessage(resolved, value, where);
  if (resolved instanceof protobuf.Enum) return normalizeEnum(resolved, value, where);
  const kind = field.type;
  switch (kind) {
    case 'double':
    case 'float':
      if (typeof value !== 'number') throw invalidArgument(`${where}: ${show(value)} is not a number`);
      return value;
    case 'bool':
      if (typeof value !== 'boolean') throw invalidArgument(`${where}: ${show(value)} is not a boolean`);
      return value;
    case 'string':
      if (typeof value !== 'string') throw invalidArgument(`${where}: ${show(value)} is not a string`);
      return value;
    case 'bytes':
      if (value instanceof Uint8Array || typeof value === 'string') return value;
      throw invalidArgument(`${where}: ${show(value)} is not a Buffer or a base64 string`);
    default:
      break;
  }
  if (kind in scalarRanges) {
    const [low, high] = scalarRanges[kind];
    if (!Number.isInteger(value) || value < low || value > high) {
      throw invalidArgument(`${where}: ${show(value)} is not ${article(kind)} (an integer in [${low}, ${high}])`);
    }
    return value;
  }
  if (kind in int64Ranges) return normalizeInt64(kind, value, where);
  throw invalidArgument(`${where}: unsupported field type ${kind}`);
}

/**
 * int64-like values travel as decimal strings (no precision lost).
 * @param {string} kind @param {unknown} value @param {string} where
 */
function normalizeInt64(kind, value, where) {
  let big;
  if (typeof value === 'bigint') {
    big = value;
  } else if (typeof value === 'number' && Number.isSafeInteger(value)) {
    big = BigInt(value);
  } else if (typeof value === 'string' && /^-?[0-9]+$/.test(value)) {
    big = BigInt(value);
  } else {
    const rule = `${article(kind)} (a safe integer, a bigint or a decimal string)`;
    throw invalidArgument(`${where}: ${show(value)} is not ${rule}`);
  }
  const [low, high] = int64Ranges[kind];
  if (big < low || big > high) {
    throw invalidArgument(`${where}: ${show(value)} is outside the ${kind} range [${low}, ${high}]`);
  }
  return big.toString();
}

/** @param {protobuf.Enum} type @param {unknown} value @param {string} where */
function normalizeEnum(type, value, where) {
  if (typeof value === 'string' && Object.prototype.hasOwnProperty.call(type.values, value)) return value;
  if (Number.isInteger(value) && Object.prototype.hasOwnProperty.call(type.valuesById, value)) {
    return type.valuesById[value];
  }
  const names = Object.keys(type.values).join(', ');
  throw invalidArgument(`${where}: ${show(value)} is not a ${type.fullName.slice(1)} (one of ${names})`);
}

/**
 * Checks a request object against message `typeName` (e.g. "metaopt.v1.SuggestRequest") and
 * returns the camelCase copy grpc-js serializes. Throws MetaoptError INVALID_ARGUMENT.
 * @param {Protos} protos
 * @param {string} typeName
 * @param {unknown} value
 * @param {string} [where] path prefix for messages (empty: the request itself)
 */
export function normalize(protos, typeName, value, where = '') {
  const type = protos.root.lookupType(typeName);
  return normalizeMessage(type, value, where);
}
