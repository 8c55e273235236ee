import { Router } from "express";
import type { IngestCodingEvaluationRequest, IngestQuestionSetRequest, PublishEventRequest } from "@audit-review/api-types/internal";
import { authOf } from "../http/context.js";
import { presentCodingEvaluation } from "../presenters/coding-evaluation.presenter.js";
import { presentQuestionSet } from "../presenters/question-set.presenter.js";
import type { Services } from "../services/index.js";

/** The x-internal operations: ingestion by the audit pipeline (nothing else is internal). */
export function internalRoutes(s: Services): Router {
  return Router({ caseSensitive: true })
    .post("/v2/internal/question_sets", async function ingestQuestionSet(req, res) {
      const set = await s.questionSets.ingestQuestionSet(authOf(req), req.body as IngestQuestionSetRequest);
      res.status(201).location(`/v2/question_sets/${set.id}`).json(presentQuestionSet(set));
    })
    .post("/v2/internal/coding_evaluations", async function ingestCodingEvaluation(req, res) {
      const evaluation = await s.codingEvaluations.ingestCodingEvaluation(authOf(req), req.body as IngestCodingEvaluationRequest);
      res.status(201).location(`/v2/coding_evaluations/${evaluation.id}`).json(presentCodingEvaluation(evaluation));
    })
    .post("/v2/internal/events", async function publishEvent(req, res) {
      const body = req.body as PublishEventRequest;
      const out = await s.events.publishEvent(authOf(req), body);
      res.status(out.created ? 201 : 200).json({
        object: "event",
        id: body.id,
        type: body.type,
        created: out.created,
        deliveries_created: out.deliveriesCreated,
      });
    });
}
