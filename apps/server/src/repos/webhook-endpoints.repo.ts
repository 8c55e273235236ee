import type { Prisma, PrismaClient, WebhookEndpoint } from "../generated/prisma/client.js";
import type { UnavailableCause } from "../domain/endpoint-unavailable.js";
import { failQueuedDeliveries, type StatementRunner } from "./deliveries-queue.repo.js";
import { listOrder, paginate, type PageRequest } from "./keyset.js";

export type EndpointRow = WebhookEndpoint;

/**
 * The endpoints that count toward an org's limit: live ones, except webhook listeners whose
 * stream is not connected (`listener_connected_until` is NULL for HTTPS endpoints). The one
 * statement of that rule, for creates and listener connects alike.
 */
export function countsTowardLimit(now: Date): Prisma.WebhookEndpointWhereInput {
  return { deleted_at: null, OR: [{ listener_connected_until: null }, { listener_connected_until: { gt: now } }] };
}

/** The queue's one failQueuedDeliveries, run inside this Prisma transaction. */
function failQueued(tx: Prisma.TransactionClient, endpointId: string, cause: UnavailableCause, now: Date) {
  const runner: StatementRunner = { query: (sql, params = []) => tx.$queryRawUnsafe(sql, ...params) };
  return failQueuedDeliveries(runner, endpointId, cause, now);
}

export function webhookEndpointsRepo(prisma: PrismaClient) {
  return {
    list(orgId: string, status: string | undefined, page: PageRequest) {
      const where: Prisma.WebhookEndpointWhereInput = { org_id: orgId, deleted_at: null, ...(status && { status }) };
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
    createWithinLimit(data: Prisma.WebhookEndpointUncheckedCreateInput, limit: number, now = new Date()): Promise<EndpointRow | null> {
      return prisma.$transaction(async (tx) => {
        await tx.$queryRaw`SELECT id FROM orgs WHERE id = ${data.org_id} FOR UPDATE`;
        const live = await tx.webhookEndpoint.count({ where: { org_id: data.org_id, ...countsTowardLimit(now) } });
        if (live >= limit) return null;
        return tx.webhookEndpoint.create({ data });
      });
    },

    /**
     * Applies a validated partial update in one transaction: either every field changes (and a
     * disable fails the queued deliveries) or, when the endpoint is not live, nothing does.
     */
    update(orgId: string, id: string, data: Prisma.WebhookEndpointUpdateManyMutationInput, status: "enabled" | "disabled" | undefined): Promise<EndpointRow | null> {
      return prisma.$transaction(async (tx) => {
        const now = new Date();
        const statusData: Prisma.WebhookEndpointUpdateManyMutationInput =
          status === "disabled"
            ? { status, disabled_reason: "manual", disabled_at: now }
            : status === "enabled"
              ? { status, disabled_reason: null, disabled_at: null, failing_since: null }
              : {};
        const { count } = await tx.webhookEndpoint.updateMany({
          where: { id, org_id: orgId, deleted_at: null },
          data: { ...data, ...statusData, updated_at: now },
        });
        if (!count) return null;
        if (status === "disabled") await failQueued(tx, id, "manual", now);
        return tx.webhookEndpoint.findUniqueOrThrow({ where: { id } });
      });
    },

    softDelete(orgId: string, id: string): Promise<boolean> {
      return prisma.$transaction(async (tx) => {
        const now = new Date();
        const { count } = await tx.webhookEndpoint.updateMany({
          where: { id, org_id: orgId, deleted_at: null },
          data: { deleted_at: now, updated_at: now },
        });
        if (count) await failQueued(tx, id, "deleted", now);
        return count > 0;
      });
    },

    /** The current secret becomes the previous one (for `graceMs`; none when 0). Row-locked: two rotations queue. */
    rotateSecret(orgId: string, id: string, next: { secret_enc: Uint8Array<ArrayBuffer>; secret_hint: string }, graceMs: number) {
      return prisma.$transaction(async (tx) => {
        const [locked] = await tx.$queryRaw<{ id: string }[]>`
          SELECT id FROM webhook_endpoints WHERE id = ${id}::uuid AND org_id = ${orgId} AND deleted_at IS NULL FOR UPDATE`;
        if (!locked) return null;
        const row = await tx.webhookEndpoint.findUniqueOrThrow({ where: { id } });
        const now = new Date();
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

    /** Queues the endpoint's failed deliveries created in [since, until) again, for one manual attempt each. */
    async requeueFailed(orgId: string, endpointId: string, since: Date, until: Date): Promise<number> {
      const now = new Date();
      const { count } = await prisma.webhookDelivery.updateMany({
        where: { org_id: orgId, endpoint_id: endpointId, status: "failed", created_at: { gte: since, lt: until } },
        data: { status: "pending", next_attempt_at: now, next_trigger: "manual", locked_until: null, lease_owner: null, updated_at: now },
      });
      return count;
    },
  };
}

export type WebhookEndpointsRepo = ReturnType<typeof webhookEndpointsRepo>;
