// What one attempt means for its delivery row and for its endpoint (docs/delivery.md#states).
// The engine decides an outcome here when an attempt ends, and the repository writes what is
// decided here, including the one late decision it must make inside its transaction (an endpoint
// disabled by the same batch ends its retries).
import type { AttemptTrigger, DeliveryErrorCode } from "@audit-review/api-types/internal";
import { judgeAnswer } from "./answer.js";
import type { DeliveryStatus } from "./status.js";

/** The columns of the delivery row an attempt's outcome changes (its lease ends with it). */
export interface DeliveryUpdate {
  status: Exclude<DeliveryStatus, "pending">;
  attempt_count: number;
  /** null keeps the stored value: for succeeded/failed it stays the time the last attempt was due */
  next_attempt_at: Date | null;
  last_response_status: number | null;
  last_error_code: DeliveryErrorCode | null;
  last_error_message: string | null;
  delivered_at: Date | null;
  /** what starts the next attempt, should there be one */
  next_trigger: AttemptTrigger;
}

/**
 * What starts the attempt after this one. A manual or test trigger is spent by the attempt it
 * started; later attempts follow the schedule, and a test delivery's attempts all stay tests.
 */
export const triggerAfterAttempt = (isTest: boolean): AttemptTrigger => (isTest ? "test" : "scheduled");

/**
 * What an attempt says about its endpoint's health. Whether that disables the endpoint is decided
 * by the health rule (endpoint-health.ts) from the stored failure streak, when it is recorded.
 */
export type EndpointEffect =
  /** a success ends any failure streak */
  | "healthy"
  /** a failure starts or continues one */
  | "failing"
  /** the receiver answered 410: it wants no more deliveries */
  | "gone";

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

/** The attempt that failed, as the retry schedule needs it. */
export interface FailedAttempt {
  /** attempts made, this one included */
  attempts: number;
  status: number | null;
  errorCode: DeliveryErrorCode;
  retryAfterMs: number | null;
}

export interface OutcomeInput {
  /** attempts made before this one */
  attemptCount: number;
  /** a test delivery (its attempts stay tests) */
  isTest: boolean;
  result: AttemptResult;
  now: Date;
  /** a manual retry or recovery asks for one attempt, not a new schedule */
  oneShot?: boolean;
  /** the retry schedule: milliseconds until the next attempt, or null when it is used up */
  retryDelayMs(failed: FailedAttempt): number | null;
}

export function decideOutcome({ attemptCount, isTest, result, now, oneShot = false, retryDelayMs }: OutcomeInput): Outcome {
  const attempts = attemptCount + 1;
  const next_trigger = triggerAfterAttempt(isTest);
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
        next_trigger,
      },
      endpoint: "healthy",
    };
  }

  // A failure always has a reason; a missing one would be a bug upstream, not the receiver's fault.
  const error = result.error ?? (result.status !== null ? judgeAnswer(result.status).error : null) ?? { code: "connection_error" as const, message: "no answer" };
  const failed = (status: DeliveryUpdate["status"], nextAttemptAt: Date | null): DeliveryUpdate => ({
    status,
    attempt_count: attempts,
    next_attempt_at: nextAttemptAt,
    last_response_status: result.status,
    last_error_code: error.code,
    last_error_message: error.message,
    delivered_at: null,
    next_trigger,
  });

  if (result.status === 410) return { delivery: failed("failed", null), endpoint: "gone" };
  if (oneShot) return { delivery: failed("failed", null), endpoint: "failing" };

  const delay = retryDelayMs({ attempts, status: result.status, errorCode: error.code, retryAfterMs: result.retryAfterMs });
  if (delay === null) return { delivery: failed("failed", null), endpoint: "failing" };
  return { delivery: failed("retrying", new Date(now.getTime() + delay)), endpoint: "failing" };
}

/**
 * An endpoint disabled by the batch that records this outcome gets no more attempts: a delivery
 * that would have retried ends failed, keeping its own attempt's error.
 */
export function afterEndpointDisabled(update: DeliveryUpdate): DeliveryUpdate {
  return update.status === "retrying" ? { ...update, status: "failed", next_attempt_at: null } : update;
}
