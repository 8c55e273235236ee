// The delivery rows as a work queue (docs/delivery.md#states: "the delivery row is the queue"). Raw SQL,
// because what matters here is exactly what Prisma cannot say: FOR UPDATE SKIP LOCKED, leases,
// and conditional multi-table updates in one transaction.
//
// Lock order, everywhere a transaction takes more than one lock: the endpoint row first, then
// delivery rows. The claim takes only delivery rows and never waits (SKIP LOCKED), and the
// endpoint repository's disable/delete also goes endpoint → deliveries. A batch record that
// only clears failure streaks runs as one statement and may meet a transaction in the other
// order; PostgreSQL then aborts one of them as a deadlock, and the batch is simply written again.
//
// The rules it applies are decided in domain/delivery/ (the states and transitions, the
// endpoint-health rule, the unavailable messages); this module reads what they need and writes
// what they decide.
//
// Leases and due times are judged by one clock: the engine's (clock/), kept in step with the
// database's, handed in as `now` with every statement, never read here. Two workers whose hosts'
// clocks disagree still agree on whose lease has run out (docs/delivery.md#leases).
//
// The table is partitioned by day on created_at: every statement that names rows by id names
// their days too, so it reads only the partitions they are in.
import type { Database } from "../db/client.js";
import { batchHealth, type DisableReason, type StreakChange } from "../domain/delivery/endpoint-health.js";
import type { DeliveryUpdate, EndpointEffect } from "../domain/delivery/outcome.js";
import { THROTTLE_STEPS_PER_SECOND } from "../domain/delivery/throttle.js";
import { DAY_MS, dayStart } from "../domain/retention.js";
import type { WebhookDelivery, WebhookDeliveryAttempt, WebhookEndpoint } from "../generated/prisma/client.js";
import { errorField } from "../lib/narrow.js";
import { createdWithin, dayBounds } from "./day-partition-sql.js";
import { failQueuedDeliveries, LIVE_FLOOR, LIVE_SQL, queuedEndpoints, type Floor, type StatementRunner } from "./delivery-sql.js";
import { exhaustedDeliverySql, noticeDataSql, noticeFanOutSql, NOTIFIES, notifyDisabled, type NoticeMade } from "./notification-sql.js";
import { exhaustsRetries } from "../domain/delivery/notices.js";
import type { StoredEvent } from "./events.repo.js";

export { failQueuedDeliveries, type StatementRunner } from "./delivery-sql.js";

/** The columns the dispatcher needs, typed from the Prisma models they are read from. */
export type ClaimedDelivery = Pick<
  WebhookDelivery,
  "id" | "org_id" | "endpoint_id" | "event_id" | "attempt_count" | "last_response_status" | "next_trigger" | "is_test"
>;

/** A claimed row as the dispatcher holds it: with its day (`created_at`), which names its partition when its lease is renewed. */
export type LeasedDelivery = ClaimedDelivery & Pick<WebhookDelivery, "created_at">;

/** A row this dispatcher holds under a lease: what renewing the lease names. */
export interface HeldLease {
  id: string;
  createdAt: Date;
  leaseToken: string;
}

/** What a renewal found of the rows it was given. */
export interface Renewal {
  /** still leased under their tokens: no other dispatcher can have claimed them */
  owned: Set<string>;
  /** of those, the rows whose lease now runs `leaseMs` from the database's now */
  renewed: Set<string>;
}

/** The attempt row written with an outcome (docs/delivery.md#states); absent when no attempt was made. */
export type AttemptRecord = Pick<
  WebhookDeliveryAttempt,
  "id" | "trigger" | "url" | "started_at" | "duration_ms" | "response_body"
>;

export type QueueEndpoint = Pick<
  WebhookEndpoint,
  | "id"
  | "url"
  | "status"
  | "deleted_at"
  | "disabled_reason"
  | "payload_fields"
  | "payload_result_format"
  | "payload_responses_filter"
  | "payload_include_informational"
  | "auth_type"
  | "auth_config"
  | "auth_secret_enc"
  | "secret_enc"
  | "previous_secret_enc"
  | "previous_secret_expires_at"
  | "legacy_signature"
  | "rate_limit"
  | "delivery_order"
>;

export type QueueEvent = Omit<StoredEvent, "org_id" | "created_at">;

/** Which endpoints' rows a claim may take. */
export interface ClaimScope {
  /**
   * "all": every endpoint's (a dispatcher); "listeners": only those of `listeners` (an API
   * process without a dispatcher of its own still sends down the streams it holds).
   */
  kind: "all" | "listeners";
  /** the streams this process holds (their ids): of all listeners' rows, only those of the listeners they hold are claimed here */
  streams: readonly string[];
}

export interface ClaimRequest {
  /** a token unique to this claim; the outcome is recorded only while the row still carries it */
  leaseToken: string;
  /** at most this many rows */
  limit: number;
  leaseMs: number;
  /** the engine clock's now (see the header) */
  now: Date;
  scope: ClaimScope;
  /** per-endpoint cap, counting what this dispatcher already has in flight */
  perEndpoint: number;
  busyEndpoints: ReadonlyMap<string, number>;
  /** endpoints not to claim for now (resting after they could not be reached) */
  skipEndpoints: readonly string[];
  /** rows this dispatcher is still working on (whose lease may have run out): never claim them again */
  inFlight: readonly string[];
}

/** One attempt's outcome, as the recorder hands it over. */
export interface OutcomeRecord {
  deliveryId: string;
  /** the delivery's day (created_at), which names its partition */
  createdAt: Date;
  endpointId: string;
  leaseToken: string;
  /** decided by domain/delivery/outcome.ts (or unavailable.ts when no attempt was made) */
  update: DeliveryUpdate;
  /** what the attempt says about the endpoint; null when no attempt was made */
  effect: EndpointEffect | null;
  /** the attempt made, stored with the outcome; null when none was made (endpoint gone meanwhile) */
  attempt: AttemptRecord | null;
  /** when the outcome was decided: `updated_at`, and the moment a streak starts or an endpoint is disabled */
  at: Date;
}

export interface RecordResult {
  /** false when the lease was lost meanwhile (expired and claimed by another dispatcher) */
  recorded: boolean;
  /** set when this outcome disabled the endpoint */
  disabled: DisableReason | null;
  /** the operational notifications made about this outcome's endpoint by its batch, reported with one of its outcomes */
  notices: NoticeMade[];
}

const ENDPOINT_COLUMNS = [
  "id", "url", "status", "deleted_at", "disabled_reason", "payload_fields", "payload_result_format", "payload_responses_filter",
  "payload_include_informational", "auth_type", "auth_config", "auth_secret_enc", "secret_enc", "previous_secret_enc",
  "previous_secret_expires_at", "legacy_signature", "rate_limit", "delivery_order",
] as const satisfies readonly (keyof QueueEndpoint)[];
const EVENT_COLUMNS = ["id", "type", "audit_id", "question_set_id", "document_id", "result", "raw_result", "responses", "occurred_at", "is_test", "data"] as const satisfies readonly (keyof QueueEvent)[];

/** What the claim's throttles (domain/delivery/throttle.ts) held back. */
export interface ClaimThrottle {
  /** rate-limited endpoints whose due rows this claim left waiting for their limit */
  heldBack: number;
  /** milliseconds (on the database's clock) until the first rate-limited endpoint seen may be claimed again; null when none waits */
  waitMs: number | null;
}

/** A claim's rows with what sending them needs: their endpoints and events, read in the same statement. */
export interface Claim {
  rows: LeasedDelivery[];
  endpoints: Map<string, QueueEndpoint>;
  events: Map<string, QueueEvent>;
  throttle: ClaimThrottle;
  /**
   * Rows were queued before the day this claim read from (a delivery sent again by hand from an
   * old day, say): it could not see them, and the next claim will. Claim again at once.
   */
  lookAgain: boolean;
}

// The claim visits only endpoints it may take rows of, each through the per-endpoint due index
// (endpoint_id, next_attempt_at) over queued rows: an endpoint that is resting, or whose slots
// this dispatcher already holds, is never scanned, however many due rows it has. A single
// (status, next_attempt_at) index made every claim walk past such an endpoint's backlog at its
// head (bench/NOTES.md, "The delivery engine after issue 12").
//
// 1. `queued`: the endpoints with any queued row, one index probe each (a loose index scan); for
//    an API process without a dispatcher of its own, just the listeners whose streams it holds.
// 2. `open`: those not skipped, with room for more (`$4` minus what this dispatcher holds), and
//    not a webhook listener whose stream another process holds (or nobody does: a listener with
//    no stream gets no attempt).
// 3. `limited`, `paced`: an ordered endpoint's room is one row (docs/delivery.md#ordered-endpoints),
//    and a rate-limited endpoint's room is cut to what its throttle allows now
//    (domain/delivery/throttle.ts). Its row is locked for the statement (FOR NO KEY UPDATE, which
//    the foreign-key checks of deliveries being inserted do not wait for) and read in its latest
//    version, so claims of any number of workers take turns on one state; one that another claim
//    holds right now is passed over (SKIP LOCKED: that claim is taking its turn). Time is the
//    database's (clock_timestamp()): one clock for every worker.
// 4. `heads`: of those, the `$5` whose earliest claimable row is oldest, so the rows locked below
//    stay bounded by the batch however many endpoints have work. An ordered endpoint's only
//    claimable row is its head in event order, and only while it is due and not leased.
// 5. `candidates`: each such endpoint's earliest claimable rows, up to its room, locked without
//    waiting (SKIP LOCKED: another dispatcher's rows are passed over, never waited for).
// 6. `chosen`: the batch, oldest first across endpoints. Locked rows not chosen are unlocked when
//    the statement ends. The update names them by arrays of their ids and created_at days (ids
//    are unique): the table is partitioned by day on created_at, and arrays computed first let
//    the executor skip every partition no chosen row is in, then probe the key index in the
//    others (a join would let the planner scan every partition of a backlog it has no
//    statistics of yet).
// 7. `paced_on`: each rate-limited endpoint's throttle moves on one step (1/rate_limit seconds) per
//    row taken, and `throttle` tells the dispatcher when the next may be taken (a wake-up).
/**
 * The days the claim reads: from the day of the live floor (repos/delivery-sql.ts) that the claim
 * before it answered ($11), not from the floor it computes itself, up to a day past the engine's
 * now ($12: a row's created_at is its transaction's start, never later). Parameters prune before
 * the executor starts: the kept plan does not even set up the scans of the 30 and more older
 * days, nor of the week of empty days ahead, nor of the history (the DEFAULT partition, pruned
 * once today's and tomorrow's partitions cover the range), where a floor computed by the
 * statement left them set up and unrun at every probe, a cost that grew with the days kept
 * (bench/NOTES.md, "The claim's own days"). Unlike bounds computed as the statement runs, a pair
 * of parameters leaves the claim's plan as it was (test/db/claim-plans.test.ts holds the rows it
 * reads). The statement still answers the floor its snapshot sees: a row queued again before the
 * day it read from is claimed by the next claim, which the answer asks for at once
 * (Claim.lookAgain). An ordered endpoint's head must be its earliest queued row of all days (a
 * delivery queued again from an old day goes first, docs/delivery.md#ordered-endpoints): while
 * the floor the claim computes is before the days it read, whose head that row is cannot be known
 * from the days read, and no ordered endpoint's head is taken until the claim after.
 */
const CLAIM_DAYS: Floor = (alias) => `${alias}.created_at >= $11::timestamptz AND ${alias}.created_at < $12::timestamptz`;

/** The ceiling of CLAIM_DAYS: a day past the engine's now, room for the database's clock to be ahead of it. */
const CEILING_MS = DAY_MS;

/** How long before midnight a transaction may have started and still be read by the claims after it without a second look. */
const FLOOR_SLACK_MS = 60_000;

const DUE = (alias: string) => `
         ${alias}.status IN ${LIVE_SQL} AND ${CLAIM_DAYS(alias)} AND ${alias}.next_attempt_at <= $8::timestamptz
     AND (${alias}.locked_until IS NULL OR ${alias}.locked_until < $8::timestamptz)
     AND NOT (${alias}.id = ANY($1::uuid[]))`;

const QUEUED_HERE: Record<ClaimScope["kind"], string> = {
  all: queuedEndpoints(CLAIM_DAYS),
  listeners: "queued(endpoint_id) AS (SELECT l.id FROM webhook_endpoints l WHERE l.listener_stream_id = ANY($10::uuid[]))",
};

/** throttleBurst (domain/delivery/throttle.ts) of a rate in SQL. */
const BURST = (rate: string) => `ceil(${rate} / ${THROTTLE_STEPS_PER_SECOND}.0)::int`;
/** One step of a rate's pace, as an interval (microseconds: never rounded to a faster pace). */
const STEP = (rate: string) => `(interval '1 second' / ${rate})`;

const claimSql = (scope: ClaimScope["kind"]) => `
WITH RECURSIVE ${LIVE_FLOOR}, ${QUEUED_HERE[scope]}, open AS (
  SELECT q.endpoint_id, $4 - COALESCE(b.held, 0) AS room
    FROM queued q
    LEFT JOIN unnest($2::uuid[], $3::int[]) AS b(endpoint_id, held) ON b.endpoint_id = q.endpoint_id
   WHERE q.endpoint_id IS NOT NULL AND NOT (q.endpoint_id = ANY($9::uuid[])) AND $4 - COALESCE(b.held, 0) > 0
     -- a webhook listener's rows are claimed only by the process holding its stream ($10)
     AND NOT EXISTS (SELECT 1 FROM webhook_endpoints l
                      WHERE l.id = q.endpoint_id AND l.listener_connected_until IS NOT NULL
                        AND (l.listener_stream_id IS NULL OR NOT (l.listener_stream_id = ANY($10::uuid[]))))
), limited AS MATERIALIZED (
  -- allowance() of domain/delivery/throttle.ts
  SELECT b.id, b.rate_limit, b.base,
         LEAST(${BURST("b.rate_limit")}, GREATEST(0, ${BURST("b.rate_limit")} + floor(EXTRACT(EPOCH FROM b.now - b.base) * b.rate_limit)::int)) AS allowed
    FROM (SELECT t.id, t.rate_limit, t.now, GREATEST(COALESCE(t.throttle_next_at, t.now), t.now - ${STEP("t.rate_limit")}) AS base
            FROM (SELECT e.id, e.rate_limit, e.throttle_next_at, clock_timestamp() AS now
                    FROM webhook_endpoints e
                   WHERE e.id IN (SELECT endpoint_id FROM open) AND e.rate_limit IS NOT NULL
                     FOR NO KEY UPDATE OF e SKIP LOCKED) t) b
), paced AS (
  SELECT o.endpoint_id, x.delivery_order = 'ordered' AS ordered,
         CASE WHEN x.delivery_order = 'ordered' THEN LEAST(p.room, 1) ELSE p.room END AS room
    FROM open o
    JOIN webhook_endpoints x ON x.id = o.endpoint_id
    LEFT JOIN limited l ON l.id = o.endpoint_id
   CROSS JOIN LATERAL (
     SELECT CASE WHEN l.id IS NOT NULL THEN LEAST(o.room, l.allowed)
                 -- rate-limited, and another claim holds its throttle: its turn
                 WHEN x.rate_limit IS NOT NULL THEN 0
                 ELSE o.room END AS room) p
), heads AS (
  -- An unordered endpoint's earliest due row; an ordered endpoint's head in event order, only
  -- when it is due and not leased (a head in flight or retrying holds the rest).
  SELECT o.endpoint_id, o.room, h.head_id, h.head_created_at
    FROM paced o
   CROSS JOIN LATERAL (
     (SELECT d.next_attempt_at, NULL::uuid AS head_id, NULL::timestamptz AS head_created_at FROM webhook_deliveries d
       WHERE NOT o.ordered AND d.endpoint_id = o.endpoint_id AND ${DUE("d")}
       ORDER BY d.next_attempt_at LIMIT 1)
     UNION ALL
     SELECT f.next_attempt_at, f.id, f.created_at
       FROM (SELECT f.id, f.created_at, f.next_attempt_at, f.status, f.locked_until FROM webhook_deliveries f
              WHERE o.ordered AND f.endpoint_id = o.endpoint_id AND f.status IN ${LIVE_SQL} AND ${CLAIM_DAYS("f")}
                AND (SELECT at FROM live_floor) >= $11::timestamptz
              ORDER BY f.event_occurred_at, f.event_id LIMIT 1) f
      WHERE ${DUE("f")}) h
   WHERE o.room > 0
   ORDER BY h.next_attempt_at
   LIMIT $5
), candidates AS (
  SELECT c.id, c.created_at, c.next_attempt_at
    FROM heads h
   CROSS JOIN LATERAL (
     SELECT d.id, d.created_at, d.next_attempt_at FROM webhook_deliveries d
      WHERE h.head_id IS NULL AND d.endpoint_id = h.endpoint_id AND ${DUE("d")}
      ORDER BY d.next_attempt_at LIMIT h.room
        FOR UPDATE SKIP LOCKED) c
  UNION ALL
  -- an ordered endpoint's head, by its key
  SELECT * FROM (
    SELECT d.id, d.created_at, d.next_attempt_at FROM heads h
      JOIN webhook_deliveries d ON d.id = h.head_id AND d.created_at = h.head_created_at
     WHERE h.head_id IS NOT NULL AND ${DUE("d")}
       FOR UPDATE OF d SKIP LOCKED) ordered_head
), chosen AS (
  SELECT id, created_at FROM candidates ORDER BY next_attempt_at, id LIMIT $5
), claimed AS (
  UPDATE webhook_deliveries d
     SET locked_until = $8::timestamptz + $6::int * interval '1 millisecond', lease_owner = $7
   WHERE d.id = ANY (ARRAY(SELECT id FROM chosen)) AND d.created_at = ANY (ARRAY(SELECT created_at FROM chosen))
     AND ${CLAIM_DAYS("d")} AND ${createdWithin("d.created_at", "SELECT created_at FROM chosen")}
  RETURNING d.id, d.org_id, d.endpoint_id, d.event_id, d.attempt_count, d.last_response_status, d.next_trigger, d.is_test, d.created_at
), paced_on AS (
  UPDATE webhook_endpoints e
     SET throttle_next_at = l.base + t.n * ${STEP("l.rate_limit")}
    FROM limited l JOIN (SELECT endpoint_id, count(*)::int AS n FROM claimed GROUP BY endpoint_id) t ON t.endpoint_id = l.id
   WHERE e.id = l.id
  RETURNING e.id, e.throttle_next_at
), throttle AS (
  -- Held back: rate-limited endpoints with more due rows than their throttle let this claim take
  -- (at most allowed + 1 of them read). The wait: until the earliest of them may be claimed again.
  SELECT (count(*) FILTER (
            WHERE l.allowed < o.room
              AND (SELECT count(*) FROM (SELECT 1 FROM webhook_deliveries d
                                          WHERE d.endpoint_id = l.id AND ${DUE("d")} LIMIT l.allowed + 1) due) > l.allowed))::int AS held_back,
         ceil(EXTRACT(EPOCH FROM min(w.at) FILTER (WHERE w.at > clock_timestamp()) - clock_timestamp()) * 1000)::int AS wait_ms
    FROM limited l
    JOIN open o ON o.endpoint_id = l.id
    LEFT JOIN paced_on u ON u.id = l.id
   CROSS JOIN LATERAL (SELECT COALESCE(u.throttle_next_at, l.base) - (${BURST("l.rate_limit")} - 1) * ${STEP("l.rate_limit")} AS at) w
), numbered AS (
  SELECT c.*, row_number() OVER (PARTITION BY c.endpoint_id) AS ep_n, row_number() OVER (PARTITION BY c.event_id) AS ev_n
    FROM claimed c
), batch_events AS MATERIALIZED (
  -- by arrays of the batch's event ids and days, as the update above: the key index of each
  -- day partition the batch names, never a scan of the rest (an event's deliveries carry its
  -- created_at, so the floor bounds it too). Read once, then joined: inlined, the join below
  -- would read every event of the batch again for each row.
  SELECT ${EVENT_COLUMNS.map((c) => `v.${c}`).join(", ")}
    FROM events v
   WHERE v.id = ANY (ARRAY(SELECT event_id FROM numbered WHERE ev_n = 1))
     AND v.created_at = ANY (ARRAY(SELECT created_at FROM numbered WHERE ev_n = 1))
     AND ${CLAIM_DAYS("v")} AND ${createdWithin("v.created_at", "SELECT created_at FROM numbered WHERE ev_n = 1")}
)
-- The batch's endpoints and events come back in the same round trip, each once: on the first
-- row that names it.
-- The throttle's one row comes first, so a claim that takes nothing still answers it, and the
-- live floor as this statement's snapshot sees it.
SELECT n.id, n.org_id, n.endpoint_id, n.event_id, n.attempt_count, n.last_response_status, n.next_trigger, n.is_test, n.created_at,
       ${ENDPOINT_COLUMNS.map((c) => `e.${c} AS ep_${c}`).join(", ")},
       ${EVENT_COLUMNS.map((c) => `v.${c} AS ev_${c}`).join(", ")},
       t.held_back AS throttle_held_back, t.wait_ms AS throttle_wait_ms, (SELECT at FROM live_floor) AS live_floor
  FROM throttle t
  LEFT JOIN numbered n ON true
  LEFT JOIN webhook_endpoints e ON n.ep_n = 1 AND e.id = n.endpoint_id
  LEFT JOIN batch_events v ON n.ev_n = 1 AND v.id = n.event_id`;

const CLAIM: Record<ClaimScope["kind"], string> = { all: claimSql("all"), listeners: claimSql("listeners") };

/**
 * The claim as sent: one statement (exported for its plan tests, test/db/claim-plans.test.ts and
 * day-pruning.test.ts). `floor`: the day it reads the queue from (CLAIM_DAYS); null reads every day before tomorrow.
 */
export function claimStatement(r: ClaimRequest, floor: Date | null): { sql: string; params: unknown[]; name: string } {
  const held = [...r.busyEndpoints];
  return {
    sql: CLAIM[r.scope.kind],
    name: `ars_claim_${r.scope.kind}`,
    params: [
      r.inFlight, held.map(([id]) => id), held.map(([, n]) => n), r.perEndpoint, r.limit, r.leaseMs, r.leaseToken, r.now, r.skipEndpoints,
      r.scope.streams, floor ?? "-infinity", new Date(r.now.getTime() + CEILING_MS),
    ],
  };
}

/**
 * Renews the leases of rows a dispatcher holds, in one statement: `owned` are the rows still
 * leased under the token each was claimed with (a row recorded, failed by an endpoint's disable,
 * or claimed by another dispatcher after its lease ran out is not); those of them not locked by
 * another statement right now (SKIP LOCKED: the dispatcher's own recorder, usually, which is
 * ending the lease anyway) get `leaseMs` more from the database's now. Never waits on a row lock,
 * so it cannot deadlock with a record batch that updates the same rows in another order. $6 and
 * $7 bound the rows' days (dayBounds of repos/day-partition-sql.ts).
 */
const RENEW = `
WITH held AS (
  SELECT * FROM unnest($1::uuid[], $2::text[]) AS h(id, lease_owner)
), owned AS (
  SELECT d.id, d.created_at FROM webhook_deliveries d JOIN held h ON h.id = d.id AND h.lease_owner = d.lease_owner
   WHERE d.id = ANY($1::uuid[]) AND d.created_at = ANY($3::timestamptz[]) AND d.created_at BETWEEN $6 AND $7
     AND d.status IN ${LIVE_SQL}
), free AS (
  SELECT d.id, d.created_at FROM webhook_deliveries d
   WHERE d.id = ANY (ARRAY(SELECT id FROM owned)) AND d.created_at = ANY (ARRAY(SELECT created_at FROM owned))
     AND d.created_at BETWEEN $6 AND $7
     AND d.lease_owner = ANY($2::text[]) AND d.status IN ${LIVE_SQL}
     FOR UPDATE SKIP LOCKED
), renewed AS (
  UPDATE webhook_deliveries d
     SET locked_until = $5::timestamptz + $4::int * interval '1 millisecond'
   WHERE d.id = ANY (ARRAY(SELECT id FROM free)) AND d.created_at = ANY (ARRAY(SELECT created_at FROM free))
     AND d.created_at BETWEEN $6 AND $7
  RETURNING d.id
)
SELECT o.id, r.id IS NOT NULL AS renewed FROM owned o LEFT JOIN renewed r ON r.id = o.id`;

const ENDPOINTS = `SELECT ${ENDPOINT_COLUMNS.join(", ")} FROM webhook_endpoints WHERE id = ANY($1::uuid[])`;

/**
 * A row of CLAIM: the delivery, then its endpoint's and event's columns (NULL but on the first row
 * naming them), and the throttle's answer (the same on every row). A claim that took no row
 * answers one row with only the throttle's columns.
 */
type ClaimRow = LeasedDelivery & { [K in keyof QueueEndpoint as `ep_${K}`]: QueueEndpoint[K] } & { [K in keyof QueueEvent as `ev_${K}`]: QueueEvent[K] } & {
  throttle_held_back: number;
  throttle_wait_ms: number | null;
  live_floor: Date | null;
};

/** Splits a claim row into the delivery and, where the row carries them, its endpoint and event. */
function splitClaimRow(r: ClaimRow, into: Claim): void {
  into.throttle = { heldBack: r.throttle_held_back, waitMs: r.throttle_wait_ms };
  // the throttle's row of a claim that took nothing
  if (!r.id) return;
  into.rows.push({
    id: r.id, org_id: r.org_id, endpoint_id: r.endpoint_id, event_id: r.event_id,
    attempt_count: r.attempt_count, last_response_status: r.last_response_status, next_trigger: r.next_trigger, is_test: r.is_test, created_at: r.created_at,
  });
  if (r.ep_id) {
    into.endpoints.set(r.ep_id, {
      id: r.ep_id, url: r.ep_url, status: r.ep_status, deleted_at: r.ep_deleted_at, disabled_reason: r.ep_disabled_reason,
      payload_fields: r.ep_payload_fields, payload_result_format: r.ep_payload_result_format, payload_responses_filter: r.ep_payload_responses_filter,
      payload_include_informational: r.ep_payload_include_informational, auth_type: r.ep_auth_type, auth_config: r.ep_auth_config,
      auth_secret_enc: r.ep_auth_secret_enc, secret_enc: r.ep_secret_enc, previous_secret_enc: r.ep_previous_secret_enc,
      previous_secret_expires_at: r.ep_previous_secret_expires_at, legacy_signature: r.ep_legacy_signature, rate_limit: r.ep_rate_limit,
      delivery_order: r.ep_delivery_order,
    });
  }
  if (r.ev_id) {
    into.events.set(r.ev_id, {
      id: r.ev_id, type: r.ev_type, audit_id: r.ev_audit_id, question_set_id: r.ev_question_set_id, document_id: r.ev_document_id,
      result: r.ev_result, raw_result: r.ev_raw_result, responses: r.ev_responses, occurred_at: r.ev_occurred_at, is_test: r.ev_is_test,
      data: r.ev_data,
    });
  }
}

/**
 * A batch of outcomes in one statement: every delivery row still leased by its claim, the attempt
 * row of each (docs/delivery.md#states: same statement as the outcome), and the endpoints' failure
 * streaks ($2). The rows are named by their ids and days, within the least and greatest of those
 * days ($3, $4: dayBounds of repos/day-partition-sql.ts), so only the day partitions that hold
 * them are set up and read.
 */
const RECORD_BATCH = `
WITH input AS (
  SELECT * FROM jsonb_to_recordset($1::jsonb) AS x(
    delivery_id uuid, created_at timestamptz, lease_token text, status text, attempt_count int, next_attempt_at timestamptz,
    last_response_status int, last_error_code text, last_error_message text, delivered_at timestamptz, next_trigger text,
    at timestamptz, attempt_id uuid, trigger text, url text, started_at timestamptz, duration_ms int, response_body text, exhausted boolean)
), d AS (
  UPDATE webhook_deliveries w
     SET status = i.status, attempt_count = i.attempt_count, next_attempt_at = COALESCE(i.next_attempt_at, w.next_attempt_at),
         last_response_status = i.last_response_status, last_error_code = i.last_error_code,
         last_error_message = i.last_error_message, delivered_at = i.delivered_at,
         locked_until = NULL, lease_owner = NULL, updated_at = i.at, next_trigger = i.next_trigger
    FROM input i
   WHERE w.id = ANY (ARRAY(SELECT delivery_id FROM input)) AND w.created_at = ANY (ARRAY(SELECT created_at FROM input))
     AND w.created_at BETWEEN $3 AND $4
     AND w.id = i.delivery_id AND w.created_at = i.created_at AND w.lease_owner = i.lease_token AND w.status IN ${LIVE_SQL}
  RETURNING w.id, w.org_id, w.endpoint_id, w.event_id, w.event_type
), a AS (
  INSERT INTO webhook_delivery_attempts
         (id, org_id, delivery_id, endpoint_id, attempt_number, trigger, url, started_at, duration_ms,
          response_status, response_body, error_code, error_message)
  SELECT i.attempt_id, d.org_id, d.id, d.endpoint_id, i.attempt_count, i.trigger, i.url, i.started_at, i.duration_ms,
         i.last_response_status, i.response_body, i.last_error_code, i.last_error_message
    FROM d JOIN input i ON i.delivery_id = d.id
   WHERE i.attempt_id IS NOT NULL
), h AS (
  -- \`was\`: the row as this statement found it, so the change of the outstanding notification is known
  UPDATE webhook_endpoints e SET failing_since = s.failing_since, failing_notice_at = s.failing_notice_at, updated_at = s.at
    FROM jsonb_to_recordset($2::jsonb) AS s(endpoint_id uuid, failing_since timestamptz, failing_notice_at timestamptz, at timestamptz),
         webhook_endpoints was
   WHERE e.id = s.endpoint_id AND was.id = e.id AND e.status = 'enabled'
     AND (e.failing_since IS DISTINCT FROM s.failing_since OR e.failing_notice_at IS DISTINCT FROM s.failing_notice_at)
  RETURNING e.id, e.org_id, e.url, e.kind, e.listener_connected_until, e.failing_since, s.at,
            was.failing_notice_at AS notice_before, e.failing_notice_at AS notice_after
), notices AS (
  -- a streak's notification made (failing) or ended (recovered): domain/delivery/notices.ts
  SELECT h.org_id, CASE WHEN h.notice_before IS NULL THEN 'webhook_endpoint.failing' ELSE 'webhook_endpoint.recovered' END AS type, h.at,
         ${noticeDataSql({ endpointId: "h.id", url: "h.url", failingSince: "COALESCE(h.notice_after, h.notice_before)", disabledReason: "NULL::text", delivery: "NULL::jsonb" })} AS data
    FROM h
   WHERE ${NOTIFIES("h")} AND (h.notice_before IS NULL) <> (h.notice_after IS NULL)
  UNION ALL
  SELECT d.org_id, 'webhook_delivery.exhausted', i.at,
         ${noticeDataSql({
           endpointId: "e.id", url: "e.url", failingSince: "COALESCE(sh.failing_since, e.failing_since)", disabledReason: "NULL::text",
           delivery: exhaustedDeliverySql({
             id: "d.id", eventId: "d.event_id", eventType: "d.event_type", attemptCount: "i.attempt_count", status: "i.last_response_status",
             errorCode: "i.last_error_code", errorMessage: "i.last_error_message",
           }),
         })}
    FROM d JOIN input i ON i.delivery_id = d.id
    JOIN webhook_endpoints e ON e.id = d.endpoint_id AND ${NOTIFIES("e")}
    LEFT JOIN h sh ON sh.id = d.endpoint_id
   WHERE i.exhausted
), ${noticeFanOutSql("notices")}, untaken AS MATERIALIZED (
  -- outcomes the update did not take: their rows changed hands, or were recorded already
  SELECT i.delivery_id, i.attempt_id, i.started_at FROM input i
   WHERE i.attempt_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM d WHERE d.id = i.delivery_id)
)
SELECT 'recorded' AS kind, id::text AS id FROM d
UNION ALL
SELECT 'notice:' || type, endpoint_id FROM notice_events
UNION ALL
-- Recorded already: an outcome whose earlier write committed but whose answer was lost with its
-- connection is written again by the recorder, and its attempt row (written in the same
-- statement) shows it was recorded. One key lookup per untaken outcome, none in the usual case
-- (a scalar subquery over the materialized rest, so it never becomes a join over the history).
SELECT 'recorded', u.delivery_id::text FROM untaken u
 WHERE (SELECT true FROM webhook_delivery_attempts a
         WHERE a.id = u.attempt_id AND a.started_at = u.started_at AND a.delivery_id = u.delivery_id LIMIT 1)`;

const LOCK_ENDPOINTS = `
SELECT id, failing_since, failing_notice_at
  FROM webhook_endpoints
 WHERE id = ANY($1::uuid[]) AND status = 'enabled' AND deleted_at IS NULL
 ORDER BY id
   FOR NO KEY UPDATE`;

const DISABLE = `
UPDATE webhook_endpoints
   SET status = 'disabled', disabled_reason = $2, disabled_at = $3, updated_at = $3
 WHERE id = $1 AND status = 'enabled' AND deleted_at IS NULL
RETURNING id`;

const DEADLOCK = "40P01";
const MAX_RECORD_TRIES = 4;

function outcomeJson(o: OutcomeRecord, u: DeliveryUpdate, exhausted: boolean) {
  const a = o.attempt;
  return {
    delivery_id: o.deliveryId,
    created_at: o.createdAt,
    lease_token: o.leaseToken,
    status: u.status,
    attempt_count: u.attempt_count,
    next_attempt_at: u.next_attempt_at,
    last_response_status: u.last_response_status,
    last_error_code: u.last_error_code,
    last_error_message: u.last_error_message,
    delivered_at: u.delivered_at,
    next_trigger: u.next_trigger,
    at: o.at,
    attempt_id: a?.id ?? null,
    trigger: a?.trigger ?? null,
    url: a?.url ?? null,
    started_at: a?.started_at ?? null,
    duration_ms: a?.duration_ms ?? null,
    response_body: a?.response_body ?? null,
    exhausted,
  };
}

/** What a batch's statement wrote: the outcomes it recorded, and the notifications it made. */
interface Written {
  recorded: Set<string>;
  notices: NoticeMade[];
}

async function writeBatch(
  tx: StatementRunner,
  outcomes: readonly OutcomeRecord[],
  updates: readonly DeliveryUpdate[],
  streaks: readonly StreakChange[],
  disabled: ReadonlyMap<string, unknown>,
): Promise<Written> {
  const streakRows = streaks.map((s) => ({ endpoint_id: s.endpointId, failing_since: s.failingSince, failing_notice_at: s.failingNoticeAt, at: s.at }));
  const input = outcomes.map((o, i) =>
    outcomeJson(o, updates[i]!, exhaustsRetries(o.update, o.effect, o.attempt?.trigger ?? null, disabled.has(o.endpointId))),
  );
  const rows = await tx.query<{ kind: string; id: string }>(
    RECORD_BATCH,
    [JSON.stringify(input), JSON.stringify(streakRows), ...dayBounds(outcomes.map((o) => o.createdAt))],
    { name: "ars_record_batch" },
  );
  const written: Written = { recorded: new Set(), notices: [] };
  for (const r of rows) {
    if (r.kind === "recorded") written.recorded.add(r.id);
    else written.notices.push({ type: r.kind.slice("notice:".length), endpointId: r.id });
  }
  return written;
}

export function deliveriesQueueRepo(db: Database) {
  /** Successes only: one autocommit statement, which also ends the streaks they end. */
  async function recordHealthy(outcomes: readonly OutcomeRecord[]): Promise<RecordResult[]> {
    // successes end a streak whatever it was: nothing to read or lock first
    const { streaks, updates, disabled } = batchHealth(outcomes, null, Infinity);
    const written = await writeBatch(db, outcomes, updates, streaks, disabled);
    return results(outcomes, written, new Map());
  }

  /** Each outcome's result; an endpoint's notifications are reported with its first recorded outcome. */
  function results(outcomes: readonly OutcomeRecord[], written: Written, disabled: ReadonlyMap<string, { reason: DisableReason; at: Date }>): RecordResult[] {
    const unreported = new Map<string, NoticeMade[]>();
    for (const n of written.notices) unreported.set(n.endpointId, [...(unreported.get(n.endpointId) ?? []), n]);
    return outcomes.map((o) => {
      const ok = written.recorded.has(o.deliveryId);
      const d = disabled.get(o.endpointId);
      const notices = ok ? (unreported.get(o.endpointId) ?? []) : [];
      if (notices.length) unreported.delete(o.endpointId);
      // reported once, by the outcome that tipped the endpoint over
      return { recorded: ok, disabled: ok && d && d.at === o.at ? d.reason : null, notices };
    });
  }

  /**
   * Failures may change an endpoint's health: its row is locked and its stored streak read in the
   * transaction that records them, and the health rule (domain/endpoint-health.ts) decides from
   * that what is written.
   */
  function recordWithHealth(outcomes: readonly OutcomeRecord[], disableAfterMs: number): Promise<RecordResult[]> {
    return db.transaction(async (tx) => {
      const endpointIds = [...new Set(outcomes.filter((o) => o.effect).map((o) => o.endpointId))];
      const stored = await tx.query<{ id: string; failing_since: Date | null; failing_notice_at: Date | null }>(LOCK_ENDPOINTS, [endpointIds], {
        name: "ars_record_lock_endpoints",
      });
      const health = new Map(stored.map((r) => [r.id, { failingSince: r.failing_since, failingNoticeAt: r.failing_notice_at }]));
      const { streaks, disabled, updates } = batchHealth(outcomes, health, disableAfterMs);
      const written = await writeBatch(tx, outcomes, updates, streaks, disabled);
      for (const [endpointId, d] of disabled) {
        const [row] = await tx.query(DISABLE, [endpointId, d.reason, d.at]);
        if (!row) {
          disabled.delete(endpointId);
          continue;
        }
        await failQueuedDeliveries(tx, endpointId, d.reason, d.at);
        written.notices.push(...(await notifyDisabled(tx, endpointId, d.at)));
      }
      return results(outcomes, written, disabled);
    });
  }

  /**
   * The day the next claim reads the queue from (CLAIM_DAYS): the start of the day of the live
   * floor the last claim answered; null, before the first, reads every day.
   */
  let floor: Date | null = null;

  return {
    async claim(r: ClaimRequest): Promise<Claim> {
      const claim: Claim = { rows: [], endpoints: new Map(), events: new Map(), throttle: { heldBack: 0, waitMs: null }, lookAgain: false };
      if (r.limit <= 0) return claim;
      // prepared once per connection: planning it over the day partitions costs more than running it
      const used = floor;
      const { sql, params, name } = claimStatement(r, used);
      const rows = await db.query<ClaimRow>(sql, params, { name });
      for (const row of rows) splitClaimRow(row, claim);
      const answered = rows[0]?.live_floor ?? null;
      // The next claim reads from the start of that day: the floor only prunes day partitions,
      // and a floor within the day hid every row committed after a claim that found the queue
      // empty (its created_at is its transaction's start, before that claim's now), so each
      // event of a quiet queue took two claims (bench/NOTES.md, "Claims that find nothing").
      // A row carrying an earlier day than that (a transaction open across midnight, a delivery
      // sent again by hand) shows in the next claim's answer, and it looks again.
      floor = dayStart(new Date((answered ?? r.now).getTime() - FLOOR_SLACK_MS));
      claim.lookAgain = used !== null && answered !== null && answered < used;
      return claim;
    },

    /** Gives rows back before their lease runs out: held rows a dispatcher will not send (stopping, resting, lease running short). */
    async release(rows: readonly Omit<HeldLease, "leaseToken">[], leaseToken: string): Promise<void> {
      if (!rows.length) return;
      await db.query(
        `UPDATE webhook_deliveries SET locked_until = NULL, lease_owner = NULL
          WHERE id = ANY($1::uuid[]) AND created_at = ANY($3::timestamptz[]) AND created_at BETWEEN $4 AND $5
            AND lease_owner = $2`,
        [rows.map((r) => r.id), leaseToken, [...new Set(rows.map((r) => r.createdAt.toISOString()))], ...dayBounds(rows.map((r) => r.createdAt))],
      );
    },

    /** Renews the leases of rows still held under their claims' tokens (RENEW), to `leaseMs` from `now`. */
    async renew(held: readonly HeldLease[], leaseMs: number, now: Date): Promise<Renewal> {
      const renewal: Renewal = { owned: new Set(), renewed: new Set() };
      if (!held.length) return renewal;
      const rows = await db.query<{ id: string; renewed: boolean }>(RENEW, [
        held.map((h) => h.id), held.map((h) => h.leaseToken), [...new Set(held.map((h) => h.createdAt.toISOString()))], leaseMs, now,
        ...dayBounds(held.map((h) => h.createdAt)),
      ], { name: "ars_renew_leases" });
      for (const r of rows) {
        renewal.owned.add(r.id);
        if (r.renewed) renewal.renewed.add(r.id);
      }
      return renewal;
    },

    /** The endpoints of a batch, in one query (deleted ones included: their deliveries fail). */
    async endpoints(ids: readonly string[]): Promise<Map<string, QueueEndpoint>> {
      const rows = ids.length ? await db.query<QueueEndpoint>(ENDPOINTS, [[...new Set(ids)]], { name: "ars_queue_endpoints" }) : [];
      return new Map(rows.map((row) => [row.id, row]));
    },

    /**
     * Stores a batch of outcomes with their attempt rows, each only if its row is still leased
     * under its claim's token (otherwise that one changes nothing): one statement for the
     * endpoints with only successes in the batch, one transaction for those with a failure, which
     * may change their health. Each of the two commits or fails as a whole and on its own, and
     * each outcome's result says which happened to it: written (recorded or not), or rejected
     * with the error of its half. Results are in the order of `outcomes`.
     */
    async recordBatch(outcomes: readonly OutcomeRecord[], disableAfterMs: number): Promise<PromiseSettledResult<RecordResult>[]> {
      if (!outcomes.length) return [];
      // Endpoints with a failure in the batch go through the locked transaction; the others'
      // outcomes are one autocommit statement beside it, so a failing endpoint never makes the
      // healthy endpoints' records wait on its lock and round trips.
      const failing = new Set(outcomes.filter((o) => o.effect !== null && o.effect !== "healthy").map((o) => o.endpointId));
      const healthy = outcomes.filter((o) => !failing.has(o.endpointId));
      const rest = outcomes.filter((o) => failing.has(o.endpointId));
      const write = async (part: readonly OutcomeRecord[], withHealth: boolean): Promise<RecordResult[]> => {
        if (!part.length) return [];
        for (let tries = 1; ; tries++) {
          try {
            return withHealth ? await recordWithHealth(part, disableAfterMs) : await recordHealthy(part);
          } catch (err) {
            if (errorField(err, "code") !== DEADLOCK || tries >= MAX_RECORD_TRIES) throw err;
          }
        }
      };
      const halves = await Promise.allSettled([write(healthy, false), write(rest, true)]);
      const results = new Map<OutcomeRecord, PromiseSettledResult<RecordResult>>();
      [healthy, rest].forEach((part, h) => {
        const half = halves[h]!;
        part.forEach((o, i) => results.set(o, half.status === "fulfilled" ? { status: "fulfilled", value: half.value[i]! } : half));
      });
      return outcomes.map((o) => results.get(o)!);
    },
  };
}

export type DeliveriesQueueRepo = ReturnType<typeof deliveriesQueueRepo>;
