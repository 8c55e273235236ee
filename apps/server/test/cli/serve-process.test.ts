// The operator's path as real processes: `serve` on a fresh embedded data directory, and
// `tokens create` from another process (started elsewhere) while it runs.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { onPostgres } from "../harness/db.js";

const main = resolve(import.meta.dirname, "../../src/main.ts");
// by path: `--import tsx` would be resolved from the child's working directory
const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx/package.json").replace(/package\.json$/, "dist/loader.mjs")).href;
const dirs: string[] = [];
const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) if (c.exitCode === null) c.kill("SIGKILL");
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function env(dataDir: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const { DATABASE_URL: _omit, ...rest } = process.env;
  return { ...rest, ARS_LOG_LEVEL: "warn", ARS_DATA_DIR: dataDir, ...extra };
}

/** One CLI command run to completion from `cwd` (through tsx, so no build is needed). */
function run(args: string[], dataDir: string, cwd: string) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((done) => {
    const child = spawn(process.execPath, ["--import", tsx, main, ...args], { env: env(dataDir), cwd });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c) => (stdout += c));
    child.stderr.on("data", (c) => (stderr += c));
    child.on("close", (code) => done({ code, stdout, stderr }));
  });
}

function serve(dataDir: string) {
  const child = spawn(process.execPath, ["--import", tsx, main, "serve"], { env: env(dataDir, { PORT: "0", ARS_DISPATCHER: "false" }) });
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

const list = (url: string, token: string) => fetch(`${url}/v2/question_sets?limit=1`, { headers: { authorization: `Bearer ${token}` } });

describe.skipIf(onPostgres)("serve and the CLI as processes on one embedded database", () => {
  it("when tokens create runs in another process while serve holds the database, then the token works at once; later starts print the mint command", { timeout: 180_000 }, async () => {
    const root = mkdtempSync(join(tmpdir(), "ars-serve-"));
    dirs.push(root);
    const dataDir = join(root, "data");
    const first = serve(dataDir);
    const url = await first.url;
    const demoToken = /token: (ars_\S+)/.exec(first.output())?.[1];
    const org = /org: +(\S+)/.exec(first.output())?.[1];
    expect(demoToken).toBeDefined();
    expect((await list(url, demoToken!)).status).toBe(200);
    // the quick start's first step, printed ready to paste (the docs' samples read these variables)
    expect(first.output()).toContain(`export ARS_API_URL=http://localhost:${new URL(url).port} ARS_TOKEN=${demoToken}`);

    // started from an unrelated directory: the data directory comes from ARS_DATA_DIR, not the cwd
    const minted = await run(["tokens", "create", "--org", org!, "--scopes", "question_sets:read"], dataDir, tmpdir());
    expect(minted.stderr).toContain(`through the server running as process ${first.child.pid}`);
    expect(minted.code).toBe(0);
    const token = minted.stdout.trim();
    const res = await list(url, token);
    expect(res.status).toBe(200);
    expect(((await res.json()) as { data: unknown[] }).data).toHaveLength(1);

    first.child.kill("SIGTERM");
    expect(await first.exited).toBe(0);
    expect(first.errors()).toContain("SIGTERM: shutting down");
    expect(existsSync(join(dataDir, "ars.sock"))).toBe(false);

    const second = serve(dataDir);
    const url2 = await second.url;
    expect(second.output()).not.toContain("token: ars_");
    expect(second.output()).toContain(`To mint a token: ARS_DATA_DIR="${dataDir}" node `);
    expect(second.output()).toContain(`tokens create --org ${org}`);
    expect((await list(url2, token)).status).toBe(200);
    second.child.kill("SIGTERM");
    expect(await second.exited).toBe(0);
  });
});
