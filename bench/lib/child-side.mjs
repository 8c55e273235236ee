// The child's side of bench/lib/children.mjs, shared by the server processes (product, worker):
// the options from BENCH_SERVER_OPTIONS, memory on request, and a clean stop.
import { readFileSync } from "node:fs";
import { getHeapSpaceStatistics } from "node:v8";

/** BENCH_SERVER_OPTIONS (JSON) with `extraCaFile` read into `extraCa`. */
export function serverOptions() {
  const { extraCaFile, ...rest } = JSON.parse(process.env.BENCH_SERVER_OPTIONS ?? "{}");
  return { ...rest, ...(extraCaFile && { extraCa: readFileSync(extraCaFile, "utf8") }) };
}

/**
 * Reports readiness, answers the bench's memory questions, and stops with `close` on a signal or
 * when the parent goes away: a clean exit (so --cpu-prof writes its profile), or a hard one after
 * `hardExitMs`.
 */
export function runAsChild(ready, close, { hardExitMs = 10_000 } = {}) {
  process.send?.({ ready: true, pid: process.pid, ...ready });
  // the bench asks for the heap split when it sees a new RSS peak
  process.on("message", (m) => {
    if (m?.type === "mem") {
      const young = getHeapSpaceStatistics().find((x) => x.space_name === "new_space");
      process.send({ type: "mem", seq: m.seq, ...process.memoryUsage(), newSpace: young?.space_size ?? NaN });
    }
  });
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    const hard = setTimeout(() => process.exit(1), hardExitMs);
    hard.unref();
    close().finally(() => process.exit(0));
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
  process.on("disconnect", stop);
}
