// The webhook portal's links and sessions (README "Portal"): a link is minted by a token with
// webhooks:write, works once and for minutes; opening it starts a session held in a cookie. Only
// SHA-256 hashes of the link's secret and of the cookie are stored.
import { createHash, randomBytes } from "node:crypto";
import type { AuthContext } from "../auth/context.js";
import { newId } from "../lib/ids.js";
import type { LinkState, PortalSessionsRepo } from "../repos/portal-sessions.repo.js";

export type { LinkState };

/** Seconds a link stays valid unopened, unless the request says otherwise (the contract's default). */
export const DEFAULT_LINK_SECONDS = 300;
/** Seconds a session lasts once its link is opened (the contract's `session_duration`). */
export const SESSION_SECONDS = 3600;
/** What a portal session may ever do: the portal's operations need no other scope. */
export const PORTAL_SCOPES: readonly string[] = ["webhooks:read", "webhooks:write", "events:read", "question_sets:read"];
/** Dead rows removed with each new link: more than one, so the table shrinks while links are minted. */
const SWEEP_PER_LINK = 20;

const LINK = /^pl_[A-Za-z0-9_-]{43}$/;
const COOKIE = /^ps_[A-Za-z0-9_-]{43}$/;
const sha256 = (s: string) => createHash("sha256").update(s).digest("hex");
const secret = (prefix: string) => prefix + randomBytes(32).toString("base64url");

/** Who a portal session is: an AuthContext (the org and the session's scopes) and what the page shows. */
export interface PortalAuth extends AuthContext {
  sessionId: string;
  readOnly: boolean;
  expiresAt: Date;
}

export type SessionCheck =
  | { ok: PortalAuth }
  /** no such session, or one already ended: nothing to log */
  | { none: true }
  /** the session ends now (first noticed by this request): logged once */
  | { ended: "expired" | "revoked"; sessionId: string; orgId: string };

export type StartResult = { ok: PortalAuth; cookie: string } | { refused: LinkState };

/** The session's scopes: the token's, as they are now, within the portal's, and nothing that writes when read-only. */
function sessionScopes(tokenScopes: readonly string[], readOnly: boolean): string[] {
  return PORTAL_SCOPES.filter((s) => tokenScopes.includes(s) && !(readOnly && s === "webhooks:write"));
}

export function portalSessionsService(repo: PortalSessionsRepo) {
  return {
    /** A single-use link for the caller's org; `origin` is where the browser reaches this server. */
    async createPortalSession(auth: AuthContext, body: { read_only?: boolean; expires_in?: number }, origin: string) {
      const readOnly = body.read_only ?? false;
      const link = secret("pl_");
      const expiresAt = await repo.createLink({
        id: newId(),
        orgId: auth.orgId,
        tokenId: auth.tokenId,
        readOnly,
        linkHash: sha256(link),
        ttlSeconds: body.expires_in ?? DEFAULT_LINK_SECONDS,
      });
      await repo.sweepDead(SWEEP_PER_LINK);
      const url = `${origin}/portal/${encodeURIComponent(auth.orgId)}/start?link=${link}`;
      return { url, expiresAt, readOnly, sessionDuration: SESSION_SECONDS };
    },

    /** Opens a link: the session and its cookie, or why the link cannot be used. */
    async startSession(orgId: string, link: string): Promise<StartResult> {
      if (!LINK.test(link)) return { refused: "unknown" };
      const cookie = secret("ps_");
      const row = await repo.start(sha256(link), orgId, sha256(cookie), SESSION_SECONDS);
      if (!row) return { refused: await repo.linkState(sha256(link), orgId) };
      const scopes = sessionScopes(row.scopes, row.read_only);
      return { cookie, ok: { orgId, tokenId: row.token_id, scopes, sessionId: row.id, readOnly: row.read_only, expiresAt: row.expires_at } };
    },

    /** The session a cookie names, for the portal's pages and API calls of `orgId`. */
    async checkSession(orgId: string, cookie: string | undefined): Promise<SessionCheck> {
      if (!cookie || !COOKIE.test(cookie)) return { none: true };
      const s = await repo.findBySession(sha256(cookie));
      if (!s || s.ended || s.org_id !== orgId) return { none: true };
      if (!s.live || s.revoked) {
        const endedNow = await repo.end(s.id);
        return endedNow ? { ended: s.revoked ? "revoked" : "expired", sessionId: s.id, orgId: s.org_id } : { none: true };
      }
      return {
        ok: { orgId: s.org_id, tokenId: s.token_id, scopes: sessionScopes(s.scopes, s.read_only), sessionId: s.id, readOnly: s.read_only, expiresAt: s.expires_at },
      };
    },

    /** Signs out; true when this call ended the session. */
    endSession: (sessionId: string) => repo.end(sessionId),
    countActive: () => repo.countActive(),
  };
}

export type PortalSessionsService = ReturnType<typeof portalSessionsService>;
