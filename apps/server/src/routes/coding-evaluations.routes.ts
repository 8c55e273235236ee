import { Router } from "express";
import type { operations } from "@audit-review/api-types/internal";
import { authOf } from "../http/context.js";
import { listEnvelope } from "../http/pagination.js";
import { presentCodingEvaluation } from "../presenters/coding-evaluation.presenter.js";
import type { CodingEvaluationsService } from "../services/coding-evaluations.service.js";

type ListQuery = NonNullable<operations["listCodingEvaluations"]["parameters"]["query"]>;

export function codingEvaluationsRoutes(svc: CodingEvaluationsService): Router {
  return Router({ caseSensitive: true }).get("/v2/coding_evaluations", async function listCodingEvaluations(req, res) {
    const page = await svc.listCodingEvaluations(authOf(req), req.query as ListQuery);
    res.json(listEnvelope(page.rows.map(presentCodingEvaluation), page.hasMore, page.total));
  });
}
