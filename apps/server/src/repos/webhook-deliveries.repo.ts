import type { Database, SqlExecutor } from "../db/client.js";
import type { WebhookDelivery } from "../generated/prisma/client.js";
import { idTimeWindow } from "../lib/ids.js";
import type { Page, PageRequest } from "../lib/page.js";
import type { Requeue } from "../domain/delivery/requeue.js";
import type { DELIVERY_STATUSES } from "../lib/stored-values.js";
import type { CountCache } from "./count-cache.js";
import { recentDaysFrom } from "./day-partition-sql.js";
import { keysetReader, type Condition } from "./keyset.js";

export type DeliveryRow = WebhookDelivery;

export interface DeliveryFilters {
  endpointId?: string | undefined;
  status?: (typeof DELIVERY_STATUSES)[number] | undefined;
  eventType?: string | undefined;
  auditId?: string | undefined;
}

export type RequeueResult =
  | { kind: "queued"; delivery: DeliveryRow }
  | { kind: "not_found" }
  | { kind: "endpoint_disabled" }
  | { kind: "in_progress" }
  /** created before `revivableFrom`: retention removes it too soon to send it again */
  | { kind: "expiring" };

/** Every column, in the model's order: a list row is the Prisma model. */
const COLUMNS = `t.id, t.org_id, t.endpoint_id, t.event_id, t.event_type, t.audit_id, t.is_test, t.status, t.attempt_count,
  t.next_attempt_at, t.last_response_status, t.last_error_code, t.last_error_message, t.delivered_at, t.locked_until,
  t.lease_owner, t.created_at, t.updated_at, t.next_trigger`;

/** The day partitions a delivery id names (lib/ids.ts), as a Prisma condition. */
function nearIdTime(id: string): { created_at?: { gte: Date; lt: Date } } {
  const w = idTimeWindow(id);
  return w ? { created_at: { gte: w.from, lt: w.until } } : {};
}

function conditions(f: DeliveryFilters): Condition[] {
  // deliveries of deleted endpoints stay listed: no join on the endpoint
  const c: Condition[] = [];
  if (f.endpointId !== undefined) c.push({ column: "endpoint_id", op: "=", value: f.endpointId });
  if (f.status !== undefined) c.push({ column: "status", op: "=", value: f.status });
  if (f.eventType !== undefined) c.push({ column: "event_type", op: "=", value: f.eventType });
  if (f.auditId !== undefined) c.push({ column: "audit_id", op: "=", value: f.auditId });
  return c;
}

/** `now`: the one clock, for where a first page looks first (`ListTable.recentFrom`); `pages`: connections that keep their plans, where list pages are read (default `db`). */
export function webhookDeliveriesRepo(db: Database, counts: CountCache, now: () => Date, pages?: SqlExecutor) {
  const prisma = db.prisma;
  const read = keysetReader<DeliveryRow>(
    pages ?? db,
    { table: "webhook_deliveries", columns: COLUMNS, dayPartitioned: true, recentFrom: recentDaysFrom(now), plansKept: pages !== undefined },
    counts,
  );
  return {
    list(orgId: string, f: DeliveryFilters, page: PageRequest): Promise<Page<DeliveryRow>> {
      return read(orgId, conditions(f), page);
    },

    findById(orgId: string, id: string) {
      return prisma.webhookDelivery.findFirst({ where: { id, org_id: orgId, ...nearIdTime(id) } });
    },

    /**
     * Queues a finished delivery for one manual attempt. Locks the endpoint row, then the
     * delivery row (the engine's lock order), so a concurrent disable, delete or second retry
     * sees the outcome of this one.
     */
    requeue(orgId: string, id: string, revivableFrom: Date, retry: Requeue): Promise<RequeueResult> {
      return prisma.$transaction(async (tx) => {
        const delivery = await tx.webhookDelivery.findFirst({ where: { id, org_id: orgId, ...nearIdTime(id) }, select: { endpoint_id: true, created_at: true } });
        if (!delivery) return { kind: "not_found" } as const;
        if (delivery.created_at < revivableFrom) return { kind: "expiring" } as const;
        const [endpoint] = await tx.$queryRaw<{ status: string; deleted_at: Date | null }[]>`
          SELECT status, deleted_at FROM webhook_endpoints WHERE id = ${delivery.endpoint_id}::uuid FOR UPDATE`;
        if (!endpoint || endpoint.deleted_at) return { kind: "not_found" } as const;
        if (endpoint.status !== "enabled") return { kind: "endpoint_disabled" } as const;
        const { count } = await tx.webhookDelivery.updateMany({
          where: { id, created_at: delivery.created_at, status: { in: [...retry.from] } },
          data: {
            status: retry.status, next_attempt_at: retry.next_attempt_at, next_trigger: retry.next_trigger,
            locked_until: null, lease_owner: null, updated_at: retry.at,
          },
        });
        if (!count) return { kind: "in_progress" } as const;
        return { kind: "queued", delivery: await tx.webhookDelivery.findUniqueOrThrow({ where: { id_created_at: { id, created_at: delivery.created_at } } }) } as const;
      });
    },
  };
}

export type WebhookDeliveriesRepo = ReturnType<typeof webhookDeliveriesRepo>;
