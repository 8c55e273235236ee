import type { IngestQuestionSetRequest, operations } from "@audit-review/api-types/internal";
import type { AuthContext } from "../http/context.js";
import { boolFilter, idsFilter, pageRequest } from "../http/pagination.js";
import { newId } from "../lib/ids.js";
import type { QuestionSetsRepo } from "../repos/question-sets.repo.js";

type ListQuery = NonNullable<operations["listQuestionSets"]["parameters"]["query"]>;

export function questionSetsService(repo: QuestionSetsRepo) {
  return {
    listQuestionSets(auth: AuthContext, query: ListQuery) {
      return repo.list(
        auth.orgId,
        {
          ids: idsFilter(query.id),
          type: query.type,
          isProduction: boolFilter(query.is_production),
          // deleted sets are hidden unless asked for
          isDeleted: boolFilter(query.is_deleted) ?? false,
        },
        pageRequest(query),
      );
    },

    ingestQuestionSet(auth: AuthContext, body: IngestQuestionSetRequest) {
      const id = newId();
      const now = new Date();
      return repo.create(
        {
          id,
          org_id: auth.orgId,
          set_name: body.set_name,
          set_code: body.set_code,
          type: body.type ?? null,
          is_production: body.is_production ?? false,
          allow_doc_upload: body.allow_doc_upload ?? false,
          thresholds: body.thresholds ?? [],
          created_at: now,
          updated_at: now,
        },
        (body.questions ?? []).map((q, position) => ({
          id: newId(),
          org_id: auth.orgId,
          question_set_id: id,
          position,
          query: q.query,
          question_type: q.question_type ?? null,
          severity: q.severity ?? null,
          remediation: q.remediation ?? null,
          created_at: now,
          updated_at: now,
        })),
      );
    },
  };
}

export type QuestionSetsService = ReturnType<typeof questionSetsService>;
