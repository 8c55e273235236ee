import type { Database } from "../db/client.js";
import type { ApiToken } from "../generated/prisma/client.js";

/** Runs on every API request: one statement through the driver, not a Prisma query. */
const ACTIVE_BY_HASH = "SELECT id, org_id, scopes FROM api_tokens WHERE token_hash = $1 AND revoked_at IS NULL LIMIT 1";

export function tokensRepo(db: Database) {
  const prisma = db.prisma;
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
    async findActiveByHash(tokenHash: string): Promise<Pick<ApiToken, "id" | "org_id" | "scopes"> | null> {
      const [row] = await db.query<Pick<ApiToken, "id" | "org_id" | "scopes">>(ACTIVE_BY_HASH, [tokenHash], { name: "ars_token_by_hash" });
      return row ?? null;
    },
    list(orgId: string | undefined) {
      return prisma.apiToken.findMany({
        where: orgId ? { org_id: orgId } : {},
        orderBy: { created_at: "asc" },
        select: { id: true, org_id: true, name: true, scopes: true, created_at: true, revoked_at: true },
      });
    },
    async revoke(id: string): Promise<boolean> {
      // stamped by the database's clock, which every process judges time by
      const rows = await db.query("UPDATE api_tokens SET revoked_at = now() WHERE id = $1::uuid AND revoked_at IS NULL RETURNING id", [id]);
      return rows.length > 0;
    },
  };
}

export type TokensRepo = ReturnType<typeof tokensRepo>;
