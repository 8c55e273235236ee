// A fresh, migrated database per caller, on the engine the run targets:
// - TEST_DATABASE_URL set → a new database on that PostgreSQL server, copied from a migrated
//   template (CREATE DATABASE … TEMPLATE is far faster than replaying migrations), dropped on close;
// - otherwise → an in-memory PGlite restored from a migrated snapshot (initdb costs seconds).
// Test files run in parallel processes, so template/snapshot creation is race-safe.
import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import pg from "pg";
import { openDatabase, type Database } from "../../src/db/client.js";
import { findMigrationsDir, migrate, readMigrations } from "../../src/db/migrate.js";
import { databaseFromPglite } from "../../src/db/pglite.js";

export interface TestDatabase {
  db: Database;
  /** Connection URL of the test database (PostgreSQL only). */
  databaseUrl?: string;
  close(): Promise<void>;
}

export interface CreateTestDatabaseOptions {
  /** false → an empty database, for testing the migrator itself. Default true. */
  migrated?: boolean;
}

export const onPostgres = Boolean(process.env.TEST_DATABASE_URL);

/** Identifies the migration set, so a changed migration never reuses an old template/snapshot. */
function migrationsKey(): string {
  const hash = createHash("sha256");
  for (const m of readMigrations(findMigrationsDir())) hash.update(`${m.name}\0${m.checksum}\0`);
  return hash.digest("hex").slice(0, 16);
}

export async function createTestDatabase(opts: CreateTestDatabaseOptions = {}): Promise<TestDatabase> {
  const migrated = opts.migrated ?? true;
  const baseUrl = process.env.TEST_DATABASE_URL;
  return baseUrl ? createPostgresTestDatabase(baseUrl, migrated) : createPgliteTestDatabase(migrated);
}

// ---------------------------------------------------------------- PostgreSQL

/** Serialises template creation and test-database creation across test processes. */
const HARNESS_LOCK_KEY = 0x41525354; // "ARST"
const TEMPLATE_PREFIX = "ars_tpl_";
const TEST_DB_PREFIX = "ars_test_";
/** Test databases older than this are leftovers of killed runs and are dropped. */
const STALE_AFTER_MS = 6 * 60 * 60 * 1000;

function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

async function withAdmin<T>(baseUrl: string, fn: (admin: pg.Client) => Promise<T>): Promise<T> {
  const admin = new pg.Client({ connectionString: baseUrl, application_name: "ars-test-harness" });
  admin.on("error", () => undefined);
  await admin.connect();
  try {
    return await fn(admin);
  } finally {
    await admin.end().catch(() => undefined);
  }
}

async function dropDatabase(admin: pg.Client, name: string): Promise<void> {
  await admin.query(`ALTER DATABASE ${pg.escapeIdentifier(name)} WITH IS_TEMPLATE false`).catch(() => undefined);
  await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
}

async function ensureTemplate(admin: pg.Client, baseUrl: string): Promise<string> {
  const template = `${TEMPLATE_PREFIX}${migrationsKey()}`;
  const existing = await admin.query<{ datistemplate: boolean }>(
    "SELECT datistemplate FROM pg_database WHERE datname = $1",
    [template],
  );
  if (existing.rows[0]?.datistemplate) return template;
  // Not marked as template yet: an earlier run died while building it.
  if (existing.rows[0]) await dropDatabase(admin, template);

  // A new migration set: the old templates are dead weight.
  const stale = await admin.query<{ datname: string }>(
    "SELECT datname FROM pg_database WHERE datname LIKE $1 AND datname <> $2",
    [`${TEMPLATE_PREFIX}%`, template],
  );
  for (const row of stale.rows) await dropDatabase(admin, row.datname);

  await admin.query(`CREATE DATABASE ${pg.escapeIdentifier(template)}`);
  const db = await openDatabase({ databaseUrl: withDatabase(baseUrl, template), poolSize: 1 });
  try {
    await migrate(db);
  } finally {
    await db.close();
  }
  // Marked only once complete; nobody stays connected, which CREATE DATABASE … TEMPLATE requires.
  await admin.query(`ALTER DATABASE ${pg.escapeIdentifier(template)} WITH IS_TEMPLATE true`);
  return template;
}

async function dropStaleTestDatabases(admin: pg.Client): Promise<void> {
  const rows = await admin.query<{ datname: string }>("SELECT datname FROM pg_database WHERE datname LIKE $1", [
    `${TEST_DB_PREFIX}%`,
  ]);
  for (const { datname } of rows.rows) {
    const createdAt = Number.parseInt(datname.slice(TEST_DB_PREFIX.length).split("_")[0] ?? "", 36);
    if (Number.isFinite(createdAt) && Date.now() - createdAt > STALE_AFTER_MS) await dropDatabase(admin, datname);
  }
}

async function createPostgresTestDatabase(baseUrl: string, migrated: boolean): Promise<TestDatabase> {
  const name = `${TEST_DB_PREFIX}${Date.now().toString(36)}_${process.pid}_${randomBytes(4).toString("hex")}`;
  await withAdmin(baseUrl, async (admin) => {
    await admin.query("SELECT pg_advisory_lock($1)", [HARNESS_LOCK_KEY]);
    try {
      await dropStaleTestDatabases(admin);
      const template = migrated ? await ensureTemplate(admin, baseUrl) : "template0";
      await admin.query(`CREATE DATABASE ${pg.escapeIdentifier(name)} TEMPLATE ${pg.escapeIdentifier(template)}`);
    } finally {
      await admin.query("SELECT pg_advisory_unlock($1)", [HARNESS_LOCK_KEY]);
    }
  });

  const databaseUrl = withDatabase(baseUrl, name);
  let db: Database;
  try {
    db = await openDatabase({ databaseUrl, poolSize: 5 });
    // A no-op on the template copy; proves it really carries every migration.
    if (migrated) await migrate(db);
  } catch (error) {
    await withAdmin(baseUrl, (admin) => dropDatabase(admin, name));
    throw error;
  }

  let closed = false;
  return {
    db,
    databaseUrl,
    async close() {
      if (closed) return;
      closed = true;
      await db.close();
      await withAdmin(baseUrl, (admin) => dropDatabase(admin, name));
    },
  };
}

// ---------------------------------------------------------------- PGlite

const SNAPSHOT_DIR = join(tmpdir(), "ars-test-pglite");
const snapshots = new Map<string, Promise<Blob>>();

function pgliteVersion(): string {
  const require = createRequire(import.meta.url);
  // Walk up from the entry file to the package's own manifest.
  let dir = dirname(require.resolve("@electric-sql/pglite"));
  for (;;) {
    const manifest = join(dir, "package.json");
    if (existsSync(manifest)) {
      const parsed = JSON.parse(readFileSync(manifest, "utf8")) as { name?: string; version?: string };
      if (parsed.name === "@electric-sql/pglite") return parsed.version ?? "unknown";
    }
    const parent = dirname(dir);
    if (parent === dir) return "unknown";
    dir = parent;
  }
}

/**
 * A data-directory dump of a fresh (optionally migrated) PGlite, shared by all test processes
 * through a file in the temp directory: restoring one takes a fraction of initdb's time.
 */
function snapshot(migrated: boolean): Promise<Blob> {
  const key = `${migrated ? migrationsKey() : "empty"}-pglite-${pgliteVersion()}`;
  let pending = snapshots.get(key);
  if (!pending) {
    pending = (async () => {
      const file = join(SNAPSHOT_DIR, `${key}.tar`);
      if (existsSync(file)) return new Blob([readFileSync(file)]);
      const instance = await PGlite.create();
      const db = await databaseFromPglite(instance);
      let blob: Blob;
      try {
        if (migrated) await migrate(db);
        blob = await instance.dumpDataDir("none");
      } finally {
        await db.close();
      }
      mkdirSync(SNAPSHOT_DIR, { recursive: true });
      // Write-then-rename: a concurrent reader sees the whole file or none.
      const temporary = `${file}.${process.pid}.${randomBytes(4).toString("hex")}`;
      writeFileSync(temporary, Buffer.from(await blob.arrayBuffer()));
      renameSync(temporary, file);
      pruneSnapshots();
      return blob;
    })();
    snapshots.set(key, pending);
  }
  return pending;
}

/** Snapshots of other migration sets or PGlite versions would only pile up in the temp directory. */
function pruneSnapshots(): void {
  const keep = new Set([`${migrationsKey()}-pglite-${pgliteVersion()}.tar`, `empty-pglite-${pgliteVersion()}.tar`]);
  for (const name of readdirSync(SNAPSHOT_DIR)) {
    if (name.endsWith(".tar") && !keep.has(name)) rmSync(join(SNAPSHOT_DIR, name), { force: true });
  }
}

async function restore(migrated: boolean): Promise<PGlite> {
  try {
    return await PGlite.create({ loadDataDir: await snapshot(migrated) });
  } catch {
    // A corrupt cached snapshot (e.g. a killed writer on another file system): rebuild once.
    rmSync(SNAPSHOT_DIR, { recursive: true, force: true });
    snapshots.clear();
    return PGlite.create({ loadDataDir: await snapshot(migrated) });
  }
}

async function createPgliteTestDatabase(migrated: boolean): Promise<TestDatabase> {
  const db = await databaseFromPglite(await restore(migrated));
  // A no-op on the snapshot; proves it really carries every migration.
  if (migrated) await migrate(db);
  let closed = false;
  return {
    db,
    async close() {
      if (closed) return;
      closed = true;
      await db.close();
    },
  };
}
