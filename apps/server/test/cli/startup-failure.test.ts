// A start that fails half-way (the API's port or the metrics port taken) gives back everything it
// had opened: on PostgreSQL no connection of it is left (pools, the LISTEN client, the engine's
// pool), on the embedded database its lock is released so the next start succeeds, and `serve`
// as a process exits with one line saying why instead of hanging on what it left open.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer, type AddressInfo } from "node:net";
import { createRequire } from "node:module";
import { once } from "node:events";
import { Writable } from "node:stream";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { lockFilePath, lockOwner } from "../../src/db/embedded-lock.js";
import { createLogger } from "../../src/lib/logger.js";
import { startServer, type StartServerOptions } from "../../src/server.js";
import { startWorker } from "../../src/worker.js";
import { createTestDatabase, onPostgres, type TestDatabase } from "../harness/db.js";

const main = resolve(import.meta.dirname, "../../src/main.ts");
const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx/package.json").replace(/package\.json$/, "dist/loader.mjs")).href;

const cleanup: Array<() => Promise<unknown> | unknown> = [];
afterAll(async () => {
  for (const step of cleanup.reverse()) await step();
});

/** A port something else listens on. */
async function takenPort(): Promise<number> {
  const holder = createServer();
  holder.listen(0, "127.0.0.1");
  await once(holder, "listening");
  cleanup.push(() => new Promise((done) => holder.close(done)));
  return (holder.address() as AddressInfo).port;
}

function dataDir(): string {
  const d = mkdtempSync(join(tmpdir(), "ars-startup-"));
  cleanup.push(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

const quiet = () => createLogger({ level: "silent", destination: new Writable({ write: (_c, _e, cb) => cb() }) });
const key = randomBytes(32).toString("base64");

let embeddedDir: string | undefined;
/**
 * Where the server under test keeps its data: a fresh PostgreSQL database, or the file's one
 * embedded data directory (creating one costs seconds; each test also starts where the last
 * failed start left it).
 */
async function storage(): Promise<{ options: StartServerOptions; env: Record<string, string>; db?: TestDatabase }> {
  if (onPostgres) {
    const db = await createTestDatabase();
    cleanup.push(() => db.close());
    return { options: { databaseUrl: db.databaseUrl, migrate: true }, env: { DATABASE_URL: db.databaseUrl! }, db };
  }
  embeddedDir ??= dataDir();
  return { options: { dataDir: embeddedDir }, env: { ARS_DATA_DIR: embeddedDir } };
}

/** Connections to the database opened since `since` (the database's clock), by application name. */
async function connectionsSince(url: string, since: Date): Promise<string[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ name: string }>(
      "SELECT application_name AS name FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_start >= $1",
      [since],
    );
    return rows.map((r) => r.name).sort();
  } finally {
    await client.end();
  }
}

async function databaseNow(url: string): Promise<Date> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<{ now: Date }>("SELECT clock_timestamp() AS now")).rows[0]!.now;
  } finally {
    await client.end();
  }
}

/** A backend ends a moment after its client hangs up: wait for the count to settle. */
async function settledConnectionsSince(url: string, since: Date): Promise<string[]> {
  const deadline = Date.now() + 3_000;
  for (;;) {
    const open = await connectionsSince(url, since);
    if (open.length === 0 || Date.now() > deadline) return open;
    await new Promise((r) => setTimeout(r, 50));
  }
}

const base = (): StartServerOptions => ({ host: "127.0.0.1", encryptionKey: key, dispatcher: true, metricsPort: 0, logger: quiet() });

describe("a start that fails half-way", () => {
  it("When the API's port is taken, Then start-up fails naming it, and nothing it opened stays open", { timeout: 120_000 }, async () => {
    const port = await takenPort();
    const { options, db } = await storage();
    const since = db ? await databaseNow(db.databaseUrl!) : undefined;

    await expect(startServer({ ...base(), ...options, port })).rejects.toThrow(
      `the API cannot listen on 127.0.0.1:${port} (PORT, ARS_HOST): listen EADDRINUSE: address already in use 127.0.0.1:${port}`,
    );

    if (db) {
      expect(await settledConnectionsSince(db.databaseUrl!, since!)).toEqual([]);
    } else {
      expect(existsSync(lockFilePath(options.dataDir!))).toBe(false);
      expect(lockOwner(options.dataDir!)).toBeUndefined();
    }
    // the same database, the same data directory: the next start is not refused
    const server = await startServer({ ...base(), ...options, port: 0 });
    await server.close();
  });

  it("When the metrics port is taken, Then start-up fails naming it, and nothing it opened stays open", { timeout: 120_000 }, async () => {
    const metricsPort = await takenPort();
    const { options, db } = await storage();
    const since = db ? await databaseNow(db.databaseUrl!) : undefined;

    await expect(startServer({ ...base(), ...options, port: 0, metricsPort })).rejects.toThrow(
      `metrics listener cannot listen on 127.0.0.1:${metricsPort} (ARS_METRICS_PORT, ARS_METRICS_HOST)`,
    );
    if (db) {
      expect(await settledConnectionsSince(db.databaseUrl!, since!)).toEqual([]);
      // the worker role too: its engine pool and LISTEN client are given back
      const worker = startWorker({ ...base(), ...options, metricsPort });
      await expect(worker).rejects.toThrow(`metrics listener cannot listen on 127.0.0.1:${metricsPort}`);
      expect(await settledConnectionsSince(db.databaseUrl!, since!)).toEqual([]);
    } else {
      expect(existsSync(lockFilePath(options.dataDir!))).toBe(false);
    }
    const server = await startServer({ ...base(), ...options, port: 0 });
    await server.close();
  });

  it("When `serve` finds its port taken, Then the process exits with status 1 and one line saying why", { timeout: 120_000 }, async () => {
    const port = await takenPort();
    const { env } = await storage();
    const { DATABASE_URL: _omit, ...inherited } = process.env;
    const child = spawn(process.execPath, ["--import", tsx, main, "serve"], {
      env: { ...inherited, ARS_LOG_LEVEL: "silent", ARS_ENCRYPTION_KEY: key, PORT: String(port), ARS_METRICS_PORT: "0", ...env },
    });
    cleanup.push(() => child.exitCode === null && child.kill("SIGKILL"));
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c) => (stdout += c));
    child.stderr.on("data", (c) => (stderr += c));
    // Anything left open (a pool, the LISTEN client, the metrics listener) would keep it running.
    const [code] = (await once(child, "exit")) as [number | null];
    expect(code).toBe(1);
    expect(stdout).toBe("");
    expect(stderr).toBe(`error: the API cannot listen on 127.0.0.1:${port} (PORT, ARS_HOST): listen EADDRINUSE: address already in use 127.0.0.1:${port}\n`);
    if (env.ARS_DATA_DIR) expect(existsSync(lockFilePath(env.ARS_DATA_DIR))).toBe(false);
  });
});
