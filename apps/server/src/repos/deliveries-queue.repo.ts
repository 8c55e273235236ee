// The delivery rows as a work queue (DESIGN.md §2: "the delivery row is the queue"). Raw SQL,
// because what matters here is exactly what Prisma cannot say: FOR UPDATE SKIP LOCKED, leases
// compared against the database clock, and conditional multi-table updates in one transaction.
//
// Lock order, everywhere a transaction takes more than one lock: the endpoint row first, then
// delivery rows. The claim takes only delivery rows and never waits (SKIP LOCKED), and the
// endpoint repository's disable/delete also goes endpoint → deliveries, so no cycle can form.
import type { DeliveryErrorCode } from "@audit-review/api-types/internal";
import type { Database, SqlExecutor } from "../db/client.js";
import type { DeliveryUpdate, EndpointEffect } from "../delivery/outcome.js";
import type { WebhookDelivery, WebhookDeliveryAttempt, WebhookEndpoint } from "../generated/prisma/client.js";
import type { StoredEvent } from "./events.repo.js";

/** The columns the dispatcher needs, typed from the Prisma models they are read from. */
export type ClaimedDelivery = Pick<
  WebhookDelivery,
  "id" | "org_id" | "endpoint_id" | "event_id" | "attempt_count" | "last_response_status" | "next_trigger"
>;

/** The attempt row written with an outcome (DESIGN.md §7); absent when no attempt was made. */
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
  | "failing_since"
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
>;

export type QueueEvent = Omit<StoredEvent, "org_id" | "created_at">;

export interface ClaimRequest {
  /** a token unique to this claim; the outcome is recorded only while the row still carries it */
  leaseToken: string;
  /** at most this many rows */
  limit: number;
  leaseMs: number;
  /** per-endpoint cap, counting what this dispatcher already has in flight */
  perEndpoint: number;
  busyEndpoints: ReadonlyMap<string, number>;
  /** rows this dispatcher is still working on (whose lease may have run out): never claim them again */
  inFlight: readonly string[];
}

export interface RecordRequest {
  deliveryId: string;
  endpointId: string;
  leaseToken: string;
  update: DeliveryUpdate;
  endpoint: EndpointEffect | null;
  /** the attempt made, stored with the outcome; null when none was made (endpoint gone meanwhile) */
  attempt: AttemptRecord | null;
  now: Date;
  /** a failure streak that started before this disables the endpoint (`failing`) */
  failingDisableAfterMs: number;
}

export interface RecordResult {
  /** false when the lease was lost meanwhile (expired and claimed by another dispatcher) */
  recorded: boolean;
  /** set when this outcome disabled the endpoint */
  disabled: "gone" | "failing" | null;
}

export interface QueueState {
  /** the earliest moment a pending/retrying row becomes claimable; null when there is none */
  nextAt: Date | null;
  /** the database's clock, which leases and due times are compared against */
  dbNow: Date;
}

const LIVE = "('pending', 'retrying')";

// Candidates are taken in due order and locked without waiting; then at most `perEndpoint` per
// endpoint (minus what is in flight) are leased. Scanned rows that are not chosen are unlocked
// again when the statement ends. The scan is wider than the batch so one busy endpoint with a
// long backlog does not hide every other endpoint's due rows.
const CLAIM = `
WITH candidates AS (
  SELECT id, endpoint_id, next_attempt_at
    FROM webhook_deliveries
   WHERE status IN ${LIVE}
     AND next_attempt_at <= now()
     AND (locked_until IS NULL OR locked_until < now())
     AND NOT (id = ANY($1::uuid[]))
   ORDER BY next_attempt_at, id
   LIMIT $2
   FOR UPDATE SKIP LOCKED
), ranked AS (
  SELECT c.id, c.next_attempt_at,
         row_number() OVER (PARTITION BY c.endpoint_id ORDER BY c.next_attempt_at, c.id) + COALESCE(b.busy, 0) AS slot
    FROM candidates c
    LEFT JOIN unnest($3::uuid[], $4::int[]) AS b(endpoint_id, busy) ON b.endpoint_id = c.endpoint_id
), chosen AS (
  SELECT id FROM ranked WHERE slot <= $5 ORDER BY next_attempt_at, id LIMIT $6
)
UPDATE webhook_deliveries d
   SET locked_until = now() + $7::int * interval '1 millisecond', lease_owner = $8
  FROM chosen
 WHERE d.id = chosen.id
RETURNING d.id, d.org_id, d.endpoint_id, d.event_id, d.attempt_count, d.last_response_status, d.next_trigger`;

const ENDPOINTS = `
SELECT id, url, status, deleted_at, failing_since, payload_fields, payload_result_format,
       payload_responses_filter, payload_include_informational, auth_type, auth_config,
       auth_secret_enc, secret_enc, previous_secret_enc, previous_secret_expires_at, legacy_signature
  FROM webhook_endpoints
 WHERE id = ANY($1::uuid[])`;

const EVENTS = `
SELECT id, type, audit_id, question_set_id, document_id, result, raw_result, responses, occurred_at
  FROM events
 WHERE id = ANY($1::uuid[])`;

// A manual or test trigger is spent by the attempt it started; later ones follow the schedule
// (a test delivery's attempts all stay tests).
const NEXT_TRIGGER = "CASE WHEN is_test THEN 'test' ELSE 'scheduled' END";

// The attempt row, from the delivery row the outcome was just written to ($11 is the
// "healthy" flag of RECORD_HEALTHY; the attempt's own values are $12…$17).
const ATTEMPT_FROM_D = `
INSERT INTO webhook_delivery_attempts
       (id, org_id, delivery_id, endpoint_id, attempt_number, trigger, url, started_at, duration_ms,
        response_status, response_body, error_code, error_message)
SELECT $12::uuid, d.org_id, d.id, d.endpoint_id, $4::int, $13::text, $14::text, $15::timestamptz, $16::int,
       $6::int, $17::text, $7::text, $8::text
  FROM d
 WHERE $12::uuid IS NOT NULL`;

const RECORD = `
WITH d AS (
  UPDATE webhook_deliveries
     SET status = $3, attempt_count = $4, next_attempt_at = COALESCE($5, next_attempt_at),
         last_response_status = $6, last_error_code = $7, last_error_message = $8, delivered_at = $9,
         locked_until = NULL, lease_owner = NULL, updated_at = $10, next_trigger = ${NEXT_TRIGGER}
   -- $11 is RECORD_HEALTHY's; named here only so both statements take one parameter list
   WHERE id = $1 AND lease_owner = $2 AND status IN ${LIVE} AND $11::boolean IS NOT NULL
  RETURNING id, org_id, endpoint_id
), a AS (${ATTEMPT_FROM_D}
)
SELECT id FROM d`;

/**
 * The common case (a success, or no effect on the endpoint) in one autocommit statement: the
 * endpoint row is written, and so locked, only when a failure streak is to be cleared.
 */
const RECORD_HEALTHY = `
WITH d AS (
  UPDATE webhook_deliveries
     SET status = $3, attempt_count = $4, next_attempt_at = COALESCE($5, next_attempt_at),
         last_response_status = $6, last_error_code = $7, last_error_message = $8, delivered_at = $9,
         locked_until = NULL, lease_owner = NULL, updated_at = $10, next_trigger = ${NEXT_TRIGGER}
   WHERE id = $1 AND lease_owner = $2 AND status IN ${LIVE}
  RETURNING id, org_id, endpoint_id
), a AS (${ATTEMPT_FROM_D}
), cleared AS (
  UPDATE webhook_endpoints e SET failing_since = NULL, updated_at = $10
    FROM d
   WHERE $11 AND e.id = d.endpoint_id AND e.failing_since IS NOT NULL
  RETURNING e.id
)
SELECT id FROM d`;

const DISABLE = `
UPDATE webhook_endpoints
   SET status = 'disabled', disabled_reason = $2, disabled_at = $3, updated_at = $3
 WHERE id = $1 AND status = 'enabled' AND deleted_at IS NULL
RETURNING id`;

const FAIL_QUEUED = `
UPDATE webhook_deliveries
   SET status = 'failed', last_error_code = $2, last_error_message = $3,
       locked_until = NULL, lease_owner = NULL, updated_at = $4
 WHERE endpoint_id = $1 AND status IN ${LIVE}`;

class LeaseLost extends Error {}

const DISABLED_MESSAGES = {
  gone: "the endpoint was disabled: its receiver answered 410 Gone",
  failing: "the endpoint was disabled: its deliveries kept failing",
} as const;

/** $1…$17 of RECORD and RECORD_HEALTHY ($11: whether a failure streak is to be cleared). */
function recordParams(r: RecordRequest, healthy: boolean): unknown[] {
  const u = r.update;
  const a = r.attempt;
  return [
    r.deliveryId, r.leaseToken, u.status, u.attempt_count, u.next_attempt_at, u.last_response_status, u.last_error_code,
    u.last_error_message, u.delivered_at, r.now, healthy,
    a?.id ?? null, a?.trigger ?? null, a?.url ?? null, a?.started_at ?? null, a?.duration_ms ?? null, a?.response_body ?? null,
  ];
}

export function deliveriesQueueRepo(db: Database) {
  async function disable(tx: SqlExecutor, endpointId: string, reason: "gone" | "failing", now: Date): Promise<boolean> {
    const rows = await tx.query(DISABLE, [endpointId, reason, now]);
    if (!rows.length) return false;
    // Like a manual disable: what is still queued for it fails now rather than on its next claim.
    const code: DeliveryErrorCode = "endpoint_disabled";
    await tx.query(FAIL_QUEUED, [endpointId, code, DISABLED_MESSAGES[reason], now]);
    return true;
  }

  return {
    async claim(r: ClaimRequest): Promise<ClaimedDelivery[]> {
      if (r.limit <= 0) return [];
      const busy = [...r.busyEndpoints.entries()];
      const scan = Math.min(Math.max(r.limit * 4, 100), 1000);
      return db.query<ClaimedDelivery>(CLAIM, [
        r.inFlight,
        scan,
        busy.map(([id]) => id),
        busy.map(([, n]) => n),
        r.perEndpoint,
        r.limit,
        r.leaseMs,
        r.leaseToken,
      ]);
    },

    /** Gives rows back before their lease runs out (a stopping dispatcher that will not send them). */
    async release(ids: readonly string[], leaseToken: string): Promise<void> {
      if (!ids.length) return;
      await db.query(
        `UPDATE webhook_deliveries SET locked_until = NULL, lease_owner = NULL
          WHERE id = ANY($1::uuid[]) AND lease_owner = $2`,
        [ids, leaseToken],
      );
    },

    /** The endpoints of a batch, in one query (deleted ones included: their deliveries fail). */
    async endpoints(ids: readonly string[]): Promise<Map<string, QueueEndpoint>> {
      const rows = ids.length ? await db.query<QueueEndpoint>(ENDPOINTS, [[...new Set(ids)]]) : [];
      return new Map(rows.map((row) => [row.id, row]));
    },

    /** The events of a batch, in one query. */
    async events(ids: readonly string[]): Promise<Map<string, QueueEvent>> {
      const rows = ids.length ? await db.query<QueueEvent>(EVENTS, [[...new Set(ids)]]) : [];
      return new Map(rows.map((row) => [row.id, row]));
    },

    /**
     * Stores an attempt's outcome, its attempt row and its effect on the endpoint in one
     * statement or transaction, only if the row is still leased under `leaseToken`; otherwise
     * nothing changes.
     */
    async record(r: RecordRequest): Promise<RecordResult> {
      if (!r.endpoint || r.endpoint.kind === "healthy") {
        const rows = await db.query(RECORD_HEALTHY, recordParams(r, r.endpoint?.kind === "healthy"));
        return { recorded: rows.length > 0, disabled: null };
      }
      try {
        return await db.transaction(async (tx) => {
          const [endpoint] = await tx.query<{ failing_since: Date | null }>(
            "SELECT failing_since FROM webhook_endpoints WHERE id = $1 FOR UPDATE",
            [r.endpointId],
          );
          const updated = await tx.query(RECORD, recordParams(r, false));
          if (!updated.length) throw new LeaseLost();

          let disabled: RecordResult["disabled"] = null;
          const effect = r.endpoint;
          if (effect?.kind === "healthy" && endpoint?.failing_since) {
            await tx.query("UPDATE webhook_endpoints SET failing_since = NULL, updated_at = $2 WHERE id = $1", [r.endpointId, r.now]);
          } else if (effect?.kind === "failing") {
            // The streak's start as stored now wins: another attempt may have opened or ended it
            // since this one was claimed. No stored streak: this failure starts one.
            const since = endpoint?.failing_since ?? r.now;
            if (!endpoint?.failing_since) {
              await tx.query("UPDATE webhook_endpoints SET failing_since = $2, updated_at = $3 WHERE id = $1", [r.endpointId, since, r.now]);
            }
            // Re-checked against the stored streak: a success elsewhere may just have ended it.
            const stillFailing = r.now.getTime() - since.getTime() > r.failingDisableAfterMs;
            if (effect.disable && stillFailing && (await disable(tx, r.endpointId, "failing", r.now))) {
              disabled = "failing";
            }
          } else if (effect?.kind === "gone" && (await disable(tx, r.endpointId, "gone", r.now))) {
            disabled = "gone";
          }
          return { recorded: true, disabled };
        });
      } catch (error) {
        if (error instanceof LeaseLost) return { recorded: false, disabled: null };
        throw error;
      }
    },

    /** For drain(): when the next row becomes claimable (due and not leased), by the database clock. */
    async state(): Promise<QueueState> {
      const [row] = await db.query<{ next_at: Date | null; db_now: Date }>(
        `SELECT min(GREATEST(next_attempt_at, COALESCE(locked_until, next_attempt_at))) AS next_at, now() AS db_now
           FROM webhook_deliveries
          WHERE status IN ${LIVE}`,
      );
      return { nextAt: row?.next_at ?? null, dbNow: row?.db_now ?? new Date() };
    },
  };
}

export type DeliveriesQueueRepo = ReturnType<typeof deliveriesQueueRepo>;
