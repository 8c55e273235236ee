import { DEFAULT_JITTER, DEFAULT_MIN_BACKOFF_MS, DEFAULT_SCHEDULE_MS } from "../config.js";

// The defaults are configuration (config.ts); re-exported for the schedule's own readers.
export { DEFAULT_JITTER, DEFAULT_MIN_BACKOFF_MS, DEFAULT_SCHEDULE_MS };

export interface RetryDelayInput {
  /** attempts made so far, 1-based */
  attempt: number;
  schedule?: readonly number[];
  /** fraction: 0.2 spreads the delay over ±20 % */
  jitter?: number;
  /** uniform in [0, 1) */
  random: () => number;
  retryAfterMs?: number | null;
  status?: number | null;
  errorCode?: string | null;
  minBackoffMs?: number;
}

// A receiver signalling overload (429), a struggling proxy (502/504) or one too slow to answer
// gets a breather even where the schedule says "5 s".
const BACKOFF_STATUSES = new Set([429, 502, 504]);
const RETRY_AFTER_STATUSES = new Set([429, 503]);

/** Milliseconds until the next attempt, or null when the schedule is used up. */
export function nextRetryDelayMs({
  attempt,
  schedule = DEFAULT_SCHEDULE_MS,
  jitter = DEFAULT_JITTER,
  random,
  retryAfterMs = null,
  status = null,
  errorCode = null,
  minBackoffMs = DEFAULT_MIN_BACKOFF_MS,
}: RetryDelayInput): number | null {
  if (!Number.isInteger(attempt) || attempt < 1) throw new RangeError("attempt must be an integer >= 1");
  const scheduled = schedule[attempt];
  if (scheduled === undefined) return null;

  let delay = scheduled * (1 + jitter * (2 * random() - 1));
  if (retryAfterMs != null && status != null && RETRY_AFTER_STATUSES.has(status)) {
    // Honour the receiver's wish, but neither hammer it sooner nor let it park the delivery forever.
    delay = Math.min(Math.max(retryAfterMs, delay), 2 * delay);
  }
  if ((status != null && BACKOFF_STATUSES.has(status)) || errorCode === "timeout") {
    delay = Math.max(delay, minBackoffMs);
  }
  return Math.round(delay);
}

const IMF_FIXDATE = /^[A-Za-z]{3}, \d{2} [A-Za-z]{3} \d{4} \d{2}:\d{2}:\d{2} GMT$/;
const RFC_850 = /^[A-Za-z]+, \d{2}-[A-Za-z]{3}-\d{2} \d{2}:\d{2}:\d{2} GMT$/;
const ASCTIME = /^[A-Za-z]{3} [A-Za-z]{3} [ \d]\d \d{2}:\d{2}:\d{2} \d{4}$/;

/** `Retry-After` (RFC 9110 §10.2.3) as milliseconds from `now`; null when absent or malformed. */
export function parseRetryAfter(headerValue: string | null | undefined, now: Date): number | null {
  if (headerValue == null) return null;
  const value = headerValue.trim();
  if (/^\d+$/.test(value)) {
    const seconds = Number(value);
    return Number.isSafeInteger(seconds * 1000) ? seconds * 1000 : null;
  }
  // Date.parse alone accepts almost anything ("2", "tomorrow-ish"), so gate on the three HTTP-date forms.
  let date: number;
  if (IMF_FIXDATE.test(value) || RFC_850.test(value)) date = Date.parse(value);
  else if (ASCTIME.test(value)) date = Date.parse(`${value} GMT`);
  else return null;
  if (Number.isNaN(date)) return null;
  return Math.max(0, date - now.getTime());
}
