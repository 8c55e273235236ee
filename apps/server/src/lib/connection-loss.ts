// The one place that tells a lost or unobtainable database connection from every other database
// error. What it recognises was taken from what node-postgres and Prisma (through
// @prisma/adapter-pg) actually throw when PostgreSQL terminates a backend, refuses a connection or
// cannot be reached: the HTTP API answers those with a retry or a 503 (docs/api-decisions.md,
// "A lost database connection"), never a 500.
import { arrayOf, isRecord, stringOf } from "./narrow.js";

/**
 * SQLSTATEs that end the connection, or refuse one, whatever the statement was:
 * 08xxx connection exceptions, 57P01 admin_shutdown (pg_terminate_backend, a fast shutdown),
 * 57P02 crash_shutdown, 57P03 cannot_connect_now (starting up, recovering), 57P05 the idle
 * session timeout, 25P03 the idle-in-transaction timeout, 53300 too_many_connections.
 */
const LOST_SQLSTATE = /^(08[0-9A-Z]{3}|57P0[1235]|25P03|53300)$/;

/** Socket errors of the connection to the database (node's, as node-postgres passes them on). */
const LOST_SOCKET = new Set(["ECONNRESET", "ECONNREFUSED", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "ENOTFOUND", "EAI_AGAIN"]);

/**
 * Prisma's codes for the same: P1001 cannot reach the server, P1002 reached but timed out,
 * P1008 socket timeout, P1017 the server closed the connection.
 */
const LOST_PRISMA_CODE = new Set(["P1001", "P1002", "P1008", "P1017"]);

/** @prisma/adapter-pg's `kind`s for socket errors (its other kinds are errors of the statement). */
const LOST_ADAPTER_KIND = new Set(["DatabaseNotReachable", "ConnectionClosed", "SocketTimeout", "TooManyConnections"]);

/**
 * node-postgres reports a connection that dies mid-query, or a client whose connection already
 * failed, with a bare Error and no code; the pool's connect timeout likewise.
 */
const LOST_MESSAGES: ReadonlyArray<[RegExp, string]> = [
  [/^Connection terminated/, "connection terminated"],
  [/has encountered a connection error and is not queryable/, "connection error"],
  [/timeout exceeded when trying to connect/, "connect timeout"],
];

/** How deep the wrappers go: Prisma's error → meta → driverAdapterError → cause. */
const MAX_DEPTH = 6;

/**
 * The reason `err` is a lost connection, as a short fixed label safe to log and to count (a
 * SQLSTATE, a socket error code, a Prisma code or kind, or a node-postgres phrase); null when it
 * is any other error. The error itself is walked through its `cause`, Prisma's `meta` and
 * `driverAdapterError`, and an AggregateError's `errors`: never its connection string.
 */
export function connectionLossCause(err: unknown, depth = 0): string | null {
  if (!isRecord(err) || depth > MAX_DEPTH) return null;
  const code = stringOf(err.code);
  if (code !== undefined && (LOST_SQLSTATE.test(code) || LOST_SOCKET.has(code) || LOST_PRISMA_CODE.has(code))) return code;
  const kind = stringOf(err.kind);
  if (kind !== undefined && LOST_ADAPTER_KIND.has(kind)) return kind;
  const message = stringOf(err.message);
  if (message !== undefined) {
    for (const [pattern, label] of LOST_MESSAGES) if (pattern.test(message)) return label;
  }
  const inner = [err.cause, err.meta, err.driverAdapterError, ...arrayOf(err.errors)];
  for (const next of inner) {
    const found = connectionLossCause(next, depth + 1);
    if (found) return found;
  }
  return null;
}

/** True when `err` says the database connection was lost or could not be had (see `connectionLossCause`). */
export function isConnectionLoss(err: unknown): boolean {
  return connectionLossCause(err) !== null;
}

/**
 * How long to wait before trying the pool again after a lost connection. A termination or
 * restart ends every connection at once, and the pool learns of each idle one only when its
 * socket reports the end, usually within milliseconds: after this pause it has most likely
 * dropped them, so the next try gets a live connection rather than another dead one.
 */
const PAUSE_BEFORE_RETRY_MS = 20;

export const pauseBeforeRetry = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, PAUSE_BEFORE_RETRY_MS));
