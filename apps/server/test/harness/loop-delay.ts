// Event-loop delay of this process's main thread while `during` runs, beside the same measure on
// a worker thread that does nothing. A loop blocked by our code (a spin that never awaits) delays
// the main thread only; a machine short of CPU (other tests, other work) delays both. So a test
// can hold our code to a bound, on any machine: main ≤ bound + what the idle thread saw.
import { monitorEventLoopDelay } from "node:perf_hooks";
import { Worker } from "node:worker_threads";

export interface LoopDelay {
  p99Ms: number;
  maxMs: number;
}

const REFERENCE = `
const { parentPort } = require("node:worker_threads");
const { monitorEventLoopDelay } = require("node:perf_hooks");
const h = monitorEventLoopDelay({ resolution: 10 });
h.enable();
// something to keep the loop turning, as the main thread's timers do
const tick = setInterval(() => {}, 5);
parentPort.on("message", () => {
  h.disable();
  clearInterval(tick);
  parentPort.postMessage({ p99Ms: h.percentile(99) / 1e6, maxMs: h.max / 1e6 });
});
parentPort.postMessage("ready");
`;

export async function measureLoopDelay(during: () => Promise<void>): Promise<{ main: LoopDelay; reference: LoopDelay }> {
  const worker = new Worker(REFERENCE, { eval: true });
  await new Promise<void>((resolve) => worker.once("message", () => resolve()));
  const main = monitorEventLoopDelay({ resolution: 10 });
  main.enable();
  try {
    await during();
  } finally {
    main.disable();
  }
  const reference = await new Promise<LoopDelay>((resolve) => {
    worker.once("message", (m: LoopDelay) => resolve(m));
    worker.postMessage("stop");
  });
  await worker.terminate();
  return { main: { p99Ms: main.percentile(99) / 1e6, maxMs: main.max / 1e6 }, reference };
}
