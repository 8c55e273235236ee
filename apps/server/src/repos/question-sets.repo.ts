import type { Prisma, PrismaClient } from "../generated/prisma/client.js";
import { listOrder, paginate, type PageRequest } from "./keyset.js";

export interface QuestionSetFilters {
  ids?: string[] | undefined;
  type?: string | undefined;
  isProduction?: boolean | undefined;
  isDeleted: boolean;
}

const withQuestions = {
  questions: { where: { is_deleted: false }, orderBy: { position: "asc" }, select: { id: true, query: true, question_type: true, severity: true, remediation: true } },
} satisfies Prisma.QuestionSetInclude;

export type QuestionSetRow = Prisma.QuestionSetGetPayload<{ include: typeof withQuestions }>;

export function questionSetsRepo(prisma: PrismaClient) {
  return {
    /** One page: cursor lookup, the page, its questions in one IN query, and the count if asked. */
    async list(orgId: string, f: QuestionSetFilters, page: PageRequest) {
      const where: Prisma.QuestionSetWhereInput = {
        org_id: orgId,
        is_deleted: f.isDeleted,
        ...(f.ids && { id: { in: f.ids } }),
        ...(f.type !== undefined && { type: f.type }),
        ...(f.isProduction !== undefined && { is_production: f.isProduction }),
      };
      return paginate<QuestionSetRow>(page, {
        cursor: (id) => prisma.questionSet.findFirst({ where: { id, org_id: orgId }, select: { id: true, created_at: true } }),
        rows: (keyset, order, take) =>
          prisma.questionSet.findMany({ where: keyset ? { AND: [where, keyset] } : where, orderBy: listOrder(order), take, include: withQuestions }),
        count: () => prisma.questionSet.count({ where }),
      });
    },

    async create(data: Prisma.QuestionSetUncheckedCreateInput, questions: Prisma.QuestionCreateManyInput[]) {
      return prisma.$transaction(async (tx) => {
        await tx.questionSet.create({ data });
        if (questions.length) await tx.question.createMany({ data: questions });
        return tx.questionSet.findUniqueOrThrow({ where: { id: data.id }, include: withQuestions });
      });
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
