import type { PublishedEvent, PublishedEvents, PublishEventRequest, Recovery } from "@audit-review/api-types/internal";

export function presentPublishedEvent(body: PublishEventRequest, out: { created: boolean; deliveriesCreated: number }): PublishedEvent {
  return {
    object: "event",
    id: body.id,
    type: body.type,
    created: out.created,
    deliveries_created: out.deliveriesCreated,
  };
}

export function presentPublishedEvents(outs: ReadonlyArray<{ event: PublishEventRequest; created: boolean; deliveriesCreated: number }>): PublishedEvents {
  return { object: "list", data: outs.map((o) => presentPublishedEvent(o.event, o)) };
}

export function presentRecovery(queued: number): Recovery {
  return { object: "recovery", queued };
}
