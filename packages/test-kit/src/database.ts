// A fresh, migrated database per caller, on the engine the run targets:
// - TEST_DATABASE_URL set → a new database on that PostgreSQL server, copied from a migrated
//   template (CREATE DATABASE … TEMPLATE is far faster than replaying migrations), dropped on close;
// - otherwise → an in-memory PGlite restored from a migrated snapshot (initdb costs seconds).
// Test files run in parallel processes, so template/snapshot creation is race-safe.
// The kit knows no schema: the caller says how to open and migrate its database.
import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import pg from "pg";

export interface TestDatabase<Db> {
  db: Db;
  /** Connection URL of the test database (PostgreSQL only). */
  databaseUrl?: string;
  close(): Promise<void>;
}

export interface CreateTestDatabaseOptions {
  /** false → an empty database, for testing the migrator itself. Default true. */
  migrated?: boolean;
}

export interface TestDatabaseKitOptions<Db> {
  /** The folder of migration files: its contents name the template/snapshot, so a changed migration never reuses an old one. */
  migrationsDir: string;
  /** Wraps a PGlite instance (restored from a snapshot) as the caller's database. */
  openPglite(instance: PGlite): Promise<Db>;
  /** Opens the caller's database on a PostgreSQL URL. */
  openUrl(url: string): Promise<Db>;
  migrate(db: Db): Promise<unknown>;
  close(db: Db): Promise<void>;
}

export interface TestDatabaseKit<Db> {
  onPostgres: boolean;
  create(opts?: CreateTestDatabaseOptions): Promise<TestDatabase<Db>>;
}

export const onPostgres = Boolean(process.env.TEST_DATABASE_URL);

/** What the server exports for opening and migrating its database (structurally: the kit imports no package of ours). */
export interface ServerDatabaseApi<Db extends { close(): Promise<void> }> {
  findMigrationsDir(): string;
  databaseFromPglite(instance: PGlite): Promise<Db>;
  openDatabase(opts: { databaseUrl: string; poolSize: number }): Promise<Db>;
  migrate(db: Db): Promise<unknown>;
}

/** Per-test databases of the server's schema, for whoever starts the server in tests (its own suite, the client's). */
export function serverTestDatabases<Db extends { close(): Promise<void> }>(server: ServerDatabaseApi<Db>): TestDatabaseKit<Db> {
  return testDatabases<Db>({
    migrationsDir: server.findMigrationsDir(),
    openPglite: (instance) => server.databaseFromPglite(instance),
    openUrl: (databaseUrl) => server.openDatabase({ databaseUrl, poolSize: 5 }),
    migrate: (db) => server.migrate(db),
    close: (db) => db.close(),
  });
}

/** Identifies a migration set by the names and contents of every file below `dir`. */
export function directoryKey(dir: string): string {
  const hash = createHash("sha256");
  const walk = (at: string): void => {
    for (const name of readdirSync(at).sort()) {
      const path = join(at, name);
      if (statSync(path).isDirectory()) walk(path);
      else hash.update(`${relative(dir, path)}\0`).update(readFileSync(path)).update("\0");
    }
  };
  walk(dir);
  return hash.digest("hex").slice(0, 16);
}

export function testDatabases<Db>(options: TestDatabaseKitOptions<Db>): TestDatabaseKit<Db> {
  let key: string | undefined;
  const migrationsKey = () => (key ??= directoryKey(options.migrationsDir));
  return {
    onPostgres,
    create({ migrated = true } = {}) {
      const baseUrl = process.env.TEST_DATABASE_URL;
      return baseUrl ? createPostgres(options, migrationsKey, baseUrl, migrated) : createPglite(options, migrationsKey, migrated);
    },
  };
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
  const admin = new pg.Client({ connectionString: baseUrl, application_name: "ars-test-kit" });
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

async function ensureTemplate<Db>(options: TestDatabaseKitOptions<Db>, template: string, admin: pg.Client, baseUrl: string): Promise<void> {
  const existing = await admin.query<{ datistemplate: boolean }>("SELECT datistemplate FROM pg_database WHERE datname = $1", [template]);
  if (existing.rows[0]?.datistemplate) return;
  // Not marked as template yet: an earlier run died while building it.
  if (existing.rows[0]) await dropDatabase(admin, template);

  // Templates of other migration sets are dead weight once nobody has used them for a while; a
  // template still in use (another checkout's run on the same server) is left alone. Its last use
  // is the time stamp in its comment.
  const stale = await admin.query<{ datname: string; used: string | null }>(
    `SELECT d.datname, shobj_description(d.oid, 'pg_database') AS used
       FROM pg_database d WHERE d.datname LIKE $1 AND d.datname <> $2`,
    [`${TEMPLATE_PREFIX}%`, template],
  );
  for (const row of stale.rows) {
    const used = Number(row.used);
    if (!Number.isFinite(used) || Date.now() - used > STALE_AFTER_MS) await dropDatabase(admin, row.datname);
  }

  await admin.query(`CREATE DATABASE ${pg.escapeIdentifier(template)}`);
  const db = await options.openUrl(withDatabase(baseUrl, template));
  try {
    await options.migrate(db);
  } finally {
    await options.close(db);
  }
  // Marked only once complete; nobody stays connected, which CREATE DATABASE … TEMPLATE requires.
  await admin.query(`ALTER DATABASE ${pg.escapeIdentifier(template)} WITH IS_TEMPLATE true`);
}

async function dropStaleTestDatabases(admin: pg.Client): Promise<void> {
  const rows = await admin.query<{ datname: string }>("SELECT datname FROM pg_database WHERE datname LIKE $1", [`${TEST_DB_PREFIX}%`]);
  for (const { datname } of rows.rows) {
    const createdAt = Number.parseInt(datname.slice(TEST_DB_PREFIX.length).split("_")[0] ?? "", 36);
    if (Number.isFinite(createdAt) && Date.now() - createdAt > STALE_AFTER_MS) await dropDatabase(admin, datname);
  }
}

async function createPostgres<Db>(
  options: TestDatabaseKitOptions<Db>,
  migrationsKey: () => string,
  baseUrl: string,
  migrated: boolean,
): Promise<TestDatabase<Db>> {
  const name = `${TEST_DB_PREFIX}${Date.now().toString(36)}_${process.pid}_${randomBytes(4).toString("hex")}`;
  await withAdmin(baseUrl, async (admin) => {
    await admin.query("SELECT pg_advisory_lock($1)", [HARNESS_LOCK_KEY]);
    try {
      await dropStaleTestDatabases(admin);
      const template = migrated ? `${TEMPLATE_PREFIX}${migrationsKey()}` : "template0";
      if (migrated) {
        await ensureTemplate(options, template, admin, baseUrl);
        await admin.query(`COMMENT ON DATABASE ${pg.escapeIdentifier(template)} IS '${Date.now()}'`);
      }
      await admin.query(`CREATE DATABASE ${pg.escapeIdentifier(name)} TEMPLATE ${pg.escapeIdentifier(template)}`);
    } finally {
      await admin.query("SELECT pg_advisory_unlock($1)", [HARNESS_LOCK_KEY]);
    }
  });

  const databaseUrl = withDatabase(baseUrl, name);
  let db: Db;
  try {
    // No migrate here: the template is named after the migration files' contents, so a copy
    // carries exactly them (a no-op migrate cost every test file a few hundred ms).
    db = await options.openUrl(databaseUrl);
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
      await options.close(db);
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
function snapshot<Db>(options: TestDatabaseKitOptions<Db>, migrationsKey: () => string, migrated: boolean): Promise<Blob> {
  const key = `${migrated ? migrationsKey() : "empty"}-pglite-${pgliteVersion()}`;
  let pending = snapshots.get(key);
  if (!pending) {
    pending = (async () => {
      const file = join(SNAPSHOT_DIR, `${key}.tar`);
      if (existsSync(file)) return new Blob([readFileSync(file)]);
      const instance = await PGlite.create();
      const db = await options.openPglite(instance);
      let blob: Blob;
      try {
        if (migrated) await options.migrate(db);
        blob = await instance.dumpDataDir("none");
      } finally {
        await options.close(db);
      }
      mkdirSync(SNAPSHOT_DIR, { recursive: true });
      // Write-then-rename: a concurrent reader sees the whole file or none.
      const temporary = `${file}.${process.pid}.${randomBytes(4).toString("hex")}`;
      writeFileSync(temporary, Buffer.from(await blob.arrayBuffer()));
      renameSync(temporary, file);
      pruneSnapshots(migrationsKey());
      return blob;
    })();
    snapshots.set(key, pending);
  }
  return pending;
}

/** Snapshots of other migration sets or PGlite versions would only pile up in the temp directory. */
function pruneSnapshots(migrationsKey: string): void {
  const keep = new Set([`${migrationsKey}-pglite-${pgliteVersion()}.tar`, `empty-pglite-${pgliteVersion()}.tar`]);
  for (const name of readdirSync(SNAPSHOT_DIR)) {
    if (name.endsWith(".tar") && !keep.has(name)) rmSync(join(SNAPSHOT_DIR, name), { force: true });
  }
}

async function restore<Db>(options: TestDatabaseKitOptions<Db>, migrationsKey: () => string, migrated: boolean): Promise<PGlite> {
  try {
    return await PGlite.create({ loadDataDir: await snapshot(options, migrationsKey, migrated) });
  } catch {
    // A corrupt cached snapshot (e.g. a killed writer on another file system): rebuild once.
    rmSync(SNAPSHOT_DIR, { recursive: true, force: true });
    snapshots.clear();
    return PGlite.create({ loadDataDir: await snapshot(options, migrationsKey, migrated) });
  }
}

async function createPglite<Db>(options: TestDatabaseKitOptions<Db>, migrationsKey: () => string, migrated: boolean): Promise<TestDatabase<Db>> {
  // Not migrated again: the snapshot is named after the migration files' contents.
  const db = await options.openPglite(await restore(options, migrationsKey, migrated));
  let closed = false;
  return {
    db,
    async close() {
      if (closed) return;
      closed = true;
      await options.close(db);
    },
  };
}
