// The `standard_v1` body of `audit.completed`, shaped per endpoint. Pure: the stored event is
// complete (every response with its question text and flags), and each endpoint only ever sees
// the reduction its `payload` settings ask for. Built once per attempt, so a body is always
// exactly what the endpoint's settings say today. The body is the event of the Events API
// (`GET /v2/events/{webhook-id}`) reduced and spelled in the seed's camelCase: the contract's
// AuditCompletedPayload description maps each field to the event's.
import type { AuditCompletedPayload, AuditResponseItem, OperationalEventPayload } from "@audit-review/api-types/internal";
import { storedContent, type StoredAudit, type StoredContent } from "../lib/stored-json.js";
import { OPERATIONAL_EVENT_TYPES, stored } from "../lib/stored-values.js";
import type { StoredEvent, StoredResponse } from "../repos/events.repo.js";

/** The parts of a stored event the body is built from. */
export type PayloadEvent = Pick<
  StoredEvent,
  "type" | "audit_id" | "question_set_id" | "document_id" | "result" | "raw_result" | "responses" | "occurred_at" | "is_test" | "data"
>;

/** An endpoint's `payload` settings, as stored on its row. */
export interface PayloadSettings {
  fields: readonly string[];
  result_format: string;
  responses_filter: string;
  include_informational: boolean;
}

const RESPONSE_ITEM_FIELDS = ["query", "answer", "context"] as const;

/** Which responses an endpoint gets: informational ones only when asked, failed ones only with `failed`. */
function selectedResponses(responses: readonly StoredResponse[], s: PayloadSettings): StoredResponse[] {
  return responses.filter(
    (r) => (s.include_informational || !r.informational) && (s.responses_filter !== "failed" || r.passed === false),
  );
}

export function buildPayload(event: PayloadEvent, settings: PayloadSettings): AuditCompletedPayload {
  const { audit } = storedContent(event);
  if (!audit) throw new Error(`a ${event.type} event has no audit to build an audit.completed body from`);
  return auditBody(event, audit, settings);
}

function auditBody(event: PayloadEvent, audit: StoredAudit, settings: PayloadSettings): AuditCompletedPayload {
  const fields = new Set(settings.fields);
  const data: AuditCompletedPayload["data"] = { auditId: audit.audit_id, questionSetId: audit.question_set_id };
  if (fields.has("data.documentId")) data.documentId = event.document_id;
  if (fields.has("data.result")) data.result = settings.result_format === "raw" ? (event.raw_result ?? audit.result) : audit.result;

  const body: AuditCompletedPayload = {
    type: "audit.completed",
    timestamp: event.occurred_at.toISOString(),
    // always sent, whatever the fields: a receiver must be able to set test deliveries aside
    isTest: event.is_test,
    data,
  };
  if (fields.has("responses")) {
    // `questionId` always, so a receiver can tell the items apart whatever else it chose.
    const [query, answer, context] = RESPONSE_ITEM_FIELDS.map((f) => fields.has(`responses.${f}`));
    body.responses = selectedResponses(audit.responses, settings).map((r) => {
      const item: AuditResponseItem = { questionId: r.question_id };
      if (query) item.query = r.query;
      if (answer) item.answer = r.answer;
      if (context) item.context = r.context;
      return item;
    });
  }
  return body;
}

/**
 * An operational notification's body: the event of the Events API spelled in camelCase (the
 * contract's OperationalEventPayload). An operational endpoint has no payload settings.
 */
export function operationalPayload(event: PayloadEvent): OperationalEventPayload {
  const { notification } = storedContent(event);
  if (!notification) throw new Error(`a ${event.type} event is not an operational notification`);
  return operationalBody(event, notification);
}

function operationalBody(event: PayloadEvent, d: NonNullable<StoredContent["notification"]>): OperationalEventPayload {
  return {
    type: stored(OPERATIONAL_EVENT_TYPES, event.type),
    timestamp: event.occurred_at.toISOString(),
    isTest: event.is_test,
    data: {
      endpointId: d.endpoint_id,
      endpointUrl: d.endpoint_url,
      failingSince: d.failing_since,
      disabledReason: d.disabled_reason,
      delivery: d.delivery && {
        id: d.delivery.id,
        eventId: d.delivery.event_id,
        eventType: d.delivery.event_type,
        attemptCount: d.delivery.attempt_count,
        lastResponseStatus: d.delivery.last_response_status,
        lastError: d.delivery.last_error,
      },
    },
  };
}

/** The exact bytes that are signed and sent. */
export function serializePayload(event: PayloadEvent, settings: PayloadSettings): string {
  const c = storedContent(event);
  return JSON.stringify(c.audit !== null ? auditBody(event, c.audit, settings) : operationalBody(event, c.notification));
}
