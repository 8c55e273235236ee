import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createHash } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { openDatabase, type Database } from "../../src/db/client.js";
import { findMigrationsDir, migrate } from "../../src/db/migrate.js";
import { createTestDatabase, onPostgres, type TestDatabase } from "../harness/db.js";

const migrationsDir = findMigrationsDir();
const migrationNames = readdirSync(migrationsDir, { withFileTypes: true })
  .filter((e) => e.isDirectory())
  .map((e) => e.name)
  .sort();

const opened: TestDatabase[] = [];
const tempDirs: string[] = [];

async function emptyDatabase(): Promise<TestDatabase> {
  const t = await createTestDatabase({ migrated: false });
  opened.push(t);
  return t;
}

/** A copy of the real migrations plus extra ones, for failure and drift scenarios. */
function migrationsCopy(extra: Record<string, string> = {}): string {
  const dir = mkdtempSync(join(tmpdir(), "ars-migrations-"));
  tempDirs.push(dir);
  cpSync(migrationsDir, dir, { recursive: true });
  for (const [name, sql] of Object.entries(extra)) {
    mkdirSync(join(dir, name));
    writeFileSync(join(dir, name, "migration.sql"), sql);
  }
  return dir;
}

async function userTables(db: Database): Promise<string[]> {
  const rows = await db.query<{ name: string }>(
    `SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema() ORDER BY 1`,
  );
  return rows.map((r) => r.name);
}

afterEach(async () => {
  while (opened.length) await opened.pop()!.close();
  while (tempDirs.length) rmSync(tempDirs.pop()!, { recursive: true, force: true });
});

describe("migrate", () => {
  it("finds the repository's prisma/migrations, and ARS_MIGRATIONS_DIR overrides it", () => {
    expect(migrationsDir.replaceAll("\\", "/")).toMatch(/\/prisma\/migrations$/);
    expect(readFileSync(join(migrationsDir, "migration_lock.toml"), "utf8")).toMatch(/^provider = "postgresql"$/m);
    expect(migrationNames.length).toBeGreaterThan(0);
    for (const name of migrationNames) expect(name).toMatch(/^\d{14}_\w+$/);
    const previous = process.env.ARS_MIGRATIONS_DIR;
    process.env.ARS_MIGRATIONS_DIR = "/somewhere/else";
    try {
      expect(findMigrationsDir()).toBe("/somewhere/else");
    } finally {
      if (previous === undefined) delete process.env.ARS_MIGRATIONS_DIR;
      else process.env.ARS_MIGRATIONS_DIR = previous;
    }
  });

  it("applies every migration to an empty database, then nothing on a second run", async () => {
    const { db } = await emptyDatabase();
    expect(await userTables(db)).toEqual([]);

    const first = await migrate(db);
    expect(first.applied).toEqual(migrationNames);
    expect(first.modifiedAfterApply).toEqual([]);
    expect(await userTables(db)).toEqual(
      expect.arrayContaining(["_prisma_migrations", "orgs", "question_sets", "webhook_deliveries"]),
    );

    const second = await migrate(db);
    expect(second.applied).toEqual([]);
    expect(await db.query("SELECT count(*) AS n FROM _prisma_migrations")).toEqual([{ n: migrationNames.length }]);
  });

  it("records each migration in _prisma_migrations exactly as Prisma does", async () => {
    const { db } = await emptyDatabase();
    await migrate(db);

    const rows = await db.query<{
      id: string;
      checksum: string;
      finished_at: Date | null;
      migration_name: string;
      logs: string | null;
      rolled_back_at: Date | null;
      started_at: Date;
      applied_steps_count: number;
    }>("SELECT * FROM _prisma_migrations ORDER BY migration_name");

    expect(rows.map((r) => r.migration_name)).toEqual(migrationNames);
    for (const row of rows) {
      const sql = readFileSync(join(migrationsDir, row.migration_name, "migration.sql"));
      expect(row.checksum).toBe(createHash("sha256").update(sql).digest("hex"));
      expect(row.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(row.logs).toBeNull();
      expect(row.rolled_back_at).toBeNull();
      expect(row.applied_steps_count).toBe(1);
      expect(row.finished_at).toBeInstanceOf(Date);
      expect(row.finished_at!.getTime()).toBeGreaterThanOrEqual(row.started_at.getTime());
    }

    // The table itself has the columns and types Prisma's schema engine creates.
    const columns = await db.query(
      `SELECT column_name, data_type, character_maximum_length AS max_length, is_nullable, column_default
         FROM information_schema.columns WHERE table_name = '_prisma_migrations' ORDER BY ordinal_position`,
    );
    expect(columns).toEqual([
      { column_name: "id", data_type: "character varying", max_length: 36, is_nullable: "NO", column_default: null },
      { column_name: "checksum", data_type: "character varying", max_length: 64, is_nullable: "NO", column_default: null },
      { column_name: "finished_at", data_type: "timestamp with time zone", max_length: null, is_nullable: "YES", column_default: null },
      { column_name: "migration_name", data_type: "character varying", max_length: 255, is_nullable: "NO", column_default: null },
      { column_name: "logs", data_type: "text", max_length: null, is_nullable: "YES", column_default: null },
      { column_name: "rolled_back_at", data_type: "timestamp with time zone", max_length: null, is_nullable: "YES", column_default: null },
      { column_name: "started_at", data_type: "timestamp with time zone", max_length: null, is_nullable: "NO", column_default: "now()" },
      { column_name: "applied_steps_count", data_type: "integer", max_length: null, is_nullable: "NO", column_default: "0" },
    ]);
    const pk = await db.query(
      `SELECT a.attname AS column FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
        WHERE i.indrelid = '_prisma_migrations'::regclass AND i.indisprimary`,
    );
    expect(pk).toEqual([{ column: "id" }]);
  });

  it("rolls a failing migration back completely and names it", async () => {
    const { db } = await emptyDatabase();
    const dir = migrationsCopy({
      "29991231000000_broken": 'CREATE TABLE "half_done" ("id" INTEGER);\nSELECT 1 / 0;\n',
    });

    await expect(migrate(db, { migrationsDir: dir })).rejects.toThrow(/29991231000000_broken.*division by zero/);
    expect(await userTables(db)).not.toContain("half_done");
    const names = await db.query<{ migration_name: string }>("SELECT migration_name FROM _prisma_migrations ORDER BY 1");
    expect(names.map((r) => r.migration_name)).toEqual(migrationNames);

    // Fixed, it applies on the next run.
    writeFileSync(join(dir, "29991231000000_broken", "migration.sql"), 'CREATE TABLE "half_done" ("id" INTEGER);\n');
    expect((await migrate(db, { migrationsDir: dir })).applied).toEqual(["29991231000000_broken"]);
    expect(await userTables(db)).toContain("half_done");
  });

  it("reports a migration whose file changed after it was applied", async () => {
    const { db } = await emptyDatabase();
    const dir = migrationsCopy();
    await migrate(db, { migrationsDir: dir });
    const first = migrationNames[0]!;
    writeFileSync(join(dir, first, "migration.sql"), `${readFileSync(join(dir, first, "migration.sql"), "utf8")}\n-- edited\n`);
    const result = await migrate(db, { migrationsDir: dir });
    expect(result.applied).toEqual([]);
    expect(result.modifiedAfterApply).toEqual([first]);
  });

  it("applies each migration once when several migrators race", async () => {
    const { db, databaseUrl } = await emptyDatabase();
    const others: Database[] = [];
    // On PostgreSQL: separate processes' worth of connections; on PGlite: interleaved calls.
    if (onPostgres) for (let i = 0; i < 3; i++) others.push(await openDatabase({ databaseUrl, poolSize: 2 }));
    try {
      const runners = [db, db, ...others];
      const results = await Promise.all(runners.map((r) => migrate(r)));
      expect(results.flatMap((r) => r.applied).sort()).toEqual(migrationNames);
      expect(await db.query("SELECT count(*) AS n FROM _prisma_migrations")).toEqual([{ n: migrationNames.length }]);
    } finally {
      for (const other of others) await other.close();
    }
  });
});
