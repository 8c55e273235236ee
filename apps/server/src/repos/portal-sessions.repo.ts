// Webhook portal links and sessions (table portal_sessions). Every time judged here is the
// database's clock: a link's and a session's expiry are compared with now() in the statement.
import type { SqlExecutor } from "../db/client.js";

/** A session found by its cookie's hash, with what decides whether it still holds. */
export interface StoredPortalSession {
  id: string;
  org_id: string;
  token_id: string;
  read_only: boolean;
  /** the scopes of the token that minted the link, as they are now */
  scopes: string[];
  expires_at: Date;
  /** false once `expires_at` has passed (the database's clock) */
  live: boolean;
  ended: boolean;
  revoked: boolean;
}

/** Why a link could not start a session. */
export type LinkState = "unknown" | "used" | "expired" | "revoked";

// The link's secret is spent in the statement that starts the session: of two concurrent opens
// exactly one updates the row.
const START = `
UPDATE portal_sessions s
   SET session_hash = $3, started_at = now(), expires_at = now() + $4::int * interval '1 second'
  FROM api_tokens t
 WHERE s.link_hash = $1 AND s.org_id = $2 AND s.started_at IS NULL AND s.expires_at > now()
   AND t.id = s.token_id AND t.revoked_at IS NULL
RETURNING s.id, s.token_id, s.read_only, s.expires_at, t.scopes`;

const BY_SESSION = `
SELECT s.id, s.org_id, s.token_id, s.read_only, t.scopes, s.expires_at, s.expires_at > now() AS live,
       s.ended_at IS NOT NULL AS ended, t.revoked_at IS NOT NULL AS revoked
  FROM portal_sessions s JOIN api_tokens t ON t.id = s.token_id
 WHERE s.session_hash = $1`;

export function portalSessionsRepo(db: SqlExecutor) {
  return {
    /** A new link; answers when it expires. */
    async createLink(row: { id: string; orgId: string; tokenId: string; readOnly: boolean; linkHash: string; ttlSeconds: number }): Promise<Date> {
      const [created] = await db.query<{ expires_at: Date }>(
        `INSERT INTO portal_sessions (id, org_id, token_id, read_only, link_hash, expires_at, created_at)
         VALUES ($1, $2, $3, $4, $5, now() + $6::int * interval '1 second', now())
         RETURNING expires_at`,
        [row.id, row.orgId, row.tokenId, row.readOnly, row.linkHash, row.ttlSeconds],
      );
      return created!.expires_at;
    },

    /** Spends the link (once, before it expires, while its token holds) and starts the session. */
    async start(linkHash: string, orgId: string, sessionHash: string, durationSeconds: number) {
      const [row] = await db.query<{ id: string; token_id: string; read_only: boolean; expires_at: Date; scopes: string[] }>(START, [linkHash, orgId, sessionHash, durationSeconds]);
      return row ?? null;
    },

    /** Why a link that could not start a session could not: the refusal page says so. */
    async linkState(linkHash: string, orgId: string): Promise<LinkState> {
      const [row] = await db.query<{ used: boolean; expired: boolean; revoked: boolean }>(
        `SELECT s.started_at IS NOT NULL AS used, s.expires_at <= now() AS expired, t.revoked_at IS NOT NULL AS revoked
           FROM portal_sessions s JOIN api_tokens t ON t.id = s.token_id
          WHERE s.link_hash = $1 AND s.org_id = $2`,
        [linkHash, orgId],
      );
      if (!row) return "unknown";
      return row.used ? "used" : row.expired ? "expired" : row.revoked ? "revoked" : "unknown";
    },

    /** Runs on every request of the portal: one indexed statement. */
    async findBySession(sessionHash: string): Promise<StoredPortalSession | null> {
      const [row] = await db.query<StoredPortalSession>(BY_SESSION, [sessionHash]);
      return row ?? null;
    },

    /** Marks a session ended; true only for the call that ended it (so it is logged once). */
    async end(id: string): Promise<boolean> {
      const rows = await db.query("UPDATE portal_sessions SET ended_at = now() WHERE id = $1 AND ended_at IS NULL RETURNING id", [id]);
      return rows.length > 0;
    },

    /** Sessions open now: started, not ended, not expired, their token not revoked. */
    async countActive(): Promise<number> {
      const [row] = await db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM portal_sessions s JOIN api_tokens t ON t.id = s.token_id
          WHERE s.expires_at > now() AND s.started_at IS NOT NULL AND s.ended_at IS NULL AND t.revoked_at IS NULL`,
      );
      return row?.n ?? 0;
    },

    /**
     * Removes up to `limit` rows dead for more than a day (through the expires_at index); called
     * with every new link, so the table holds about a day of links and sessions.
     */
    async sweepDead(limit: number): Promise<number> {
      const rows = await db.query(
        `DELETE FROM portal_sessions WHERE id IN (
           SELECT id FROM portal_sessions WHERE expires_at < now() - interval '1 day' ORDER BY expires_at LIMIT $1)
         RETURNING id`,
        [limit],
      );
      return rows.length;
    },
  };
}

export type PortalSessionsRepo = ReturnType<typeof portalSessionsRepo>;
