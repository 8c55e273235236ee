import { Router } from "express";
import type { operations } from "@audit-review/api-types/internal";
import { authOf } from "../http/context.js";
import { listEnvelope } from "../http/pagination.js";
import { presentQuestionSet } from "../presenters/question-set.presenter.js";
import type { QuestionSetsService } from "../services/question-sets.service.js";

type ListQuery = NonNullable<operations["listQuestionSets"]["parameters"]["query"]>;

export function questionSetsRoutes(svc: QuestionSetsService): Router {
  return Router({ caseSensitive: true }).get("/v2/question_sets", async function listQuestionSets(req, res) {
    const page = await svc.listQuestionSets(authOf(req), req.query as ListQuery);
    res.json(listEnvelope(page.rows.map(presentQuestionSet), page.hasMore, page.total));
  });
}
