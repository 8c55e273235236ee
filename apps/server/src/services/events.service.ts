import type { PublishEventRequest, PublishEventsRequest } from "@audit-review/api-types/internal";
import type { AuthContext } from "../auth/context.js";
import { newDelivery } from "../domain/delivery/fan-out.js";
import { EndpointDisabledError, NotFoundError, ValidationError } from "../lib/errors.js";
import { newId } from "../lib/ids.js";
import type { PageRequest } from "../lib/page.js";
import type { EventFilters, EventsRepo, NewEvent, QuestionFacts, StoredResponse } from "../repos/events.repo.js";

export type { EventFilters } from "../repos/events.repo.js";
import type { WebhookEndpointsService } from "./webhook-endpoints.service.js";

export interface EventsDeps {
  events: EventsRepo;
  endpoints: WebhookEndpointsService;
  /** Wakes the dispatchers once deliveries are committed. */
  onQueued: () => void;
  /** The engine's clock: an event's (and its deliveries') created_at, which names their day partition. */
  now: () => Date;
}

interface Issue {
  name: string;
  message: string;
}

/** An event's responses as stored, or issues (named under `prefix`) when they do not fit its question set. */
function responsesOf(body: PublishEventRequest, questions: QuestionFacts[] | null, prefix: string, issues: Issue[]): StoredResponse[] {
  if (!questions) {
    issues.push({ name: `${prefix}data.question_set_id`, message: "is not a question set of your org" });
    return [];
  }
  const byId = new Map(questions.map((q) => [q.id, q]));
  return (body.data.responses ?? []).flatMap((r, i) => {
    const q = byId.get(r.question_id);
    if (!q) {
      issues.push({ name: `${prefix}data.responses.${i}.question_id`, message: "is not a question of this question set" });
      return [];
    }
    return [{
      question_id: r.question_id,
      query: q.query,
      answer: r.answer ?? null,
      context: r.context ?? null,
      passed: r.passed ?? null,
      informational: q.question_type === "informational",
    }];
  });
}

/** The stored row of an event; one without `occurred_at` happened when it was received. */
function eventRow(e: PublishEventRequest, responses: StoredResponse[], receivedAt: Date): Omit<NewEvent, "org_id" | "created_at"> {
  return {
    id: e.id,
    type: e.type,
    audit_id: e.data.audit_id,
    question_set_id: e.data.question_set_id,
    document_id: e.data.document_id ?? null,
    result: e.data.result,
    raw_result: e.data.raw_result ?? null,
    responses,
    occurred_at: e.occurred_at ? new Date(e.occurred_at) : receivedAt,
  };
}

export function eventsService({ events, endpoints, onQueued, now: clockNow }: EventsDeps) {
  /** The question text and informational flag come from the set, so receivers get the rubric's words. */
  async function storedResponses(orgId: string, body: PublishEventRequest): Promise<StoredResponse[]> {
    const issues: Issue[] = [];
    const responses = responsesOf(body, await events.questionsOf(orgId, body.data.question_set_id), "", issues);
    if (issues.length) throw ValidationError.many("body", issues);
    return responses;
  }

  return {
    listEvents(auth: AuthContext, filters: EventFilters, page: PageRequest) {
      return events.list(auth.orgId, filters, page);
    },

    async getEvent(auth: AuthContext, id: string) {
      const row = await events.findById(auth.orgId, id);
      if (!row) throw new NotFoundError("No event with this id exists in your org.");
      return row;
    },

    /** A batch: every event checked first (each problem named), then all stored in one statement. */
    async publishEvents(auth: AuthContext, body: PublishEventsRequest) {
      const issues: Issue[] = [];
      const seen = new Set<string>();
      body.events.forEach((e, i) => {
        if (seen.has(e.id)) issues.push({ name: `events.${i}.id`, message: "appears more than once in this batch" });
        seen.add(e.id);
      });
      const [sets, owners] = await Promise.all([
        events.questionsOfSets(auth.orgId, [...new Set(body.events.map((e) => e.data.question_set_id))]),
        events.orgsOf(body.events.map((e) => e.id)),
      ]);
      const stored = body.events.map((e, i) => {
        // another org's event id must not be confirmed, let alone reused
        if (owners.has(e.id) && owners.get(e.id) !== auth.orgId) issues.push({ name: `events.${i}.id`, message: "is already used by another event" });
        return { e, responses: responsesOf(e, sets.get(e.data.question_set_id) ?? null, `events.${i}.`, issues) };
      });
      if (issues.length) throw ValidationError.many("body", issues);
      const now = clockNow();
      const published = await events.publishMany(
        auth.orgId,
        stored.map(({ e, responses }) => eventRow(e, responses, now)),
        now,
        newDelivery(false, now),
      );
      if ([...published.values()].some((p) => p.deliveries > 0)) onQueued();
      return body.events.map((e) => ({ event: e, created: published.get(e.id)?.created ?? false, deliveriesCreated: published.get(e.id)?.deliveries ?? 0 }));
    },

    async publishEvent(auth: AuthContext, body: PublishEventRequest) {
      const responses = await storedResponses(auth.orgId, body);
      const now = clockNow();
      const published = await events.publish({ ...eventRow(body, responses, now), org_id: auth.orgId, created_at: now }, newDelivery(false, now));
      if (!published.created) {
        const existing = await events.findOrg(body.id);
        // another org's event id must not be confirmed, let alone reused
        if (existing?.org_id !== auth.orgId) throw new ValidationError("body", "id", "is already used by another event");
        return { created: false, deliveriesCreated: 0 };
      }
      if (published.deliveryIds.length) onQueued();
      return { created: true, deliveriesCreated: published.deliveryIds.length };
    },

    /** A synthetic audit.completed for one endpoint, whatever its filters (a sample notification for an operational endpoint); flagged is_test. */
    async sendTestWebhookEvent(auth: AuthContext, endpointId: string) {
      const endpoint = await endpoints.findOrThrow(auth, endpointId);
      if (endpoint.status !== "enabled") throw new EndpointDisabledError();
      const now = clockNow();
      if (endpoint.kind === "operational") {
        // an operational endpoint receives notifications, not audits: its sample is one about itself
        const deliveryId = await events.publishTestNotice(endpoint.id, now, newDelivery(true, now));
        if (!deliveryId) throw new EndpointDisabledError();
        onQueued();
        return deliveryId;
      }
      const published = await events.publish(
        {
          id: newId(),
          org_id: auth.orgId,
          type: "audit.completed",
          audit_id: newId(),
          question_set_id: newId(),
          document_id: "test-document",
          result: "passed",
          raw_result: "PASS (test)",
          responses: [
            { question_id: newId(), query: "Is this a test event?", answer: "Yes", context: "Sent by a test event.", passed: true, informational: false },
          ],
          occurred_at: now,
          created_at: now,
        },
        newDelivery(true, now),
        true,
        endpoint.id,
      );
      onQueued();
      return published.deliveryIds[0]!;
    },
  };
}

export type EventsService = ReturnType<typeof eventsService>;
