// Idempotency-Key records (the contract's Idempotency-Key header: kept 24 h per org). Raw SQL: the claim is an INSERT … ON CONFLICT DO
// NOTHING, so of two concurrent requests with one key exactly one inserts and runs.
import type { SqlExecutor } from "../db/client.js";
import type { IdempotencyKey } from "../generated/prisma/client.js";

export type StoredKey = Pick<IdempotencyKey, "request_hash" | "status" | "response_status" | "response_headers" | "response_body_enc">;

export interface StoredResponse {
  status: number;
  headers: Record<string, string>;
  bodyEnc: Uint8Array;
}

// A claim left `in_progress` by a process that died cannot block its key for a day: no request
// runs anywhere near this long (the delivery and request timeouts are seconds).
const ABANDONED_AFTER = "5 minutes";

const CLAIM = `
INSERT INTO idempotency_keys (org_id, key_hash, request_hash, status, created_at, expires_at)
VALUES ($1, $2, $3, 'in_progress', now(), now() + $4::int * interval '1 millisecond')
ON CONFLICT (org_id, key_hash) DO NOTHING
RETURNING key_hash`;

export function idempotencyKeysRepo(db: SqlExecutor) {
  return {
    /** true: this request owns the key now; false: it exists (see `find`). */
    async claim(orgId: string, keyHash: string, requestHash: string, ttlMs: number): Promise<boolean> {
      await db.query(
        `DELETE FROM idempotency_keys
          WHERE org_id = $1 AND key_hash = $2
            AND (expires_at <= now() OR (status = 'in_progress' AND created_at < now() - interval '${ABANDONED_AFTER}'))`,
        [orgId, keyHash],
      );
      const rows = await db.query(CLAIM, [orgId, keyHash, requestHash, ttlMs]);
      return rows.length > 0;
    },

    async find(orgId: string, keyHash: string): Promise<StoredKey | null> {
      const [row] = await db.query<StoredKey>(
        `SELECT request_hash, status, response_status, response_headers, response_body_enc
           FROM idempotency_keys WHERE org_id = $1 AND key_hash = $2`,
        [orgId, keyHash],
      );
      return row ?? null;
    },

    async complete(orgId: string, keyHash: string, response: StoredResponse): Promise<void> {
      await db.query(
        `UPDATE idempotency_keys
            SET status = 'completed', response_status = $3, response_headers = $4::jsonb, response_body_enc = $5
          WHERE org_id = $1 AND key_hash = $2`,
        [orgId, keyHash, response.status, JSON.stringify(response.headers), response.bodyEnc],
      );
    },

    /**
     * Removes up to `limit` expired keys (oldest expiry first, through the expires_at index);
     * returns how many went. Housekeeping calls it until fewer than `limit` go.
     */
    async sweepExpired(now: Date, limit: number): Promise<number> {
      const rows = await db.query<{ n: number }>(
        `WITH gone AS (
           DELETE FROM idempotency_keys k
            USING (SELECT org_id, key_hash FROM idempotency_keys WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2) e
            WHERE k.org_id = e.org_id AND k.key_hash = e.key_hash
           RETURNING 1)
         SELECT count(*)::int AS n FROM gone`,
        [now, limit],
      );
      return rows[0]?.n ?? 0;
    },

    /** Gives the key up (the request failed on our side): a repeat may run again. */
    async release(orgId: string, keyHash: string): Promise<void> {
      await db.query("DELETE FROM idempotency_keys WHERE org_id = $1 AND key_hash = $2 AND status = 'in_progress'", [orgId, keyHash]);
    },
  };
}

export type IdempotencyKeysRepo = ReturnType<typeof idempotencyKeysRepo>;
