// The per-endpoint throttle (the contract's `rate_limit`; docs/delivery.md#rate-limits): a
// generic cell rate algorithm over one timestamp per endpoint, `throttle_next_at`, the time the
// next delivery would be due if the endpoint were sent exactly `rate` a second. A claim may take
// rows of a rate-limited endpoint while that time is no further ahead of now than `burst - 1`
// steps (and never more than one burst at once), and moves it on by one step (1/rate seconds) per
// row it takes. Waiting for the limit is
// not an attempt: the rows stay queued and untouched until a claim takes them.
//
// The rule is applied by the claim statement (repos/deliveries-queue.repo.ts renders it with
// these numbers), because only there can every worker's claims see one state under one lock and
// one clock; `allowance` states it here once, for its unit test and for readers.

/**
 * How many groups a second's deliveries may come in at most: a claim takes at most a tenth of a
 * second's worth of an endpoint's rows at once (at least one), so a high limit costs ten claims
 * a second, not one per delivery, and a low one is paced row by row.
 */
export const THROTTLE_STEPS_PER_SECOND = 10;

/** Rows of a rate-limited endpoint one claim may take when its throttle is idle. */
export const throttleBurst = (rate: number): number => Math.ceil(rate / THROTTLE_STEPS_PER_SECOND);

/** The most deliveries of an endpoint that can start within any one second: the rate plus one burst. */
export const maxPerSecond = (rate: number): number => rate + throttleBurst(rate);

/**
 * How many rows a claim may take at `nowUs`, and where the throttle stands after it takes `taken`
 * of them (`taken` ≤ `allowed`). `nextAtUs` is the stored `throttle_next_at` (null: never used).
 * A claim that comes up to one step late (a wake-up behind, a busy worker) takes its row at the
 * step it was due, so the pace is not lost to lateness; an endpoint idle for longer starts again
 * one step back. Either way no second holds more than `maxPerSecond`. Times are epoch
 * microseconds, as the database keeps them: a step is 1/rate seconds rounded to the microsecond.
 */
export function allowance(rate: number, nextAtUs: number | null, nowUs: number): { allowed: number; after(taken: number): number } {
  const stepUs = Math.round(1_000_000 / rate);
  const burst = throttleBurst(rate);
  const baseUs = Math.max(nextAtUs ?? nowUs, nowUs - stepUs);
  const allowed = Math.min(burst, Math.max(0, burst + Math.floor(((nowUs - baseUs) * rate) / 1_000_000)));
  return { allowed, after: (taken) => baseUs + taken * stepUs };
}
