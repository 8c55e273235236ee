import { performance } from "node:perf_hooks";
import { rateLimit, type ClientRateLimitInfo, type Options, type Store } from "express-rate-limit";
import type { RequestHandler } from "express";
import { AppError } from "../lib/errors.js";
import type { Logger } from "../lib/logger.js";
import { recordOf } from "../lib/narrow.js";
import type { RateLimitObserver } from "../metrics/rate-limit.js";
import { sendProblem } from "./problem.js";

/** Per-key request counts in fixed windows, shared by every process that uses the same store. */
export interface WindowCounter {
  readonly windowMs: number;
  /** Adds `n` to each (distinct) key's count in the current window; answers each key's count after it and what is left of the window (ms). */
  take(wanted: ReadonlyArray<{ key: string; n: number }>): Promise<ReadonlyArray<{ key: string; hits: number; msLeft: number }>>;
  reset(key: string): Promise<void>;
}

/**
 * The share of a token's window a process takes from the shared count at a time: 1 % of the
 * limit (12 of the default 1,200 a minute), and one request when the limit is under 200, so
 * small limits are counted request by request as before. The README's rate-limit paragraph
 * states what this allows.
 */
export function shareOf(limit: number): number {
  return Math.max(1, Math.floor(limit / 100));
}

/** Requests admitted from one share: the count before it was taken, how much of it was granted, how much is spent. */
interface Share {
  before: number;
  granted: number;
  used: number;
}

/** What this process knows of one key's current window. */
interface KeyWindow {
  /** When the window ends on this process's monotonic clock (timed from the database's answer). */
  endsAt: number;
  shares: Share[];
  /** The shared count passed the limit: refuse without asking again until the window ends. */
  spent: boolean;
  /** The batch this key is queued in or on the wire with, if any. */
  pending: Promise<void> | null;
}

/**
 * express-rate-limit's store over a count in the database that every API process on one
 * database shares, so N processes behind a load balancer allow the documented rate, not N times
 * it — without a round trip per request. A process takes a share of a token's window from the
 * database (its count goes up by the share, and only what keeps the count within the limit is
 * granted) and admits requests from it in memory; when a share runs low the next one is taken
 * in the background. The takes of all tokens that need one go to the database together, one
 * statement at a time. Nothing is admitted that the shared count did not grant first, so a
 * token never gets more than its limit in a window; what a process still holds when the window
 * ends is not used by anyone (at most two shares per process and token).
 *
 * A token that is refused stays refused by this process until its window ends, whatever other
 * processes count, so its further requests are answered without a database round trip.
 * Windows are timed on the database's clock: a window's end is what the database said was left
 * of it, counted from when the statement was sent, on this process's monotonic clock.
 */
export class SharedWindowStore implements Store {
  readonly localKeys = false;
  readonly prefix = "";
  private limit = Infinity;
  private share = 1;
  private readonly windows = new Map<string, KeyWindow>();
  /** Keys waiting for the next statement, with how many requests each wants at least. */
  private queued = new Map<string, number>();
  private nextBatch: { promise: Promise<void>; resolve: () => void; reject: (err: unknown) => void } | null = null;
  private onWire = false;
  private nextSweep = 0;

  constructor(
    private readonly counter: WindowCounter,
    private readonly observe?: RateLimitObserver,
    private readonly onBackgroundError?: (err: unknown) => void,
  ) {}

  init(options: Options): void {
    if (options.windowMs !== this.counter.windowMs) throw new Error(`rate limit window ${options.windowMs} ms differs from the counter's ${this.counter.windowMs} ms`);
    if (typeof options.limit === "number") {
      this.limit = options.limit;
      this.share = shareOf(options.limit);
    }
  }

  async increment(key: string): Promise<ClientRateLimitInfo> {
    this.forgetEnded(key, performance.now());
    for (;;) {
      const w = this.windows.get(key);
      if (w) {
        const share = w.shares.find((s) => s.used < s.granted);
        if (share) {
          share.used += 1;
          this.takeAheadIfLow(key, w);
          return { totalHits: share.before + share.used, resetTime: this.resetTime(w) };
        }
        if (w.spent) return { totalHits: this.limit + 1, resetTime: this.resetTime(w) };
        if (w.pending) {
          await w.pending;
          continue;
        }
      }
      await this.enqueue(key, 1);
    }
  }

  decrement(key: string): Promise<void> {
    const share = this.windows.get(key)?.shares.findLast((s) => s.used > 0);
    if (share) share.used -= 1;
    return Promise.resolve();
  }

  resetKey(key: string): Promise<void> {
    this.windows.delete(key);
    return this.counter.reset(key);
  }

  private resetTime(w: KeyWindow): Date {
    return new Date(Date.now() + Math.max(0, w.endsAt - performance.now()));
  }

  /** Drops this key's window once it has ended, and every ended one once a window (the map holds the keys in use). */
  private forgetEnded(key: string, now: number): void {
    const w = this.windows.get(key);
    if (w && now >= w.endsAt && !w.pending) this.windows.delete(key);
    if (now < this.nextSweep) return;
    this.nextSweep = now + this.counter.windowMs;
    for (const [k, v] of this.windows) if (now >= v.endsAt && !v.pending) this.windows.delete(k);
  }

  /** Takes the next share in the background when less than half of one is left (never for one-request shares: those stay exact). */
  private takeAheadIfLow(key: string, w: KeyWindow): void {
    if (this.share < 2 || w.spent || w.pending) return;
    let left = 0;
    for (const s of w.shares) left += s.granted - s.used;
    if (left * 2 >= this.share) return;
    this.enqueue(key, 0).catch((err: unknown) => this.onBackgroundError?.(err));
  }

  /** Queues `key` for the next statement (wanting at least `wanted` requests' worth) and resolves once that statement is applied. */
  private enqueue(key: string, wanted: number): Promise<void> {
    this.queued.set(key, (this.queued.get(key) ?? 0) + wanted);
    this.nextBatch ??= (() => {
      let resolve!: () => void;
      let reject!: (err: unknown) => void;
      const promise = new Promise<void>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      return { promise, resolve, reject };
    })();
    const batch = this.nextBatch;
    const w = this.windows.get(key);
    if (w) w.pending = batch.promise;
    if (!this.onWire) queueMicrotask(() => this.send());
    return batch.promise;
  }

  /** Sends the queued keys in one statement; keys queued meanwhile go in the next one, once this one is back. */
  private send(): void {
    if (this.onWire || !this.nextBatch) return;
    const batch = this.nextBatch;
    const queued = this.queued;
    this.nextBatch = null;
    this.queued = new Map();
    this.onWire = true;
    const wanted = [...queued].map(([key, n]) => ({ key, n: Math.max(this.share, n) }));
    const sentAt = performance.now();
    this.counter
      .take(wanted)
      .then(
        (counts) => {
          this.observe?.synced(wanted.length, true);
          const asked = new Map(wanted.map((x) => [x.key, x.n]));
          for (const c of counts) this.apply(c.key, asked.get(c.key) ?? 0, c.hits, sentAt + c.msLeft);
          batch.resolve();
        },
        (err: unknown) => {
          this.observe?.synced(wanted.length, false);
          for (const { key } of wanted) {
            const w = this.windows.get(key);
            if (w?.pending === batch.promise) w.pending = null;
          }
          batch.reject(err);
        },
      )
      .finally(() => {
        this.onWire = false;
        if (this.nextBatch) this.send();
      });
  }

  private apply(key: string, n: number, hits: number, endsAt: number): void {
    let w = this.windows.get(key);
    // a count of a later window than the one held: start over (the held shares ended with theirs)
    if (!w || endsAt > w.endsAt + this.counter.windowMs / 2) {
      w = { endsAt, shares: [], spent: false, pending: null };
      this.windows.set(key, w);
    }
    const before = hits - n;
    const granted = Math.max(0, Math.min(n, this.limit - before));
    if (granted > 0) w.shares.push({ before, granted, used: 0 });
    if (granted < n) w.spent = true;
    w.shares = w.shares.filter((s) => s.used < s.granted);
    // a key queued again for the next statement keeps that one as its pending take
    w.pending = this.queued.has(key) && this.nextBatch ? this.nextBatch.promise : null;
  }
}

/**
 * A fixed one-minute window per token. Requests without a token that get this far are the
 * contract's tokenless service operations (health, docs, spec): probes must never be refused.
 * When the count cannot be read (database unreachable), the request goes on and a warning is
 * logged: the rate limit protects the service, it must not turn a database hiccup into refusals
 * of requests that could still be answered (a replica's lists).
 */
export function rateLimiter(perMinute: number, counter: WindowCounter, logger: Logger, observe?: RateLimitObserver): RequestHandler {
  return rateLimit({
    windowMs: counter.windowMs,
    limit: perMinute,
    store: new SharedWindowStore(counter, observe, (err) => logger.warn({ err: String(err) }, "rate limit share not taken ahead; the next request asks again")),
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
