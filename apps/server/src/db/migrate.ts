// Applies prisma/migrations/*/migration.sql without Prisma's schema engine (its binary cannot be
// fetched here), recording each one in `_prisma_migrations` exactly as `prisma migrate deploy`
// does, so Prisma's own tooling agrees about what is applied wherever it can run.
import { createHash, randomUUID } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { Database, SqlExecutor } from "./types.js";

/** Prisma Migrate's own advisory lock key: our migrator and `prisma migrate deploy` exclude each other. */
const PRISMA_MIGRATE_LOCK_KEY = 72707369;

/** The table as Prisma's schema engine creates it on PostgreSQL. */
const CREATE_MIGRATIONS_TABLE = `CREATE TABLE IF NOT EXISTS _prisma_migrations (
    id                      VARCHAR(36) PRIMARY KEY NOT NULL,
    checksum                VARCHAR(64) NOT NULL,
    finished_at             TIMESTAMPTZ,
    migration_name          VARCHAR(255) NOT NULL,
    logs                    TEXT,
    rolled_back_at          TIMESTAMPTZ,
    started_at              TIMESTAMPTZ NOT NULL DEFAULT now(),
    applied_steps_count     INTEGER NOT NULL DEFAULT 0
)`;

export interface MigrationFile {
  name: string;
  sql: string;
  /** sha256 of the file, lower-case hex: Prisma's checksum. */
  checksum: string;
}

export interface MigrateResult {
  migrationsDir: string;
  /** Applied by this call, in order. */
  applied: string[];
  /** Applied earlier whose file has changed since (Prisma's `migrate dev` would complain too). */
  modifiedAfterApply: string[];
}

export interface MigrateOptions {
  /** Defaults to `ARS_MIGRATIONS_DIR`, else the `prisma/migrations` found above this module. */
  migrationsDir?: string | undefined;
}

/**
 * Walks up from this module to the repository root that holds `prisma/migrations`, so the same
 * code finds it when run from `src/` (vitest, tsx) and from `dist/` (compiled).
 */
export function findMigrationsDir(): string {
  const fromEnv = process.env.ARS_MIGRATIONS_DIR;
  if (fromEnv) return resolve(fromEnv);
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = join(dir, "prisma", "migrations");
    if (existsSync(join(candidate, "migration_lock.toml"))) return candidate;
    const parent = dirname(dir);
    if (parent === dir) {
      throw new Error("prisma/migrations not found above the server package; set ARS_MIGRATIONS_DIR");
    }
    dir = parent;
  }
}

export function checksumOf(sql: string): string {
  return createHash("sha256").update(sql, "utf8").digest("hex");
}

/** Prisma compares checksums regardless of line endings (git may rewrite them on checkout). */
function matchesChecksum(sql: string, checksum: string): boolean {
  const variants = [sql, sql.replaceAll("\r\n", "\n"), sql.replaceAll("\r\n", "\n").replaceAll("\n", "\r\n")];
  return variants.some((variant) => checksumOf(variant) === checksum);
}

/** Migration folders in Prisma's order (lexicographic by name, i.e. by timestamp prefix). */
export function readMigrations(migrationsDir: string): MigrationFile[] {
  return readdirSync(migrationsDir)
    .filter((entry) => statSync(join(migrationsDir, entry)).isDirectory())
    .sort()
    .map((name) => {
      const path = join(migrationsDir, name, "migration.sql");
      if (!existsSync(path)) throw new Error(`migration ${name} has no migration.sql`);
      const sql = readFileSync(path, "utf8");
      return { name, sql, checksum: checksumOf(sql) };
    });
}

interface AppliedRow {
  migration_name: string;
  checksum: string;
}

async function appliedMigrations(tx: SqlExecutor): Promise<Map<string, AppliedRow>> {
  // Rows that failed or were rolled back (by Prisma) do not count as applied.
  const rows = await tx.query<AppliedRow>(
    `SELECT migration_name, checksum FROM _prisma_migrations
      WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL`,
  );
  return new Map(rows.map((row) => [row.migration_name, row]));
}

async function hasMigrationsTable(db: Database): Promise<boolean> {
  const rows = await db.query<{ exists: boolean }>(
    "SELECT to_regclass('_prisma_migrations') IS NOT NULL AS exists",
  );
  return rows[0]?.exists === true;
}

/**
 * Applies every migration not yet recorded, each in its own transaction together with its
 * `_prisma_migrations` row, so a failure leaves neither half-applied DDL nor a record behind.
 * Each transaction first takes Prisma's advisory lock and re-checks, so concurrent migrators
 * (several processes starting at once) apply every migration exactly once. Idempotent.
 * Migrations must be transaction-safe (no CREATE INDEX CONCURRENTLY).
 */
export async function migrate(db: Database, opts: MigrateOptions = {}): Promise<MigrateResult> {
  const migrationsDir = opts.migrationsDir ? resolve(opts.migrationsDir) : findMigrationsDir();
  const migrations = readMigrations(migrationsDir);
  const result: MigrateResult = { migrationsDir, applied: [], modifiedAfterApply: [] };

  // Fast path without locks: the common start-up where everything is applied already.
  let applied = (await hasMigrationsTable(db)) ? await appliedMigrations(db) : new Map<string, AppliedRow>();

  for (const migration of migrations) {
    if (applied.has(migration.name)) continue;
    const appliedNow = await db.transaction(async (tx) => {
      await tx.query("SELECT pg_advisory_xact_lock($1)", [PRISMA_MIGRATE_LOCK_KEY]);
      await tx.exec(CREATE_MIGRATIONS_TABLE);
      applied = await appliedMigrations(tx);
      if (applied.has(migration.name)) return false; // another migrator was first
      await tx.exec(migration.sql);
      // started_at = transaction start, finished_at = after the script ran, as Prisma records them.
      await tx.query(
        `INSERT INTO _prisma_migrations
           (id, checksum, finished_at, migration_name, logs, rolled_back_at, started_at, applied_steps_count)
         VALUES ($1, $2, clock_timestamp(), $3, NULL, NULL, now(), 1)`,
        [randomUUID(), migration.checksum, migration.name],
      );
      return true;
    }).catch((error: unknown) => {
      const message = error instanceof Error ? error.message : String(error);
      throw new Error(`migration ${migration.name} failed: ${message}`, { cause: error });
    });
    if (appliedNow) result.applied.push(migration.name);
  }

  if (result.applied.length > 0) applied = await appliedMigrations(db);
  for (const migration of migrations) {
    const row = applied.get(migration.name);
    if (row && !matchesChecksum(migration.sql, row.checksum)) result.modifiedAfterApply.push(migration.name);
  }
  return result;
}
