// PGlite is one process's database: a second process opening the same directory (say `ars
// tokens revoke` while `ars serve` runs) would not be seen by the first and can corrupt it. The
// lock file in the data directory makes that a clear error instead.
//
// A PID alone cannot tell the holder from a stranger: a process killed with SIGKILL still exists
// while the kernel tears it down, and after a crash (or in a container restarted with the same
// volume, where the server is PID 1 every time) the PID is soon someone else's. So the lock file
// records who holds it: the PID, and the identity of that process's start (Linux: the start time
// in /proc/<pid>/stat, field 22, and the boot id; macOS and other Unixes: `ps -o lstart`). A lock
// whose PID is gone, exiting, a zombie, or a process started at another time is stale and taken
// over. Where no identity can be read (Windows, a /proc hiding other users' processes), a live
// PID is trusted, and the error says how to clear the lock by hand.
import { execFileSync } from "node:child_process";
import { closeSync, openSync, readFileSync, statSync, unlinkSync, writeSync } from "node:fs";
import { join } from "node:path";
import { errorField, isRecord } from "../lib/narrow.js";

/** The running server's admin socket: how commands reach a database the server holds. */
export const adminSocketPath = (dataDir: string): string => join(dataDir, "ars.sock");

/** The lock file of a data directory. */
export const lockFilePath = (dataDir: string): string => join(dataDir, "ars.lock");

/** Who holds the lock: enough to tell that very process from a later one given the same PID. */
export interface LockHolder {
  pid: number;
  /** Linux: /proc/sys/kernel/random/boot_id (start times count from boot) */
  boot?: string;
  /** Linux: /proc/<pid>/stat field 22 (clock ticks after boot); elsewhere `ps -o lstart=` */
  started?: string;
}

/** What the operating system says about a PID right now. */
type ProcessState =
  | { running: false }
  // identity fields absent: the process runs, but who it is cannot be read here
  | { running: true; boot?: string; started?: string };

/** How long a holder that still looks alive is watched before the lock is refused: a process
 * signalled a moment ago may not have begun exiting yet. */
const GRACE_MS = 500;
const GRACE_STEP_MS = 25;
/** Linux's PF_EXITING (include/linux/sched.h): set as soon as the process starts to exit. */
const PF_EXITING = 0x4;
/** USER_HZ: the unit of /proc/<pid>/stat times on every Linux architecture Node runs on. */
const LINUX_TICKS_PER_SECOND = 100;

let bootIdCache: string | undefined | null = null;
function bootId(): string | undefined {
  if (bootIdCache === null) {
    try {
      bootIdCache = readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim() || undefined;
    } catch {
      bootIdCache = undefined;
    }
  }
  return bootIdCache;
}

function signalZero(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return errorField(err, "code") === "EPERM"; // alive, another user's
  }
}

/** Linux: state, flags and start time from /proc; undefined when /proc does not show the PID. */
function linuxState(pid: number): ProcessState | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  // "pid (comm) state ppid …": comm may hold spaces and parentheses, so fields count from the last ")"
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const state = fields[0] ?? "";
  const flags = Number(fields[6]);
  const started = fields[19];
  if (state === "Z" || state === "X" || state === "x") return { running: false };
  if (Number.isInteger(flags) && (flags & PF_EXITING) !== 0) return { running: false };
  return { running: true, boot: bootId(), started };
}

/** macOS and other Unixes: `ps` gives the state and the start to the second. */
function psState(pid: number): ProcessState | undefined {
  let out: string;
  try {
    out = execFileSync("ps", ["-o", "stat=", "-o", "lstart=", "-p", String(pid)], {
      encoding: "utf8",
      timeout: 2_000,
      stdio: ["ignore", "pipe", "ignore"],
      // lstart is local time in the locale's words: fixed, so every process writes the same text
      env: { ...process.env, LC_ALL: "C", TZ: "UTC" },
    });
  } catch (err) {
    // ps exits 1 when no process matches; anything else (no ps at all) tells us nothing
    return errorField(err, "code") === undefined && isRecord(err) && err.status === 1 ? { running: false } : undefined;
  }
  const [stat = "", ...start] = out.trim().split(/\s+/);
  if (stat === "") return { running: false };
  // Z: zombie; E: "the process is trying to exit" (BSD ps)
  if (stat.startsWith("Z") || stat.includes("E")) return { running: false };
  return { running: true, started: start.join(" ") || undefined };
}

function processState(pid: number): ProcessState {
  if (!signalZero(pid)) return { running: false };
  if (process.platform === "win32") return { running: true };
  // a /proc mounted with hidepid shows no other user's process: the PID is alive, identity unknown
  const state = process.platform === "linux" ? linuxState(pid) : psState(pid);
  return state ?? { running: true };
}

let ownCache: LockHolder | undefined;
/** This process's record, as written into the lock file. */
function ownRecord(): LockHolder {
  if (!ownCache) {
    const state = processState(process.pid);
    ownCache = { pid: process.pid, ...(state.running ? { boot: state.boot, started: state.started } : {}) };
  }
  return ownCache;
}

/** The lock file's content: JSON; a bare PID is what versions before the identity check wrote. */
function parseHolder(text: string): LockHolder | undefined {
  const trimmed = text.trim();
  if (/^\d+$/.test(trimmed)) return { pid: Number(trimmed) };
  let value: unknown;
  try {
    value = JSON.parse(trimmed);
  } catch {
    return undefined;
  }
  if (!isRecord(value) || typeof value.pid !== "number" || !Number.isInteger(value.pid) || value.pid <= 0) return undefined;
  const nonEmpty = (v: unknown) => (typeof v === "string" && v !== "" ? v : undefined);
  return { pid: value.pid, boot: nonEmpty(value.boot), started: nonEmpty(value.started) };
}

/** Linux: when `started` ticks after boot was, in ms since the epoch (for lock files without an identity). */
function linuxStartedAtMs(started: string): number | undefined {
  try {
    const btime = /^btime (\d+)$/m.exec(readFileSync("/proc/stat", "utf8"))?.[1];
    return btime === undefined ? undefined : Number(btime) * 1000 + (Number(started) * 1000) / LINUX_TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}

/**
 * Whether the process a lock file names still holds it. `writtenAtMs` is the file's mtime: a
 * record without an identity (written by an older version) cannot have been written by a
 * process that started after it.
 */
export function holderIsLive(holder: LockHolder, writtenAtMs?: number): boolean {
  const now = processState(holder.pid);
  if (!now.running) return false;
  if (holder.boot && now.boot && holder.boot !== now.boot) return false;
  if (holder.started && now.started) return holder.started === now.started;
  if (!holder.started && now.started && writtenAtMs !== undefined && process.platform === "linux") {
    const startedAt = linuxStartedAtMs(now.started);
    // a second of slack for clock ticks and mtime granularity
    if (startedAt !== undefined && startedAt > writtenAtMs + 1_000) return false;
  }
  return true;
}

interface LockFile {
  text: string;
  holder: LockHolder | undefined;
  mtimeMs: number;
}

function readLock(path: string): LockFile | undefined {
  try {
    const text = readFileSync(path, "utf8");
    const mtimeMs = statSync(path).mtimeMs;
    return { text, holder: parseHolder(text), mtimeMs };
  } catch (err) {
    if (errorField(err, "code") === "ENOENT") return undefined;
    throw err;
  }
}

function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** The live process holding the data directory's lock, if any (a stale lock counts as none). */
export function lockOwner(dataDir: string): number | undefined {
  const lock = readLock(lockFilePath(dataDir));
  return lock?.holder && holderIsLive(lock.holder, lock.mtimeMs) ? lock.holder.pid : undefined;
}

function inUse(dataDir: string, path: string, pid: number): Error {
  if (pid === process.pid) {
    return new Error(`the embedded database in ${dataDir} is already open in this process (lock file ${path})`);
  }
  return new Error(
    `the embedded database in ${dataDir} is in use by process ${pid} (lock file ${path}): ` +
      "CLI commands reach it through a running `serve` (its admin socket), other roles need PostgreSQL (DATABASE_URL); " +
      `if process ${pid} is not an ars process of this data directory, delete ${path} and start again`,
  );
}

/**
 * Takes the data directory's lock, or throws naming the holder and the lock file. Returns the
 * release, which removes the file only while it is still this process's.
 */
export function lockDataDir(dataDir: string): () => void {
  const path = lockFilePath(dataDir);
  const mine = `${JSON.stringify(ownRecord())}\n`;
  for (let attempt = 0; attempt < 4; attempt++) {
    try {
      const fd = openSync(path, "wx", 0o600);
      try {
        writeSync(fd, mine);
      } finally {
        closeSync(fd);
      }
      return () => release(path, mine);
    } catch (err) {
      if (errorField(err, "code") !== "EEXIST") throw err;
    }
    const stale = staleLock(dataDir, path);
    if (stale === undefined) continue; // removed meanwhile
    // Only the very file judged stale is removed: one another process has just written stays.
    if (readLock(path)?.text === stale.text) {
      try {
        unlinkSync(path);
      } catch (err) {
        if (errorField(err, "code") !== "ENOENT") throw err;
      }
    }
  }
  throw new Error(`could not lock the embedded database in ${dataDir}: its lock file ${path} keeps changing`);
}

/** The lock file when its holder is gone; throws when a live process holds it. */
function staleLock(dataDir: string, path: string): LockFile | undefined {
  const deadline = Date.now() + GRACE_MS;
  for (;;) {
    const lock = readLock(path);
    if (!lock) return undefined;
    // no holder: being written this very moment, or left half-written by a crash; the grace tells
    const live = lock.holder ? holderIsLive(lock.holder, lock.mtimeMs) : true;
    if (!live) return lock;
    if (lock.holder?.pid === process.pid) throw inUse(dataDir, path, process.pid);
    if (Date.now() >= deadline) {
      if (!lock.holder) return lock;
      throw inUse(dataDir, path, lock.holder.pid);
    }
    sleepSync(GRACE_STEP_MS);
  }
}

function release(path: string, mine: string): void {
  try {
    if (readFileSync(path, "utf8") === mine) unlinkSync(path);
  } catch {
    // already gone: nothing to release
  }
}
