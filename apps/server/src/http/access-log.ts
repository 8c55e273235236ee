import type { RequestHandler } from "express";
import type { Logger } from "../lib/logger.js";

/**
 * One line per request; never headers, bodies or query strings (they can carry secrets).
 * When the logger's level drops `info` lines, no request pays for the listener, the clock and
 * the line's object (the level is read per request, so a level changed at run time still counts).
 */
export function accessLog(logger: Logger): RequestHandler {
  return (req, res, next) => {
    if (!logger.isLevelEnabled("info")) return next();
    const start = performance.now();
    res.once("finish", () => {
      logger.info(
        {
          request_id: req.requestId,
          method: req.method,
          path: req.path,
          operation: req.operationId,
          org_id: req.auth?.orgId,
          status: res.statusCode,
          duration_ms: performance.now() - start,
        },
        "request",
      );
    });
    next();
  };
}
