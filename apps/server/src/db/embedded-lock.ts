import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from "node:fs";
import { join } from "node:path";
import { errorField } from "../lib/narrow.js";

/** The running server's admin socket: how commands reach a database the server holds. */
export const adminSocketPath = (dataDir: string): string => join(dataDir, "ars.sock");

/** The live process holding the data directory's lock, if any (a stale lock counts as none). */
export function lockOwner(dataDir: string): number | undefined {
  let owner: number;
  try {
    owner = Number(readFileSync(join(dataDir, "ars.lock"), "utf8"));
  } catch {
    return undefined;
  }
  return Number.isInteger(owner) && owner > 0 && isAlive(owner) ? owner : undefined;
}

/**
 * PGlite is one process's database: a second process opening the same directory (say `ars
 * tokens revoke` while `ars serve` runs) would not be seen by the first and can corrupt it. The
 * lock file makes that a clear error instead. A lock left by a dead process is taken over.
 */
export function lockDataDir(dataDir: string): () => void {
  const path = join(dataDir, "ars.lock");
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(path, "wx", 0o600);
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return () => {
        try {
          unlinkSync(path);
        } catch {
          // already gone: nothing to release
        }
      };
    } catch (err) {
      if (errorField(err, "code") !== "EEXIST") throw err;
      const owner = Number(readFileSync(path, "utf8"));
      if (Number.isInteger(owner) && owner > 0 && owner !== process.pid && isAlive(owner)) {
        throw new Error(
          `the embedded database in ${dataDir} is in use by process ${owner}; CLI commands reach it through a running \`serve\` (its admin socket), other roles need PostgreSQL (DATABASE_URL)`,
          { cause: err },
        );
      }
      unlinkSync(path);
    }
  }
  throw new Error(`could not lock the embedded database in ${dataDir}`);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return errorField(err, "code") === "EPERM";
  }
}
