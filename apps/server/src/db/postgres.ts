// PostgreSQL: Prisma through @prisma/adapter-pg and raw SQL share one pg.Pool, so the pool size
// bounds the connections a process opens; LISTEN gets its own connection (see notify.ts). A read
// on the pool that loses its connection runs once more (read-retry.ts), Prisma's and raw alike,
// on a short-lived connection of its own: up to the pool size again, only while retries run.
import { PrismaPg } from "@prisma/adapter-pg";
import pg from "pg";
import { PrismaClient } from "../generated/prisma/client.js";
import { createPgListener } from "./notify.js";
import { createReadRetry, withReadRetry } from "./read-retry.js";
import { sharedParsers } from "./sql-types.js";
import { assertChannelName, type Database, type PoolStats, type QueryOptions, type Row, type Session, type SqlExecutor } from "./types.js";

const DEFAULT_POOL_SIZE = 10;

export const rawQueryTypes: pg.CustomTypesConfig = {
  getTypeParser: (oid: number, format?: "text" | "binary") => sharedParsers[oid] ?? pg.types.getTypeParser(oid, format ?? "text"),
};

function executor(client: pg.Pool | pg.PoolClient): SqlExecutor {
  return {
    async query<T = Row>(sql: string, params: unknown[] = [], options?: QueryOptions): Promise<T[]> {
      // the caller names the row shape its SQL selects, as with pg's own query<R>; a name makes
      // pg prepare it on each connection once (per-connection statement cache)
      const result = await client.query<T & pg.QueryResultRow>({ text: sql, values: params, types: rawQueryTypes, ...(options?.name && { name: options.name }) });
      return result.rows;
    },
    async exec(sql: string): Promise<void> {
      // No values → simple query protocol, which accepts several statements.
      await client.query(sql);
    },
  };
}

/** Raw SQL on `pool`; a read that lost its connection runs once more on `freshPool` (read-retry.ts). */
function retrying(pool: pg.Pool, freshPool: pg.Pool, retry: ReturnType<typeof createReadRetry>): SqlExecutor {
  const direct = executor(pool);
  const fresh = executor(freshPool);
  return {
    query<T = Row>(sql: string, params?: unknown[], options?: QueryOptions): Promise<T[]> {
      return retry.run(sql, (again) => (again ? fresh : direct).query<T>(sql, params, options));
    },
    exec: direct.exec,
  };
}

/** A transaction whose ROLLBACK failed too: its connection must not be reused. */
class RollbackFailed extends Error {}

const unwrapRollback = (error: unknown): never => {
  throw error instanceof RollbackFailed ? error.cause : error;
};

async function transactionOn<T>(client: pg.PoolClient, fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
  await client.query("BEGIN");
  try {
    const result = await fn(executor(client));
    await client.query("COMMIT");
    return result;
  } catch (error) {
    // A connection that cannot even roll back is not returned to the pool.
    await client.query("ROLLBACK").catch(() => {
      throw new RollbackFailed("rollback failed", { cause: error });
    });
    throw error;
  }
}

/**
 * A connection taken from the pool for a transaction or a session. While held it has no listener
 * of the pool's: a connection terminated between two of its statements (pg_terminate_backend, a
 * restart) would emit an unhandled 'error' and end the process. The loss shows instead as the
 * failure of its next statement, which lib/connection-loss.ts classifies.
 */
async function checkOut(pool: pg.Pool): Promise<{ client: pg.PoolClient; release(destroy: boolean): void }> {
  const client = await pool.connect();
  const ignore = () => undefined;
  client.on("error", ignore);
  return {
    client,
    release(destroy) {
      client.removeListener("error", ignore);
      client.release(destroy);
    },
  };
}

/** The session settings of OpenDatabaseOptions.genericPlans: one plan per statement and connection, never a sequential scan. */
const GENERIC_PLANS = "-c plan_cache_mode=force_generic_plan -c enable_seqscan=off";

/**
 * A pool, its twin for second runs, and raw SQL on them with one retry of a read that lost its
 * connection (read-retry.ts). `genericPlans`: OpenDatabaseOptions.
 */
function readPools(databaseUrl: string, poolSize: number, genericPlans: boolean) {
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max: poolSize,
    // a connection closed when idle takes its prepared statements with it (OpenDatabaseOptions)
    ...(genericPlans && { options: GENERIC_PLANS, idleTimeoutMillis: 0 }),
  });
  // An idle client losing its connection emits on the pool; unhandled, that would crash the process.
  pool.on("error", () => undefined);
  // A read's second run (read-retry.ts) takes a connection opened for it and closed right after
  // (idle 1 ms), never one that may have died with the first.
  const freshPool = new pg.Pool({ connectionString: databaseUrl, max: poolSize, idleTimeoutMillis: 1, ...(genericPlans && { options: GENERIC_PLANS }) });
  freshPool.on("error", () => undefined);
  const retry = createReadRetry();
  return {
    pool,
    freshPool,
    retry,
    raw: retrying(pool, freshPool, retry),
    poolStats: (): PoolStats => ({ max: poolSize, inUse: pool.totalCount - pool.idleCount, waiting: pool.waitingCount }),
    end: () => Promise.all([pool.end(), freshPool.end()]).then(() => undefined),
  };
}

export async function openPostgres(databaseUrl: string, poolSize = DEFAULT_POOL_SIZE, { genericPlans = false } = {}): Promise<Database> {
  const { pool, freshPool, retry, raw, poolStats, end } = readPools(databaseUrl, poolSize, genericPlans);
  const prisma = new PrismaClient({ adapter: withReadRetry(new PrismaPg(pool), new PrismaPg(freshPool), retry) });
  const listener = createPgListener(databaseUrl);

  try {
    await raw.query("SELECT 1");
  } catch (error) {
    await end().catch(() => undefined);
    throw error;
  }

  return {
    kind: "postgres",
    prisma,
    query: raw.query,
    exec: raw.exec,

    async transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
      const { client, release } = await checkOut(pool);
      let broken = false;
      try {
        return await transactionOn(client, fn);
      } catch (error) {
        if (error instanceof RollbackFailed) {
          broken = true;
          throw error.cause;
        }
        throw error;
      } finally {
        release(broken);
      }
    },

    async session<T>(fn: (session: Session) => Promise<T>): Promise<T> {
      const { client, release } = await checkOut(pool);
      try {
        return await fn({ ...executor(client), transaction: (body) => transactionOn(client, body).catch(unwrapRollback) });
      } finally {
        // closed, not returned: whatever the session locked or SET ends with it
        release(true);
      }
    },

    listen: listener.listen,

    poolStats,

    connectionRetries: retry.counts,

    async notify(channel, payload = "") {
      assertChannelName(channel);
      // named: every publish sends one, and an unnamed statement is parsed each time
      await pool.query({ name: "ars_notify", text: "SELECT pg_notify($1, $2)", values: [channel, payload] });
    },

    async close() {
      await listener.close();
      await prisma.$disconnect();
      await end();
    },
  };
}

/**
 * Reads on connections that keep one plan per statement (`plan_cache_mode=force_generic_plan`):
 * the list pages of the day-partitioned tables. PostgreSQL prunes a kept plan's days as each
 * statement starts; left to choose, it priced a plan made for the values below the kept one
 * whenever those values pruned days while planning, and planned such a page again every time
 * (1.4 ms over 9 day partitions, 1 ms over 46, against 0.1–0.2 ms to run it). A lost connection
 * is retried once, as on the main pool.
 */
export function openGenericReads(databaseUrl: string, poolSize: number): SqlExecutor & Pick<Database, "poolStats" | "connectionRetries"> & { close(): Promise<void> } {
  // connections open as reads need them: a process that serves no list opens none
  const { raw, retry, poolStats, end } = readPools(databaseUrl, poolSize, true);
  return { ...raw, connectionRetries: retry.counts, poolStats, close: end };
}
