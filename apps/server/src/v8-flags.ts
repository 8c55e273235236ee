// The V8 flags `serve` and `worker` set at start, before the database is opened: the heap sizing
// of their role (heap-defaults.ts) and baseline-only WebAssembly on PostgreSQL (wasm-tiering.ts).
import type { Database } from "./db/types.js";
import { applyHeapSettings, type HeapSettings } from "./heap-defaults.js";
import type { Logger } from "./lib/logger.js";
import { applyWasmTiering } from "./wasm-tiering.js";

/** Applies the role's flags to this process's V8; the flags applied (an operator's own win). */
export function applyV8Flags(heap: HeapSettings, database: Database["kind"]): string[] {
  return [...applyHeapSettings(heap), ...applyWasmTiering(database)];
}

/** The start-up log line naming what was applied, once the logger exists. */
export function logV8Flags(logger: Logger, flags: readonly string[]): void {
  if (flags.length) {
    logger.info({ v8_flags: flags }, "V8 flags applied (heap sizing: ARS_HEAP_GROWING_PERCENT, ARS_SEMI_SPACE_GROWTH_FACTOR; baseline-only WebAssembly on PostgreSQL)");
  }
}
