import type { Prisma, PrismaClient, WebhookDeliveryAttempt } from "../generated/prisma/client.js";
import { paginate, type KeysetClause, type PageRequest, type SortOrder } from "./keyset.js";

export type AttemptRow = WebhookDeliveryAttempt;

/** The shared keyset clause speaks of created_at; attempts are ordered by started_at. */
function onStartedAt(k: KeysetClause): Prisma.WebhookDeliveryAttemptWhereInput {
  // the tie-breaking branch holds both the cursor's time and its id, and says the direction
  const tie = k.OR[1];
  const at = tie.created_at;
  return "lt" in tie.id
    ? { started_at: { lte: at }, OR: [{ started_at: { lt: at } }, { started_at: at, id: { lt: tie.id.lt } }] }
    : { started_at: { gte: at }, OR: [{ started_at: { gt: at } }, { started_at: at, id: { gt: tie.id.gt } }] };
}

const attemptOrder = (order: SortOrder) => [{ started_at: order }, { id: order }];

/**
 * How far before its delivery's creation an attempt's start may be stamped. Both are stamped by
 * clocks kept in step with the database's (clock/), by different processes: a bound at the
 * creation itself would hide a first attempt stamped a millisecond early. The bound only narrows
 * the day partitions read, so a day of slack costs at most one more.
 */
const CLOCK_SLACK_MS = 86_400_000;

export function webhookDeliveryAttemptsRepo(prisma: PrismaClient) {
  return {
    /**
     * One delivery's attempts, newest first; served by (delivery_id, started_at DESC, id DESC).
     * No attempt starts before its delivery was created: the day partitions before are skipped
     * (with CLOCK_SLACK_MS of slack).
     */
    list(orgId: string, delivery: { id: string; created_at: Date }, page: PageRequest) {
      const from = new Date(delivery.created_at.getTime() - CLOCK_SLACK_MS);
      const where: Prisma.WebhookDeliveryAttemptWhereInput = { delivery_id: delivery.id, org_id: orgId, started_at: { gte: from } };
      return paginate<AttemptRow>(page, {
        cursor: async (id) => {
          const row = await prisma.webhookDeliveryAttempt.findFirst({ where: { id, ...where }, select: { id: true, started_at: true } });
          return row && { id: row.id, created_at: row.started_at };
        },
        rows: (keyset: KeysetClause | undefined, order, take) =>
          prisma.webhookDeliveryAttempt.findMany({
            where: keyset ? { AND: [where, onStartedAt(keyset)] } : where,
            orderBy: attemptOrder(order),
            take,
          }),
        count: () => prisma.webhookDeliveryAttempt.count({ where }),
      });
    },
  };
}

export type WebhookDeliveryAttemptsRepo = ReturnType<typeof webhookDeliveryAttemptsRepo>;
