// Embedded PGlite: one in-process PostgreSQL with a single connection, so Prisma, raw SQL and
// LISTEN all share it and concurrent queries run one after another.
import { mkdirSync } from "node:fs";
import { PGlite, type Transaction } from "@electric-sql/pglite";
import { PrismaPGlite } from "pglite-prisma-adapter";
import { PrismaClient } from "../generated/prisma/client.js";
import { sharedParsers } from "./sql-types.js";
import { assertChannelName, type Database, type Row, type Session, type SqlExecutor } from "./types.js";


function executor(target: PGlite | Transaction): SqlExecutor {
  return {
    async query<T = Row>(sql: string, params: unknown[] = []): Promise<T[]> {
      const result = await target.query<T>(sql, params, { parsers: sharedParsers });
      return result.rows;
    },
    async exec(sql: string): Promise<void> {
      await target.exec(sql);
    },
  };
}

export async function openPglite(opts: { dataDir?: string | undefined; inMemory?: boolean | undefined }): Promise<Database> {
  if (opts.inMemory) return databaseFromPglite(await PGlite.create());
  if (opts.dataDir) {
    mkdirSync(opts.dataDir, { recursive: true });
    return databaseFromPglite(await PGlite.create(opts.dataDir));
  }
  throw new Error("openDatabase: give databaseUrl (PostgreSQL), dataDir (embedded database) or inMemory");
}

/** Wraps an already created PGlite (e.g. one restored from a snapshot); close() closes it. */
export async function databaseFromPglite(pg: PGlite): Promise<Database> {
  // The root package.json pins the PGlite copy the adapter resolves to ours: the adapter maps
  // database errors (23505 → P2002) only for errors of the copy it was built against.
  const prisma = new PrismaClient({ adapter: new PrismaPGlite(pg) });
  const raw = executor(pg);
  const transaction = <T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> => pg.transaction((tx) => fn(executor(tx)));

  return {
    kind: "pglite",
    prisma,
    query: raw.query,
    exec: raw.exec,

    transaction,

    session<T>(fn: (session: Session) => Promise<T>): Promise<T> {
      return fn({ ...raw, transaction });
    },

    async listen(channel, handler) {
      assertChannelName(channel);
      const unsubscribe = await pg.listen(channel, handler);
      let active = true;
      return async () => {
        if (!active) return;
        active = false;
        await unsubscribe();
      };
    },

    async notify(channel, payload = "") {
      assertChannelName(channel);
      await pg.query("SELECT pg_notify($1, $2)", [channel, payload]);
    },

    // One connection; PGlite does not tell whether it is busy or how many queries wait for it.
    poolStats: () => ({ max: 1, inUse: null, waiting: null }),

    async close() {
      await prisma.$disconnect();
      await pg.close();
    },
  };
}
