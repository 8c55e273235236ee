// Loads the built server package (apps/server/dist). `npm run build` must have run first.
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const DIST = join(ROOT, "apps", "server", "dist");

const distUrl = (rel) => pathToFileURL(join(DIST, rel)).href;

export function assertBuilt() {
  if (!existsSync(join(DIST, "index.js"))) {
    throw new Error(`apps/server/dist/index.js not found: run \`npm run build\` first (from ${ROOT})`);
  }
}

/** The server's programmatic API: startServer, createOrg, createToken, migrate, openDatabase, staticResolver. */
export async function loadServer() {
  assertBuilt();
  try {
    return await import(distUrl("index.js"));
  } catch (err) {
    // While the delivery engine is being written, index.js may re-export a module the build
    // does not have yet; compose the same API from the modules it re-exports.
    if (err?.code !== "ERR_MODULE_NOT_FOUND") throw err;
    console.warn(`[bench] dist/index.js does not load (${err.message.split("\n")[0]}); using its modules directly`);
    const [server, config, client, mig, resolver, tokensSvc, tokensRepo] = await Promise.all([
      import(distUrl("server.js")),
      import(distUrl("config.js")),
      import(distUrl("db/client.js")),
      import(distUrl("db/migrate.js")),
      import(distUrl("net/resolver.js")),
      import(distUrl("services/tokens.service.js")),
      import(distUrl("repos/tokens.repo.js")),
    ]);
    const svc = (db) => tokensSvc.tokensService(tokensRepo.tokensRepo(db.prisma));
    return {
      startServer: server.startServer,
      loadConfig: config.loadConfig,
      openDatabase: client.openDatabase,
      migrate: mig.migrate,
      staticResolver: resolver.staticResolver,
      ALL_SCOPES: tokensSvc.ALL_SCOPES,
      createOrg: (db, { name }) => svc(db).createOrg(name),
      createToken: (db, { orgId, scopes, name }) => svc(db).createToken(orgId, scopes, name),
    };
  }
}

/** Whether the build contains the delivery dispatcher (src/delivery/dispatcher.ts). */
export function hasDispatcher() {
  return existsSync(join(DIST, "delivery", "dispatcher.js"));
}
