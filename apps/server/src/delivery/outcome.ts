// What one attempt means for the delivery row and for its endpoint's health (DESIGN.md §2).
// Pure: the dispatcher hands in the attempt's result, the clock and the dice, and stores what
// comes back, so every transition of the state machine is testable without a network.
import type { DeliveryErrorCode } from "@audit-review/api-types/internal";
import type { DeliveryConfig } from "../config.js";
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

/** The columns of the delivery row an attempt changes. */
export interface DeliveryUpdate {
  status: "succeeded" | "retrying" | "failed";
  attempt_count: number;
  /** null keeps the stored value: for succeeded/failed it stays the time the last attempt was due */
  next_attempt_at: Date | null;
  last_response_status: number | null;
  last_error_code: DeliveryErrorCode | null;
  last_error_message: string | null;
  delivered_at: Date | null;
}

export type EndpointEffect =
  /** a success ends any failure streak */
  | { kind: "healthy" }
  /** `failingSince` is the streak's start (kept when one is running); `disable` after too long */
  | { kind: "failing"; failingSince: Date; disable: boolean }
  /** the receiver answered 410: it wants no more deliveries */
  | { kind: "gone" };

export interface Outcome {
  delivery: DeliveryUpdate;
  endpoint: EndpointEffect;
}

export interface OutcomeInput {
  /** attempts made before this one */
  attemptCount: number;
  result: AttemptResult;
  /** the endpoint's `failing_since` as loaded for this attempt */
  failingSince: Date | null;
  now: Date;
  random: () => number;
  config: Pick<DeliveryConfig, "scheduleMs" | "jitter" | "minBackoffMs" | "failingDisableAfterMs">;
}

export function decideOutcome({ attemptCount, result, failingSince, now, random, config }: OutcomeInput): Outcome {
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
      endpoint: { kind: "healthy" },
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

  if (result.status === 410) return { delivery: failed("failed", null), endpoint: { kind: "gone" } };

  const streakStart = failingSince ?? now;
  const disable = now.getTime() - streakStart.getTime() > config.failingDisableAfterMs;
  const endpoint: EndpointEffect = { kind: "failing", failingSince: streakStart, disable };
  // An endpoint being disabled now gets no more attempts: its deliveries end here.
  if (disable) return { delivery: failed("failed", null), endpoint };

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
  if (delay === null) return { delivery: failed("failed", null), endpoint };
  return { delivery: failed("retrying", new Date(now.getTime() + delay)), endpoint };
}

/** The endpoint was disabled or deleted after the delivery was queued: no attempt is made. */
export function endpointUnavailable(code: "endpoint_disabled" | "endpoint_deleted", attemptCount: number, lastStatus: number | null): DeliveryUpdate {
  return {
    status: "failed",
    attempt_count: attemptCount,
    next_attempt_at: null,
    last_response_status: lastStatus,
    last_error_code: code,
    last_error_message: code === "endpoint_disabled" ? "the endpoint was disabled" : "the endpoint was deleted",
    delivered_at: null,
  };
}
