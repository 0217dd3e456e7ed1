// Errors of the metaopt Node client.

import grpc from '@grpc/grpc-js';

/**
 * gRPC status codes by name (`Status.NOT_FOUND === 5`); the same numbering as
 * google.rpc.Code.
 * @type {Readonly<Record<string, number>>}
 */
export const Status = Object.freeze({ ...grpc.status });

const codeNames = new Map(
  Object.entries(grpc.status).map(([name, code]) => [code, name]),
);

/**
 * The name of a gRPC status code: `codeName(5) === 'NOT_FOUND'`.
 * @param {number} code
 * @returns {string}
 */
export function codeName(code) {
  return codeNames.get(code) ?? `CODE_${code}`;
}

/**
 * A failed call: the gRPC status code and the server's message, or a request
 * the client rejected before sending (INVALID_ARGUMENT naming field, value and
 * rule).
 */
export class MetaoptError extends Error {
  /**
   * @param {number} code gRPC status code (see `Status`).
   * @param {string} details the server's (or the client's) message.
   * @param {{method?: string, metadata?: import('@grpc/grpc-js').Metadata, cause?: unknown}} [extra]
   */
  constructor(code, details, extra = {}) {
    const where = extra.method ? `${extra.method}: ` : '';
    const options = extra.cause === undefined ? undefined : { cause: extra.cause };
    super(`${where}${codeName(code)}: ${details}`, options);
    this.name = 'MetaoptError';
    /** @type {number} */
    this.code = code;
    /** @type {string} */
    this.codeName = codeName(code);
    /** @type {string} */
    this.details = details;
    /** @type {string | undefined} */
    this.method = extra.method;
    /** @type {import('@grpc/grpc-js').Metadata | undefined} */
    this.metadata = extra.metadata;
  }
}

/**
 * An INVALID_ARGUMENT raised on the client side.
 * @param {string} message
 * @returns {MetaoptError}
 */
export function invalidArgument(message) {
  return new MetaoptError(Status.INVALID_ARGUMENT, message);
}

/**
 * Converts a grpc-js error (a ServiceError) into a MetaoptError.
 * @param {string} method
 * @param {any} error
 * @returns {MetaoptError}
 */
export function fromServiceError(method, error) {
  if (error instanceof MetaoptError) return error;
  const code = typeof error?.code === 'number' ? error.code : Status.UNKNOWN;
  const details = typeof error?.details === 'string' ? error.details : String(error?.message ?? error);
  return new MetaoptError(code, details, { method, metadata: error?.metadata, cause: error });
}
