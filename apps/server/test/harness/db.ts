// The server's database for a test: the kit's per-test database (PGlite snapshot, or a
// PostgreSQL template copy when TEST_DATABASE_URL is set), opened and migrated the server's way.
import { serverTestDatabases, type CreateTestDatabaseOptions, type TestDatabase as KitDatabase } from "@audit-review/test-kit/database";
import { openDatabase, type Database } from "../../src/db/client.js";
import { findMigrationsDir, migrate } from "../../src/db/migrate.js";
import { databaseFromPglite } from "../../src/db/pglite.js";

export type TestDatabase = KitDatabase<Database>;

const databases = serverTestDatabases<Database>({ findMigrationsDir, databaseFromPglite, openDatabase, migrate: (db) => migrate(db) });

export const onPostgres = databases.onPostgres;

export function createTestDatabase(opts?: CreateTestDatabaseOptions): Promise<TestDatabase> {
  return databases.create(opts);
}
