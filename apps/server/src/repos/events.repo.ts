import type { Event, Prisma, PrismaClient } from "../generated/prisma/client.js";
import { newId } from "../lib/ids.js";

/** What is stored of each answered question: enough to build any endpoint's payload later. */
// A type alias, not an interface: Prisma's JSON input type needs the implicit index signature.
export type StoredResponse = {
  question_id: string;
  query: string;
  answer: string | null;
  context: string | null;
  passed: boolean | null;
  informational: boolean;
};

/** An event row with its responses typed (the column is JSON). */
export type StoredEvent = Omit<Event, "responses"> & { responses: StoredResponse[] };

export type NewEvent = Omit<Prisma.EventUncheckedCreateInput, "responses"> & { responses: StoredResponse[] };

export function eventsRepo(prisma: PrismaClient) {
  return {
    /**
     * Stores the event and, in the same transaction, one pending delivery per matching endpoint.
     * Returns null when the event id already exists (nothing is created again).
     */
    publish(event: NewEvent, isTest = false, onlyEndpointId?: string) {
      return prisma.$transaction(async (tx) => {
        const inserted = await tx.event.createMany({ data: [event], skipDuplicates: true });
        if (inserted.count === 0) return null;
        const endpoints = await tx.webhookEndpoint.findMany({
          where: onlyEndpointId
            ? { id: onlyEndpointId, org_id: event.org_id, deleted_at: null, status: "enabled" }
            : {
                org_id: event.org_id,
                deleted_at: null,
                status: "enabled",
                event_types: { has: event.type },
                OR: [{ filter_question_set_ids: { isEmpty: true } }, { filter_question_set_ids: { has: event.question_set_id } }],
                filter_audit_results: { in: ["all", event.result] },
              },
          select: { id: true },
        });
        const now = new Date();
        const deliveries = endpoints.map((e) => ({
          id: newId(),
          org_id: event.org_id,
          endpoint_id: e.id,
          event_id: event.id,
          event_type: event.type,
          audit_id: event.audit_id,
          is_test: isTest,
          status: "pending",
          next_attempt_at: now,
          created_at: now,
          updated_at: now,
        }));
        if (deliveries.length) await tx.webhookDelivery.createMany({ data: deliveries, skipDuplicates: true });
        return deliveries;
      });
    },

    findOrg(id: string) {
      return prisma.event.findUnique({ where: { id }, select: { org_id: true } });
    },
  };
}

export type EventsRepo = ReturnType<typeof eventsRepo>;
