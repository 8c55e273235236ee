// What one attempt means for the delivery row, and what it says about its endpoint (DESIGN.md §2).
// Pure: the dispatcher hands in the attempt's result, the clock and the dice, and stores what
// comes back, so every transition of the state machine is testable without a network.
import type { DeliveryErrorCode } from "@audit-review/api-types/internal";
import type { DeliveryConfig } from "../config.js";
import { unavailableError, type DeliveryUpdate, type EndpointEffect, type UnavailableCause } from "../repos/deliveries-queue.repo.js";

export type { DeliveryUpdate, EndpointEffect };
import { nextRetryDelayMs } from "./retry-schedule.js";

export interface AttemptResult {
  /** true for a 2xx only */
  ok: boolean;
  /** the HTTP status of the answer; null when none arrived */
  status: number | null;
  error: { code: DeliveryErrorCode; message: string } | null;
  /** the receiver's `Retry-After`, already turned into milliseconds */
  retryAfterMs: number | null;
}

export interface Outcome {
  delivery: DeliveryUpdate;
  endpoint: EndpointEffect;
}

export interface OutcomeInput {
  /** attempts made before this one */
  attemptCount: number;
  result: AttemptResult;
  now: Date;
  random: () => number;
  config: Pick<DeliveryConfig, "scheduleMs" | "jitter" | "minBackoffMs">;
  /** a manual retry or recovery asks for one attempt, not a new schedule */
  oneShot?: boolean;
}

export function decideOutcome({ attemptCount, result, now, random, config, oneShot = false }: OutcomeInput): Outcome {
  const attempts = attemptCount + 1;
  if (result.ok) {
    return {
      delivery: {
        status: "succeeded",
        attempt_count: attempts,
        next_attempt_at: null,
        last_response_status: result.status,
        last_error_code: null,
        last_error_message: null,
        delivered_at: now,
      },
      endpoint: "healthy",
    };
  }

  // A failure always has a reason; a missing one would be a bug upstream, not the receiver's fault.
  const error = result.error ?? { code: "unexpected_status" as const, message: `receiver answered ${result.status}` };
  const failed = (status: DeliveryUpdate["status"], nextAttemptAt: Date | null): DeliveryUpdate => ({
    status,
    attempt_count: attempts,
    next_attempt_at: nextAttemptAt,
    last_response_status: result.status,
    last_error_code: error.code,
    last_error_message: error.message,
    delivered_at: null,
  });

  if (result.status === 410) return { delivery: failed("failed", null), endpoint: "gone" };
  if (oneShot) return { delivery: failed("failed", null), endpoint: "failing" };

  const delay = nextRetryDelayMs({
    attempt: attempts,
    schedule: config.scheduleMs,
    jitter: config.jitter,
    random,
    retryAfterMs: result.retryAfterMs,
    status: result.status,
    errorCode: error.code,
    minBackoffMs: config.minBackoffMs,
  });
  if (delay === null) return { delivery: failed("failed", null), endpoint: "failing" };
  return { delivery: failed("retrying", new Date(now.getTime() + delay)), endpoint: "failing" };
}

/** The endpoint was disabled or deleted after the delivery was queued: no attempt is made. */
export function endpointUnavailable(cause: UnavailableCause, attemptCount: number, lastStatus: number | null): DeliveryUpdate {
  const error = unavailableError(cause);
  return {
    status: "failed",
    attempt_count: attemptCount,
    next_attempt_at: null,
    last_response_status: lastStatus,
    last_error_code: error.code,
    last_error_message: error.message,
    delivered_at: null,
  };
}
