import type { Database } from "../db/client.js";
import type { Event, Prisma } from "../generated/prisma/client.js";

/** What is stored of each answered question: enough to build any endpoint's payload later. */
// A type alias, not an interface: Prisma's JSON input type needs the implicit index signature.
export type StoredResponse = {
  question_id: string;
  query: string;
  answer: string | null;
  context: string | null;
  passed: boolean | null;
  informational: boolean;
};

/** An event row with its responses typed (the column is JSON). */
export type StoredEvent = Omit<Event, "responses"> & { responses: StoredResponse[] };

export type NewEvent = Omit<Prisma.EventUncheckedCreateInput, "responses"> & { responses: StoredResponse[] };

/**
 * A UUIDv7 made by PostgreSQL (48-bit millisecond time, version 7, random rest), so fan-out can
 * create its deliveries inside the INSERT … SELECT that finds the matching endpoints.
 */
const UUIDV7_SQL = `encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid()) placing
  substring(int8send((extract(epoch from clock_timestamp()) * 1000)::bigint) from 3) from 1 for 6), 52, 1), 53, 1), 'hex')::uuid`;

/**
 * Stores the event and, in the same statement (one round trip, one commit), one pending delivery
 * per matching endpoint: live, enabled, subscribed, and passing its set and result filters, or
 * only `$13` for a test event. A known event id inserts nothing, so nothing is fanned out again.
 */
const PUBLISH = `
WITH ev AS (
  INSERT INTO events (id, org_id, type, audit_id, question_set_id, document_id, result, raw_result, responses, occurred_at, created_at)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb, $10, $11)
  ON CONFLICT (id) DO NOTHING
  RETURNING id
), fan AS (
  INSERT INTO webhook_deliveries (id, org_id, endpoint_id, event_id, event_type, audit_id, is_test, status, attempt_count, next_attempt_at, created_at, updated_at, next_trigger)
  SELECT ${UUIDV7_SQL}, $2, e.id, ev.id, $3, $4, $12, 'pending', 0, $11, $11, $11, CASE WHEN $12 THEN 'test' ELSE 'scheduled' END
  FROM ev JOIN webhook_endpoints e ON e.org_id = $2 AND e.deleted_at IS NULL AND e.status = 'enabled'
  WHERE CASE WHEN $13::uuid IS NULL
    THEN $3 = ANY (e.event_types)
     AND (coalesce(cardinality(e.filter_question_set_ids), 0) = 0 OR $5::uuid = ANY (e.filter_question_set_ids))
     AND e.filter_audit_results IN ('all', $7)
    ELSE e.id = $13::uuid END
  ON CONFLICT (event_id, endpoint_id) DO NOTHING
  RETURNING id
)
SELECT 'event' AS kind, id::text AS id FROM ev
UNION ALL
SELECT 'delivery', id::text FROM fan`;

export interface Published {
  /** false when the event id was already stored: nothing was created */
  created: boolean;
  deliveryIds: string[];
}

export function eventsRepo(db: Database) {
  return {
    async publish(event: NewEvent, isTest = false, onlyEndpointId?: string): Promise<Published> {
      const rows = await db.query<{ kind: string; id: string }>(PUBLISH, [
        event.id,
        event.org_id,
        event.type,
        event.audit_id,
        event.question_set_id,
        event.document_id ?? null,
        event.result,
        event.raw_result ?? null,
        JSON.stringify(event.responses),
        event.occurred_at,
        event.created_at ?? new Date(),
        isTest,
        onlyEndpointId ?? null,
      ]);
      return { created: rows.some((r) => r.kind === "event"), deliveryIds: rows.filter((r) => r.kind === "delivery").map((r) => r.id) };
    },

    findOrg(id: string) {
      return db.prisma.event.findUnique({ where: { id }, select: { org_id: true } });
    },
  };
}

export type EventsRepo = ReturnType<typeof eventsRepo>;
