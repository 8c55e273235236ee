// Embedded PGlite: one in-process PostgreSQL with a single connection, so Prisma, raw SQL and
// LISTEN all share it and concurrent queries run one after another.
import { mkdirSync } from "node:fs";
import { parse, PGlite, protocol, type Transaction } from "@electric-sql/pglite";
import { PrismaPGlite } from "pglite-prisma-adapter";
import { PrismaClient } from "../generated/prisma/client.js";
import { sharedParsers } from "./sql-types.js";
import { assertChannelName, type Database, type QueryOptions, type Row, type Session, type SqlExecutor } from "./types.js";

const { serialize } = protocol;

/**
 * Named statements on PGlite. Its `query()` sends every statement unnamed, so PostgreSQL parses
 * and plans it on each run: about 100 ms for the engine's claim over day partitions, all of it
 * on this process's one thread (PGlite runs in it). A named statement is parsed once and its plan
 * kept, as node-postgres does with `name` on PostgreSQL. This speaks the extended protocol
 * through PGlite's own protocol API and locks, as its `query()` does: parse and describe once per
 * name, then bind, describe, execute and sync per run.
 */
function preparedStatements(pg: PGlite) {
  /** name → its text and parameter types, once PostgreSQL has it */
  const prepared = new Map<string, { text: string; types: number[] }>();
  const send = (message: Uint8Array) => pg.execProtocolStream(message, { syncToFs: false });

  async function run<T>(name: string, text: string, params: unknown[]): Promise<T[]> {
    const messages = [];
    try {
      let statement = prepared.get(name);
      if (statement && statement.text !== text) throw new Error(`prepared statement ${name} was prepared with another text`);
      if (!statement) {
        await send(serialize.parse({ name, text, types: [] }));
        const types = parse.parseDescribeStatementResults(await send(serialize.describe({ type: "S", name })));
        statement = { text, types };
        prepared.set(name, statement);
      }
      const types = statement.types;
      const values = params.map((v, i) => {
        if (v === null || v === undefined) return null;
        const serializer = pg.serializers[types[i] ?? 0];
        return serializer ? serializer(v) : String(v);
      });
      messages.push(...(await send(serialize.bind({ statement: name, values }))));
      messages.push(...(await send(serialize.describe({ type: "P" }))));
      messages.push(...(await send(serialize.execute({}))));
    } finally {
      // ends the extended-protocol exchange, failed or not, so the connection is ready again
      messages.push(...(await send(serialize.sync())));
    }
    // rows as the statement selects them: the caller names their shape, as with query<T>()
    const [result] = parse.parseResults(messages, pg.parsers, { parsers: sharedParsers });
    const field: string = "rows";
    const rows: T[] = result ? Reflect.get(result, field) : [];
    return rows;
  }

  return {
    /** Outside a transaction: waits for any transaction to end, as `query()` does, and syncs the data directory after. */
    async top<T>(name: string, text: string, params: unknown[]): Promise<T[]> {
      await pg._checkReady();
      const rows = await pg._runExclusiveTransaction(() => pg._runExclusiveQuery(() => run<T>(name, text, params)));
      await pg.syncToFs();
      return rows;
    },
    /** Inside a transaction (which holds the connection): its commit syncs. */
    inTransaction<T>(name: string, text: string, params: unknown[]): Promise<T[]> {
      return pg._runExclusiveQuery(() => run<T>(name, text, params));
    },
  };
}

type Prepared = ReturnType<typeof preparedStatements>;

function executor(target: PGlite | Transaction, runPrepared: Prepared["top"]): SqlExecutor {
  return {
    async query<T = Row>(sql: string, params: unknown[] = [], options?: QueryOptions): Promise<T[]> {
      if (options?.name) return runPrepared<T>(options.name, sql, params);
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
  const prepared = preparedStatements(pg);
  const raw = executor(pg, prepared.top);
  const transaction = <T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> => pg.transaction((tx) => fn(executor(tx, prepared.inTransaction)));

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
