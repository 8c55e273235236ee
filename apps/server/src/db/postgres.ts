// PostgreSQL: Prisma through @prisma/adapter-pg and raw SQL share one pg.Pool, so the pool size
// bounds the connections a process opens; LISTEN gets its own connection (see notify.ts).
import { PrismaPg } from "@prisma/adapter-pg";
import pg from "pg";
import { PrismaClient } from "../generated/prisma/client.js";
import { createPgListener } from "./notify.js";
import { sharedParsers } from "./sql-types.js";
import { assertChannelName, type Database, type Row, type SqlExecutor } from "./types.js";

const DEFAULT_POOL_SIZE = 10;

export const rawQueryTypes: pg.CustomTypesConfig = {
  getTypeParser: (oid: number, format?: "text" | "binary") => sharedParsers[oid] ?? pg.types.getTypeParser(oid, format ?? "text"),
};

function executor(client: pg.Pool | pg.PoolClient): SqlExecutor {
  return {
    async query<T = Row>(sql: string, params: unknown[] = []): Promise<T[]> {
      // the caller names the row shape its SQL selects, as with pg's own query<R>
      const result = await client.query<T & pg.QueryResultRow>({ text: sql, values: params, types: rawQueryTypes });
      return result.rows;
    },
    async exec(sql: string): Promise<void> {
      // No values → simple query protocol, which accepts several statements.
      await client.query(sql);
    },
  };
}

export async function openPostgres(databaseUrl: string, poolSize = DEFAULT_POOL_SIZE): Promise<Database> {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: poolSize });
  // An idle client losing its connection emits on the pool; unhandled, that would crash the process.
  pool.on("error", () => undefined);
  const prisma = new PrismaClient({ adapter: new PrismaPg(pool) });
  const listener = createPgListener(databaseUrl);
  const raw = executor(pool);

  try {
    await raw.query("SELECT 1");
  } catch (error) {
    await pool.end().catch(() => undefined);
    throw error;
  }

  return {
    kind: "postgres",
    prisma,
    query: raw.query,
    exec: raw.exec,

    async transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
      const client = await pool.connect();
      let broken = false;
      try {
        await client.query("BEGIN");
        const result = await fn(executor(client));
        await client.query("COMMIT");
        return result;
      } catch (error) {
        // A connection that cannot even roll back is not returned to the pool.
        await client.query("ROLLBACK").catch(() => {
          broken = true;
        });
        throw error;
      } finally {
        client.release(broken);
      }
    },

    listen: listener.listen,

    poolStats: () => ({ max: poolSize, inUse: pool.totalCount - pool.idleCount, waiting: pool.waitingCount }),

    async notify(channel, payload = "") {
      assertChannelName(channel);
      await pool.query("SELECT pg_notify($1, $2)", [channel, payload]);
    },

    async close() {
      await listener.close();
      await prisma.$disconnect();
      await pool.end();
    },
  };
}
