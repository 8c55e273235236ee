// Gauges read from the database when Prometheus scrapes: the delivery queue (due rows, age of the
// oldest), disabled endpoints by reason, and the connection pools. Read from the rows, not from
// one process's memory, so any process answers the truth; each read is a bounded statement
// (repos/queue-stats.repo.ts). A scrape that cannot reach the database still answers, with these
// series unknown (NaN for the queue, absent for the disabled endpoints), and counts the failure.
import { Counter, Gauge, type Registry } from "prom-client";
import type { Database, PoolStats } from "../db/client.js";
import type { Clock } from "../clock/clock.js";
import type { Logger } from "../lib/logger.js";
import { DISABLED_REASONS } from "../lib/stored-values.js";
import { queueStatsRepo, type QueueStats } from "../repos/queue-stats.repo.js";

/** Due rows are counted up to this many: a scrape's cost stays bounded however deep the backlog. */
export const DUE_ROWS_CAP = 100_000;

export interface DatabaseGaugeOptions {
  db: Database;
  engineDb: Database | null;
  /** the pool of the deliveries' and events' list pages (db/postgres.ts openGenericReads) */
  listReads?: Pick<Database, "poolStats" | "connectionRetries"> | null | undefined;
  clock: Clock;
  logger: Logger;
}

export function databaseGauges(registry: Registry, { db, engineDb, listReads, clock, logger }: DatabaseGaugeOptions): void {
  const registers = [registry];
  const repo = queueStatsRepo(db);
  const errors = new Counter({
    name: "ars_metrics_database_errors_total",
    help: "Scrapes whose database reads (queue, disabled endpoints) failed; those series were left out.",
    registers,
    // read after this scrape's reads, so a failure shows in the scrape it spoiled
    async collect() {
      await Promise.all([queue(), disabledEndpoints()]);
    },
  });
  errors.inc(0);
  /** One read per scrape, whichever of its gauges asks first; a failure leaves them out and is counted once. */
  function perScrape<T>(read: () => Promise<T>): () => Promise<T | null> {
    let current: Promise<T | null> | null = null;
    return () =>
      (current ??= read()
        .catch((err: unknown) => {
          errors.inc();
          logger.warn({ err: err instanceof Error ? err.message : String(err) }, "metrics: database read failed");
          return null;
        })
        .finally(() => setImmediate(() => (current = null))));
  }
  const queue = perScrape<QueueStats>(() => repo.queue(clock.now(), DUE_ROWS_CAP));
  const disabledEndpoints = perScrape(() => repo.disabledEndpoints());

  new Gauge({
    name: "ars_delivery_queue_due_rows",
    help: `Deliveries pending or retrying whose attempt is due now (including those being attempted), counted up to ${DUE_ROWS_CAP}.`,
    registers,
    async collect() {
      const stats = await queue();
      this.set(stats ? stats.dueRows : NaN);
    },
  });
  new Gauge({
    name: "ars_delivery_queue_oldest_due_age_seconds",
    help: "How long the oldest due delivery has been due (0 when nothing is due).",
    registers,
    async collect() {
      const stats = await queue();
      if (!stats) return this.set(NaN);
      this.set(stats.oldestDueAt ? Math.max(0, (clock.now().getTime() - stats.oldestDueAt.getTime()) / 1000) : 0);
    },
  });
  new Gauge({
    name: "ars_webhook_endpoints_disabled",
    help: "Live (not deleted) webhook endpoints that are disabled, by reason: manual, gone (410), failing.",
    labelNames: ["reason"] as const,
    registers,
    async collect() {
      const counts = await disabledEndpoints();
      if (!counts) return this.reset();
      for (const reason of DISABLED_REASONS) this.labels(reason).set(counts.get(reason) ?? 0);
    },
  });

  const pools = [{ name: "main", db }, ...(engineDb ? [{ name: "engine", db: engineDb }] : []), ...(listReads ? [{ name: "lists", db: listReads }] : [])];
  const poolGauge = (name: string, help: string, pick: (s: PoolStats) => number | null) =>
    new Gauge({
      name,
      help,
      labelNames: ["pool"] as const,
      registers,
      collect() {
        for (const p of pools) {
          const value = pick(p.db.poolStats());
          if (value !== null) this.labels(p.name).set(value);
        }
      },
    });
  poolGauge("ars_db_pool_connections_max", "Connections the pool may open (main: API and scrape; engine: the delivery engine's own; lists: the deliveries' and events' list pages). The embedded database has one.", (s) => s.max);
  poolGauge("ars_db_pool_connections_in_use", "Connections checked out of the pool now (PostgreSQL pools only).", (s) => s.inUse);
  poolGauge("ars_db_pool_requests_waiting", "Queries waiting for a free connection of the pool (PostgreSQL pools only).", (s) => s.waiting);

  // kept by the pool itself (db/read-retry.ts), which has no registry: read as they stand at each scrape
  new Counter({
    name: "ars_db_connection_retries_total",
    help: "Reads run again on a fresh connection after losing theirs, by pool and how the second run ended: retried_ok, or gave_up (the caller got the error: a 503 on the API). PostgreSQL pools only.",
    labelNames: ["pool", "outcome"] as const,
    registers,
    collect() {
      this.reset();
      for (const p of pools) {
        const counts = p.db.connectionRetries?.();
        if (!counts) continue;
        this.labels(p.name, "retried_ok").inc(counts.retriedOk);
        this.labels(p.name, "gave_up").inc(counts.gaveUp);
      }
    },
  });
}
