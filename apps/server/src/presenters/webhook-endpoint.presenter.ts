import type { Authentication, CreatedWebhookEndpoint, WebhookEndpoint } from "@audit-review/api-types/internal";
import { parseReceiverAuthConfig, type ReceiverAuthConfig } from "../lib/receiver-auth-config.js";
import {
  AUDIT_RESULT_FILTERS,
  DELIVERY_ORDERS,
  DISABLED_REASONS,
  ENDPOINT_KINDS,
  ENDPOINT_STATUSES,
  EVENT_TYPES,
  PAYLOAD_FIELDS,
  PAYLOAD_FORMATS,
  RESPONSES_FILTERS,
  RESULT_FORMATS,
  stored,
  storedOrNull,
} from "../lib/stored-values.js";
import type { WebhookEndpoint as EndpointRow } from "../generated/prisma/client.js";
import { iso, isoOrNull } from "../lib/time.js";

/** Every field of each variant named: nothing stored beside them can leave. */
function presentAuthentication(auth: ReceiverAuthConfig): Authentication {
  switch (auth.type) {
    case "none":
      return { type: auth.type };
    case "headers":
      return { type: auth.type, header_names: auth.header_names };
    case "basic":
      return { type: auth.type, username: auth.username };
    case "oauth2_client_credentials":
      return { type: auth.type, token_url: auth.token_url, client_id: auth.client_id, scope: auth.scope, audience: auth.audience };
  }
}

/**
 * Fields are listed explicitly: secrets and credentials live in their own encrypted columns and
 * can never reach a response through this function.
 */
export function presentWebhookEndpoint(e: EndpointRow): WebhookEndpoint {
  const auth = parseReceiverAuthConfig(e.auth_type, e.auth_config);
  if (!auth) throw new Error(`webhook endpoint ${e.id}: stored authentication of type ${JSON.stringify(e.auth_type)} cannot be read`);
  return {
    id: e.id,
    object: "webhook_endpoint",
    org_id: e.org_id,
    url: e.url,
    description: e.description,
    kind: stored(ENDPOINT_KINDS, e.kind),
    status: stored(ENDPOINT_STATUSES, e.status),
    disabled_reason: storedOrNull(DISABLED_REASONS, e.disabled_reason),
    disabled_at: isoOrNull(e.disabled_at),
    event_types: e.event_types.map((t) => stored(EVENT_TYPES, t)),
    filters: {
      question_set_ids: e.filter_question_set_ids,
      audit_results: stored(AUDIT_RESULT_FILTERS, e.filter_audit_results),
    },
    payload: {
      format: stored(PAYLOAD_FORMATS, e.payload_format),
      fields: e.payload_fields.map((f) => stored(PAYLOAD_FIELDS, f)),
      result_format: stored(RESULT_FORMATS, e.payload_result_format),
      responses_filter: stored(RESPONSES_FILTERS, e.payload_responses_filter),
      include_informational_questions: e.payload_include_informational,
    },
    authentication: presentAuthentication(auth),
    signing: {
      secret_hint: e.secret_hint,
      legacy_signature: e.legacy_signature,
      previous_secret_expires_at: isoOrNull(e.previous_secret_expires_at),
    },
    rate_limit: e.rate_limit,
    delivery_order: stored(DELIVERY_ORDERS, e.delivery_order),
    failing_since: isoOrNull(e.failing_since),
    created_at: iso(e.created_at),
    updated_at: iso(e.updated_at),
  };
}

export function presentCreatedWebhookEndpoint(e: EndpointRow, secret: string): CreatedWebhookEndpoint {
  return { ...presentWebhookEndpoint(e), secret };
}
