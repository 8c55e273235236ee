// Bridges PGlite error classes between two copies of @electric-sql/pglite.
//
// pglite-prisma-adapter maps database errors to Prisma's (P2002 for a unique violation, ...)
// only when `error instanceof messages.DatabaseError` of the PGlite copy *it* imports. npm may
// install a different PGlite copy for the adapter than the one this package depends on (today:
// 0.4.3 hoisted for prisma's own tooling vs our 0.5.16). Errors from our copy would then reach
// Prisma unmapped. The proxy built here re-creates such errors as the adapter's class; when both
// copies are the same it is not used at all.
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import { messages, type PGlite, type Transaction } from "@electric-sql/pglite";

type DatabaseErrorClass = typeof messages.DatabaseError;

/** The `messages.DatabaseError` class of the PGlite copy that pglite-prisma-adapter imports. */
async function adapterDatabaseErrorClass(): Promise<DatabaseErrorClass | undefined> {
  try {
    const requireHere = createRequire(import.meta.url);
    const requireFromAdapter = createRequire(requireHere.resolve("pglite-prisma-adapter"));
    // The adapter is loaded as ESM, so the class must come from PGlite's ESM entry, not the CJS one.
    let dir = dirname(requireFromAdapter.resolve("@electric-sql/pglite"));
    for (;;) {
      const manifestPath = join(dir, "package.json");
      const manifest = readManifest(manifestPath);
      if (manifest?.name === "@electric-sql/pglite") {
        const entry = manifest.exports?.["."]?.import?.default;
        if (!entry) return undefined;
        const mod = (await import(pathToFileURL(join(dir, entry)).href)) as { messages?: { DatabaseError?: DatabaseErrorClass } };
        return mod.messages?.DatabaseError;
      }
      const parent = dirname(dir);
      if (parent === dir) return undefined;
      dir = parent;
    }
  } catch {
    return undefined;
  }
}

interface PgliteManifest {
  name?: string;
  exports?: Record<string, { import?: { default?: string } } | undefined>;
}

function readManifest(path: string): PgliteManifest | undefined {
  try {
    return JSON.parse(readFileSync(path, "utf8")) as PgliteManifest;
  } catch {
    return undefined;
  }
}

function convertError(error: unknown, Target: DatabaseErrorClass): unknown {
  // Target is typed like our class but is another copy of it, hence the widening to unknown.
  if (!(error instanceof messages.DatabaseError) || (error as unknown) instanceof Target) return error;
  const converted = new Target(error.message, error.length, error.name);
  // Copies code, detail, constraint, column, ... (all own fields) and keeps the original stack.
  Object.assign(converted, error);
  converted.stack = error.stack;
  return converted;
}

type Queryable = Pick<PGlite, "query" | "exec"> | Transaction;

function wrapQueryable<T extends Queryable>(target: T, Target: DatabaseErrorClass): T {
  return new Proxy(target, {
    get(obj, prop) {
      const value: unknown = Reflect.get(obj, prop, obj);
      if (typeof value !== "function") return value;
      if (prop === "transaction") {
        const transaction = value as PGlite["transaction"];
        return <R>(callback: (tx: Transaction) => Promise<R>) =>
          transaction
            .call(obj, (tx: Transaction) => callback(wrapQueryable(tx, Target)))
            .catch((error: unknown) => {
              throw convertError(error, Target);
            });
      }
      const fn = value as (...args: unknown[]) => unknown;
      return (...args: unknown[]) => {
        const result = fn.apply(obj, args);
        return result instanceof Promise
          ? result.catch((error: unknown) => {
              throw convertError(error, Target);
            })
          : result;
      };
    },
  });
}

/** The PGlite instance to hand to pglite-prisma-adapter (the instance itself when no bridging is needed). */
export async function pgliteForPrismaAdapter(pg: PGlite): Promise<PGlite> {
  const Target = await adapterDatabaseErrorClass();
  if (!Target || Target === messages.DatabaseError) return pg;
  return wrapQueryable(pg, Target);
}
