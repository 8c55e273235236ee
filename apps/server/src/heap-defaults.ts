// V8's heap sizing for a long-running service process (`serve`, `worker`). By default V8 lets the
// old generation grow to up to 4 × the live heap between full collections when allocation is
// fast: a delivery burst with a live heap of 25–45 MB then peaks at 350+ MB RSS of garbage not
// yet collected. A fixed, modest growth factor for the old generation bounds that by the live heap,
// without a hard heap limit (a larger live heap still fits; nothing turns into an out-of-memory
// crash). The flag is read by V8 at every collection, so it takes effect when set at run time.
//
// The young generation is left to V8 (it grows to 16 MB semispaces under load): keeping it at its
// initial size saved about 40 MB at the burst's peak but doubled the CPU of every list page —
// objects of a page still in flight were promoted by the frequent scavenges and then collected by
// full mark-compacts (the bench runs both side by side: `npm run bench -- --heap-compare on`).
import { setFlagsFromString } from "node:v8";

export interface HeapSettings {
  /** Old generation grows to (1 + n/100) × the live heap after a full collection; 0: V8's own rule. */
  growingPercent: number;
  /** Factor by which the young generation may grow; 1 keeps it at its initial size; 0: V8's own (the default). */
  semiSpaceGrowthFactor: number;
}

export const DEFAULT_HEAP: HeapSettings = { growingPercent: 30, semiSpaceGrowthFactor: 0 };

/** Flags the operator gave Node on the command line or in NODE_OPTIONS win over ours. */
function givenByOperator(flag: string): boolean {
  const given = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? "").split(/\s+/)];
  const spellings = [flag, flag.replace(/-/g, "_")];
  return given.some((arg) => spellings.some((s) => arg === `--${s}` || arg.startsWith(`--${s}=`)));
}

/** Applies the settings to this process's V8 (once per process is enough; repeating is harmless). */
export function applyHeapSettings(s: HeapSettings): string[] {
  const applied: string[] = [];
  if (s.growingPercent > 0 && !givenByOperator("heap-growing-percent")) applied.push(`--heap-growing-percent=${s.growingPercent}`);
  if (s.semiSpaceGrowthFactor > 0 && !givenByOperator("semi-space-growth-factor") && !givenByOperator("max-semi-space-size")) {
    applied.push(`--semi-space-growth-factor=${s.semiSpaceGrowthFactor}`);
  }
  for (const flag of applied) setFlagsFromString(flag);
  return applied;
}
