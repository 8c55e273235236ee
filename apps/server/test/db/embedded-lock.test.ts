// The embedded database's lock against real processes: a holder killed with SIGKILL leaves a lock
// the next start takes at once, a lock file whose PID now belongs to an unrelated process is
// stale, and a live holder is refused with the lock file's path and what to do.
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { runCli } from "../../src/cli/program.js";
import { holderIsLive, lockDataDir, lockFilePath, lockOwner } from "../../src/db/embedded-lock.js";

const LOCK_MODULE = pathToFileURL(resolve(import.meta.dirname, "../../src/db/embedded-lock.ts")).href;
const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx/package.json").replace(/package\.json$/, "dist/loader.mjs")).href;

const dirs: string[] = [];
const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function dataDir(): string {
  const d = mkdtempSync(join(tmpdir(), "ars-lock-"));
  dirs.push(d);
  return d;
}

/** Another process that takes the lock as `serve` does and holds it until killed. */
async function holder(dir: string): Promise<ChildProcess> {
  const script = `import { lockDataDir } from ${JSON.stringify(LOCK_MODULE)};
lockDataDir(${JSON.stringify(dir)});
process.stdout.write("locked\\n");
setInterval(() => {}, 60_000);`;
  const child = spawn(process.execPath, ["--import", tsx, "--input-type=module", "-e", script], { stdio: ["ignore", "pipe", "pipe"] });
  children.push(child);
  let stderr = "";
  child.stderr!.on("data", (c) => (stderr += c));
  await new Promise<void>((ready, fail) => {
    child.stdout!.on("data", (c: Buffer) => String(c).includes("locked") && ready());
    child.once("exit", (code) => fail(new Error(`lock holder exited ${code}: ${stderr}`)));
  });
  return child;
}

describe("the embedded database's lock", () => {
  it("When the holder is killed with SIGKILL, Then a start immediately after (holder not yet reaped) takes the lock", async () => {
    const dir = dataDir();
    const child = await holder(dir);
    expect(lockOwner(dir)).toBe(child.pid);

    child.kill("SIGKILL");
    // synchronously: the child is still tearing down or an unreaped zombie, its PID still exists
    const release = lockDataDir(dir);
    expect(lockOwner(dir)).toBe(process.pid);
    release();
    expect(existsSync(lockFilePath(dir))).toBe(false);
  });

  it("When the holder is killed with SIGKILL, Then a new process started at once takes the lock", async () => {
    const dir = dataDir();
    const first = await holder(dir);
    first.kill("SIGKILL");
    const second = await holder(dir);
    expect(lockOwner(dir)).toBe(second.pid);
    second.kill("SIGKILL");
    await once(second, "exit");
  });

  it("When the lock file names a PID now used by an unrelated live process, Then the lock is stale and taken", async () => {
    const dir = dataDir();
    const child = await holder(dir);
    child.kill("SIGKILL");
    await once(child, "exit");
    // The dead holder's own record, its PID handed to processes that have nothing to do with it:
    // the test runner's parent, and PID 1.
    const record = JSON.parse(readFileSync(lockFilePath(dir), "utf8")) as { pid: number; started?: string };
    expect(record.pid).toBe(child.pid);
    expect(record.started).toBeDefined();
    for (const pid of [process.ppid, 1]) {
      writeFileSync(lockFilePath(dir), JSON.stringify({ ...record, pid }));
      expect(holderIsLive({ ...record, pid })).toBe(false);
      expect(lockOwner(dir)).toBeUndefined();
      const release = lockDataDir(dir);
      expect(lockOwner(dir)).toBe(process.pid);
      release();
    }
  });

  // Linux only: elsewhere a bare PID that is alive is trusted (the error says how to clear it)
  it.runIf(process.platform === "linux")("When a lock file of an older version (a bare PID) names a process started after it was written, Then it is stale", () => {
    const dir = dataDir();
    const path = lockFilePath(dir);
    writeFileSync(path, String(process.ppid));
    const longAgo = new Date("2001-01-01T00:00:00Z");
    utimesSync(path, longAgo, longAgo);
    expect(lockOwner(dir)).toBeUndefined();
    const release = lockDataDir(dir);
    expect(lockOwner(dir)).toBe(process.pid);
    release();
    // written after the process started: it may be that process's, so it is not taken
    writeFileSync(path, String(process.ppid));
    expect(lockOwner(dir)).toBe(process.ppid);
  });

  it("When a live process holds the lock, Then taking it is refused naming the holder, the lock file and what to do, and the lock stays", async () => {
    const dir = dataDir();
    const child = await holder(dir);
    const path = lockFilePath(dir);
    const before = readFileSync(path, "utf8");
    expect(() => lockDataDir(dir)).toThrow(`the embedded database in ${dir} is in use by process ${child.pid} (lock file ${path})`);
    expect(() => lockDataDir(dir)).toThrow(`if process ${child.pid} is not an ars process of this data directory, delete ${path} and start again`);
    expect(readFileSync(path, "utf8")).toBe(before);
    expect(lockOwner(dir)).toBe(child.pid);
    child.kill("SIGKILL");
    await once(child, "exit");
  });

  it("When this process already holds the lock, Then a second open in it is refused, and the release removes only its own lock", () => {
    const dir = dataDir();
    const release = lockDataDir(dir);
    expect(() => lockDataDir(dir)).toThrow(`already open in this process (lock file ${lockFilePath(dir)})`);
    release();
    // a lock written by someone else since is not ours to remove
    writeFileSync(lockFilePath(dir), JSON.stringify({ pid: 1 }));
    release();
    expect(existsSync(lockFilePath(dir))).toBe(true);
  });

  it.runIf(process.platform === "linux")("When /proc cannot be used (macOS, the BSDs), Then ps tells the holder's start, and a PID started at another time is stale", async () => {
    const lstart = (pid: number) =>
      execFileSync("ps", ["-o", "lstart=", "-p", String(pid)], { encoding: "utf8", env: { ...process.env, LC_ALL: "C", TZ: "UTC" } }).trim().split(/\s+/).join(" ");
    const child = await holder(dataDir());
    const platform = Object.getOwnPropertyDescriptor(process, "platform")!;
    Object.defineProperty(process, "platform", { ...platform, value: "darwin" });
    try {
      expect(holderIsLive({ pid: process.ppid, started: lstart(process.ppid) })).toBe(true);
      expect(holderIsLive({ pid: process.ppid, started: "Mon Jan  1 00:00:00 2001" })).toBe(false);
      expect(holderIsLive({ pid: child.pid!, started: lstart(child.pid!) })).toBe(true);
      child.kill("SIGKILL");
      await once(child, "exit");
      expect(holderIsLive({ pid: child.pid!, started: lstart(process.pid) })).toBe(false);
    } finally {
      Object.defineProperty(process, "platform", platform);
    }
  });

  it("When a CLI command finds a lock naming a reused PID, Then it does not try the dead server's socket", async () => {
    const dir = dataDir();
    const child = await holder(dir);
    child.kill("SIGKILL");
    await once(child, "exit");
    const record = JSON.parse(readFileSync(lockFilePath(dir), "utf8")) as object;
    const { DATABASE_URL: _omit, ...env } = process.env;
    // this version's record, and (where start times can be read) an older version's bare PID
    const locks = [JSON.stringify({ ...record, pid: process.ppid }), ...(process.platform === "linux" ? [String(process.ppid)] : [])];
    for (const lock of locks) {
      writeFileSync(lockFilePath(dir), lock);
      const longAgo = new Date("2001-01-01T00:00:00Z");
      utimesSync(lockFilePath(dir), longAgo, longAgo);
      let stderr = "";
      const code = await runCli(["orgs", "list"], { stdout: () => undefined, stderr: (t) => (stderr += t), env: { ...env, ARS_DATA_DIR: dir } });
      expect(code).toBe(1);
      // no database was ever created here: the command says so instead of "cannot reach the running server's admin socket"
      expect(stderr).toContain(`error: no embedded database in ${dir}`);
    }
  });
});
