// One registry per process, built by the composition root and handed to whatever records into it
// (the HTTP middleware, the engine's observer, the scrape-time database gauges). Nothing here is a
// module-level global: two servers in one process (tests) each have their own.
import { collectDefaultMetrics, Gauge, Registry } from "prom-client";
import type { Database } from "../db/client.js";
import type { Clock } from "../clock/clock.js";
import type { DeliveryObserver } from "../delivery/observer.js";
import type { ListenerObserver } from "../delivery/transports/listener.js";
import type { Logger } from "../lib/logger.js";
import { databaseGauges } from "./database.js";
import { deliveryMetrics } from "./delivery.js";
import { engineSlotGauges, type EngineSlotGauges } from "./engine-slots.js";
import { housekeepingMetrics, type HousekeepingObserver } from "./housekeeping.js";
import { requestDurations, type RequestDurations } from "./http-requests.js";
import { listenerStreamMetrics } from "./listener-streams.js";
import { loggingMetrics } from "./logging.js";
import { portalMetrics, type PortalObserver } from "./portal.js";
import { rateLimitMetrics, type RateLimitObserver } from "./rate-limit.js";

export interface Metrics {
  registry: Registry;
  /** the API's request durations (recorded by the HTTP middleware of the `serve` role) */
  requests: RequestDurations;
  /** what the delivery engine reports */
  delivery: DeliveryObserver;
  /** what the webhook-listener transport reports of its streams */
  listeners: ListenerObserver;
  /** what the housekeeping loop reports */
  housekeeping: HousekeepingObserver;
  /** what the delivery engine holds in memory, once the process has one */
  engine: EngineSlotGauges;
  /** the webhook portal's links and sessions (recorded by the HTTP layer) */
  portal: PortalObserver;
  /** the shared rate limit's statements (recorded by the HTTP layer) */
  rateLimit: RateLimitObserver;
}

export interface MetricsOptions {
  /** where the scrape-time gauges read the queue, and whose pool they report */
  db: Database;
  /** the engine's own pool, when it has one */
  engineDb: Database | null;
  /** the pool of the deliveries' and events' list pages, when it has one */
  listReads?: Pick<Database, "poolStats" | "connectionRetries"> | null | undefined;
  clock: Clock;
  /** This host's wall clock minus the database's, at the clock's last reading (clock/database-clock.ts). */
  hostClockSkewMs: () => number;
  logger: Logger;
}

export function createMetrics({ db, engineDb, listReads, clock, hostClockSkewMs, logger }: MetricsOptions): Metrics {
  const registry = new Registry();
  new Gauge({
    name: "ars_host_clock_skew_seconds",
    help: "This host's wall clock minus the database's, at the last reading. Nothing is judged by the host's clock (leases, retries and retention run on the database's); a large value means its NTP is broken.",
    registers: [registry],
    collect() {
      this.set(hostClockSkewMs() / 1000);
    },
  });
  // process memory, CPU, event loop lag, GC, handles: under their standard names (process_*,
  // nodejs_*), which every Node.js dashboard and alert already knows
  collectDefaultMetrics({ register: registry });
  databaseGauges(registry, { db, engineDb, listReads, clock, logger });
  loggingMetrics(registry);
  return {
    registry,
    requests: requestDurations(registry),
    delivery: deliveryMetrics(registry),
    listeners: listenerStreamMetrics(registry),
    housekeeping: housekeepingMetrics(registry),
    engine: engineSlotGauges(registry),
    portal: portalMetrics(registry, db, logger),
    rateLimit: rateLimitMetrics(registry),
  };
}
