// Where a database command runs. On the embedded database held by a running `serve`, the
// command is sent over the server's admin socket (no PGlite start, no migration check: about a
// tenth of a second). Otherwise the command opens the database itself, as a short-lived process.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { loadConfig } from "../config.js";
import { callAdminSocket } from "../db/admin-socket.js";
import { adminSocketPath, lockOwner } from "../db/embedded-lock.js";
import type { AdminRequest } from "./admin-ops.js";
import { UsageError } from "./errors.js";

export interface AdminTarget {
  /** Which database, and how it is reached: every command says so on stderr. */
  description: string;
  run(request: AdminRequest): Promise<unknown>;
  close(): Promise<void>;
}

/** Commands that may start a new embedded database; the others need one that exists. */
const MAY_CREATE = new Set<AdminRequest["op"]>(["migrate", "orgs.create"]);

function describe(url: string | undefined, dataDir: string): string {
  if (!url) return `embedded database in ${dataDir}`;
  try {
    const u = new URL(url);
    return `PostgreSQL ${u.host}${u.pathname}`; // never the credentials
  } catch {
    return "PostgreSQL";
  }
}

export async function openTarget(env: NodeJS.ProcessEnv, op: AdminRequest["op"]): Promise<AdminTarget> {
  const config = { ...loadConfig(env), dispatcher: false };
  const dir = config.dataDir;
  if (!config.databaseUrl) {
    const owner = lockOwner(dir);
    if (owner) {
      const path = adminSocketPath(dir);
      return {
        description: `embedded database in ${dir} (through the server running as process ${owner}, socket ${path})`,
        run: (request) => callAdminSocket(path, request),
        close: async () => undefined,
      };
    }
    if (!MAY_CREATE.has(op) && !existsSync(join(dir, "PG_VERSION"))) {
      throw new UsageError(`no embedded database in ${dir}: start \`serve\` once (or run \`migrate\`), or set ARS_DATA_DIR / DATABASE_URL`);
    }
  }
  if (op === "migrate") {
    const [{ openDatabase }, { migrateOp }] = await Promise.all([import("../db/client.js"), import("./admin-ops.js")]);
    const db = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: dir });
    return { description: describe(config.databaseUrl, dir), run: () => migrateOp(db), close: () => db.close() };
  }
  const [{ createDeps }, { createLogger }, { runAdminOp }] = await Promise.all([
    import("../deps.js"),
    import("../lib/logger.js"),
    import("./admin-ops.js"),
  ]);
  const deps = await createDeps(config, { logger: createLogger({ level: "warn", destination: process.stderr }), servesLists: false });
  return {
    description: describe(config.databaseUrl, dir),
    run: (request) => runAdminOp(deps, request),
    close: () => deps.close(),
  };
}
