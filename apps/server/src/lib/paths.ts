import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The contract, read at start-up; src/ and dist/ sit at the same depth below the repo root. */
export const SPEC_PATH = process.env.ARS_OPENAPI_PATH ?? fileURLToPath(new URL("../../../../openapi/openapi.yaml", import.meta.url));

/** The server package's own folder (holds package.json), from src/lib or dist/lib alike. */
const PACKAGE_ROOT = fileURLToPath(new URL("../../", import.meta.url));

/**
 * Where the embedded database lives when ARS_DATA_DIR is not set: `.data` in the repository root
 * (the folder holding prisma/migrations) or, for an installed package without one, in the
 * package's folder. Found from this module, never from the working directory, so `serve` and
 * every CLI command agree on it wherever they are started from.
 */
export function defaultDataDir(env: Record<string, string | undefined> = process.env): string {
  if (env.ARS_DATA_DIR) return resolve(env.ARS_DATA_DIR);
  let dir = PACKAGE_ROOT;
  for (;;) {
    if (existsSync(join(dir, "prisma", "migrations", "migration_lock.toml"))) return join(dir, ".data");
    const parent = dirname(dir);
    if (parent === dir) return join(PACKAGE_ROOT, ".data");
    dir = parent;
  }
}

/**
 * The rendered reference and the public bundle, built once by `npm run docs` (the api-types
 * package's generate task) into openapi/dist; found relative to this file, so the server finds
 * them wherever it is started from.
 */
export const DOCS_DIR = process.env.ARS_DOCS_DIR ?? fileURLToPath(new URL("../../../../openapi/dist/", import.meta.url));
