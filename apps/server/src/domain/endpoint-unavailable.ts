// Why a queued delivery fails without an attempt, and the one message set that says so
// (docs/delivery.md#states: "endpoint disabled or deleted meanwhile"). The engine uses it when it
// finds the endpoint gone at send time; the repository when disabling or deleting an endpoint
// fails its queued deliveries.
import type { DeliveryErrorCode } from "@audit-review/api-types/internal";
import type { WebhookEndpoint } from "../generated/prisma/client.js";
import type { DeliveryUpdate } from "./delivery-outcome.js";
import type { DisableReason } from "./endpoint-health.js";

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
