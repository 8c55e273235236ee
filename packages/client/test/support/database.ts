import { randomBytes } from "node:crypto";
import pg from "pg";

export interface TestDatabase {
  databaseUrl: string;
  drop(): Promise<void>;
}

/**
 * A fresh PostgreSQL database for one test file, created next to TEST_DATABASE_URL's database
 * and dropped afterwards; undefined when TEST_DATABASE_URL is not set (then PGlite in memory).
 */
export async function createTestDatabase(): Promise<TestDatabase | undefined> {
  const adminUrl = process.env.TEST_DATABASE_URL;
  if (!adminUrl) return undefined;
  const name = `ars_client_${randomBytes(6).toString("hex")}`;
  await withAdmin(adminUrl, (c) => c.query(`CREATE DATABASE ${name}`));
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    databaseUrl: url.toString(),
    drop: () => withAdmin(adminUrl, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => undefined),
  };
}

async function withAdmin<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}
