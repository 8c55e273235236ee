// A read replica for the eventually consistent lists: a pool of its own on DATABASE_READ_URL.
// When the replica cannot answer (down, restarting, or a query cancelled by WAL replay), the
// same statement runs on the primary, so losing a replica slows nothing down but the primary.
import pg from "pg";
import { isConnectionLoss } from "../lib/connection-loss.js";
import { rawQueryTypes } from "./postgres.js";
import type { Row, SqlExecutor } from "./types.js";

const DEFAULT_POOL_SIZE = 10;

/**
 * Errors after which the primary answers instead: a lost or refused connection (which errors
 * those are, lib/connection-loss.ts decides), or a standby that cancelled the query for a
 * conflict with recovery (40001). A SQL error of the statement itself would fail on the primary
 * too and is not retried.
 */
export function replicaUnavailable(err: unknown): boolean {
  if (isConnectionLoss(err)) return true;
  return typeof err === "object" && err !== null && "code" in err && err.code === "40001";
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
