// Run in a child process (test/unit/stdout-log.test.ts): logs to standard output as the service
// does, in the way argv[2] names, and reports on standard error (standard output is the log).
//   idle   one line, then 3 s of nothing: the line must show before the process ends
//   exit   argv[3] lines at once, then process.exit(0): every line must be written
//   stuck  lines for 1.5 s to an output nobody reads (bounded at 256 KiB here): the event loop
//          keeps turning, the lines beyond the bound are counted as dropped
import { monitorEventLoopDelay } from "node:perf_hooks";
import { Registry } from "prom-client";
import { createLogger } from "../../src/lib/logger.js";
import { createLogOutput } from "../../src/lib/stdout-log.js";
import { loggingMetrics } from "../../src/metrics/logging.js";

const mode = process.argv[2];
const report = (o: object) => process.stderr.write(`REPORT ${JSON.stringify(o)}\n`);

if (mode === "idle") {
  createLogger().info({ seq: 1 }, "one line");
  report({ loggedAt: Date.now() });
  setTimeout(() => undefined, 3_000);
} else if (mode === "exit") {
  const log = createLogger();
  const n = Number(process.argv[3]);
  for (let seq = 1; seq <= n; seq++) log.info({ seq }, "line");
  process.exit(0);
} else if (mode === "stuck") {
  const output = createLogOutput(1, 256 * 1024);
  const log = createLogger({ destination: output.stream });
  const registry = new Registry();
  loggingMetrics(registry, output.dropped);
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  let seq = 0;
  const until = Date.now() + 1_500;
  await new Promise<void>((resolve) => {
    const step = () => {
      log.info({ seq: ++seq, pad: "x".repeat(200) }, "line");
      if (Date.now() < until) setImmediate(step);
      else resolve();
    };
    step();
  });
  delay.disable();
  const metric = (await registry.getSingleMetric("ars_log_lines_dropped_total")!.get()).values[0]?.value ?? 0;
  report({ logged: seq, dropped: output.dropped(), metric, maxDelayMs: delay.max / 1e6 });
} else {
  throw new Error(`unknown mode ${mode}`);
}
