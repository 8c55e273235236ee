import type { WebhookDelivery, WebhookDeliveryAttempt } from "@audit-review/api-types/internal";
import type { WebhookDelivery as DeliveryRow, WebhookDeliveryAttempt as AttemptRow } from "../generated/prisma/client.js";
import { ATTEMPT_TRIGGERS, DELIVERY_ERROR_CODES, DELIVERY_STATUSES, EVENT_TYPES, stored } from "../lib/stored-values.js";
import { iso, isoOrNull } from "../lib/time.js";

export function presentWebhookDelivery(d: DeliveryRow): WebhookDelivery {
  return {
    id: d.id,
    object: "webhook_delivery",
    org_id: d.org_id,
    endpoint_id: d.endpoint_id,
    event_id: d.event_id,
    event_type: stored(EVENT_TYPES, d.event_type),
    audit_id: d.audit_id,
    is_test: d.is_test,
    status: stored(DELIVERY_STATUSES, d.status),
    attempt_count: d.attempt_count,
    next_attempt_at: iso(d.next_attempt_at),
    last_response_status: d.last_response_status,
    last_error: d.last_error_code
      ? { code: stored(DELIVERY_ERROR_CODES, d.last_error_code), message: d.last_error_message ?? "" }
      : null,
    delivered_at: isoOrNull(d.delivered_at),
    created_at: iso(d.created_at),
    updated_at: iso(d.updated_at),
  };
}

export function presentWebhookDeliveryAttempt(a: AttemptRow): WebhookDeliveryAttempt {
  return {
    id: a.id,
    object: "webhook_delivery_attempt",
    delivery_id: a.delivery_id,
    endpoint_id: a.endpoint_id,
    attempt_number: a.attempt_number,
    trigger: stored(ATTEMPT_TRIGGERS, a.trigger),
    url: a.url,
    started_at: iso(a.started_at),
    duration_ms: a.duration_ms,
    response_status: a.response_status,
    response_body: a.response_body,
    error: a.error_code
      ? { code: stored(DELIVERY_ERROR_CODES, a.error_code), message: a.error_message ?? "" }
      : null,
  };
}
