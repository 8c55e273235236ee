import type { IngestQuestionSetRequest } from "@audit-review/api-types/internal";
import type { AuthContext } from "../auth/context.js";
import { NotFoundError } from "../lib/errors.js";
import { newId } from "../lib/ids.js";
import type { PageRequest } from "../lib/page.js";
import type { QuestionSetFilters, QuestionSetsRepo } from "../repos/question-sets.repo.js";
import { questionFieldsOf, setFieldsOf } from "../repos/question-set-diff.js";

export type { QuestionSetFilters } from "../repos/question-sets.repo.js";

/** `now`: the one clock (clock/), which stamps what is stored. */
export function questionSetsService(repo: QuestionSetsRepo, now: () => Date) {
  const upsert = (auth: AuthContext, id: string, body: IngestQuestionSetRequest) =>
    repo.upsert(auth.orgId, id, { set: setFieldsOf(body), questions: questionFieldsOf(body), body }, now());

  return {
    listQuestionSets(auth: AuthContext, filters: QuestionSetFilters, page: PageRequest) {
      return repo.list(auth.orgId, filters, page);
    },

    /** POST: the server chooses the set id; otherwise the same rules as a PUT that creates. */
    async ingestQuestionSet(auth: AuthContext, body: IngestQuestionSetRequest) {
      return (await upsert(auth, newId(), body)).set;
    },

    upsertQuestionSet: upsert,

    async deleteQuestionSet(auth: AuthContext, id: string): Promise<void> {
      if (!(await repo.markDeleted(auth.orgId, id, now()))) throw new NotFoundError("No question set with this id exists in your org.");
    },
  };
}

export type QuestionSetsService = ReturnType<typeof questionSetsService>;
