import { createHash, randomBytes } from "node:crypto";
import type { AuthContext } from "../auth/context.js";
import { newId } from "../lib/ids.js";
import type { TokensRepo } from "../repos/tokens.repo.js";

export const PUBLIC_SCOPES = ["question_sets:read", "coding_evaluations:read", "webhooks:read", "webhooks:write", "events:read"] as const;
export const INTERNAL_SCOPES = ["internal:ingest", "internal:admin"] as const;
export const ALL_SCOPES: readonly string[] = [...PUBLIC_SCOPES, ...INTERNAL_SCOPES];

const TOKEN_PREFIX = "ars_";
const TOKEN_SHAPE = /^ars_[A-Za-z0-9_-]{43}$/;

/** Only the SHA-256 of a token is stored; the token itself is shown once, at creation. */
export const hashToken = (token: string): string => createHash("sha256").update(token).digest("hex");

export function tokensService(repo: TokensRepo) {
  return {
    async createOrg(name: string) {
      return repo.createOrg(newId(), name);
    },

    async createToken(orgId: string, scopes: readonly string[], name = "token") {
      const unknown = scopes.filter((s) => !ALL_SCOPES.includes(s));
      if (unknown.length) throw new Error(`unknown scope(s): ${unknown.join(", ")}; known: ${ALL_SCOPES.join(", ")}`);
      if (!(await repo.findOrg(orgId))) throw new Error(`no org with id ${orgId}`);
      const token = TOKEN_PREFIX + randomBytes(32).toString("base64url");
      const row = await repo.create({ id: newId(), org_id: orgId, name, token_hash: hashToken(token), scopes: [...new Set(scopes)] });
      return { id: row.id, token };
    },

    /** Malformed tokens are refused without a database round trip. */
    async verify(token: string): Promise<AuthContext | null> {
      if (!TOKEN_SHAPE.test(token)) return null;
      const row = await repo.findActiveByHash(hashToken(token));
      return row ? { orgId: row.org_id, tokenId: row.id, scopes: row.scopes } : null;
    },

    list: (orgId?: string) => repo.list(orgId),
    revoke: (id: string) => repo.revoke(id),
    findOrg: (id: string) => repo.findOrg(id),
    listOrgs: () => repo.listOrgs(),
    countOrgs: () => repo.countOrgs(),
  };
}

export type TokensService = ReturnType<typeof tokensService>;
