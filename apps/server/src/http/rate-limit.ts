import { rateLimit } from "express-rate-limit";
import type { RequestHandler } from "express";
import { AppError } from "../lib/errors.js";
import { recordOf } from "../lib/narrow.js";
import { sendProblem } from "./problem.js";

/**
 * A fixed one-minute window per token. Requests without a token that get this far are the
 * contract's tokenless service operations (health, docs, spec): probes must never be refused.
 */
export function rateLimiter(perMinute: number): RequestHandler {
  return rateLimit({
    windowMs: 60_000,
    limit: perMinute,
    // No RateLimit/RateLimit-Policy headers: the contract documents only Retry-After on 429.
    standardHeaders: false,
    legacyHeaders: false,
    skip: (req) => !req.auth,
    keyGenerator: (req) => req.auth?.tokenId ?? `ip:${req.ip}`,
    validate: { keyGeneratorIpFallback: false },
    handler: (req, res) => {
      // express-rate-limit puts its counter on `req.rateLimit` without typing the property
      const reset = recordOf(recordOf(req).rateLimit).resetTime;
      const seconds = Math.max(1, Math.ceil(((reset instanceof Date ? reset.getTime() : Date.now() + 60_000) - Date.now()) / 1000));
      sendProblem(req, res, new AppError(429, "RATE_LIMITED", "Rate limited", `Too many requests; retry after ${seconds} seconds.`, undefined, {
        "Retry-After": String(seconds),
      }));
    },
  });
}
