// A read that lost its database connection runs once more on a fresh one before anyone sees an
// error (docs/api-decisions.md, "A lost database connection"). Only reads: a write that lost its
// connection may have committed, so it is answered 503 and the client decides (with its
// Idempotency-Key) whether to send it again.
import type { RequestHandler } from "express";
import { connectionLossCause } from "../db/connection-loss.js";
import type { Logger } from "../lib/logger.js";
import type { ConnectionRetries } from "../metrics/connection-retries.js";

export interface ReadRetryDeps {
  logger: Logger;
  /** counts each retry's outcome when metrics are on */
  retries?: ConnectionRetries | undefined;
}

/** GET and HEAD are safe (RFC 9110 §9.2.1): running their handler twice changes nothing. */
const SAFE_METHODS = new Set(["GET", "HEAD"]);

/**
 * Runs `routes` and, when a GET or HEAD fails with a lost connection before anything was sent,
 * runs it once more; the pool has dropped the dead connection by then, so the second run gets
 * another. Routes whose GET writes (a listener stream takes a lease) must stay outside.
 */
export function retryReadsOnConnectionLoss(routes: RequestHandler, { logger, retries }: ReadRetryDeps): RequestHandler {
  return (req, res, next) => {
    if (!SAFE_METHODS.has(req.method)) return routes(req, res, next);
    void routes(req, res, (err?: unknown) => {
      const cause = err === undefined ? null : connectionLossCause(err);
      if (cause === null || res.headersSent) return next(err);
      logger.warn({ request_id: req.requestId, cause }, "database connection lost; the read runs again on a fresh connection");
      // the second run's own answer tells whether the retry helped (a second loss ends in a 503)
      res.once("finish", () => retries?.observe(res.statusCode < 500 ? "retried_ok" : "gave_up"));
      void routes(req, res, next);
    });
  };
}

/** The same rule for one read outside the routes (the token lookup of every request, whatever its method). */
export function retryReadOnConnectionLoss<A extends unknown[], R>(read: (...args: A) => Promise<R>, { logger, retries }: ReadRetryDeps): (...args: A) => Promise<R> {
  return async (...args) => {
    try {
      return await read(...args);
    } catch (err) {
      const cause = connectionLossCause(err);
      if (cause === null) throw err;
      logger.warn({ cause }, "database connection lost; the read runs again on a fresh connection");
      try {
        const result = await read(...args);
        retries?.observe("retried_ok");
        return result;
      } catch (again) {
        retries?.observe("gave_up");
        throw again;
      }
    }
  };
}
