import type { RequestHandler } from "express";
import type { RequestDurations } from "../metrics/http-requests.js";

/** Times every request, from its arrival to its last byte written, into the request-duration histogram. */
export function requestMetrics(durations: RequestDurations): RequestHandler {
  return (req, res, next) => {
    const start = performance.now();
    res.once("finish", () => durations.observe(req.operationId, res.statusCode, (performance.now() - start) / 1000));
    next();
  };
}
