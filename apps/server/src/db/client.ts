// Opens the database the configuration asks for: PostgreSQL when a URL is given (production,
// scale-out), otherwise the embedded PGlite (zero setup). Callers see one `Database` either way.
import { mkdirSync } from "node:fs";
import { lockDataDir } from "./embedded-lock.js";
import { openPglite } from "./pglite.js";
import { openPostgres } from "./postgres.js";
export { openGenericReads } from "./postgres.js";
import type { Database, OpenDatabaseOptions } from "./types.js";

export type { ConnectionRetryCounts, Database, OpenDatabaseOptions, PoolStats, Row, Session, SqlExecutor } from "./types.js";

export async function openDatabase(opts: OpenDatabaseOptions): Promise<Database> {
  if (opts.databaseUrl) return openPostgres(opts.databaseUrl, opts.poolSize, { genericPlans: opts.genericPlans ?? false });
  if (opts.inMemory || !opts.dataDir) return openPglite({ dataDir: opts.dataDir, inMemory: opts.inMemory });
  mkdirSync(opts.dataDir, { recursive: true });
  const unlock = lockDataDir(opts.dataDir);
  try {
    const db = await openPglite({ dataDir: opts.dataDir });
    const close = db.close.bind(db);
    return Object.assign(db, { close: () => close().finally(unlock) });
  } catch (err) {
    unlock();
    throw err;
  }
}
