// Webhook listeners: webhook endpoints whose deliveries travel through a stream a client holds
// open (POST /v2/webhook_listeners). What makes an endpoint a listener is its
// `listener_connected_until` column: NULL for an HTTPS endpoint; for a listener, until when the
// process holding its stream vouches for it. Connected means that moment is still ahead on the
// engine's clock (clock/), which every process keeps in step with the database's. Which stream
// holds it is `listener_stream_id` (and the token that opened it, `listener_token_id`): a process
// claims a listener's deliveries only while one of its streams is that one.
//
// Lock order as everywhere (repos/deliveries-queue.repo.ts): the org row, then endpoint rows,
// then delivery rows.
import type { Database } from "../db/client.js";
import type { Prisma } from "../generated/prisma/client.js";
import { failQueuedDeliveries } from "./delivery-sql.js";
import type { EndpointRow } from "./webhook-endpoints.repo.js";

/** "taken_over": the listener's stream was held by the same token (a connection that died unseen), and this one replaces it. */
export type AttachResult = "connected" | "taken_over" | "not_found" | "in_use" | "disabled";

/** Why a stream may no longer run (see RENEW). */
export type EndedBecause = "deleted" | "disabled" | "revoked" | "scope" | "replaced";

export type CreateListenerResult = { kind: "created"; endpoint: EndpointRow } | { kind: "endpoint_limit" } | { kind: "listener_limit" };

/** A stream this process holds: its listener, its own id and the token that opened it. */
export interface HeldStream {
  listenerId: string;
  streamId: string;
  tokenId: string;
}

const LIVE_LISTENER = "deleted_at IS NULL AND listener_connected_until IS NOT NULL";

// The streams still entitled to run: the listener live, enabled and still held by this stream, the
// token that opened the stream not revoked and still holding the scope. Those get their hold
// renewed; the others are named by their absence.
const RENEW = `
WITH entitled AS (
  SELECT s.listener_id, s.stream_id
    FROM unnest($1::uuid[], $2::uuid[], $5::uuid[]) AS s(listener_id, token_id, stream_id)
    JOIN api_tokens t ON t.id = s.token_id AND t.revoked_at IS NULL AND $4 = ANY (t.scopes)
)
UPDATE webhook_endpoints e SET listener_connected_until = $3
  FROM entitled x
 WHERE e.id = x.listener_id AND e.listener_stream_id = x.stream_id AND e.${LIVE_LISTENER} AND e.status = 'enabled'
RETURNING e.id`;

export function webhookListenersRepo(db: Database) {
  const prisma = db.prisma;
  return {
    /**
     * A new listener, created disconnected (`listener_connected_until` = `at`), unless the org
     * already has `endpointLimit` live endpoints (listeners included) or `listenerLimit` live
     * listeners. The org row lock serialises this with endpoint creates, so both limits hold
     * under concurrency.
     */
    create(data: Prisma.WebhookEndpointUncheckedCreateInput, at: Date, endpointLimit: number, listenerLimit: number): Promise<CreateListenerResult> {
      return prisma.$transaction(async (tx) => {
        await tx.$queryRaw`SELECT id FROM orgs WHERE id = ${data.org_id} FOR UPDATE`;
        const [counts] = await tx.$queryRaw<{ live: number; listeners: number }[]>`
          SELECT count(*)::int AS live, count(listener_connected_until)::int AS listeners
            FROM webhook_endpoints WHERE org_id = ${data.org_id} AND deleted_at IS NULL`;
        if ((counts?.live ?? 0) >= endpointLimit) return { kind: "endpoint_limit" } as const;
        if ((counts?.listeners ?? 0) >= listenerLimit) return { kind: "listener_limit" } as const;
        return { kind: "created", endpoint: await tx.webhookEndpoint.create({ data: { ...data, listener_connected_until: at } }) } as const;
      });
    },

    async isLive(orgId: string, id: string): Promise<boolean> {
      const rows = await db.query(`SELECT 1 AS found FROM webhook_endpoints WHERE id = $1::uuid AND org_id = $2 AND ${LIVE_LISTENER}`, [id, orgId]);
      return rows.length > 0;
    },

    /**
     * Holds the listener for `stream` until `until`, unless it is disabled, or another token's
     * stream holds it (its hold runs past `now`). A hold of the same token is taken over: its
     * client reconnected, and the old connection is dead whether its process knows it or not.
     */
    attach(orgId: string, id: string, now: Date, until: Date, stream: Omit<HeldStream, "listenerId">): Promise<AttachResult> {
      return db.transaction(async (tx) => {
        const [row] = await tx.query<{ listener_connected_until: Date; status: string; listener_token_id: string | null }>(
          `SELECT listener_connected_until, status, listener_token_id FROM webhook_endpoints
            WHERE id = $1::uuid AND org_id = $2 AND ${LIVE_LISTENER}
              FOR UPDATE`,
          [id, orgId],
        );
        if (!row) return "not_found";
        if (row.status !== "enabled") return "disabled";
        const held = row.listener_connected_until > now;
        if (held && row.listener_token_id !== stream.tokenId) return "in_use";
        await tx.query(
          "UPDATE webhook_endpoints SET listener_connected_until = $2, listener_stream_id = $3, listener_token_id = $4 WHERE id = $1::uuid",
          [id, until, stream.streamId, stream.tokenId],
        );
        return held ? "taken_over" : "connected";
      });
    },

    /**
     * The streams of this process are alive: those still entitled to run (see RENEW) stay
     * connected until `until`. Returns the listener ids renewed; a stream missing from them must end.
     */
    async renew(streams: readonly HeldStream[], until: Date, scope: string): Promise<Set<string>> {
      if (!streams.length) return new Set();
      const rows = await db.query<{ id: string }>(RENEW, [
        streams.map((s) => s.listenerId), streams.map((s) => s.tokenId), until, scope, streams.map((s) => s.streamId),
      ]);
      return new Set(rows.map((r) => r.id));
    },

    /** Why a stream RENEW did not renew may no longer run; null when it still may (another process took it over). */
    async whyEnded(s: HeldStream, scope: string): Promise<EndedBecause | null> {
      const [row] = await db.query<{ deleted: boolean; disabled: boolean; revoked: boolean; scoped: boolean; replaced: boolean }>(
        `SELECT (e.id IS NULL OR e.deleted_at IS NOT NULL) AS deleted, COALESCE(e.status <> 'enabled', false) AS disabled,
                (t.id IS NULL OR t.revoked_at IS NOT NULL) AS revoked, COALESCE($3 = ANY (t.scopes), false) AS scoped,
                COALESCE(e.listener_stream_id IS DISTINCT FROM $4::uuid, false) AS replaced
           FROM (SELECT 1) one
           LEFT JOIN webhook_endpoints e ON e.id = $1::uuid
           LEFT JOIN api_tokens t ON t.id = $2::uuid`,
        [s.listenerId, s.tokenId, scope, s.streamId],
      );
      if (!row) return null;
      if (row.revoked) return "revoked";
      if (!row.scoped) return "scope";
      if (row.deleted) return "deleted";
      if (row.disabled) return "disabled";
      if (row.replaced) return "replaced";
      return null;
    },

    /**
     * The stream closed at `at`: unless another stream took the listener over meanwhile, it is
     * disconnected from then on (and its grace period starts).
     */
    async release(s: Pick<HeldStream, "listenerId" | "streamId">, at: Date): Promise<void> {
      await db.query(
        `UPDATE webhook_endpoints SET listener_connected_until = LEAST(listener_connected_until, $2), listener_stream_id = NULL, listener_token_id = NULL
          WHERE id = $1::uuid AND ${LIVE_LISTENER} AND listener_stream_id = $3::uuid`,
        [s.listenerId, at, s.streamId],
      );
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
  };
}

export type WebhookListenersRepo = ReturnType<typeof webhookListenersRepo>;
