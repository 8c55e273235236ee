// A delivery worker of the dispatcher bench: the built server's `startWorker` (the `worker` role:
// the engine alone, no HTTP) in its own process, configured like the product server (logs at the
// default level: a line per delivery attempt). Options
// arrive as JSON in BENCH_SERVER_OPTIONS; it reports when its dispatcher has started.
import { runAsChild, serverOptions } from "../lib/child-side.mjs";
import { loadWorker } from "../lib/pkg.mjs";

const { startWorker } = await loadWorker();
const worker = await startWorker({
  // metrics on, as in production (the default), on a free port: several workers run at once
  metricsPort: 0,
  ...serverOptions(),
});
runAsChild({ startedAt: performance.timeOrigin + performance.now() }, () => worker.close(), { hardExitMs: 20_000 });
