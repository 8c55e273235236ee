import type {
  Event,
  PublishedEvent,
  PublishedEvents,
  PublishEventRequest,
  Recovery,
} from "@audit-review/api-types/internal";
import { AUDIT_RESULTS, EVENT_TYPES, stored } from "../lib/stored-values.js";
import { iso } from "../lib/time.js";
import { storedContent, type StoredEvent } from "../lib/stored-json.js";

/**
 * An event as it was published or made (GET /v2/events), before any endpoint's payload settings:
 * `data` for audit.completed, `notification` for an operational notification, the other null.
 */
export function presentEvent(e: StoredEvent): Event {
  const { audit, notification } = storedContent(e);
  return {
    id: e.id,
    object: "event",
    type: stored(EVENT_TYPES, e.type),
    is_test: e.is_test,
    data: audit && {
      audit_id: audit.audit_id,
      question_set_id: audit.question_set_id,
      document_id: e.document_id,
      result: stored(AUDIT_RESULTS, audit.result),
      raw_result: e.raw_result,
      responses: audit.responses.map((r) => ({
        question_id: r.question_id,
        query: r.query,
        answer: r.answer,
        context: r.context,
        passed: r.passed,
        informational: r.informational,
      })),
    },
    notification,
    occurred_at: iso(e.occurred_at),
    created_at: iso(e.created_at),
  };
}

export function presentPublishedEvent(body: PublishEventRequest, out: { created: boolean; deliveriesCreated: number }): PublishedEvent {
  return {
    object: "event",
    id: body.id,
    type: body.type,
    created: out.created,
    deliveries_created: out.deliveriesCreated,
  };
}

export function presentPublishedEvents(outs: ReadonlyArray<{ event: PublishEventRequest; created: boolean; deliveriesCreated: number }>): PublishedEvents {
  return { object: "list", data: outs.map((o) => presentPublishedEvent(o.event, o)) };
}

export function presentRecovery(queued: number): Recovery {
  return { object: "recovery", queued };
}
