import type { Prisma, PrismaClient, WebhookDelivery } from "../generated/prisma/client.js";
import { listOrder, paginate, type PageRequest } from "./keyset.js";

export type DeliveryRow = WebhookDelivery;

export interface DeliveryFilters {
  endpointId?: string | undefined;
  status?: string | undefined;
  eventType?: string | undefined;
  auditId?: string | undefined;
}

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
      return prisma.webhookDelivery.findFirstOrThrow({ where: { id, org_id: orgId } });
    },
  };
}

export type WebhookDeliveriesRepo = ReturnType<typeof webhookDeliveriesRepo>;
