import type { EmEvaluation, IcdEvaluation } from "@audit-review/api-types/internal";
import { Prisma, type PrismaClient, type CodingEvaluation } from "../generated/prisma/client.js";
import { NotFoundError } from "../lib/errors.js";
import { sameValue } from "../lib/same-value.js";
import { retryOnUniqueViolation } from "../lib/unique-retry.js";
import { listOrder, paginate, type PageRequest } from "./keyset.js";

/** The columns a create or replacement writes: everything but identity and timestamps. */
export type EvaluationFields = Omit<CodingEvaluation, "id" | "org_id" | "created_at" | "updated_at" | "em_evaluation" | "icd_evaluation"> & {
  em_evaluation: EmEvaluation | null;
  icd_evaluation: IcdEvaluation | null;
};

/** JSON columns take DbNull, not null, to store SQL NULL. */
const columns = (f: EvaluationFields) => ({
  ...f,
  em_evaluation: f.em_evaluation ?? Prisma.DbNull,
  icd_evaluation: f.icd_evaluation ?? Prisma.DbNull,
});

export interface CodingEvaluationFilters {
  ids?: string[] | undefined;
  status?: string | undefined;
  auditId?: string | undefined;
  archived?: boolean | undefined;
  createdAfter?: Date | undefined;
  createdBefore?: Date | undefined;
}

export function codingEvaluationsRepo(prisma: PrismaClient) {
  return {
    async list(orgId: string, f: CodingEvaluationFilters, page: PageRequest) {
      const createdAt: Prisma.DateTimeFilter = {};
      if (f.createdAfter) createdAt.gt = f.createdAfter;
      if (f.createdBefore) createdAt.lt = f.createdBefore;
      const where: Prisma.CodingEvaluationWhereInput = {
        org_id: orgId,
        ...(f.ids && { id: { in: f.ids } }),
        ...(f.status !== undefined && { status: f.status }),
        ...(f.auditId !== undefined && { audit_id: f.auditId }),
        ...(f.archived !== undefined && { archived: f.archived }),
        ...((f.createdAfter || f.createdBefore) && { created_at: createdAt }),
      };
      return paginate<CodingEvaluation>(page, {
        cursor: (id) => prisma.codingEvaluation.findFirst({ where: { id, org_id: orgId }, select: { id: true, created_at: true } }),
        rows: (keyset, order, take) =>
          prisma.codingEvaluation.findMany({ where: keyset ? { AND: [where, keyset] } : where, orderBy: listOrder(order), take }),
        count: () => prisma.codingEvaluation.count({ where }),
      });
    },

    /**
     * Creates the evaluation with this id or replaces the org's evaluation, in one transaction.
     * Insert-if-absent then a row lock serialise concurrent requests for one id; `build` gets the
     * stored row (null on create) so equal findings keep their ids. `updated_at` moves only on a
     * real change.
     */
    upsert(orgId: string, id: string, build: (stored: CodingEvaluation | null) => EvaluationFields): Promise<{ evaluation: CodingEvaluation; created: boolean }> {
      return retryOnUniqueViolation(() =>
        prisma.$transaction(async (tx) => {
          const now = new Date();
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
          const changed = (Object.keys(next) as Array<keyof EvaluationFields>).some((k) => !sameValue(stored[k], next[k]));
          if (!changed) return { evaluation: stored, created: false };
          const evaluation = await tx.codingEvaluation.update({ where: { id }, data: { ...columns(next), updated_at: now } });
          return { evaluation, created: false };
        }),
      );
    },
  };
}

export type CodingEvaluationsRepo = ReturnType<typeof codingEvaluationsRepo>;
