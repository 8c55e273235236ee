// The housekeeping loop's runs, as the alerts read them (ops/prometheus/alerts.yml:
// ArsHousekeepingFailing, ArsHousekeepingStale). Only the process that did a run reports it; the
// others skipped that turn, so the fleet's view is the sum (runs, rows) or the max (last success).
import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import type { HousekeepingSummary, HousekeptTable } from "../housekeeping/housekeeper.js";

export interface HousekeepingObserver {
  run(summary: HousekeepingSummary): void;
  failed(): void;
}

const TABLES: HousekeptTable[] = ["events", "webhook_deliveries", "webhook_delivery_attempts", "idempotency_keys", "rate_limit_windows"];

export function housekeepingMetrics(registry: Registry): HousekeepingObserver {
  const registers = [registry];
  const runs = new Counter({
    name: "ars_housekeeping_runs_total",
    help: "Housekeeping runs this process did (it held the lock): outcome success or failure.",
    labelNames: ["outcome"] as const,
    registers,
  });
  const removed = new Counter({
    name: "ars_housekeeping_rows_removed_total",
    help: "Rows housekeeping removed, by table (whole day partitions past the retention window, expired keys, ended rate-limit windows).",
    labelNames: ["table"] as const,
    registers,
  });
  const lastSuccess = new Gauge({
    name: "ars_housekeeping_last_success_timestamp_seconds",
    help: "Unix time of this process's last successful housekeeping run (0 before its first).",
    registers,
  });
  const duration = new Histogram({
    name: "ars_housekeeping_duration_seconds",
    help: "Duration of successful housekeeping runs.",
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
    registers,
  });
  const kept = new Gauge({
    name: "ars_housekeeping_partitions_kept",
    help: "Partitions past the retention window that the last run kept because they still hold pending or retrying deliveries.",
    registers,
  });
  // present from the start at 0, so the first failure shows in increase()
  for (const outcome of ["success", "failure"]) runs.labels(outcome).inc(0);
  for (const table of TABLES) removed.labels(table).inc(0);
  return {
    run(s) {
      runs.labels("success").inc();
      for (const table of TABLES) removed.labels(table).inc(s.removed[table]);
      lastSuccess.set(Date.now() / 1000);
      duration.observe(s.durationMs / 1000);
      kept.set(s.partitionsKept.length);
    },
    failed: () => runs.labels("failure").inc(),
  };
}
