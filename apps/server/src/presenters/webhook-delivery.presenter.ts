import type { WebhookDelivery, WebhookDeliveryAttempt } from "@audit-review/api-types/internal";
import type { DeliveryRow } from "../repos/webhook-deliveries.repo.js";
import type { AttemptRow } from "../repos/webhook-delivery-attempts.repo.js";
import { iso, isoOrNull } from "../lib/time.js";

export function presentWebhookDelivery(d: DeliveryRow): WebhookDelivery {
  return {
    id: d.id,
    object: "webhook_delivery",
    org_id: d.org_id,
    endpoint_id: d.endpoint_id,
    event_id: d.event_id,
    event_type: d.event_type,
    audit_id: d.audit_id,
    is_test: d.is_test,
    status: d.status as WebhookDelivery["status"],
    attempt_count: d.attempt_count,
    next_attempt_at: iso(d.next_attempt_at),
    last_response_status: d.last_response_status,
    last_error: d.last_error_code
      ? { code: d.last_error_code as NonNullable<WebhookDelivery["last_error"]>["code"], message: d.last_error_message ?? "" }
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
    trigger: a.trigger as WebhookDeliveryAttempt["trigger"],
    url: a.url,
    started_at: iso(a.started_at),
    duration_ms: a.duration_ms,
    response_status: a.response_status,
    response_body: a.response_body,
    error: a.error_code
      ? { code: a.error_code as NonNullable<WebhookDeliveryAttempt["error"]>["code"], message: a.error_message ?? "" }
      : null,
  };
}
