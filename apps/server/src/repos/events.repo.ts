import type { Database, SqlExecutor } from "../db/client.js";
import type { NewDelivery } from "../domain/delivery/fan-out.js";
import type { Prisma, Question } from "../generated/prisma/client.js";
import type { Page, PageRequest } from "../lib/page.js";
import type { StoredEvent, StoredResponse } from "../lib/stored-json.js";
import type { CountCache } from "./count-cache.js";
import { recentDaysFrom } from "./day-partition-sql.js";
import { keysetReader, type Condition } from "./keyset.js";
import { firstStateParams, firstStateParamsSql, insertNewDeliveriesSql } from "./new-delivery-sql.js";
import { TEST_NOTICE } from "./notification-sql.js";

export type { StoredEvent, StoredResponse } from "../lib/stored-json.js";

export type NewEvent = Omit<Prisma.EventUncheckedCreateInput, "responses"> & { responses: StoredResponse[] };

// Events are partitioned by day, and no index can say "one row per id" across days (a unique index
// on a partitioned table must include the partition key), while a publisher's re-send arrives on
// another day too. `ars_unknown_event_ids` (its migration, "publish_in_one_statement") locks each
// id for the transaction, then answers those not in `event_ids` (the index across days that a
// trigger on events keeps, migration "event_ids": one probe however many days are kept), read
// after the locks are held. A concurrent publisher of the same id waits, then sees the committed
// row. Called inside the statement that stores the events, so publishing is one round trip with
// no transaction block around it. Removed days forget their ids (README, retention).

/** The endpoints of the org ($2) that take new deliveries at all: live and enabled. */
const LIVE_ENDPOINTS = "webhook_endpoints e ON e.org_id = $2 AND e.deleted_at IS NULL AND e.status = 'enabled'";

/**
 * The one statement of which live endpoint (`e`) an event fans out to: subscribed to its type,
 * passing the set and result filters (an empty set filter means every set), and, for a webhook
 * listener, connected when the event is stored (`at`): a listener with no stream gets no
 * delivery. Given SQL expressions for the event's type, question set, result and time.
 */
const fanOutFilter = (type: string, questionSetId: string, result: string, at: string) =>
  `${type} = ANY (e.event_types)
     AND (coalesce(cardinality(e.filter_question_set_ids), 0) = 0 OR ${questionSetId} = ANY (e.filter_question_set_ids))
     AND e.filter_audit_results IN ('all', ${result})
     AND (e.listener_connected_until IS NULL OR e.listener_connected_until > ${at}::timestamptz)`;

/**
 * Stores the event and, in the same statement (one commit), one pending delivery per matching
 * endpoint: live, enabled, subscribed, and passing its set and result filters, or only `$13` for
 * a test event. A known event id inserts nothing, so nothing is fanned out again.
 */
const PUBLISH = `
WITH ev AS (
  INSERT INTO events (id, org_id, type, audit_id, question_set_id, document_id, result, raw_result, responses, occurred_at, created_at, is_test)
  SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb, $10, $11, $12
    FROM ars_unknown_event_ids(ARRAY[$1::uuid])
  RETURNING id
), fan AS (
  ${insertNewDeliveriesSql({
    at: "$11", orgId: "$2", endpointId: "e.id", eventId: "ev.id", eventType: "$3", auditId: "$4", isTest: "$12",
    eventOccurredAt: "$10", first: firstStateParamsSql(14),
  })}
  FROM ev JOIN ${LIVE_ENDPOINTS}
  WHERE CASE WHEN $13::uuid IS NULL
    THEN ${fanOutFilter("$3", "$5::uuid", "$7", "$11")}
    ELSE e.id = $13::uuid END
  ON CONFLICT (event_id, endpoint_id, created_at) DO NOTHING
  RETURNING id
)
SELECT 'event' AS kind, id::text AS id FROM ev
UNION ALL
SELECT 'delivery', id::text FROM fan`;

/** What a published response takes from its question: the rubric's words and whether it is scored. */
export type QuestionFacts = Pick<Question, "id" | "query" | "question_type">;

// One row per question (deleted ones included: an event may answer what the set held when the
// audit ran), or one row of NULLs for a set without questions; no row for a set not of the org.
const QUESTIONS_OF = `
SELECT q.id, q.query, q.question_type
  FROM question_sets s
  LEFT JOIN questions q ON q.question_set_id = s.id
 WHERE s.id = $1::uuid AND s.org_id = $2`;

/**
 * PUBLISH for a batch: every event of one org in one statement, one commit. Each row's `kind`
 * says whether it is a stored event or a delivery of `event_id`; known event ids store nothing.
 */
const PUBLISH_MANY = `
WITH input AS (
  SELECT * FROM jsonb_to_recordset($1::jsonb) AS x(
    id uuid, type text, audit_id uuid, question_set_id uuid, document_id text, result text, raw_result text,
    responses jsonb, occurred_at timestamptz)
), ev AS (
  INSERT INTO events (id, org_id, type, audit_id, question_set_id, document_id, result, raw_result, responses, occurred_at, created_at)
  SELECT i.id, $2, i.type, i.audit_id, i.question_set_id, i.document_id, i.result, i.raw_result, i.responses, i.occurred_at, $3
    FROM input i JOIN ars_unknown_event_ids(ARRAY(SELECT id FROM input)) AS unknown(id) ON unknown.id = i.id
  RETURNING id, type, audit_id, question_set_id, result, occurred_at
), fan AS (
  ${insertNewDeliveriesSql({
    at: "$3", orgId: "$2", endpointId: "e.id", eventId: "ev.id", eventType: "ev.type", auditId: "ev.audit_id", isTest: "false",
    eventOccurredAt: "ev.occurred_at", first: firstStateParamsSql(4),
  })}
  FROM ev JOIN ${LIVE_ENDPOINTS}
  WHERE ${fanOutFilter("ev.type", "ev.question_set_id", "ev.result", "$3")}
  ON CONFLICT (event_id, endpoint_id, created_at) DO NOTHING
  RETURNING event_id
)
SELECT 'event' AS kind, id::text AS event_id FROM ev
UNION ALL
SELECT 'delivery', event_id::text FROM fan`;

// The questions of several sets of the org at once (see QUESTIONS_OF); a set without questions
// gives one row with a NULL question.
const QUESTIONS_OF_SETS = `
SELECT s.id AS set_id, q.id, q.query, q.question_type
  FROM question_sets s
  LEFT JOIN questions q ON q.question_set_id = s.id
 WHERE s.id = ANY($1::uuid[]) AND s.org_id = $2`;

/** What publishing one event of a batch did. */
export interface PublishedOne {
  created: boolean;
  deliveries: number;
}

export interface Published {
  /** false when the event id was already stored: nothing was created */
  created: boolean;
  deliveryIds: string[];
}

/** The Events API's filters (GET /v2/events). */
export interface EventFilters {
  type?: string | undefined;
  auditId?: string | undefined;
  createdAfter?: Date | undefined;
  createdBefore?: Date | undefined;
}

/** Every column, in the model's order: a list row is the stored event. */
const EVENT_LIST_COLUMNS = `t.id, t.org_id, t.type, t.audit_id, t.question_set_id, t.document_id, t.result, t.raw_result,
  t.responses, t.occurred_at, t.created_at, t.is_test, t.data`;

function eventConditions(f: EventFilters): Condition[] {
  const c: Condition[] = [];
  if (f.type !== undefined) c.push({ column: "type", op: "=", value: f.type });
  if (f.auditId !== undefined) c.push({ column: "audit_id", op: "=", value: f.auditId });
  if (f.createdAfter) c.push({ column: "created_at", op: ">", value: f.createdAfter });
  if (f.createdBefore) c.push({ column: "created_at", op: "<", value: f.createdBefore });
  return c;
}

/** `now`: the one clock, for where a first page looks first (`ListTable.recentFrom`); `pages`: connections that keep their plans, where list pages are read (default `db`). */
export function eventsRepo(db: Database, counts: CountCache, now: () => Date, pages?: SqlExecutor) {
  const read = keysetReader<StoredEvent>(pages ?? db, { table: "events", columns: EVENT_LIST_COLUMNS, recentFrom: recentDaysFrom(now), plansKept: pages !== undefined, cursorFrom: "event_ids", remembersCursors: true }, counts);
  return {
    /** A page of the org's events, newest first (keyset on the events' list indexes). */
    list(orgId: string, f: EventFilters, page: PageRequest): Promise<Page<StoredEvent>> {
      return read(orgId, eventConditions(f), page);
    },

    /**
     * One event of the org; null for an unknown id or another org's. Its day comes from event_ids:
     * by id alone, the look-up probed the key index of every kept day (0.43 against 0.34 ms over
     * 38 day partitions, bench/NOTES.md); by its created_at the executor skips the other days.
     */
    async findById(orgId: string, id: string): Promise<StoredEvent | null> {
      const [row] = await db.query<StoredEvent>(
        `SELECT ${EVENT_LIST_COLUMNS} FROM events t
          WHERE t.id = $1::uuid AND t.org_id = $2 AND t.created_at = (SELECT k.created_at FROM event_ids k WHERE k.id = $1::uuid)`,
        [id, orgId],
        { name: "ars_event_by_id" },
      );
      return row ?? null;
    },

    /** Stores the event (stamped `event.created_at`, the clock's now) and its deliveries as the lifecycle creates them (`first`). */
    async publish(event: NewEvent & { created_at: Date }, first: NewDelivery, isTest = false, onlyEndpointId?: string): Promise<Published> {
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
        event.created_at,
        isTest,
        onlyEndpointId ?? null,
        ...firstStateParams(first),
      ], { name: "ars_publish" });
      return { created: rows.some((r) => r.kind === "event"), deliveryIds: rows.filter((r) => r.kind === "delivery").map((r) => r.id) };
    },

    /** A sample operational notification for one operational endpoint (TEST_NOTICE); null when it is not live and enabled. */
    async publishTestNotice(endpointId: string, at: Date, first: NewDelivery): Promise<string | null> {
      const [row] = await db.query<{ id: string }>(TEST_NOTICE, [endpointId, at, ...firstStateParams(first)]);
      return row?.id ?? null;
    },

    /** Stores a batch of one org's events and their deliveries in one statement; results by event id. */
    async publishMany(orgId: string, events: readonly Omit<NewEvent, "org_id" | "created_at">[], createdAt: Date, first: NewDelivery): Promise<Map<string, PublishedOne>> {
      const rows = await db.query<{ kind: string; event_id: string }>(PUBLISH_MANY, [
        JSON.stringify(events.map((e) => ({ ...e, document_id: e.document_id ?? null, raw_result: e.raw_result ?? null }))),
        orgId,
        createdAt,
        ...firstStateParams(first),
      ], { name: "ars_publish_many" });
      const out = new Map<string, PublishedOne>();
      for (const r of rows) {
        const one = out.get(r.event_id) ?? { created: false, deliveries: 0 };
        if (r.kind === "event") one.created = true;
        else one.deliveries++;
        out.set(r.event_id, one);
      }
      return out;
    },

    /** The orgs of these event ids (those that exist): from event_ids, one probe per id whatever the days kept. */
    async orgsOf(ids: readonly string[]): Promise<Map<string, string>> {
      const rows = await db.query<{ id: string; org_id: string }>("SELECT id, org_id FROM event_ids WHERE id = ANY($1::uuid[])", [ids], { name: "ars_event_orgs" });
      return new Map(rows.map((r) => [r.id, r.org_id]));
    },

    /** The questions of several of the org's question sets; a set not of the org is absent. */
    async questionsOfSets(orgId: string, setIds: readonly string[]): Promise<Map<string, QuestionFacts[]>> {
      const rows = await db.query<QuestionFacts & { set_id: string } | { set_id: string; id: null }>(QUESTIONS_OF_SETS, [setIds, orgId], { name: "ars_questions_of_sets" });
      const out = new Map<string, QuestionFacts[]>();
      for (const r of rows) {
        const list = out.get(r.set_id) ?? [];
        if (r.id !== null) list.push({ id: r.id, query: r.query, question_type: r.question_type });
        out.set(r.set_id, list);
      }
      return out;
    },

    // Raw SQL, like publish: the ingestion path makes no Prisma query (bench/NOTES.md).
    async findOrg(id: string): Promise<{ org_id: string } | null> {
      const [row] = await db.query<{ org_id: string }>("SELECT org_id FROM event_ids WHERE id = $1::uuid", [id]);
      return row ?? null;
    },

    /** The questions of one of the org's question sets; null when the org has no such set. */
    async questionsOf(orgId: string, questionSetId: string): Promise<QuestionFacts[] | null> {
      const rows = await db.query<QuestionFacts | { id: null }>(QUESTIONS_OF, [questionSetId, orgId], { name: "ars_questions_of" });
      if (!rows.length) return null;
      return rows.filter((r): r is QuestionFacts => r.id !== null);
    },
  };
}

export type EventsRepo = ReturnType<typeof eventsRepo>;
