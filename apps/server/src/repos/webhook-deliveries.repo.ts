import type { Prisma, PrismaClient, WebhookDelivery } from "../generated/prisma/client.js";
import { listOrder, paginate, type PageRequest } from "./keyset.js";

export type DeliveryRow = WebhookDelivery;

export interface DeliveryFilters {
  endpointId?: string | undefined;
  status?: string | undefined;
  eventType?: string | undefined;
  auditId?: string | undefined;
}

export type RequeueResult =
  | { kind: "queued"; delivery: DeliveryRow }
  | { kind: "not_found" }
  | { kind: "endpoint_disabled" }
  | { kind: "in_progress" };

export function webhookDeliveriesRepo(prisma: PrismaClient) {
  return {
    list(orgId: string, f: DeliveryFilters, page: PageRequest) {
      // deliveries of deleted endpoints stay listed: no join on the endpoint
      const where: Prisma.WebhookDeliveryWhereInput = {
        org_id: orgId,
        ...(f.endpointId !== undefined && { endpoint_id: f.endpointId }),
        ...(f.status !== undefined && { status: f.status }),
        ...(f.eventType !== undefined && { event_type: f.eventType }),
        ...(f.auditId !== undefined && { audit_id: f.auditId }),
      };
      return paginate<DeliveryRow>(page, {
        cursor: (id) => prisma.webhookDelivery.findFirst({ where: { id, org_id: orgId }, select: { id: true, created_at: true } }),
        rows: (keyset, order, take) =>
          prisma.webhookDelivery.findMany({ where: keyset ? { AND: [where, keyset] } : where, orderBy: listOrder(order), take }),
        count: () => prisma.webhookDelivery.count({ where }),
      });
    },

    findById(orgId: string, id: string) {
      return prisma.webhookDelivery.findFirst({ where: { id, org_id: orgId } });
    },

    /**
     * Queues a finished delivery for one manual attempt. Locks the endpoint row, then the
     * delivery row (the engine's lock order), so a concurrent disable, delete or second retry
     * sees the outcome of this one.
     */
    requeue(orgId: string, id: string): Promise<RequeueResult> {
      return prisma.$transaction(async (tx) => {
        const delivery = await tx.webhookDelivery.findFirst({ where: { id, org_id: orgId }, select: { endpoint_id: true } });
        if (!delivery) return { kind: "not_found" } as const;
        const [endpoint] = await tx.$queryRaw<{ status: string; deleted_at: Date | null }[]>`
          SELECT status, deleted_at FROM webhook_endpoints WHERE id = ${delivery.endpoint_id}::uuid FOR UPDATE`;
        if (!endpoint || endpoint.deleted_at) return { kind: "not_found" } as const;
        if (endpoint.status !== "enabled") return { kind: "endpoint_disabled" } as const;
        const now = new Date();
        const { count } = await tx.webhookDelivery.updateMany({
          where: { id, status: { in: ["succeeded", "failed"] } },
          data: { status: "pending", next_attempt_at: now, next_trigger: "manual", locked_until: null, lease_owner: null, updated_at: now },
        });
        if (!count) return { kind: "in_progress" } as const;
        return { kind: "queued", delivery: await tx.webhookDelivery.findUniqueOrThrow({ where: { id } }) } as const;
      });
    },
  };
}

export type WebhookDeliveriesRepo = ReturnType<typeof webhookDeliveriesRepo>;
