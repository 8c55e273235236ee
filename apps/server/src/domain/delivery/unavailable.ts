// Why a queued delivery fails without an attempt, and the one message set that says so
// (docs/delivery.md#states: "endpoint disabled or deleted meanwhile"). The engine uses it when it
// finds the endpoint gone at send time; the repositories when disabling or deleting an endpoint
// (by hand, by the health rule, by a 410, or a listener's grace period running out) fail its
// queued deliveries.
import type { DeliveryErrorCode } from "@audit-review/api-types/internal";
import type { WebhookEndpoint } from "../../generated/prisma/client.js";
import type { DisableReason } from "./endpoint-health.js";
import { triggerAfterAttempt, type DeliveryUpdate } from "./outcome.js";
import { LIVE_STATUSES, type DeliveryStatus } from "./status.js";

/** Why queued deliveries fail without an attempt: the endpoint was disabled (and how) or deleted. */
export type UnavailableCause = "manual" | DisableReason | "deleted";

const UNAVAILABLE: Record<UnavailableCause, { code: Extract<DeliveryErrorCode, "endpoint_disabled" | "endpoint_deleted">; message: string }> = {
  manual: { code: "endpoint_disabled", message: "the endpoint was disabled" },
  gone: { code: "endpoint_disabled", message: "the endpoint was disabled: its receiver answered 410 Gone" },
  failing: { code: "endpoint_disabled", message: "the endpoint was disabled: its deliveries kept failing" },
  deleted: { code: "endpoint_deleted", message: "the endpoint was deleted" },
};

/** The one message set of "this endpoint became unusable", wherever a delivery fails for it. */
export const unavailableError = (cause: UnavailableCause) => UNAVAILABLE[cause];

/** The cause of an endpoint being unusable, from its row. */
export function unavailableCause(ep: Pick<WebhookEndpoint, "deleted_at" | "disabled_reason">): UnavailableCause {
  if (ep.deleted_at) return "deleted";
  return ep.disabled_reason === "gone" || ep.disabled_reason === "failing" ? ep.disabled_reason : "manual";
}

/** The endpoint was disabled or deleted after the delivery was queued: no attempt is made. */
export function endpointUnavailable(cause: UnavailableCause, d: { attemptCount: number; lastStatus: number | null; isTest: boolean }): DeliveryUpdate {
  const error = unavailableError(cause);
  return {
    status: "failed",
    attempt_count: d.attemptCount,
    next_attempt_at: null,
    last_response_status: d.lastStatus,
    last_error_code: error.code,
    last_error_message: error.message,
    delivered_at: null,
    next_trigger: triggerAfterAttempt(d.isTest),
  };
}

/** What failing an unusable endpoint's whole queue writes: every live delivery, at once, without an attempt. */
export interface QueueFailure {
  /** the statuses it fails (the rest are final already) */
  from: readonly DeliveryStatus[];
  status: "failed";
  last_error_code: DeliveryErrorCode;
  last_error_message: string;
  at: Date;
}

export function failQueue(cause: UnavailableCause, at: Date): QueueFailure {
  const { code, message } = unavailableError(cause);
  return { from: LIVE_STATUSES, status: "failed", last_error_code: code, last_error_message: message, at };
}
