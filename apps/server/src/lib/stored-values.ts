// The enumerated columns: every value the database may hold, one list per column. The migration
// `enumerated_checks` turns each list into a CHECK constraint (written out there by hand, as
// every migration is); test/db/enumerated-checks.test.ts proves the lists equal the contract's
// enums and that the database refuses anything else. Readers can then narrow a stored string
// with `isStored` instead of casting it.
import type {
  AttemptTrigger,
  AuditResult,
  AuditResultFilter,
  Authentication,
  CodingEvaluationStatus,
  DeliveryOrder,
  DeliveryErrorCode,
  DisabledReason,
  EndpointKind,
  EventType,
  OperationalEventType,
  PayloadField,
  PayloadFormat,
  QuestionSetType,
  QuestionType,
  ResponsesFilter,
  ResultFormat,
  Severity,
  WebhookDeliveryStatus,
  WebhookEndpointStatus,
} from "@audit-review/api-types/internal";

type Value<T> = Exclude<T, null>;

/** All members of a union, each once: a missing or unknown member fails to compile. */
const all =
  <T extends string>() =>
  <const L extends readonly T[]>(list: L & ([T] extends [L[number]] ? unknown : { missing: Exclude<T, L[number]> })): L =>
    list;

export const QUESTION_SET_TYPES = all<Value<QuestionSetType>>()(["clinical_documentation", "coding", "compliance", "quality"]);
export const QUESTION_TYPES = all<Value<QuestionType>>()(["yes_no", "multiple_choice", "free_text", "informational"]);
export const SEVERITIES = all<Value<Severity>>()(["low", "medium", "high", "critical"]);
export const CODING_EVALUATION_STATUSES = all<CodingEvaluationStatus>()(["pending", "processing", "completed", "failed"]);
export const EVENT_TYPES = all<EventType>()([
  "audit.completed",
  "webhook_endpoint.failing",
  "webhook_endpoint.disabled",
  "webhook_endpoint.recovered",
  "webhook_delivery.exhausted",
]);
export const OPERATIONAL_EVENT_TYPES = all<OperationalEventType>()([
  "webhook_endpoint.failing",
  "webhook_endpoint.disabled",
  "webhook_endpoint.recovered",
  "webhook_delivery.exhausted",
]);
export const ENDPOINT_KINDS = all<EndpointKind>()(["audit", "operational"]);
export const ENDPOINT_STATUSES = all<WebhookEndpointStatus>()(["enabled", "disabled"]);
export const DELIVERY_ORDERS = all<DeliveryOrder>()(["unordered", "ordered"]);
export const DISABLED_REASONS = all<Value<DisabledReason>>()(["manual", "gone", "failing"]);
export const AUDIT_RESULTS = all<AuditResult>()(["passed", "failed"]);
export const AUDIT_RESULT_FILTERS = all<AuditResultFilter>()(["all", "passed", "failed"]);
export const PAYLOAD_FORMATS = all<PayloadFormat>()(["standard_v1"]);
export const PAYLOAD_FIELDS = all<PayloadField>()(["data.documentId", "data.result", "responses", "responses.query", "responses.answer", "responses.context"]);
export const RESULT_FORMATS = all<ResultFormat>()(["normalized", "raw"]);
export const RESPONSES_FILTERS = all<ResponsesFilter>()(["all", "failed"]);
export const AUTH_TYPES = all<Authentication["type"]>()(["none", "headers", "basic", "oauth2_client_credentials"]);
export const DELIVERY_STATUSES = all<WebhookDeliveryStatus>()(["pending", "retrying", "succeeded", "failed"]);
export const DELIVERY_ERROR_CODES = all<DeliveryErrorCode>()([
  "connection_error",
  "timeout",
  "tls_error",
  "dns_error",
  "destination_blocked",
  "unexpected_status",
  "auth_error",
  "endpoint_disabled",
  "endpoint_deleted",
]);
export const ATTEMPT_TRIGGERS = all<AttemptTrigger>()(["scheduled", "manual", "test"]);
/** Internal only: an Idempotency-Key's first request is running or has answered. */
export const IDEMPOTENCY_STATUSES = ["in_progress", "completed"] as const;

/** `table.column` → the values it may hold; `array` columns hold a subset, `nullable` ones NULL too. */
export const ENUMERATED_COLUMNS = {
  "question_sets.type": { values: QUESTION_SET_TYPES, nullable: true },
  "questions.question_type": { values: QUESTION_TYPES, nullable: true },
  "questions.severity": { values: SEVERITIES, nullable: true },
  "coding_evaluations.status": { values: CODING_EVALUATION_STATUSES },
  "webhook_endpoints.status": { values: ENDPOINT_STATUSES },
  "webhook_endpoints.disabled_reason": { values: DISABLED_REASONS, nullable: true },
  "webhook_endpoints.event_types": { values: EVENT_TYPES, array: true },
  "webhook_endpoints.filter_audit_results": { values: AUDIT_RESULT_FILTERS },
  "webhook_endpoints.payload_format": { values: PAYLOAD_FORMATS },
  "webhook_endpoints.payload_fields": { values: PAYLOAD_FIELDS, array: true },
  "webhook_endpoints.payload_result_format": { values: RESULT_FORMATS },
  "webhook_endpoints.payload_responses_filter": { values: RESPONSES_FILTERS },
  "webhook_endpoints.auth_type": { values: AUTH_TYPES },
  "webhook_endpoints.delivery_order": { values: DELIVERY_ORDERS },
  "webhook_endpoints.kind": { values: ENDPOINT_KINDS },
  "events.type": { values: EVENT_TYPES },
  "events.result": { values: AUDIT_RESULTS },
  "webhook_deliveries.event_type": { values: EVENT_TYPES },
  "webhook_deliveries.status": { values: DELIVERY_STATUSES },
  "webhook_deliveries.last_error_code": { values: DELIVERY_ERROR_CODES, nullable: true },
  "webhook_deliveries.next_trigger": { values: ATTEMPT_TRIGGERS },
  "webhook_delivery_attempts.trigger": { values: ATTEMPT_TRIGGERS },
  "webhook_delivery_attempts.error_code": { values: DELIVERY_ERROR_CODES, nullable: true },
  "idempotency_keys.status": { values: IDEMPOTENCY_STATUSES },
} as const satisfies Record<string, { values: readonly string[]; nullable?: boolean; array?: boolean }>;

/** Narrows a stored string to its column's type (the CHECK constraint guarantees it). */
export function isStored<const L extends readonly string[]>(values: L, value: string): value is L[number] {
  return values.some((v) => v === value);
}

/**
 * A stored value as its column's type. The CHECK constraint makes anything else impossible; if
 * the database and this file ever disagree, the read fails loudly instead of leaking the value.
 */
export function stored<const L extends readonly string[]>(values: L, value: string): L[number] {
  if (!isStored(values, value)) throw new Error(`stored value ${JSON.stringify(value)} is not one of ${values.join(", ")}`);
  return value;
}

export function storedOrNull<const L extends readonly string[]>(values: L, value: string | null): L[number] | null {
  return value === null ? null : stored(values, value);
}
