// A PostgreSQL primary with a real streaming replica, made with the distribution's PostgreSQL
// tools (Debian: /usr/lib/postgresql/<major>/bin): `initdb` a primary in a temporary directory,
// `pg_basebackup -R` it into a standby, and run both `postgres` binaries on free loopback ports.
// For the replica-read tests and `npm run cluster`. PostgreSQL refuses to run as root: as root
// both run as the `postgres` user. Both die with the process that started them
// (`setpriv --pdeathsig`), so a killed test leaves no server behind.
import { spawn, execFile, type ChildProcess } from "node:child_process";
import { existsSync, chownSync, mkdtempSync, readdirSync, appendFileSync, rmSync } from "node:fs";
import { createServer, type AddressInfo } from "node:net";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import pg from "pg";

const run = promisify(execFile);

/** The PostgreSQL server binaries: `ARS_PG_BIN_DIR`, else the newest /usr/lib/postgresql/<major>/bin that has them; undefined when absent. */
export function postgresBinDir(env: Record<string, string | undefined> = process.env): string | undefined {
  if (env.ARS_PG_BIN_DIR) return env.ARS_PG_BIN_DIR;
  const root = "/usr/lib/postgresql";
  if (!existsSync(root)) return undefined;
  const majors = readdirSync(root).filter((d) => /^\d+$/.test(d)).sort((a, b) => Number(b) - Number(a));
  return majors.map((m) => join(root, m, "bin")).find((bin) => ["initdb", "pg_basebackup", "postgres"].every((b) => existsSync(join(bin, b))));
}

export interface PostgresPair {
  /** `postgresql://postgres@127.0.0.1:<port>/<database>` on the primary */
  primaryUrl(database?: string): string;
  /** the same database on the streaming replica (read-only) */
  replicaUrl(database?: string): string;
  primaryPort: number;
  replicaPort: number;
  /** Stops applying WAL on the replica (it keeps receiving): what it shows stands still. */
  pauseReplay(): Promise<void>;
  resumeReplay(): Promise<void>;
  /** Resolves once the replica has replayed everything the primary had written when called. */
  caughtUp(timeoutMs?: number): Promise<void>;
  /** Replay lag as the primary sees it: bytes not yet replayed, and seconds behind (null when idle). */
  lag(): Promise<{ bytes: number; seconds: number | null }>;
  /** Stops the replica only (the primary runs on): a replica that went away. */
  stopReplica(): Promise<void>;
  /** Stops both servers and deletes their directories. */
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** How to run a PostgreSQL binary as a user it accepts: as root, the `postgres` user. */
async function runAs(): Promise<{ prefix: string[]; uid?: number; gid?: number }> {
  if (userInfo().uid !== 0) return { prefix: [] };
  const uid = Number((await run("id", ["-u", "postgres"])).stdout.trim());
  const gid = Number((await run("id", ["-g", "postgres"])).stdout.trim());
  return { prefix: ["--reuid", String(uid), "--regid", String(gid), "--init-groups"], uid, gid };
}

/** Starts `postgres -D dir` as our child; resolves when its log says it accepts connections. */
function startPostgres(bin: string, prefix: string[], dir: string, ready: RegExp, log: (line: string) => void): Promise<ChildProcess> {
  const child = spawn("setpriv", ["--pdeathsig", "SIGQUIT", ...prefix, "--", join(bin, "postgres"), "-D", dir], { stdio: ["ignore", "ignore", "pipe"] });
  return new Promise((resolve, reject) => {
    let tail = "";
    const onExit = (code: number | null) => reject(new Error(`postgres in ${dir} exited (${code}) before it was ready:\n${tail}`));
    child.once("exit", onExit);
    child.once("error", reject);
    child.stderr!.setEncoding("utf8");
    child.stderr!.on("data", (chunk: string) => {
      for (const line of chunk.split("\n").filter(Boolean)) log(line);
      tail = (tail + chunk).slice(-4000);
      if (ready.test(tail)) {
        child.off("exit", onExit);
        resolve(child);
      }
    });
  });
}

async function stopPostgres(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGINT"); // fast shutdown
  const hard = setTimeout(() => child.kill("SIGQUIT"), 10_000);
  await exited;
  clearTimeout(hard);
}

export interface StartPairOptions {
  binDir?: string;
  /** server log lines (both servers, prefixed); dropped by default */
  log?: (line: string) => void;
}

/** A fresh primary (trust auth on loopback, replication allowed) and a streaming replica of it. */
export async function startPrimaryWithReplica(opts: StartPairOptions = {}): Promise<PostgresPair> {
  const bin = opts.binDir ?? postgresBinDir();
  if (!bin) throw new Error("PostgreSQL server binaries not found (install postgresql-15, or set ARS_PG_BIN_DIR)");
  const log = opts.log ?? (() => undefined);
  const { prefix, uid, gid } = await runAs();
  const base = mkdtempSync(join(tmpdir(), "ars-pg-pair-"));
  if (uid !== undefined) chownSync(base, uid, gid!);
  const asUser = (cmd: string, args: string[]) => run("setpriv", [...prefix, "--", join(bin, cmd), ...args], { cwd: base });
  const primaryDir = join(base, "primary");
  const replicaDir = join(base, "replica");
  const [primaryPort, replicaPort] = [await freePort(), await freePort()];
  const children: ChildProcess[] = [];
  const stop = async () => {
    for (const child of children.reverse()) await stopPostgres(child);
    rmSync(base, { recursive: true, force: true });
  };
  try {
    await asUser("initdb", ["-D", primaryDir, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8", "--locale=C"]);
    // Throwaway clusters: durability settings off (a crash loses them anyway).
    appendFileSync(
      join(primaryDir, "postgresql.auto.conf"),
      [`port = ${primaryPort}`, "listen_addresses = '127.0.0.1'", `unix_socket_directories = '${base}'`, "fsync = off", "full_page_writes = off", "max_connections = 200", ""].join("\n"),
    );
    appendFileSync(join(primaryDir, "pg_hba.conf"), "host replication all 127.0.0.1/32 trust\n");
    children.push(await startPostgres(bin, prefix, primaryDir, /ready to accept connections/, (l) => log(`[primary] ${l}`)));
    await asUser("pg_basebackup", ["-h", "127.0.0.1", "-p", String(primaryPort), "-U", "postgres", "-D", replicaDir, "-R", "-X", "stream", "-c", "fast"]);
    appendFileSync(join(replicaDir, "postgresql.auto.conf"), `port = ${replicaPort}\n`);
    children.push(await startPostgres(bin, prefix, replicaDir, /ready to accept read-only connections/, (l) => log(`[replica] ${l}`)));
  } catch (err) {
    await stop();
    throw err;
  }

  const url = (port: number, database = "postgres") => `postgresql://postgres@127.0.0.1:${port}/${database}`;
  const once = async <T>(port: number, sql: string, params: unknown[] = []): Promise<T[]> => {
    const client = new pg.Client({ connectionString: url(port) });
    await client.connect();
    try {
      return (await client.query(sql, params)).rows as T[];
    } finally {
      await client.end();
    }
  };
  const pair: PostgresPair = {
    primaryUrl: (database) => url(primaryPort, database),
    replicaUrl: (database) => url(replicaPort, database),
    primaryPort,
    replicaPort,
    async pauseReplay() {
      await once(replicaPort, "SELECT pg_wal_replay_pause()");
      // pausing is requested, then takes effect: wait until it has
      for (let i = 0; i < 200; i++) {
        const [row] = await once<{ state: string }>(replicaPort, "SELECT pg_get_wal_replay_pause_state() AS state");
        if (row!.state === "paused") return;
        await new Promise((r) => setTimeout(r, 25));
      }
      throw new Error("replay did not pause");
    },
    async resumeReplay() {
      await once(replicaPort, "SELECT pg_wal_replay_resume()");
    },
    async caughtUp(timeoutMs = 30_000) {
      const [target] = await once<{ lsn: string }>(primaryPort, "SELECT pg_current_wal_lsn()::text AS lsn");
      const deadline = Date.now() + timeoutMs;
      while (Date.now() < deadline) {
        const [row] = await once<{ done: boolean }>(replicaPort, "SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn AS done", [target!.lsn]);
        if (row!.done) return;
        await new Promise((r) => setTimeout(r, 20));
      }
      throw new Error(`replica did not replay up to ${target!.lsn} within ${timeoutMs} ms`);
    },
    async lag() {
      const [row] = await once<{ bytes: string | null; seconds: number | null }>(
        primaryPort,
        `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn)::text AS bytes, extract(epoch FROM replay_lag)::float8 AS seconds
           FROM pg_stat_replication LIMIT 1`,
      );
      return { bytes: Number(row?.bytes ?? NaN), seconds: row?.seconds ?? null };
    },
    stopReplica: () => stopPostgres(children[1]!),
    stop,
  };
  // the replica is streaming once the primary lists its WAL sender
  const deadline = Date.now() + 30_000;
  while ((await once(primaryPort, "SELECT 1 FROM pg_stat_replication WHERE state = 'streaming'")).length === 0) {
    if (Date.now() > deadline) {
      await stop();
      throw new Error("the replica did not start streaming within 30 s");
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return pair;
}
