import type { PrismaClient } from "../generated/prisma/client.js";

export function tokensRepo(prisma: PrismaClient) {
  return {
    createOrg(id: string, name: string) {
      return prisma.org.create({ data: { id, name } });
    },
    listOrgs() {
      return prisma.org.findMany({ orderBy: { created_at: "asc" } });
    },
    countOrgs() {
      return prisma.org.count();
    },
    findOrg(id: string) {
      return prisma.org.findUnique({ where: { id } });
    },
    create(data: { id: string; org_id: string; name: string; token_hash: string; scopes: string[] }) {
      return prisma.apiToken.create({ data });
    },
    findActiveByHash(tokenHash: string) {
      return prisma.apiToken.findFirst({ where: { token_hash: tokenHash, revoked_at: null }, select: { id: true, org_id: true, scopes: true } });
    },
    list(orgId: string | undefined) {
      return prisma.apiToken.findMany({
        where: orgId ? { org_id: orgId } : {},
        orderBy: { created_at: "asc" },
        select: { id: true, org_id: true, name: true, scopes: true, created_at: true, revoked_at: true },
      });
    },
    async revoke(id: string): Promise<boolean> {
      const { count } = await prisma.apiToken.updateMany({ where: { id, revoked_at: null }, data: { revoked_at: new Date() } });
      return count > 0;
    },
  };
}

export type TokensRepo = ReturnType<typeof tokensRepo>;
