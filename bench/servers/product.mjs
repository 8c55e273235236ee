// The product server, from the built code (apps/server/dist), in its own process so its RSS can
// be read and it does not share an event loop with the load generator. Configured as users run
// it: the default rate limit counting every request (the bench spreads its load over many tokens,
// so it measures the counting, not refusals), metrics, partitions, retention and the heap sizing
// of heap-defaults.ts as `serve` has them; response validation off (production's default); logs at
// the default level (`info`: a line per request), to a file (lib/children.mjs). Options
// arrive as JSON in BENCH_SERVER_OPTIONS; the URL goes back over IPC.
import { runAsChild, serverOptions } from "../lib/child-side.mjs";
import { loadServer } from "../lib/pkg.mjs";

const server = await loadServer();
const running = await server.startServer({
  port: 0,
  host: "127.0.0.1",
  validateResponses: false,
  dispatcher: false,
  // metrics on, as in production (the default), on a free port
  metricsPort: 0,
  ...serverOptions(),
});
runAsChild({ url: running.url }, () => running.close());
