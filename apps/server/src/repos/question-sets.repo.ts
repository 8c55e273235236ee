import type { IngestQuestionSetRequest, ProblemIssue } from "@audit-review/api-types/internal";
import type { Database, SqlExecutor } from "../db/client.js";
import type { Prisma } from "../generated/prisma/client.js";
import { AppError, NotFoundError } from "../lib/errors.js";
import type { Page, PageRequest } from "../lib/page.js";
import type { QUESTION_SET_TYPES } from "../lib/stored-values.js";
import { retryOnUniqueViolation } from "./unique-retry.js";
import {
  questionChanges,
  questionIdIssues,
  setChanged,
  unownedIds,
  type QuestionFields,
  type SetFields,
  type StoredQuestion,
} from "./question-set-diff.js";
import type { CountCache } from "./count-cache.js";
import { keysetReader, type Condition } from "./keyset.js";

export interface QuestionSetFilters {
  ids?: string[] | undefined;
  type?: (typeof QUESTION_SET_TYPES)[number] | undefined;
  isProduction?: boolean | undefined;
  isDeleted: boolean;
}

const withQuestions = {
  questions: { where: { is_deleted: false }, orderBy: { position: "asc" }, select: { id: true, query: true, question_type: true, severity: true, remediation: true } },
} satisfies Prisma.QuestionSetInclude;

export type QuestionSetRow = Prisma.QuestionSetGetPayload<{ include: typeof withQuestions }>;

/**
 * The set's columns and, in the same statement, its live questions in order as one JSON array
 * with the fields of `withQuestions`: a list page is one query.
 */
const LIST_COLUMNS = `t.id, t.org_id, t.set_name, t.set_code, t.type, t.is_production, t.is_deleted, t.allow_doc_upload,
  t.thresholds, t.created_at, t.updated_at,
  COALESCE((SELECT json_agg(json_build_object('id', q.id, 'query', q.query, 'question_type', q.question_type,
                                              'severity', q.severity, 'remediation', q.remediation) ORDER BY q.position)
              FROM questions q WHERE q.question_set_id = t.id AND q.is_deleted = false), '[]'::json) AS questions`;

function conditions(f: QuestionSetFilters): Condition[] {
  const c: Condition[] = [{ column: "is_deleted", op: "=", value: f.isDeleted }];
  if (f.ids) c.push({ column: "id", op: "= ANY", value: f.ids });
  if (f.type !== undefined) c.push({ column: "type", op: "=", value: f.type });
  if (f.isProduction !== undefined) c.push({ column: "is_production", op: "=", value: f.isProduction });
  return c;
}

const storedQuestion = {
  id: true,
  question_set_id: true,
  position: true,
  query: true,
  question_type: true,
  severity: true,
  remediation: true,
  is_deleted: true,
} satisfies Prisma.QuestionSelect;

/** The new state of a set: its columns, its questions in order, and the body for id checks. */
export interface UpsertInput {
  set: SetFields;
  questions: QuestionFields[];
  body: IngestQuestionSetRequest;
}

function validationProblem(issues: ProblemIssue[]): AppError {
  const detail = issues.map((i) => `body ${i.name}: ${i.message}`).join("; ");
  return new AppError(400, "VALIDATION_ERROR", "Invalid request", detail, issues);
}

/** `replica`: where the list and its counts are read (the primary when absent; see keysetReader). */
export function questionSetsRepo(db: Database, counts: CountCache, replica?: SqlExecutor) {
  const prisma = db.prisma;
  const read = keysetReader<QuestionSetRow>(replica ?? db, { table: "question_sets", columns: LIST_COLUMNS }, counts, replica && db);
  return {
    /** One page in one statement (cursor and questions included); the count too if asked. */
    list(orgId: string, f: QuestionSetFilters, page: PageRequest): Promise<Page<QuestionSetRow>> {
      return read(orgId, conditions(f), page);
    },

    /**
     * Creates the set with this id or replaces the org's set, in one transaction. The set row is
     * inserted-if-absent and then locked, so concurrent requests for one id run one after the
     * other: the first creates, the rest replace. `updated_at` moves only on a real change.
     */
    upsert(orgId: string, id: string, input: UpsertInput, now: Date): Promise<{ set: QuestionSetRow; created: boolean }> {
      return retryOnUniqueViolation(() =>
        prisma.$transaction(async (tx) => {
          const { count } = await tx.questionSet.createMany({
            data: [{ id, org_id: orgId, ...input.set, created_at: now, updated_at: now }],
            skipDuplicates: true,
          });
          const created = count === 1;
          const [owner] = await tx.$queryRaw<Array<{ org_id: string }>>`SELECT org_id FROM question_sets WHERE id = ${id}::uuid FOR UPDATE`;
          // an id held by another org answers exactly like an unknown id would
          if (!owner || owner.org_id !== orgId) throw new NotFoundError("No question set with this id exists in your org.");

          const stored: StoredQuestion[] = created ? [] : await tx.question.findMany({ where: { question_set_id: id }, select: storedQuestion });
          const unowned = unownedIds(input.body, stored);
          const taken = unowned.length
            ? await tx.question.findMany({ where: { id: { in: unowned }, NOT: { question_set_id: id } }, select: { id: true } })
            : [];
          const issues = questionIdIssues(input.body, new Set(taken.map((q) => q.id)));
          if (issues.length) throw validationProblem(issues);

          const { creates, updates } = questionChanges(stored, input.questions);
          const current = created ? null : await tx.questionSet.findUniqueOrThrow({ where: { id } });
          const changed = current !== null && (setChanged(current, input.set) || creates.length > 0 || updates.length > 0);
          if (changed) await tx.questionSet.update({ where: { id }, data: { ...input.set, updated_at: now } });
          if (creates.length) {
            await tx.question.createMany({ data: creates.map((q) => ({ ...q, org_id: orgId, question_set_id: id, created_at: now, updated_at: now })) });
          }
          // one statement for any number of changed questions, not one round trip each
          if (updates.length) {
            await tx.$executeRaw`
              UPDATE questions AS q
                 SET position = u.position, query = u.query, question_type = u.question_type, severity = u.severity,
                     remediation = u.remediation, is_deleted = u.is_deleted, updated_at = ${now}
                FROM jsonb_to_recordset(${JSON.stringify(updates)}::jsonb)
                     AS u(id uuid, position int, query text, question_type text, severity text, remediation text, is_deleted boolean)
               WHERE q.id = u.id AND q.question_set_id = ${id}::uuid`;
          }
          return { set: await tx.questionSet.findUniqueOrThrow({ where: { id }, include: withQuestions }), created };
        }),
      );
    },

    /** Marks the org's set deleted; false when the org has no set with this id. Idempotent. */
    async markDeleted(orgId: string, id: string, now: Date): Promise<boolean> {
      const { count } = await prisma.questionSet.updateMany({
        where: { id, org_id: orgId, is_deleted: false },
        data: { is_deleted: true, updated_at: now },
      });
      return count > 0 || (await prisma.questionSet.count({ where: { id, org_id: orgId } })) > 0;
    },

    /** The org's set with all its questions (deleted ones too), for resolving event responses; null if none. */
    async questionsOf(orgId: string, questionSetId: string) {
      const set = await prisma.questionSet.findFirst({
        where: { id: questionSetId, org_id: orgId },
        select: { questions: { select: { id: true, query: true, question_type: true } } },
      });
      return set?.questions ?? null;
    },

    /** Which of these ids are question sets of the org (deleted ones included). */
    async existingIds(orgId: string, ids: string[]): Promise<Set<string>> {
      if (!ids.length) return new Set();
      const rows = await prisma.questionSet.findMany({ where: { org_id: orgId, id: { in: ids } }, select: { id: true } });
      return new Set(rows.map((r) => r.id));
    },
  };
}

export type QuestionSetsRepo = ReturnType<typeof questionSetsRepo>;
