import type { Prisma, PrismaClient, CodingEvaluation } from "../generated/prisma/client.js";
import { listOrder, paginate, type PageRequest } from "./keyset.js";

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

    create(data: Prisma.CodingEvaluationUncheckedCreateInput) {
      return prisma.codingEvaluation.create({ data });
    },
  };
}

export type CodingEvaluationsRepo = ReturnType<typeof codingEvaluationsRepo>;
