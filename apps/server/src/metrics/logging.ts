// Log lines the process could not write: standard output was not drained and the lines waiting
// for it reached their bound (lib/stdout-log.ts). Read when scraped.
import { Counter, type Registry } from "prom-client";
import { droppedLogLines } from "../lib/stdout-log.js";

export function loggingMetrics(registry: Registry, dropped: () => number = droppedLogLines): void {
  let seen = 0;
  new Counter({
    name: "ars_log_lines_dropped_total",
    help: "Log lines dropped because standard output was not being read (a stuck log shipper or pipe) while 16 MiB of lines already waited for it; the process keeps serving meanwhile.",
    registers: [registry],
    collect() {
      const now = dropped();
      if (now > seen) this.inc(now - seen);
      seen = now;
    },
  });
}
