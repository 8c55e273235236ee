// Loads the built server package (apps/server/dist). `npm run build` must have run first.
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const DIST = join(ROOT, "apps", "server", "dist");

const distUrl = (rel) => pathToFileURL(join(DIST, rel)).href;

export function assertBuilt() {
  for (const built of [join(DIST, "index.js"), join(ROOT, "packages", "test-kit", "dist", "index.js")]) {
    if (!existsSync(built)) throw new Error(`${built} not found: run \`npm run build\` first (from ${ROOT})`);
  }
}

/** The server's programmatic API (apps/server/src/index.ts): startServer, createOrg, createToken, migrate, openDatabase, loadConfig. */
export async function loadServer() {
  assertBuilt();
  return import(distUrl("index.js"));
}

/** The `worker` role alone (apps/server/src/worker.ts), loaded as the CLI's `worker` command loads it: without the HTTP stack. */
export async function loadWorker() {
  assertBuilt();
  return import(distUrl("worker.js"));
}

/** Whether the build contains the delivery dispatcher (src/delivery/dispatcher.ts). */
export function hasDispatcher() {
  return existsSync(join(DIST, "delivery", "dispatcher.js"));
}

/**
 * The environment that gives a server V8's own heap sizing instead of heap-defaults.ts's (0 turns
 * each setting off): the bench runs it beside the default to show what the defaults cost in CPU
 * and save in memory, in the same run.
 */
export const V8_OWN_HEAP_ENV = { ARS_HEAP_GROWING_PERCENT: "0", ARS_SEMI_SPACE_GROWTH_FACTOR: "0" };
