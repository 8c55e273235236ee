import type { RequestHandler } from "express";
import type { Logger } from "../lib/logger.js";

/** One line per request; never headers, bodies or query strings (they can carry secrets). */
export function accessLog(logger: Logger): RequestHandler {
  return (req, res, next) => {
    const start = process.hrtime.bigint();
    res.on("finish", () => {
      logger.info(
        {
          request_id: req.requestId,
          method: req.method,
          path: req.path,
          operation: req.operationId,
          org_id: req.auth?.orgId,
          status: res.statusCode,
          duration_ms: Number(process.hrtime.bigint() - start) / 1e6,
        },
        "request",
      );
    });
    next();
  };
}
