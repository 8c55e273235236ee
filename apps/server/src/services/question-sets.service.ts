import type { IngestQuestionSetRequest, operations } from "@audit-review/api-types/internal";
import type { AuthContext } from "../http/context.js";
import { boolFilter, idsFilter, pageRequest } from "../http/pagination.js";
import { NotFoundError } from "../lib/errors.js";
import { newId } from "../lib/ids.js";
import type { QuestionSetsRepo } from "../repos/question-sets.repo.js";
import { questionFieldsOf, setFieldsOf } from "../repos/question-set-diff.js";

type ListQuery = NonNullable<operations["listQuestionSets"]["parameters"]["query"]>;

export function questionSetsService(repo: QuestionSetsRepo) {
  const upsert = (auth: AuthContext, id: string, body: IngestQuestionSetRequest) =>
    repo.upsert(auth.orgId, id, { set: setFieldsOf(body), questions: questionFieldsOf(body), body });

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

    /** POST: the server chooses the set id; otherwise the same rules as a PUT that creates. */
    async ingestQuestionSet(auth: AuthContext, body: IngestQuestionSetRequest) {
      return (await upsert(auth, newId(), body)).set;
    },

    upsertQuestionSet: upsert,

    async deleteQuestionSet(auth: AuthContext, id: string): Promise<void> {
      if (!(await repo.markDeleted(auth.orgId, id))) throw new NotFoundError("No question set with this id exists in your org.");
    },
  };
}

export type QuestionSetsService = ReturnType<typeof questionSetsService>;
