import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createTestDatabase } from "../harness/db.js";

const main = resolve(import.meta.dirname, "../../src/main.ts");
const dirs: string[] = [];
const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) c.kill("SIGKILL");
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function dataDir() {
  const d = mkdtempSync(join(tmpdir(), "ars-cli-"));
  dirs.push(d);
  return d;
}

function cliEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const { DATABASE_URL: _omit, ...rest } = process.env;
  return { ...rest, ARS_LOG_LEVEL: "warn", ...env };
}

/** Runs one CLI command to completion, as a user would (through tsx, so no build is needed). */
function run(args: string[], env: Record<string, string>) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((done) => {
    const child = spawn(process.execPath, ["--import", "tsx", main, ...args], { env: cliEnv(env) });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c) => (stdout += c));
    child.stderr.on("data", (c) => (stderr += c));
    child.on("close", (code) => done({ code, stdout, stderr }));
  });
}

/** Starts `serve` and resolves once it says where it listens. */
function serve(env: Record<string, string>) {
  const child = spawn(process.execPath, ["--import", "tsx", main, "serve"], { env: cliEnv({ PORT: "0", ARS_DISPATCHER: "false", ...env }) });
  children.push(child);
  let stdout = "";
  let stderr = "";
  child.stderr.on("data", (c) => (stderr += c));
  const url = new Promise<string>((ok, fail) => {
    child.stdout.on("data", (c) => {
      stdout += c;
      const m = /listening on (http:\/\/[^\s]+)/.exec(stdout);
      if (m) ok(m[1]!);
    });
    child.on("exit", (code) => fail(new Error(`serve exited ${code}: ${stderr}`)));
  });
  const exited = new Promise<number | null>((ok) => child.on("exit", (code) => ok(code)));
  return { child, url, exited, output: () => stdout, errors: () => stderr };
}

const get = (url: string, token: string) => fetch(`${url}/v2/question_sets?limit=1`, { headers: { authorization: `Bearer ${token}` } });

describe("the ars CLI on the embedded database", () => {
  // a dozen real processes, each starting Node and the embedded database: minutes on a busy machine
  it("when a user migrates, creates an org and tokens, seeds, serves and revokes, then each step does what it says", { timeout: 300_000 }, async () => {
    const env = { ARS_DATA_DIR: dataDir() };
    expect((await run(["migrate"], env)).stdout).toMatch(/^applied: \d+_init/);
    expect((await run(["migrate"], env)).stdout.trim()).toBe("database is up to date");

    const org = (await run(["orgs", "create", "--name", "Acme"], env)).stdout.trim();
    expect(org).toMatch(/^[0-9a-f-]{36}$/);
    const refused = await run(["tokens", "create", "--org", org, "--scopes", "everything"], env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("unknown scope(s): everything");
    expect(refused.stdout).toBe("");

    const created = await run(["tokens", "create", "--org", org, "--scopes", "question_sets:read"], env);
    const token = created.stdout.trim();
    expect(token).toMatch(/^ars_[A-Za-z0-9_-]{43}$/);
    expect(created.stderr).toContain("shown only once");
    const listed = await run(["tokens", "list", "--org", org], env);
    expect(listed.stdout).toContain("question_sets:read");
    expect(listed.stdout).toContain("active");
    expect(listed.stdout).not.toContain(token);
    expect((await run(["seed", "--org", org, "--question-sets", "3", "--coding-evaluations", "2"], env)).stdout.trim()).toBe("seeded 5 rows");

    const server = serve(env);
    const url = await server.url;
    const ok = await get(url, token);
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as { data: unknown[] }).data).toHaveLength(1);
    expect(server.output()).not.toContain("First start");

    // the embedded database belongs to the running server: a second process is refused, not corrupting it
    const id = listed.stdout.split("\t")[0]!;
    const busy = await run(["tokens", "revoke", id], env);
    expect(busy.code).toBe(1);
    expect(busy.stderr).toContain(`is in use by process ${server.child.pid}`);
    expect((await get(url, token)).status).toBe(200);

    server.child.kill("SIGTERM");
    expect(await server.exited).toBe(0);
    expect(server.errors()).toContain("SIGTERM: shutting down");

    expect((await run(["tokens", "revoke", id], env)).stdout.trim()).toBe(`revoked ${id}`);
    expect((await run(["tokens", "list", "--org", org], env)).stdout).toContain("revoked");
    const again = serve(env);
    expect((await get(await again.url, token)).status).toBe(401);
    again.child.kill("SIGTERM");
    expect(await again.exited).toBe(0);
  });

  it("when serve starts on an empty embedded database, then it creates the demo org and prints its token once", { timeout: 180_000 }, async () => {
    const env = { ARS_DATA_DIR: dataDir() };
    const first = serve(env);
    const url = await first.url;
    const token = /token: (ars_\S+)/.exec(first.output())?.[1];
    expect(token).toBeDefined();
    const res = await fetch(`${url}/v2/coding_evaluations?include_total=true&limit=1`, { headers: { authorization: `Bearer ${token}` } });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { total_count: number }).total_count).toBeGreaterThan(0);
    first.child.kill("SIGTERM");
    expect(await first.exited).toBe(0);

    const second = serve(env);
    await second.url;
    expect(second.output()).not.toContain("token:");
    second.child.kill("SIGTERM");
    expect(await second.exited).toBe(0);
  });
});

describe.runIf(process.env.TEST_DATABASE_URL)("the ars CLI on PostgreSQL", () => {
  it("when serve starts on an empty PostgreSQL database, then no demo org is created", { timeout: 180_000 }, async () => {
    const pg = await createTestDatabase();
    try {
      const env = { DATABASE_URL: pg.databaseUrl!, ARS_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString("base64") };
      const server = serve(env);
      await server.url;
      expect(server.output()).not.toContain("First start");
      const orgs = await run(["orgs", "list"], env);
      expect(orgs.stdout.trim()).toBe("");
      server.child.kill("SIGTERM");
      expect(await server.exited).toBe(0);
    } finally {
      await pg.close();
    }
  });
});
