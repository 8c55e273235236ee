// WebAssembly in a process on PostgreSQL is Prisma's query compiler and undici's HTTP parser. V8
// compiles it with its baseline compiler (Liftoff) and re-compiles hot functions with its
// optimizing compiler (TurboFan) on background threads. Prisma's first few queries are enough to
// send its query compiler there, and that compiler's working memory, freed to the C allocator's
// per-thread arenas, stays with the process: 40–70 MB of RSS for the rest of its life
// (bench/NOTES.md, "Where serve's memory went"). Prisma compiles a query shape once and keeps
// the plan, so the optimized code bought nothing measurable: the endpoint list's CPU per request
// and the engine's CPU per delivery were the same either way.
//
// On the embedded database the PostgreSQL server itself is WebAssembly (PGlite) and runs every
// query: it keeps V8's tiering. The flag is process-wide and read when a module is compiled, so
// it is set before the database is opened.
import { setFlagsFromString } from "node:v8";
import type { Database } from "./db/types.js";
import { givenByOperator } from "./operator-flags.js";

/** Baseline-only WebAssembly for a process on PostgreSQL; the flag applied, if any. */
export function applyWasmTiering(database: Database["kind"]): string[] {
  if (database !== "postgres") return [];
  if (["liftoff-only", "no-liftoff-only", "liftoff", "no-liftoff", "wasm-tier-up", "no-wasm-tier-up"].some(givenByOperator)) return [];
  setFlagsFromString("--liftoff-only");
  return ["--liftoff-only"];
}
