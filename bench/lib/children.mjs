// Child processes of the bench: each server runs in its own Node process, started here and
// stopped by its pid (never by name).
import { fork } from "node:child_process";
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "./pkg.mjs";

/** Where a child's standard output goes: its log lines, kept for the last start of each name. */
export const LOG_DIR = join(ROOT, "bench", ".out", "logs");

/**
 * Forks `script` (relative to bench/) and waits for its `{ ready: true, ... }` IPC message.
 * `execArgv` lets the caller add e.g. --cpu-prof. Its standard output (the servers log there, at
 * the level users get by default) goes to a file of LOG_DIR, as a log shipper or systemd would
 * take it: the servers pay for writing their lines, and the bench's own output stays readable.
 */
export async function startChild(script, { env = {}, execArgv = [], name = script, timeoutMs = 60_000 } = {}) {
  mkdirSync(LOG_DIR, { recursive: true });
  const logFd = openSync(join(LOG_DIR, `${name.replace(/[^a-z0-9]+/gi, "-").replace(/^-|-$/g, "")}.log`), "w");
  const child = fork(join(ROOT, "bench", script), [], {
    env: { ...process.env, ...env },
    execArgv,
    stdio: ["ignore", logFd, "inherit", "ipc"],
  });
  closeSync(logFd);
  const messages = [];
  const listeners = new Set();
  child.on("message", (m) => {
    messages.push(m);
    for (const l of listeners) l(m);
  });
  const ready = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not start within ${timeoutMs} ms`)), timeoutMs);
    const onExit = (code) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited with code ${code} before it was ready`));
    };
    child.once("exit", onExit);
    const l = (m) => {
      if (m?.ready) {
        clearTimeout(timer);
        child.off("exit", onExit);
        listeners.delete(l);
        resolve(m);
      }
    };
    listeners.add(l);
    for (const m of messages) l(m);
  });
  const exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
  return {
    ...ready,
    child,
    pid: child.pid,
    send: (m) => child.send(m),
    /** The next IPC message matching `test`. */
    next(test, timeoutMs2 = 600_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          listeners.delete(l);
          reject(new Error(`${name}: no expected message within ${timeoutMs2} ms`));
        }, timeoutMs2);
        const l = (m) => {
          if (test(m)) {
            clearTimeout(timer);
            listeners.delete(l);
            resolve(m);
          }
        };
        listeners.add(l);
      });
    },
    rss: () => memoryOf(child.pid),
    cpuMs: () => cpuMsOf(child.pid),
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
      const result = await exited;
      clearTimeout(timer);
      return result;
    },
  };
}

/** VmRSS (now) and VmHWM (peak) of a process, in MB, from /proc. */
export function memoryOf(pid) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const kb = (key) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? NaN);
    return { rssMb: kb("VmRSS") / 1024, peakMb: kb("VmHWM") / 1024 };
  } catch {
    return { rssMb: NaN, peakMb: NaN };
  }
}

/**
 * User + system CPU time so far, in ms, of the PostgreSQL backends connected to `database` on
 * this machine (the benches run PostgreSQL on 127.0.0.1): the database's side of what a scenario
 * costs. A backend's process title names its database (`postgres: 15/main: user db host state`),
 * so other databases' work on the same server is not counted. A backend that exits takes its time
 * with it: measure across pooled connections only.
 */
export function postgresCpuMs(database) {
  let total = 0;
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const title = readFileSync(`/proc/${pid}/cmdline`, "utf8");
      if (!title.startsWith("postgres:") || !title.split(" ").includes(database)) continue;
      total += cpuMsOf(pid);
    } catch {
      // gone meanwhile
    }
  }
  return total;
}

/** User + system CPU time a process has used so far, in ms (from /proc/<pid>/stat). */
export function cpuMsOf(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // fields after the parenthesised command name; utime and stime are fields 14 and 15
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLK_TCK;
  } catch {
    return NaN;
  }
}

// USER_HZ: 100 on every Linux we run on (getconf CLK_TCK)
const CLK_TCK = 100;
