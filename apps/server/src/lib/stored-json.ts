// The JSON columns stored in their API shape (written by the services from validated bodies).
// These guards check the discriminating fields once when a row is read, instead of asserting.
import type { EmEvaluation, EventType, IcdEvaluation, OperationalEventData, Threshold } from "@audit-review/api-types/internal";
import type { Event } from "../generated/prisma/client.js";
import { isRecord } from "./narrow.js";
import { DELIVERY_ERROR_CODES, DISABLED_REASONS, EVENT_TYPES, stored, storedOrNull } from "./stored-values.js";

const AUDIT_COMPLETED: EventType = "audit.completed";

export const isEmEvaluation = (value: unknown): value is NonNullable<EmEvaluation> => isRecord(value) && value.object === "em_evaluation";

export const isIcdEvaluation = (value: unknown): value is NonNullable<IcdEvaluation> => isRecord(value) && value.object === "icd_evaluation";

const isThreshold = (value: unknown): value is Threshold =>
  isRecord(value) && typeof value.label === "string" && typeof value.min_score === "number";

export const isThresholds = (value: unknown): value is Threshold[] => Array.isArray(value) && value.every(isThreshold);

/** The stored document, or null when the column is NULL (or, impossibly, of another shape). */
export const emEvaluationOf = (value: unknown): EmEvaluation | null => (isEmEvaluation(value) ? value : null);
export const icdEvaluationOf = (value: unknown): IcdEvaluation | null => (isIcdEvaluation(value) ? value : null);

/** What is stored of each answered question of an event: enough to build any endpoint's payload later. */
// A type alias, not an interface: Prisma's JSON input type needs the implicit index signature.
export type StoredResponse = {
  question_id: string;
  query: string;
  answer: string | null;
  context: string | null;
  passed: boolean | null;
  informational: boolean;
};

/**
 * An event row with its JSON typed: `responses` (written only from validated bodies) for
 * audit.completed, `data` (written only by repos/notification-sql.ts, in the contract's
 * OperationalEventData shape) for an operational notification; the other is NULL (the
 * events_shape_check constraint). Timestamps inside `data` are ISO strings of any offset.
 */
export type StoredEvent = Omit<Event, "responses" | "data"> & { responses: StoredResponse[] | null; data: NonNullable<OperationalEventData> | null };

/** The audit columns of an audit.completed row, all set (the events_shape_check constraint). */
export interface StoredAudit {
  audit_id: string;
  question_set_id: string;
  result: string;
  responses: StoredResponse[];
}

/** What a stored event carries: its audit, or the operational notification it is; never both. */
export type StoredContent =
  | { audit: StoredAudit; notification: null }
  | { audit: null; notification: NonNullable<OperationalEventData> };

/**
 * The one decision of whether a stored event is an audit or an operational notification. The
 * type decides, as the events_shape_check constraint does; a row whose columns disagree with its
 * type would break that constraint, so it fails loudly instead of being shown as neither.
 */
export function storedContent(e: Pick<StoredEvent, "type" | "audit_id" | "question_set_id" | "result" | "responses" | "data">): StoredContent {
  if (e.type === AUDIT_COMPLETED) {
    if (e.audit_id === null || e.question_set_id === null || e.result === null || e.responses === null) {
      throw new Error(`a stored ${e.type} event without its audit columns`);
    }
    return { audit: { audit_id: e.audit_id, question_set_id: e.question_set_id, result: e.result, responses: e.responses }, notification: null };
  }
  if (e.data === null) throw new Error(`a stored ${e.type} event without its data`);
  return { audit: null, notification: storedOperationalData(e.data) };
}

/** Stored operational data as the contract spells it: every field named, each instant in its ISO form. */
function storedOperationalData(d: NonNullable<OperationalEventData>): NonNullable<OperationalEventData> {
  const at = (v: string | null) => (v === null ? null : new Date(v).toISOString());
  return {
    endpoint_id: d.endpoint_id,
    endpoint_url: d.endpoint_url,
    failing_since: at(d.failing_since),
    disabled_reason: storedOrNull(DISABLED_REASONS, d.disabled_reason),
    delivery: d.delivery && {
      id: d.delivery.id,
      event_id: d.delivery.event_id,
      event_type: stored(EVENT_TYPES, d.delivery.event_type),
      attempt_count: d.delivery.attempt_count,
      last_response_status: d.delivery.last_response_status,
      last_error: d.delivery.last_error && { code: stored(DELIVERY_ERROR_CODES, d.delivery.last_error.code), message: d.delivery.last_error.message },
    },
  };
}
