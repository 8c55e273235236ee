// The engine's side of an attempt's outcome: the delivery state machine is decided in
// domain/delivery/outcome.ts (docs/delivery.md#states); this binds it to the retry schedule as
// configured and to the engine's dice, so the dispatcher hands in an attempt's result and the
// clock and stores what comes back.
import type { DeliveryConfig } from "../config.js";
import { decideOutcome as decide, type AttemptResult, type Outcome } from "../domain/delivery/outcome.js";
import { nextRetryDelayMs } from "./retry-schedule.js";

export type { AttemptResult, Outcome };

export interface OutcomeInput {
  /** attempts made before this one */
  attemptCount: number;
  /** a test delivery (its attempts stay tests) */
  isTest: boolean;
  result: AttemptResult;
  now: Date;
  random: () => number;
  config: Pick<DeliveryConfig, "scheduleMs" | "jitter" | "minBackoffMs">;
  /** a manual retry or recovery asks for one attempt, not a new schedule */
  oneShot?: boolean;
}

export function decideOutcome({ attemptCount, isTest, result, now, random, config, oneShot }: OutcomeInput): Outcome {
  return decide({
    attemptCount, isTest, result, now, oneShot,
    retryDelayMs: (failed) =>
      nextRetryDelayMs({
        attempt: failed.attempts,
        schedule: config.scheduleMs,
        jitter: config.jitter,
        random,
        retryAfterMs: failed.retryAfterMs,
        status: failed.status,
        errorCode: failed.errorCode,
        minBackoffMs: config.minBackoffMs,
      }),
  });
}
