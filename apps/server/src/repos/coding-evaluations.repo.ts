import type { EmEvaluation, IcdEvaluation } from "@audit-review/api-types/internal";
import type { Database, SqlExecutor } from "../db/client.js";
import { Prisma, type CodingEvaluation } from "../generated/prisma/client.js";
import { NotFoundError } from "../lib/errors.js";
import type { Page, PageRequest } from "../lib/page.js";
import { sameValue } from "../lib/same-value.js";
import type { CODING_EVALUATION_STATUSES } from "../lib/stored-values.js";
import { retryOnUniqueViolation } from "./unique-retry.js";
import type { CountCache } from "./count-cache.js";
import { keysetReader, type Condition } from "./keyset.js";

/** The columns a create or replacement writes: everything but identity and timestamps. */
export type EvaluationFields = Omit<CodingEvaluation, "id" | "org_id" | "created_at" | "updated_at" | "em_evaluation" | "icd_evaluation"> & {
  em_evaluation: EmEvaluation | null;
  icd_evaluation: IcdEvaluation | null;
};

const isField = (key: string): key is keyof EvaluationFields => key !== "id" && key !== "org_id" && key !== "created_at" && key !== "updated_at";

/** JSON columns take DbNull, not null, to store SQL NULL. */
const columns = (f: EvaluationFields) => ({
  ...f,
  em_evaluation: f.em_evaluation ?? Prisma.DbNull,
  icd_evaluation: f.icd_evaluation ?? Prisma.DbNull,
});

export interface CodingEvaluationFilters {
  ids?: string[] | undefined;
  status?: (typeof CODING_EVALUATION_STATUSES)[number] | undefined;
  auditId?: string | undefined;
  archived?: boolean | undefined;
  createdAfter?: Date | undefined;
  createdBefore?: Date | undefined;
}

/**
 * A list row: the Prisma model, with the calendar date and the two timestamps already in their
 * API form (YYYY-MM-DD; RFC 3339 UTC with milliseconds, as `lib/time.ts iso` prints them).
 */
export type CodingEvaluationListRow = Omit<CodingEvaluation, "display_date" | "created_at" | "updated_at"> & {
  display_date: string | null;
  created_at: string;
  updated_at: string;
};

/**
 * A timestamptz as `Date.prototype.toISOString` prints it, formatted by PostgreSQL: the driver
 * would otherwise parse each one into a Date (a regular expression and a Date per value) only
 * for the presenter to print it back, 200 times a page. The columns are `timestamptz(3)`
 * (PostgreSQL rounds to milliseconds when storing), so `MS` prints exactly what a Date holds.
 * Years stay within 0001–9999, where both print four digits.
 */
const isoText = (column: string) => `to_char(t.${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS ${column}`;

/** Every column, in the model's order. */
const COLUMNS = `t.id, t.org_id, t.audit_id, t.status, t.processed, t.needs_em_eval, t.em_eval_created, t.needs_icd_eval,
  t.icd_eval_created, t.marked_reviewed, t.reviewed_by, t.archived, t.redacted, t.cold,
  to_char(t.display_date, 'YYYY-MM-DD') AS display_date, t.em_evaluation,
  t.icd_evaluation, ${isoText("created_at")}, ${isoText("updated_at")}`;

function conditions(f: CodingEvaluationFilters): Condition[] {
  const c: Condition[] = [];
  if (f.ids) c.push({ column: "id", op: "= ANY", value: f.ids });
  if (f.status !== undefined) c.push({ column: "status", op: "=", value: f.status });
  if (f.auditId !== undefined) c.push({ column: "audit_id", op: "=", value: f.auditId });
  if (f.archived !== undefined) c.push({ column: "archived", op: "=", value: f.archived });
  if (f.createdAfter) c.push({ column: "created_at", op: ">", value: f.createdAfter });
  if (f.createdBefore) c.push({ column: "created_at", op: "<", value: f.createdBefore });
  return c;
}

/** `replica`: where the list and its counts are read (the primary when absent; see keysetReader). */
export function codingEvaluationsRepo(db: Database, counts: CountCache, replica?: SqlExecutor) {
  const prisma = db.prisma;
  const read = keysetReader<CodingEvaluationListRow>(replica ?? db, { table: "coding_evaluations", columns: COLUMNS }, counts, replica && db);
  return {
    list(orgId: string, f: CodingEvaluationFilters, page: PageRequest): Promise<Page<CodingEvaluationListRow>> {
      return read(orgId, conditions(f), page);
    },

    /**
     * Creates the evaluation with this id or replaces the org's evaluation, in one transaction.
     * Insert-if-absent then a row lock serialise concurrent requests for one id; `build` gets the
     * stored row (null on create) so equal findings keep their ids. `updated_at` moves only on a
     * real change.
     */
    upsert(orgId: string, id: string, build: (stored: CodingEvaluation | null) => EvaluationFields, now: Date): Promise<{ evaluation: CodingEvaluation; created: boolean }> {
      return retryOnUniqueViolation(() =>
        prisma.$transaction(async (tx) => {
          const { count } = await tx.codingEvaluation.createMany({
            data: [{ id, org_id: orgId, ...columns(build(null)), created_at: now, updated_at: now }],
            skipDuplicates: true,
          });
          const [owner] = await tx.$queryRaw<Array<{ org_id: string }>>`SELECT org_id FROM coding_evaluations WHERE id = ${id}::uuid FOR UPDATE`;
          // an id held by another org answers exactly like an unknown id would
          if (!owner || owner.org_id !== orgId) throw new NotFoundError("No coding evaluation with this id exists in your org.");
          const stored = await tx.codingEvaluation.findUniqueOrThrow({ where: { id } });
          if (count === 1) return { evaluation: stored, created: true };

          const next = build(stored);
          const changed = Object.keys(next).some((k) => isField(k) && !sameValue(stored[k], next[k]));
          if (!changed) return { evaluation: stored, created: false };
          const evaluation = await tx.codingEvaluation.update({ where: { id }, data: { ...columns(next), updated_at: now } });
          return { evaluation, created: false };
        }),
      );
    },
  };
}

export type CodingEvaluationsRepo = ReturnType<typeof codingEvaluationsRepo>;
