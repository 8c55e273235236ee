import type { Authentication, CreatedWebhookEndpoint, WebhookEndpoint } from "@audit-review/api-types/internal";
import type { EndpointRow } from "../repos/webhook-endpoints.repo.js";
import { iso, isoOrNull } from "../lib/time.js";

/**
 * Fields are listed explicitly: secrets and credentials live in their own encrypted columns and
 * can never reach a response through this function.
 */
export function presentWebhookEndpoint(e: EndpointRow): WebhookEndpoint {
  return {
    id: e.id,
    object: "webhook_endpoint",
    org_id: e.org_id,
    url: e.url,
    description: e.description,
    status: e.status as WebhookEndpoint["status"],
    disabled_reason: e.disabled_reason as WebhookEndpoint["disabled_reason"],
    disabled_at: isoOrNull(e.disabled_at),
    event_types: e.event_types as WebhookEndpoint["event_types"],
    filters: {
      question_set_ids: e.filter_question_set_ids,
      audit_results: e.filter_audit_results as WebhookEndpoint["filters"]["audit_results"],
    },
    payload: {
      format: e.payload_format as WebhookEndpoint["payload"]["format"],
      fields: e.payload_fields as WebhookEndpoint["payload"]["fields"],
      result_format: e.payload_result_format as WebhookEndpoint["payload"]["result_format"],
      responses_filter: e.payload_responses_filter as WebhookEndpoint["payload"]["responses_filter"],
      include_informational_questions: e.payload_include_informational,
    },
    authentication: { type: e.auth_type, ...(e.auth_config as object) } as Authentication,
    signing: {
      secret_hint: e.secret_hint,
      legacy_signature: e.legacy_signature,
      previous_secret_expires_at: isoOrNull(e.previous_secret_expires_at),
    },
    failing_since: isoOrNull(e.failing_since),
    created_at: iso(e.created_at),
    updated_at: iso(e.updated_at),
  };
}

export function presentCreatedWebhookEndpoint(e: EndpointRow, secret: string): CreatedWebhookEndpoint {
  return { ...presentWebhookEndpoint(e), secret };
}
