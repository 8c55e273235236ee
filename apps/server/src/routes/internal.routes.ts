import { Router } from "express";
import type { IngestCodingEvaluationRequest, IngestQuestionSetRequest, PublishEventRequest, PublishEventsRequest } from "@audit-review/api-types/internal";
import { authOf, type Validated } from "../http/context.js";
import { presentPublishedEvent, presentPublishedEvents } from "../presenters/event.presenter.js";
import { presentCodingEvaluation } from "../presenters/coding-evaluation.presenter.js";
import { presentQuestionSet } from "../presenters/question-set.presenter.js";
import type { Services } from "../services/index.js";

/** The x-internal operations: ingestion by the audit pipeline (nothing else is internal). */
export function internalRoutes(s: Services): Router {
  return Router({ caseSensitive: true })
    .post("/v2/internal/question_sets", async function ingestQuestionSet(req: Validated<IngestQuestionSetRequest>, res) {
      const set = await s.questionSets.ingestQuestionSet(authOf(req), req.body);
      res.status(201).location(`/v2/question_sets/${set.id}`).json(presentQuestionSet(set));
    })
    .post("/v2/internal/coding_evaluations", async function ingestCodingEvaluation(req: Validated<IngestCodingEvaluationRequest>, res) {
      const evaluation = await s.codingEvaluations.ingestCodingEvaluation(authOf(req), req.body);
      res.status(201).location(`/v2/coding_evaluations/${evaluation.id}`).json(presentCodingEvaluation(evaluation));
    })
    .put("/v2/internal/question_sets/:question_set_id", async function upsertQuestionSet(req: Validated<IngestQuestionSetRequest, unknown, { question_set_id: string }>, res) {
      const { set, created } = await s.questionSets.upsertQuestionSet(authOf(req), req.params.question_set_id, req.body);
      if (created) res.status(201).location(`/v2/question_sets/${set.id}`);
      res.json(presentQuestionSet(set));
    })
    .delete("/v2/internal/question_sets/:question_set_id", async function deleteQuestionSet(req, res) {
      await s.questionSets.deleteQuestionSet(authOf(req), req.params.question_set_id!);
      res.status(204).end();
    })
    .put("/v2/internal/coding_evaluations/:coding_evaluation_id", async function upsertCodingEvaluation(req: Validated<IngestCodingEvaluationRequest, unknown, { coding_evaluation_id: string }>, res) {
      const { evaluation, created } = await s.codingEvaluations.upsertCodingEvaluation(authOf(req), req.params.coding_evaluation_id, req.body);
      if (created) res.status(201).location(`/v2/coding_evaluations/${evaluation.id}`);
      res.json(presentCodingEvaluation(evaluation));
    })
    .post("/v2/internal/events", async function publishEvent(req: Validated<PublishEventRequest>, res) {
      const body = req.body;
      const out = await s.events.publishEvent(authOf(req), body);
      res.status(out.created ? 201 : 200).json(presentPublishedEvent(body, out));
    })
    .post("/v2/internal/event_batches", async function publishEvents(req: Validated<PublishEventsRequest>, res) {
      res.json(presentPublishedEvents(await s.events.publishEvents(authOf(req), req.body)));
    });
}
