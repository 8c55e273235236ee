import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import type { Config } from "./config.js";
import { openDatabase, openGenericReads, type Database } from "./db/client.js";
import { migrate } from "./db/migrate.js";
import { openReadReplica, type ReadReplica } from "./db/read-replica.js";
import type { Clock } from "./clock/clock.js";
import { databaseClock } from "./clock/database-clock.js";
import { createDispatcher, type Dispatcher } from "./delivery/dispatcher.js";
import { createEndpointChanges, type EndpointChanges } from "./delivery/endpoint-changes.js";
import { createQueueSignal, type QueueSignal } from "./delivery/queue-signal.js";
import { createSender, type Sender } from "./delivery/sender.js";
import { createListenerTransport, type ListenerTransport } from "./delivery/transports/listener.js";
import { createHousekeeper, type Housekeeper } from "./housekeeping/housekeeper.js";
import { createLogger, type Logger } from "./lib/logger.js";
import { reportNotices } from "./delivery/notices.js";
import { noObserver } from "./delivery/observer.js";
import { retention } from "./domain/retention.js";
import { createTeardown } from "./lib/teardown.js";
import { startMetricsListener, type MetricsListener } from "./metrics/listener.js";
import { createMetrics, type Metrics } from "./metrics/registry.js";
import { createSecretBox, loadEncryptionKey, type SecretBox } from "./lib/secret-box.js";
import { createAddressPolicy, type AddressPolicy } from "./net/ip-policy.js";
import { createDnsResolver, staticResolver, type Resolver } from "./net/resolver.js";
import { createServices, type Services } from "./services/index.js";

/** Replaceable pieces, for tests and local development (never needed in production). */
export interface DepsOverrides {
  logger?: Logger;
  resolver?: Resolver;
  /** Extra CA (PEM) trusted for receivers. */
  extraCa?: string | Buffer;
  /** Apply migrations at start (always on the embedded database). */
  migrate?: boolean;
  /**
   * An open, migrated database to use instead of opening one from the configuration (tests
   * restore a PGlite snapshot this way). The caller keeps ownership: close() leaves it open.
   */
  database?: Database;
  /**
   * The one clock, given the database's (tests wrap it in one they can move forward to skip
   * waits); the database's clock otherwise (clock/database-clock.ts).
   */
  clock?: (database: Clock) => Clock;
  /** Whether this process answers the API's list pages (default true; the worker role and the CLI do not): only then has it a pool for them. */
  servesLists?: boolean;
}

export interface Deps {
  config: Config;
  db: Database;
  logger: Logger;
  secretBox: SecretBox;
  resolver: Resolver;
  addressPolicy: AddressPolicy;
  extraCa: string | Buffer | undefined;
  signal: QueueSignal;
  /** Endpoints updated, deleted or rotated, told to every process (the engine drops what it cached of them). */
  endpointChanges: EndpointChanges;
  services: Services;
  /** The only way out to receivers: resolve-then-pin, address policy, TLS, timeouts, caps. */
  sender: Sender;
  clock: Clock;
  /**
   * The delivery engine (started by the process role, not here): for every endpoint when
   * `config.dispatcher` is on (scope "all"); otherwise only for the webhook listeners whose
   * streams this process holds (scope "listeners": an API process without a dispatcher still
   * sends down its streams, and asks the database nothing while it holds none).
   */
  dispatcher: Dispatcher;
  /** Partitions, retention and expired keys (started by the process role, serve and worker alike). */
  housekeeper: Housekeeper;
  /** The webhook listener streams of this process (started by the API role, which holds them). */
  listeners: ListenerTransport;
  /** This process's metrics and their listener, unless `config.metricsPort` is null. */
  metrics: (Metrics & { listener: MetricsListener }) | null;
  /**
   * Stops housekeeping, the listener streams and the dispatcher (in-flight attempts finish),
   * then closes what start-up opened, last opened first: metrics listener, engine pool, sender,
   * LISTEN subscription, replica, database (and its lock). Once; later calls share the first.
   */
  close(): Promise<void>;
}

/** A resolver that answers configured names itself and asks DNS for the rest. */
function withStaticHosts(hosts: Record<string, string[]>, fallback: Resolver): Resolver {
  if (!Object.keys(hosts).length) return fallback;
  const fixed = staticResolver(hosts);
  return (name) => (hosts[name.toLowerCase().replace(/\.$/, "")] ? fixed(name) : fallback(name));
}

/** The lists' replica; a replica that cannot answer hands the read to the primary, logged at most every 30 s. */
function listReplica(url: string, primary: Database, logger: Logger): ReadReplica {
  let warnedAt = 0;
  return openReadReplica(url, primary, {
    onFallback(err) {
      if (Date.now() - warnedAt < 30_000) return;
      warnedAt = Date.now();
      logger.warn({ err: String(err) }, "read replica unavailable: list reads go to the primary meanwhile");
    },
    onFirstConnect: () => logger.info({ replica: new URL(url).host }, "question-set and coding-evaluation lists read from the replica (DATABASE_READ_URL)"),
  });
}

/** Connections at most for the deliveries' and events' list pages (as many as the engine's pool by default). */
const PARTITIONED_READS_POOL_SIZE = 4;

/** The composition root: everything a process role needs, built once. */
export async function createDeps(config: Config, o: DepsOverrides = {}): Promise<Deps> {
  const logger = o.logger ?? createLogger({ level: config.logLevel });
  const embedded = !config.databaseUrl;
  const key = config.inMemory && !config.encryptionKey
    ? randomBytes(32)
    : loadEncryptionKey({ envValue: config.encryptionKey, dataDir: embedded ? config.dataDir : undefined });
  // Everything opened below is registered here as it opens: a failure half-way releases what is
  // open (the embedded lock included), and close() releases it all, last opened first.
  const opened = createTeardown();
  try {
    const owned = !o.database;
    const db = o.database ?? (await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, inMemory: config.inMemory }));
    if (owned) opened.add(() => db.close());
    if (owned && (embedded || o.migrate)) await migrate(db);
    const replica = config.databaseReadUrl && db.kind === "postgres" ? listReplica(config.databaseReadUrl, db, logger) : undefined;
    if (replica) opened.add(() => replica.close());
    const dbClock = await databaseClock(db, {
      onSyncError: (err) => logger.warn({ err: String(err) }, "reading the database's clock failed; the clock keeps counting from the last reading"),
    });
    opened.add(() => dbClock.close());
    // Judging time by this host's clock would let hosts disagree on leases and retention: say so.
    if (Math.abs(dbClock.hostSkewMs()) > 1_000) logger.warn({ host_clock_skew_ms: Math.round(dbClock.hostSkewMs()) }, "this host's clock differs from the database's; the service judges time by the database's");
    const clock = o.clock ? o.clock(dbClock) : dbClock;
    const kept = retention(config.retentionDays);
    const signal = await createQueueSignal(db, (err) => logger.warn({ err: String(err) }, "delivery notify failed"));
    opened.add(() => signal.close());
    const endpointChanges = await createEndpointChanges(db, (err) => logger.warn({ err: String(err) }, "endpoint change notify failed"));
    opened.add(() => endpointChanges.close());
    const secretBox = createSecretBox(key);
    // One resolver for the API's URL checks and the engine's connections: one deadline, one hosts file.
    const resolver = o.resolver ?? withStaticHosts(config.staticHosts, createDnsResolver({ timeoutMs: config.dnsTimeoutMs }));
    const addressPolicy = createAddressPolicy({ allowCidrs: config.allowCidrs });
    const extraCa = o.extraCa ?? (config.extraCaFile ? readFileSync(config.extraCaFile) : undefined);
    const d = config.delivery;
    const sender = createSender({
      resolver,
      addressPolicy,
      ca: extraCa,
      connectTimeoutMs: d.connectTimeoutMs,
      totalTimeoutMs: d.totalTimeoutMs,
      maxResponseBytes: d.maxResponseBytes,
      userAgent: d.userAgent,
    });
    opened.add(() => sender.close());
    // On PostgreSQL the engine has a pool of its own: claims and records never queue behind API
    // requests, nor API requests behind them. PGlite has one connection whatever we do.
    const engineDb = config.dispatcher && db.kind === "postgres" && config.databaseUrl
      ? await openDatabase({ databaseUrl: config.databaseUrl, poolSize: d.poolSize, genericPlans: true })
      : null;
    if (engineDb) opened.add(() => engineDb.close());
    // The day-partitioned lists (deliveries, events) read on connections that keep their plans (db/postgres.ts)
    const partitionedReads = o.servesLists !== false && db.kind === "postgres" && config.databaseUrl ? openGenericReads(config.databaseUrl, PARTITIONED_READS_POOL_SIZE) : undefined;
    if (partitionedReads) opened.add(() => partitionedReads.close());
    const metricsPort = config.metricsPort;
    const metrics = metricsPort === null ? null : createMetrics({ db, engineDb, listReads: partitionedReads, clock, hostClockSkewMs: () => dbClock.hostSkewMs(), logger });
    const listener = metrics && metricsPort !== null
      ? await startMetricsListener({ registry: metrics.registry, host: config.metricsHost, port: metricsPort, logger })
      : null;
    if (listener) opened.add(() => listener.close());
    const listeners = createListenerTransport({
      db, logger, clock, signal, config: d, observe: metrics?.listeners,
      graceMs: config.listenerGraceMs, leaseMs: config.listenerLeaseMs, keepAliveMs: config.listenerKeepAliveMs,
    });
    const services = createServices({
      db,
      replica,
      partitionedReads,
      secretBox,
      urlCheck: { resolver, addressPolicy },
      rotationGraceMs: config.delivery.rotationGraceMs,
      onQueued: () => signal.notify(),
      onNotified: (notices) => reportNotices(notices, metrics?.delivery ?? noObserver, logger),
      onEndpointChanged: (id) => endpointChanges.publish(id),
      listenerStreams: listeners,
      now: () => clock.now(),
      retention: kept,
    });
    const dispatcher = createDispatcher({
      db: engineDb ?? db, logger, sender, listeners, scope: config.dispatcher ? "all" : "listeners",
      secretBox, signal, endpointChanges, config: d, clock, observe: metrics?.delivery,
    });
    metrics?.engine.watch(dispatcher);
    opened.add(() => dispatcher.stop());
    // before the dispatcher: in-flight attempts on a listener's stream end with the stream
    opened.add(() => listeners.stop());
    const housekeeper = createHousekeeper({
      db, retention: kept, clock, logger, intervalMs: config.housekeepingIntervalMs,
      onRun: metrics?.housekeeping.run, onFailure: metrics?.housekeeping.failed,
    });
    opened.add(() => housekeeper.stop());
    let closing: Promise<void> | undefined;
    return {
      config,
      db,
      logger,
      secretBox,
      resolver,
      addressPolicy,
      extraCa,
      signal,
      endpointChanges,
      services,
      sender,
      clock,
      dispatcher,
      housekeeper,
      listeners,
      metrics: metrics && listener ? { ...metrics, listener } : null,
      close: () => (closing ??= opened.run()),
    };
  } catch (err) {
    await opened.run().catch((closeErr: unknown) => logger.warn({ err: String(closeErr) }, "releasing what a failed start-up opened failed"));
    throw err;
  }
}
