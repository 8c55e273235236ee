import type { Prisma, PrismaClient, WebhookDeliveryAttempt } from "../generated/prisma/client.js";
import { paginate, type KeysetClause, type PageRequest, type SortOrder } from "./keyset.js";

export type AttemptRow = WebhookDeliveryAttempt;

/** The shared keyset clause speaks of created_at; attempts are ordered by started_at. */
function onStartedAt(value: unknown): unknown {
  if (value === null || typeof value !== "object" || value instanceof Date) return value;
  if (Array.isArray(value)) return value.map(onStartedAt);
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k === "created_at" ? "started_at" : k, onStartedAt(v)]));
}

const attemptOrder = (order: SortOrder) => [{ started_at: order }, { id: order }];

export function webhookDeliveryAttemptsRepo(prisma: PrismaClient) {
  return {
    /** One delivery's attempts, newest first; served by (delivery_id, started_at DESC, id DESC). */
    list(orgId: string, deliveryId: string, page: PageRequest) {
      const where: Prisma.WebhookDeliveryAttemptWhereInput = { delivery_id: deliveryId, org_id: orgId };
      return paginate<AttemptRow>(page, {
        cursor: async (id) => {
          const row = await prisma.webhookDeliveryAttempt.findFirst({ where: { id, ...where }, select: { id: true, started_at: true } });
          return row && { id: row.id, created_at: row.started_at };
        },
        rows: (keyset: KeysetClause | undefined, order, take) =>
          prisma.webhookDeliveryAttempt.findMany({
            where: keyset ? { AND: [where, onStartedAt(keyset) as Prisma.WebhookDeliveryAttemptWhereInput] } : where,
            orderBy: attemptOrder(order),
            take,
          }),
        count: () => prisma.webhookDeliveryAttempt.count({ where }),
      });
    },
  };
}

export type WebhookDeliveryAttemptsRepo = ReturnType<typeof webhookDeliveryAttemptsRepo>;
