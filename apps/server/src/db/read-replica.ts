// A read replica for the eventually consistent lists: a pool of its own on DATABASE_READ_URL.
// When the replica cannot answer (down, restarting, or a query cancelled by WAL replay), the
// same statement runs on the primary, so losing a replica slows nothing down but the primary.
import pg from "pg";
import { rawQueryTypes } from "./postgres.js";
import type { Row, SqlExecutor } from "./types.js";

const DEFAULT_POOL_SIZE = 10;

/**
 * Errors after which the primary answers instead: the connection could not be made or was lost
 * (node errors, pg's own, 08xxx), the server is shutting down or starting (57P0x), or a standby
 * cancelled the query for a conflict with recovery (40001). A SQL error of the statement itself
 * would fail on the primary too and is not retried.
 */
export function replicaUnavailable(err: unknown): boolean {
  const code = typeof err === "object" && err !== null && "code" in err ? String(err.code) : "";
  if (/^(08|57P0)/.test(code) || code === "40001") return true;
  if (["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EHOSTUNREACH", "ENOTFOUND", "EPIPE"].includes(code)) return true;
  const message = err instanceof Error ? err.message : "";
  return /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error/i.test(message);
}

export interface ReadReplica extends SqlExecutor {
  close(): Promise<void>;
}

export interface ReadReplicaEvents {
  /** the replica could not answer; the primary did */
  onFallback(err: unknown): void;
  /** the first connection to the replica is open (a process that never lists never opens one) */
  onFirstConnect(): void;
}

export function openReadReplica(url: string, primary: SqlExecutor, events: ReadReplicaEvents, poolSize = DEFAULT_POOL_SIZE): ReadReplica {
  // connects on first use: a process that never lists (a worker) opens no replica connection
  const pool = new pg.Pool({ connectionString: url, max: poolSize, application_name: "ars-list-reader", connectionTimeoutMillis: 5_000 });
  pool.on("error", () => undefined);
  pool.once("connect", () => events.onFirstConnect());
  return {
    async query<T = Row>(sql: string, params: unknown[] = []): Promise<T[]> {
      try {
        const result = await pool.query<T & pg.QueryResultRow>({ text: sql, values: params, types: rawQueryTypes });
        return result.rows;
      } catch (err) {
        if (!replicaUnavailable(err)) throw err;
        events.onFallback(err);
        return primary.query<T>(sql, params);
      }
    },
    async exec(sql: string): Promise<void> {
      await pool.query(sql);
    },
    close: () => pool.end(),
  };
}
