import { rateLimit, type ClientRateLimitInfo, type Options, type Store } from "express-rate-limit";
import type { RequestHandler } from "express";
import { AppError } from "../lib/errors.js";
import type { Logger } from "../lib/logger.js";
import { recordOf } from "../lib/narrow.js";
import { sendProblem } from "./problem.js";

/** Per-key request counts in fixed windows, shared by every process that uses the same store. */
export interface WindowCounter {
  readonly windowMs: number;
  hit(key: string): Promise<{ hits: number; resetAt: Date }>;
  unhit(key: string): Promise<void>;
  reset(key: string): Promise<void>;
}

/**
 * express-rate-limit's store over a counter in the database: every API process on one database
 * counts a token's requests together, so N processes behind a load balancer allow the documented
 * rate, not N times it.
 */
export class DatabaseStore implements Store {
  readonly localKeys = false;
  readonly prefix = "";
  private limit = Infinity;
  /**
   * Keys this process has seen over the limit, until their window ends: a token that is refused
   * stays refused until then whatever other processes count, so its further requests are
   * answered without a database round trip (a client hammering past its limit costs nothing).
   * The window's end comes from the database's clock; a skew of this machine's clock shifts the
   * local refusal by as much.
   */
  private readonly refusedUntil = new Map<string, Date>();

  constructor(private readonly counter: WindowCounter) {}

  init(options: Options): void {
    if (options.windowMs !== this.counter.windowMs) throw new Error(`rate limit window ${options.windowMs} ms differs from the counter's ${this.counter.windowMs} ms`);
    if (typeof options.limit === "number") this.limit = options.limit;
  }

  async increment(key: string): Promise<ClientRateLimitInfo> {
    const refused = this.refusedUntil.get(key);
    if (refused && refused.getTime() > Date.now()) return { totalHits: this.limit + 1, resetTime: refused };
    if (refused) this.refusedUntil.delete(key);
    const { hits, resetAt } = await this.counter.hit(key);
    if (hits > this.limit) this.refusedUntil.set(key, resetAt);
    return { totalHits: hits, resetTime: resetAt };
  }

  decrement(key: string): Promise<void> {
    return this.counter.unhit(key);
  }

  resetKey(key: string): Promise<void> {
    this.refusedUntil.delete(key);
    return this.counter.reset(key);
  }
}

/**
 * A fixed one-minute window per token. Requests without a token that get this far are the
 * contract's tokenless service operations (health, docs, spec): probes must never be refused.
 * When the count cannot be read (database unreachable), the request goes on and a warning is
 * logged: the rate limit protects the service, it must not turn a database hiccup into refusals
 * of requests that could still be answered (a replica's lists).
 */
export function rateLimiter(perMinute: number, counter: WindowCounter, logger: Logger): RequestHandler {
  return rateLimit({
    windowMs: counter.windowMs,
    limit: perMinute,
    store: new DatabaseStore(counter),
    passOnStoreError: true,
    logger: {
      error: (err) => logger.warn({ err: String(err) }, "rate limit count unavailable; request let through"),
      warn: (err) => logger.warn({ err: String(err) }, "rate limit configuration warning"),
    },
    // The IETF RateLimit / RateLimit-Policy fields (draft-ietf-httpapi-ratelimit-headers-08 and
    // later), as the contract's "Rate limits" section documents them: on every counted answer.
    standardHeaders: "draft-8",
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
