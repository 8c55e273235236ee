import type { Prisma, PrismaClient, WebhookEndpoint } from "../generated/prisma/client.js";
import type { Requeue } from "../domain/delivery/requeue.js";
import type { UnavailableCause } from "../domain/delivery/unavailable.js";
import { failQueuedDeliveries, type StatementRunner } from "./delivery-sql.js";
import { notifyDisabled, type NoticeMade } from "./notification-sql.js";
import { listOrder, paginate, type PageRequest } from "./keyset.js";

export type EndpointRow = WebhookEndpoint;

/** The endpoints that count toward an org's limit: every live one, webhook listeners included (from their creation). */
export const COUNTS_TOWARD_LIMIT = { deleted_at: null } as const satisfies Prisma.WebhookEndpointWhereInput;

/** A Prisma transaction as the raw-SQL modules' statement runner. */
const runnerOf = (tx: Prisma.TransactionClient): StatementRunner => ({ query: (sql, params = []) => tx.$queryRawUnsafe(sql, ...params) });

/** The queue's one failQueuedDeliveries, run inside this Prisma transaction. */
function failQueued(tx: Prisma.TransactionClient, endpointId: string, cause: UnavailableCause, now: Date) {
  return failQueuedDeliveries(runnerOf(tx), endpointId, cause, now);
}

/**
 * The status of a live endpoint of the org, its row locked for the rest of the transaction (no
 * row: not live, or not the org's). A locking read that waited for a concurrent update answers
 * the row's newest version: of two concurrent disables the second reads `disabled`, and neither
 * fails the queue nor notifies twice (test/delivery/notifications-disable-race.test.ts). Taken
 * first, it keeps the lock order: endpoint, then deliveries.
 */
const LOCK_LIVE = `SELECT status FROM webhook_endpoints WHERE id = $1::uuid AND org_id = $2 AND deleted_at IS NULL FOR NO KEY UPDATE`;

export function webhookEndpointsRepo(prisma: PrismaClient) {
  return {
    list(orgId: string, f: { status?: string | undefined; kind?: string | undefined }, page: PageRequest) {
      const where: Prisma.WebhookEndpointWhereInput = { org_id: orgId, deleted_at: null, ...(f.status && { status: f.status }), ...(f.kind && { kind: f.kind }) };
      return paginate<EndpointRow>(page, {
        cursor: (id) => prisma.webhookEndpoint.findFirst({ where: { id, org_id: orgId }, select: { id: true, created_at: true } }),
        rows: (keyset, order, take) =>
          prisma.webhookEndpoint.findMany({ where: keyset ? { AND: [where, keyset] } : where, orderBy: listOrder(order), take }),
        count: () => prisma.webhookEndpoint.count({ where }),
      });
    },

    findLive(orgId: string, id: string) {
      return prisma.webhookEndpoint.findFirst({ where: { id, org_id: orgId, deleted_at: null } });
    },

    /**
     * Inserts unless the org already has `limit` live endpoints. The org row lock serialises
     * concurrent creates of one org, so the count cannot go stale between check and insert.
     */
    createWithinLimit(data: Prisma.WebhookEndpointUncheckedCreateInput, limit: number): Promise<EndpointRow | null> {
      return prisma.$transaction(async (tx) => {
        await tx.$queryRaw`SELECT id FROM orgs WHERE id = ${data.org_id} FOR UPDATE`;
        const live = await tx.webhookEndpoint.count({ where: { org_id: data.org_id, ...COUNTS_TOWARD_LIMIT } });
        if (live >= limit) return null;
        return tx.webhookEndpoint.create({ data });
      });
    },

    /**
     * Applies a validated partial update in one transaction: either every field changes (and a
     * disable fails the queued deliveries and notifies the org's operational endpoints) or, when
     * the endpoint is not live, nothing does. Answers the row and the notifications made.
     */
    update(
      orgId: string,
      id: string,
      data: Prisma.WebhookEndpointUpdateManyMutationInput,
      status: "enabled" | "disabled" | undefined,
      now: Date,
    ): Promise<{ row: EndpointRow; notices: NoticeMade[] } | null> {
      const statusData: Prisma.WebhookEndpointUpdateManyMutationInput =
        status === "disabled"
          ? { status, disabled_reason: "manual", disabled_at: now }
          : status === "enabled"
            ? { status, disabled_reason: null, disabled_at: null, failing_since: null }
            : {};
      return prisma.$transaction(async (tx) => {
        const [before] = await runnerOf(tx).query<{ status: string }>(LOCK_LIVE, [id, orgId]);
        if (!before) return null;
        // the row as answered: failing the queue and notifying write other rows only
        const row = await tx.webhookEndpoint.update({ where: { id }, data: { ...data, ...statusData, updated_at: now } });
        const notices: NoticeMade[] = [];
        if (status === "disabled" && before.status === "enabled") {
          await failQueued(tx, id, "manual", now);
          notices.push(...(await notifyDisabled(runnerOf(tx), id, now)));
        }
        return { row, notices };
      });
    },

    softDelete(orgId: string, id: string, now: Date): Promise<boolean> {
      return prisma.$transaction(async (tx) => {
        const { count } = await tx.webhookEndpoint.updateMany({
          where: { id, org_id: orgId, deleted_at: null },
          data: { deleted_at: now, updated_at: now },
        });
        if (count) await failQueued(tx, id, "deleted", now);
        return count > 0;
      });
    },

    /** The current secret becomes the previous one (for `graceMs`; none when 0). Row-locked: two rotations queue. */
    rotateSecret(orgId: string, id: string, next: { secret_enc: Uint8Array<ArrayBuffer>; secret_hint: string }, graceMs: number, now: Date) {
      return prisma.$transaction(async (tx) => {
        const [locked] = await tx.$queryRaw<{ id: string }[]>`
          SELECT id FROM webhook_endpoints WHERE id = ${id}::uuid AND org_id = ${orgId} AND deleted_at IS NULL FOR UPDATE`;
        if (!locked) return null;
        const row = await tx.webhookEndpoint.findUniqueOrThrow({ where: { id } });
        return tx.webhookEndpoint.update({
          where: { id },
          data: {
            previous_secret_enc: graceMs > 0 ? row.secret_enc : null,
            previous_secret_expires_at: graceMs > 0 ? new Date(now.getTime() + graceMs) : null,
            secret_enc: next.secret_enc,
            secret_hint: next.secret_hint,
            updated_at: now,
          },
        });
      });
    },

    /** Queues the endpoint's deliveries created in [since, until) again as `recovery` says (domain/delivery/requeue.ts). */
    async requeueFailed(orgId: string, endpointId: string, since: Date, until: Date, recovery: Requeue): Promise<number> {
      const { count } = await prisma.webhookDelivery.updateMany({
        where: { org_id: orgId, endpoint_id: endpointId, status: { in: [...recovery.from] }, created_at: { gte: since, lt: until } },
        data: {
          status: recovery.status, next_attempt_at: recovery.next_attempt_at, next_trigger: recovery.next_trigger,
          locked_until: null, lease_owner: null, updated_at: recovery.at,
        },
      });
      return count;
    },
  };
}

export type WebhookEndpointsRepo = ReturnType<typeof webhookEndpointsRepo>;
