import { Router } from "express";
import type { operations } from "@audit-review/api-types/internal";
import { authOf, type Validated } from "../http/context.js";
import { boolFilter, idsFilter, instantBound, pageRequest, sendList } from "../http/pagination.js";
import { presentCodingEvaluation } from "../presenters/coding-evaluation.presenter.js";
import type { CodingEvaluationFilters, CodingEvaluationsService } from "../services/coding-evaluations.service.js";

type ListQuery = NonNullable<operations["listCodingEvaluations"]["parameters"]["query"]>;

function filtersOf(query: ListQuery): CodingEvaluationFilters {
  return {
    ids: idsFilter(query.id),
    status: query.status,
    auditId: query.audit_id,
    archived: boolFilter(query.archived),
    createdAfter: instantBound(query.created_after, "created_after", "after"),
    createdBefore: instantBound(query.created_before, "created_before", "before"),
  };
}

export function codingEvaluationsRoutes(svc: CodingEvaluationsService): Router {
  return Router({ caseSensitive: true }).get("/v2/coding_evaluations", async function listCodingEvaluations(req: Validated<unknown, ListQuery>, res) {
    const query = req.query;
    const page = await svc.listCodingEvaluations(authOf(req), filtersOf(query), pageRequest(query));
    sendList(res, page, presentCodingEvaluation);
  });
}
