// Webhook listeners: webhook endpoints whose deliveries travel through a stream a client holds
// open (POST /v2/webhook_listeners). What makes an endpoint a listener is its `listener_connected_until`
// column: NULL for an HTTPS endpoint; for a listener, until when the process holding its stream
// vouches for it. Connected means that moment is in the future.
//
// Lock order as everywhere (repos/deliveries-queue.repo.ts): the org row, then endpoint rows,
// then delivery rows.
import type { Database } from "../db/client.js";
import type { Prisma } from "../generated/prisma/client.js";
import { failQueuedDeliveries, type ClaimedDelivery } from "./deliveries-queue.repo.js";
import { countsTowardLimit, type EndpointRow } from "./webhook-endpoints.repo.js";

export type AttachResult = "connected" | "not_found" | "in_use" | "limit_reached";

export interface ListenerClaim {
  listenerId: string;
  leaseToken: string;
  leaseMs: number;
  now: Date;
  limit: number;
  /** rows this process is still working on: never claimed again */
  inFlight: readonly string[];
}

const LIVE_LISTENER = "deleted_at IS NULL AND listener_connected_until IS NOT NULL";

// The listener's due rows through the per-endpoint due index, locked without waiting, leased to
// the process that holds its stream (the general claims leave connected listeners alone).
const CLAIM = `
WITH due AS (
  SELECT d.id FROM webhook_deliveries d
   WHERE d.endpoint_id = $1::uuid AND d.status IN ('pending', 'retrying') AND d.next_attempt_at <= $2
     AND (d.locked_until IS NULL OR d.locked_until < $2) AND NOT (d.id = ANY($3::uuid[]))
   ORDER BY d.next_attempt_at
   LIMIT $4
     FOR UPDATE SKIP LOCKED
)
UPDATE webhook_deliveries d
   SET locked_until = $2::timestamptz + $5::int * interval '1 millisecond', lease_owner = $6
  FROM due
 WHERE d.id = due.id
RETURNING d.id, d.org_id, d.endpoint_id, d.event_id, d.attempt_count, d.last_response_status, d.next_trigger`;

export function webhookListenersRepo(db: Database) {
  const prisma = db.prisma;
  return {
    /** A new listener; not connected yet, so it does not count toward the limit. */
    create(data: Prisma.WebhookEndpointUncheckedCreateInput & { listener_connected_until: Date }): Promise<EndpointRow> {
      return prisma.webhookEndpoint.create({ data });
    },

    async isLive(orgId: string, id: string): Promise<boolean> {
      const rows = await db.query(`SELECT 1 AS found FROM webhook_endpoints WHERE id = $1::uuid AND org_id = $2 AND ${LIVE_LISTENER}`, [id, orgId]);
      return rows.length > 0;
    },

    /**
     * Marks the listener connected until `until`, unless another stream holds it or the org
     * already has `limit` endpoints that count. The org row lock serialises this with endpoint
     * creates and other attaches, so the limit holds under concurrency (as createWithinLimit).
     */
    attach(orgId: string, id: string, now: Date, until: Date, limit: number): Promise<AttachResult> {
      return prisma.$transaction(async (tx) => {
        await tx.$queryRaw`SELECT id FROM orgs WHERE id = ${orgId} FOR UPDATE`;
        const [row] = await tx.$queryRaw<{ listener_connected_until: Date }[]>`
          SELECT listener_connected_until FROM webhook_endpoints
           WHERE id = ${id}::uuid AND org_id = ${orgId} AND deleted_at IS NULL AND listener_connected_until IS NOT NULL
             FOR UPDATE`;
        if (!row) return "not_found";
        if (row.listener_connected_until > now) return "in_use";
        const counted = await tx.webhookEndpoint.count({ where: { org_id: orgId, ...countsTowardLimit(now) } });
        if (counted >= limit) return "limit_reached";
        await tx.webhookEndpoint.update({ where: { id }, data: { listener_connected_until: until } });
        return "connected";
      });
    },

    /** The streams of this process are alive: their listeners stay connected until `until`. */
    async renew(ids: readonly string[], until: Date): Promise<void> {
      if (!ids.length) return;
      await db.query(`UPDATE webhook_endpoints SET listener_connected_until = $2 WHERE id = ANY($1::uuid[]) AND ${LIVE_LISTENER}`, [ids, until]);
    },

    /** The stream closed at `at`: the listener is disconnected from then on (and its grace period starts). */
    async release(id: string, at: Date): Promise<void> {
      await db.query(`UPDATE webhook_endpoints SET listener_connected_until = $2 WHERE id = $1::uuid AND ${LIVE_LISTENER}`, [id, at]);
    },

    /**
     * Deletes the listeners disconnected since before `cutoff` and fails their queued deliveries
     * (`endpoint_deleted`), each in the transaction that deletes it. Returns their ids.
     */
    sweep(now: Date, cutoff: Date): Promise<string[]> {
      return db.transaction(async (tx) => {
        const rows = await tx.query<{ id: string }>(
          `UPDATE webhook_endpoints SET deleted_at = $1, updated_at = $1
            WHERE ${LIVE_LISTENER} AND listener_connected_until < $2
           RETURNING id`,
          [now, cutoff],
        );
        for (const { id } of rows) await failQueuedDeliveries(tx, id, "deleted", now);
        return rows.map((r) => r.id);
      });
    },

    async claim(c: ListenerClaim): Promise<ClaimedDelivery[]> {
      if (c.limit <= 0) return [];
      return db.query<ClaimedDelivery>(CLAIM, [c.listenerId, c.now, c.inFlight, c.limit, c.leaseMs, c.leaseToken]);
    },
  };
}

export type WebhookListenersRepo = ReturnType<typeof webhookListenersRepo>;
