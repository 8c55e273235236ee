import { Router } from "express";
import type { operations } from "@audit-review/api-types/internal";
import { authOf, type Validated } from "../http/context.js";
import { boolFilter, idsFilter, pageRequest, sendList } from "../http/pagination.js";
import { presentQuestionSet } from "../presenters/question-set.presenter.js";
import type { QuestionSetFilters, QuestionSetsService } from "../services/question-sets.service.js";

type ListQuery = NonNullable<operations["listQuestionSets"]["parameters"]["query"]>;

function filtersOf(query: ListQuery): QuestionSetFilters {
  return {
    ids: idsFilter(query.id),
    type: query.type,
    isProduction: boolFilter(query.is_production),
    // the contract: an omitted is_deleted means false (deleted sets are hidden unless asked for)
    isDeleted: boolFilter(query.is_deleted) ?? false,
  };
}

export function questionSetsRoutes(svc: QuestionSetsService): Router {
  return Router({ caseSensitive: true }).get("/v2/question_sets", async function listQuestionSets(req: Validated<unknown, ListQuery>, res) {
    const query = req.query;
    const page = await svc.listQuestionSets(authOf(req), filtersOf(query), pageRequest(query));
    sendList(res, page, presentQuestionSet);
  });
}
