// The ars CLI, in process through its real command-line entry (runCli): fast, and every
// command's real code path. The route through a running server uses the real admin socket and
// lock file; the HTTP checks use the real server. serve-process.test.ts runs it all as processes.
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { randomUUID } from "node:crypto";
import type { Command } from "commander";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cliInvocation, bootstrapDemo, mintCommand } from "../../src/cli/bootstrap.js";
import { oneLine } from "../../src/cli/errors.js";
import { runAdminOp } from "../../src/cli/admin-ops.js";
import { buildProgram, runCli } from "../../src/cli/program.js";
import { listenAdminSocket, type AdminSocket } from "../../src/db/admin-socket.js";
import { adminSocketPath, lockDataDir } from "../../src/db/embedded-lock.js";
import { defaultDataDir } from "../../src/lib/paths.js";
import { startServer } from "../../src/server.js";
import { onPostgres, createTestDatabase } from "../harness/db.js";
import { startTestServer, type TestServer } from "../harness/server.js";

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
function tempDir() {
  const d = mkdtempSync(join(tmpdir(), "ars-cli-"));
  dirs.push(d);
  return d;
}

const baseEnv = (): NodeJS.ProcessEnv => {
  const { DATABASE_URL: _omit, ARS_DATA_DIR: _dir, ...rest } = process.env;
  return rest;
};

/** Runs one command line as main.ts does, capturing what the user would see. */
async function cli(args: string[], env: NodeJS.ProcessEnv) {
  let stdout = "";
  let stderr = "";
  const code = await runCli(args, { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t), env });
  return { code, stdout, stderr };
}

const errorLines = (stderr: string) => stderr.split("\n").filter((l) => l.startsWith("error:") || l.includes("Error") || l.includes("    at "));

describe("the ars CLI while serve holds the embedded database (admin socket)", () => {
  let h: TestServer;
  let env: NodeJS.ProcessEnv;
  let socket: AdminSocket;
  let unlock: () => void;
  let dataDir: string;

  beforeAll(async () => {
    h = await startTestServer();
    dataDir = tempDir();
    // what `serve` does on the embedded database: hold the lock, answer on the socket
    unlock = lockDataDir(dataDir);
    socket = await listenAdminSocket(adminSocketPath(dataDir), (r) => runAdminOp(h.server.deps, r), oneLine);
    env = { ...baseEnv(), ARS_DATA_DIR: dataDir };
  });
  afterAll(async () => {
    await socket?.close();
    unlock?.();
    // startTestServer's own afterAll is not registered when it is called inside a hook.
    await h?.close();
  });

  it("when a user creates an org, mints, lists, seeds and revokes, then each step does what it says and the token works against the server", async () => {
    expect(statSync(socket.path).mode & 0o777).toBe(0o600); // no other local user may connect
    const created = await cli(["orgs", "create", "--name", "Acme"], env);
    expect(created.code).toBe(0);
    const org = created.stdout.trim();
    expect(org).toMatch(/^[0-9a-f-]{36}$/);
    expect(created.stderr).toContain(`ars: using the embedded database in ${dataDir} (through the server running as process ${process.pid}`);

    const orgs = await cli(["orgs", "list", "--json"], env);
    expect(JSON.parse(orgs.stdout)).toContainEqual(expect.objectContaining({ id: org, name: "Acme" }));

    const minted = await cli(["tokens", "create", "--org", org, "--scopes", "question_sets:read"], env);
    expect(minted.code).toBe(0);
    const token = minted.stdout.trim();
    expect(token).toMatch(/^ars_[A-Za-z0-9_-]{43}$/);
    expect(minted.stderr).toContain("shown only once");

    const byDefault = JSON.parse((await cli(["tokens", "create", "--org", org, "--json"], env)).stdout) as { scopes: string[]; token: string };
    expect(byDefault.scopes).toEqual(["question_sets:read", "coding_evaluations:read", "webhooks:read", "webhooks:write", "events:read"]);
    expect((await h.raw("/v2/webhook_endpoints", { token: byDefault.token })).status).toBe(200);

    const listed = await cli(["tokens", "list", "--org", org], env);
    expect(listed.stdout).toContain("question_sets:read");
    expect(listed.stdout).toContain("active");
    expect(listed.stdout).not.toContain(token);
    const entries = JSON.parse((await cli(["tokens", "list", "--org", org, "--json"], env)).stdout) as { id: string; scopes: string[]; revoked_at: string | null }[];
    const entry = entries.find((t) => t.scopes.join() === "question_sets:read");
    expect(entry).toMatchObject({ revoked_at: null });

    expect((await cli(["seed", "--org", org, "--question-sets", "3", "--coding-evaluations", "2"], env)).stdout.trim()).toBe("seeded 5 rows");
    const ok = await h.raw("/v2/question_sets?limit=1", { token });
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as { data: unknown[] }).data).toHaveLength(1);

    const revoked = await cli(["tokens", "revoke", entry!.id, "--json"], env);
    expect(JSON.parse(revoked.stdout)).toEqual({ id: entry!.id, revoked: true });
    expect((await h.raw("/v2/question_sets?limit=1", { token })).status).toBe(401);
    expect((await cli(["tokens", "list", "--org", org], env)).stdout).toContain("revoked");
    const again = await cli(["tokens", "revoke", entry!.id], env);
    expect(again).toMatchObject({ code: 1, stdout: "" });
    expect(again.stderr).toContain(`error: no active token with id ${entry!.id}\n`);
  });

  it("when a command names an org that does not exist, then it fails with one line and writes nothing", async () => {
    const before = await h.server.db.query<{ n: number }>("SELECT count(*)::int AS n FROM question_sets");
    for (const args of [
      ["seed", "--org", "nope"],
      ["tokens", "create", "--org", "nope"],
      ["tokens", "list", "--org", "nope"],
    ]) {
      const r = await cli(args, env);
      expect(r.code, args.join(" ")).toBe(1);
      expect(r.stdout).toBe("");
      expect(errorLines(r.stderr)).toEqual(["error: no org with id nope (`orgs list` shows them)"]);
    }
    expect(await h.server.db.query("SELECT count(*)::int AS n FROM question_sets")).toEqual(before);
  });

  it("when an argument is malformed, then the command fails with one line before reaching the database", async () => {
    const cases: [string[], string][] = [
      [["tokens", "revoke", "nope"], 'malformed token id "nope"'],
      [["tokens", "create", "--org", "x", "--scopes", "everything"], "unknown scope(s): everything"],
      [["seed", "--org", "x", "--question-sets", "-1"], "must be a whole number"],
      [["orgs", "create", "--name", " "], "name must not be empty"],
      [["orgs", "create", "--name", "a\u0000b"], "must not contain control characters"],
      [["tokens", "frobnicate"], "unknown command 'frobnicate'"],
    ];
    for (const [args, message] of cases) {
      const r = await cli(args, env);
      expect(r.code, args.join(" ")).toBe(1);
      expect(r.stdout).toBe("");
      const errors = errorLines(r.stderr);
      expect(errors, args.join(" ")).toHaveLength(1);
      expect(errors[0]).toContain(message);
    }
  });

  it("when a request reaches the socket without the CLI's checks, then the server checks it too", async () => {
    const { callAdminSocket } = await import("../../src/db/admin-socket.js");
    await expect(callAdminSocket(socket.path, { op: "tokens.revoke", id: "'; DROP TABLE api_tokens; --" })).rejects.toThrow("malformed token id");
    await expect(callAdminSocket(socket.path, { op: "drop everything" })).rejects.toThrow("unknown admin operation");
    await expect(callAdminSocket(socket.path, { op: "tokens.create", org: 42, scopes: ["webhooks:read"], name: "x" })).rejects.toThrow("org id must not be empty");
  });
});

describe("the ars CLI's surface", () => {
  it("when a user asks for help, then every command has a help line and a --json option (but the groups)", () => {
    const walk = (cmd: Command): Command[] => [cmd, ...cmd.commands.flatMap(walk)];
    const all = walk(buildProgram()).slice(1);
    expect(all.map((c) => c.name()).sort()).toEqual(["create", "create", "list", "list", "migrate", "orgs", "revoke", "seed", "serve", "tokens", "worker"]);
    for (const c of all) {
      expect(c.description(), c.name()).not.toBe("");
      if (!c.commands.length) expect(c.options.map((o) => o.long), c.name()).toContain("--json");
    }
  });

  it("when a database error reaches the user, then it is one line with its code, not Prisma's dump", async () => {
    const t = await createTestDatabase();
    try {
      const id = randomUUID();
      await t.db.prisma.org.create({ data: { id, name: "a" } });
      const err = await t.db.prisma.org.create({ data: { id, name: "b" } }).catch((e: unknown) => e);
      expect(String((err as Error).message)).toContain("\n"); // Prisma's message is a multi-line dump
      expect(oneLine(err)).toBe("database error P2002");
    } finally {
      await t.close();
    }
  });

  it("when no ARS_DATA_DIR is set, then the data directory is the repository's .data wherever the command starts", () => {
    const repoRoot = resolve(import.meta.dirname, "../../../..");
    expect(defaultDataDir({})).toBe(join(repoRoot, ".data"));
    expect(defaultDataDir({ ARS_DATA_DIR: "rel/dir" })).toBe(resolve("rel/dir"));
    expect(cliInvocation({}, "/srv/ars/apps/server/dist/main.js", "/srv/ars")).toBe("node apps/server/dist/main.js");
    expect(cliInvocation({ ARS_DATA_DIR: "/var/ars" }, "/opt/main.js", "/home/u")).toBe('ARS_DATA_DIR="/var/ars" node /opt/main.js');
  });
});

describe.skipIf(onPostgres)("the ars CLI on an embedded database nobody holds", () => {
  it("when a user migrates and creates an org with no server running, then the command opens the database itself and says where", { timeout: 60_000 }, async () => {
    const env = { ...baseEnv(), ARS_DATA_DIR: tempDir() };
    const missing = await cli(["orgs", "list"], env);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(`error: no embedded database in ${env.ARS_DATA_DIR}`);

    const first = await cli(["migrate"], env);
    expect(first.stdout).toMatch(/^applied: \d+_init/);
    expect(first.stderr).toBe(`ars: using the embedded database in ${env.ARS_DATA_DIR}\n`);
    expect((await cli(["migrate", "--json"], env)).stdout.trim()).toBe('{"applied":[],"modified_after_apply":[]}');
    const org = (await cli(["orgs", "create", "--name", "Solo"], env)).stdout.trim();
    expect((await cli(["orgs", "list"], env)).stdout).toContain(`${org}\tSolo\t`);
  });
});

describe.runIf(onPostgres)("the ars CLI on PostgreSQL", () => {
  it("when serve starts on an empty PostgreSQL database, then no demo org is created and the mint hint says to create an org", { timeout: 60_000 }, async () => {
    const pg = await createTestDatabase();
    const server = await startServer({ databaseUrl: pg.databaseUrl!, migrate: true, port: 0, dispatcher: false, encryptionKey: Buffer.alloc(32, 7).toString("base64"), logLevel: "warn" });
    try {
      expect(await bootstrapDemo(server.deps)).toBeNull();
      expect(await mintCommand(server.deps, "ars")).toContain("ars orgs create --name");
      const env = { ...baseEnv(), DATABASE_URL: pg.databaseUrl!, ARS_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString("base64") };
      const orgs = await cli(["orgs", "list"], env);
      expect(orgs).toMatchObject({ code: 0, stdout: "" });
      expect(orgs.stderr).toContain("ars: using the PostgreSQL ");
      expect(orgs.stderr).not.toContain("postgres@");
    } finally {
      await server.close();
      await pg.close();
    }
  });
});
