// V8's heap sizing for a long-running service process (`serve`, `worker`). By default V8 lets the
// old generation grow to up to 4 × the live heap between full collections when allocation is
// fast: a delivery burst with a live heap of 25–45 MB then peaks at 300–360 MB RSS of garbage not
// yet collected. A fixed growth factor for the old generation bounds that by the live heap,
// without a hard heap limit (a larger live heap still fits; nothing turns into an out-of-memory
// crash). The flag is read by V8 at every collection, so it takes effect when set at run time.
//
// Only the worker bounds it. `serve` keeps V8's own rule: list pages now leave in pieces allocated
// young (http/pagination.ts) and Prisma's query compiler no longer leaves its optimizing
// compiler's memory behind (wasm-tiering.ts), and with those a bound of 1.4 × the live heap held a
// burst of 10,000 events at 190–195 MB against 312–323 MB. But a server that has idled before its
// load (`npm run bench:guard`) then spent 1.48 × the floor's CPU per list request against 1.09 ×
// with V8's own rule, in back-to-back runs (bench/NOTES.md, "Where serve's memory went"): every
// list page would pay for the burst's peak. The worker serves no pages and keeps the tight bound
// (its CPU per delivery was the same either way, its peak RSS 138 against 180 MB).
//
// The young generation is left to V8: keeping it from growing (factor 1, the earlier default)
// left it at 1 MB semispaces once V8 had shrunk it after an idle pause, and then doubled the CPU
// of every list page (bench/NOTES.md; `npm run bench:guard` catches it).
import { setFlagsFromString } from "node:v8";
import { givenByOperator } from "./operator-flags.js";

export interface HeapSettings {
  /** Old generation grows to (1 + n/100) × the live heap after a full collection; 0: V8's own rule. */
  growingPercent: number;
  /** Factor by which the young generation may grow; 1 keeps it at its initial size; 0: V8's own (the default). */
  semiSpaceGrowthFactor: number;
}

/** `serve` (the API, with or without its in-process engine). */
export const DEFAULT_HEAP: HeapSettings = { growingPercent: 0, semiSpaceGrowthFactor: 0 };
/** `worker` (the engine alone). */
export const WORKER_DEFAULT_HEAP: HeapSettings = { growingPercent: 30, semiSpaceGrowthFactor: 0 };

/** Applies the settings to this process's V8 (once per process is enough; repeating is harmless); a flag the operator gave Node wins over ours. */
export function applyHeapSettings(s: HeapSettings): string[] {
  const applied: string[] = [];
  if (s.growingPercent > 0 && !givenByOperator("heap-growing-percent")) applied.push(`--heap-growing-percent=${s.growingPercent}`);
  if (s.semiSpaceGrowthFactor > 0 && !givenByOperator("semi-space-growth-factor") && !givenByOperator("max-semi-space-size")) {
    applied.push(`--semi-space-growth-factor=${s.semiSpaceGrowthFactor}`);
  }
  for (const flag of applied) setFlagsFromString(flag);
  return applied;
}
