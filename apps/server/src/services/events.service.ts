import type { PublishEventRequest } from "@audit-review/api-types/internal";
import type { AuthContext } from "../http/context.js";
import { EndpointDisabledError, ValidationError } from "../lib/errors.js";
import { newId } from "../lib/ids.js";
import type { EventsRepo, StoredResponse } from "../repos/events.repo.js";
import type { QuestionSetsRepo } from "../repos/question-sets.repo.js";
import type { WebhookEndpointsService } from "./webhook-endpoints.service.js";

export interface EventsDeps {
  events: EventsRepo;
  questionSets: QuestionSetsRepo;
  endpoints: WebhookEndpointsService;
  /** Wakes the dispatchers once deliveries are committed. */
  onQueued: () => void;
}

export function eventsService({ events, questionSets, endpoints, onQueued }: EventsDeps) {
  /** The question text and informational flag come from the set, so receivers get the rubric's words. */
  async function storedResponses(orgId: string, body: PublishEventRequest): Promise<StoredResponse[]> {
    const questions = await questionSets.questionsOf(orgId, body.data.question_set_id);
    if (!questions) throw new ValidationError("body", "data.question_set_id", "is not a question set of your org");
    const byId = new Map(questions.map((q) => [q.id, q]));
    return (body.data.responses ?? []).map((r, i) => {
      const q = byId.get(r.question_id);
      if (!q) throw new ValidationError("body", `data.responses.${i}.question_id`, "is not a question of this question set");
      return {
        question_id: r.question_id,
        query: q.query,
        answer: r.answer ?? null,
        context: r.context ?? null,
        passed: r.passed ?? null,
        informational: q.question_type === "informational",
      };
    });
  }

  return {
    async publishEvent(auth: AuthContext, body: PublishEventRequest) {
      const responses = await storedResponses(auth.orgId, body);
      const published = await events.publish({
        id: body.id,
        org_id: auth.orgId,
        type: body.type,
        audit_id: body.data.audit_id,
        question_set_id: body.data.question_set_id,
        document_id: body.data.document_id ?? null,
        result: body.data.result,
        raw_result: body.data.raw_result ?? null,
        responses,
        occurred_at: body.occurred_at ? new Date(body.occurred_at) : new Date(),
        created_at: new Date(),
      });
      if (!published.created) {
        const existing = await events.findOrg(body.id);
        // another org's event id must not be confirmed, let alone reused
        if (existing?.org_id !== auth.orgId) throw new ValidationError("body", "id", "is already used by another event");
        return { created: false, deliveriesCreated: 0 };
      }
      if (published.deliveryIds.length) onQueued();
      return { created: true, deliveriesCreated: published.deliveryIds.length };
    },

    /** A synthetic audit.completed for one endpoint, whatever its filters; flagged is_test. */
    async sendTestWebhookEvent(auth: AuthContext, endpointId: string) {
      const endpoint = await endpoints.findOrThrow(auth, endpointId);
      if (endpoint.status !== "enabled") throw new EndpointDisabledError();
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
          occurred_at: new Date(),
          created_at: new Date(),
        },
        true,
        endpoint.id,
      );
      onQueued();
      return published.deliveryIds[0]!;
    },
  };
}

export type EventsService = ReturnType<typeof eventsService>;
