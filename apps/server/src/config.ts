import { DEFAULT_HEAP, WORKER_DEFAULT_HEAP, type HeapSettings } from "./heap-defaults.js";
import { DEFAULT_DNS_TIMEOUT_MS } from "./net/resolver.js";
import { defaultDataDir } from "./lib/paths.js";

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

/** Delay before attempt n+1 (index n); index 0 is the first, immediate attempt (docs/delivery.md#states). */
export const DEFAULT_SCHEDULE_MS: readonly number[] = Object.freeze([
  0,
  5 * SECOND,
  5 * MINUTE,
  30 * MINUTE,
  2 * HOUR,
  5 * HOUR,
  10 * HOUR,
  10 * HOUR,
]);
export const DEFAULT_JITTER = 0.2;
export const DEFAULT_MIN_BACKOFF_MS = 60 * SECOND;

/** Everything the process can be told, validated once at start-up. */
export interface Config {
  host: string;
  port: number;
  /** PostgreSQL when set; otherwise the embedded PGlite in `dataDir`. */
  databaseUrl: string | undefined;
  /**
   * A read replica of `databaseUrl` (optional): the eventually consistent lists (question sets,
   * coding evaluations, and their counts) read there; everything else stays on the primary.
   */
  databaseReadUrl: string | undefined;
  dataDir: string;
  /** Embedded database in memory (tests). */
  inMemory: boolean;
  /** base64 of 32 bytes; on the embedded database a key is created in `dataDir` when absent. */
  encryptionKey: string | undefined;
  logLevel: string;
  /** Validate every response against the contract (tests; costs ~50 µs a request). */
  validateResponses: boolean;
  /** Requests per minute per token; 0 turns rate limiting off. */
  rateLimitPerMinute: number;
  bodyLimitBytes: number;
  /** Extra CIDRs receivers may resolve to (local development and tests only). */
  allowCidrs: string[];
  /** `name=addr[,addr]` pairs answered without DNS (local development and tests only). */
  staticHosts: Record<string, string[]>;
  /** PEM file of an extra CA trusted for receivers (local development only). */
  extraCaFile: string | undefined;
  /** The longest a receiver's name may take to resolve (A and AAAA together), at endpoint creation and before a connection. */
  dnsTimeoutMs: number;
  /** Run the delivery engine inside this process. */
  dispatcher: boolean;
  /** Port of the metrics listener (`GET /metrics`); 0 asks for any free port; null: no metrics at all. */
  metricsPort: number | null;
  /** Address the metrics listener binds (loopback by default: metrics are for the operator's Prometheus, not the public). */
  metricsHost: string;
  delivery: DeliveryConfig;
  /** How long and how much the HTTP server waits for and holds a client (README "Timeouts and limits"). */
  httpLimits: HttpLimits;
  /** V8 heap sizing `serve` applies at start (heap-defaults.ts). */
  heap: HeapSettings;
  /** V8 heap sizing `worker` applies at start: the same variables, the worker's defaults. */
  workerHeap: HeapSettings;
  /** Events, deliveries and attempts are kept this many whole UTC days (README, "Retention and housekeeping"). */
  retentionDays: number;
  /** Between housekeeping runs (partitions, retention, expired idempotency keys). */
  housekeepingIntervalMs: number;
  /** A webhook listener with no stream connected for this long is deleted (its queued deliveries fail). */
  listenerGraceMs: number;
  /** A connected stream's hold on its listener, renewed by its process; a crashed process's hold lapses after this. */
  listenerLeaseMs: number;
  /** A comment on every listener stream this often, so the client and proxies see it alive (a silent stream is a dropped one). */
  listenerKeepAliveMs: number;
  /** The webhook portal's CSP `frame-ancestors` sources: who may show it in a frame (`'none'` by default). */
  portalFrameAncestors: string;
  /**
   * The origin browsers reach this server at (`https://api.example.com`), for portal links and
   * the portal's Origin check; unset: the request's own scheme and Host.
   */
  publicUrl: string | undefined;
}

export interface HttpLimits {
  /** the request line and headers must arrive within this (a client sending them a byte at a time is cut off) */
  headersTimeoutMs: number;
  /** the whole request, body included, must arrive within this */
  requestTimeoutMs: number;
  /** an idle kept-alive connection is closed after this */
  keepAliveTimeoutMs: number;
  /** open connections at once; further ones are closed as they arrive */
  maxConnections: number;
}

/** The request line plus headers may not exceed this (431 HEADERS_TOO_LARGE, as the contract documents). */
export const MAX_HEADER_BYTES = 16 * 1024;

export const DEFAULT_HTTP_LIMITS: HttpLimits = {
  headersTimeoutMs: 20_000,
  requestTimeoutMs: 60_000,
  // Idle keep-alive connections outlive the clients' and load balancers' own idle timeouts
  // (typically 4–60 s), so a client never reuses a socket the server is closing (ECONNRESET).
  keepAliveTimeoutMs: 65_000,
  maxConnections: 4_096,
};
export const DEFAULT_RETENTION_DAYS = 30;
/** The contract's keep-alive interval of a listener's stream. */
export const DEFAULT_LISTENER_KEEPALIVE_MS = 10_000;
/** Longer windows would keep more daily partitions than the planner handles comfortably. */
export const MAX_RETENTION_DAYS = 3650;
export const DEFAULT_HOUSEKEEPING_INTERVAL_MS = 3_600_000;

/** The metrics listener's port when ARS_METRICS_PORT is unset (the usual Prometheus exporter port). */
export const DEFAULT_METRICS_PORT = 9464;

export interface DeliveryConfig {
  scheduleMs: number[];
  jitter: number;
  minBackoffMs: number;
  connectTimeoutMs: number;
  totalTimeoutMs: number;
  maxResponseBytes: number;
  leaseMs: number;
  pollIntervalMs: number;
  batchSize: number;
  concurrency: number;
  perEndpointConcurrency: number;
  /** Connections of the engine's own PostgreSQL pool (claims and records never queue behind API requests). */
  poolSize: number;
  /** Outcomes are written together: at most this many per statement... */
  recordBatchSize: number;
  /** ...gathered for at most this long. */
  recordDelayMs: number;
  /**
   * After an attempt could not reach the receiver at all (refused, DNS, TLS, blocked), this
   * dispatcher claims nothing more for that endpoint for this long: a dead receiver costs a few
   * attempts a second instead of a share of the engine (its deliveries wait, due, meanwhile).
   */
  unreachableRestMs: number;
  /**
   * An attempt on the wire this long is a slow receiver's: its endpoint's rows count in the slow
   * lane, apart from the slots the other endpoints share (docs/delivery.md#slow-receivers).
   */
  slowAttemptMs: number;
  /** An endpoint still failing after this long is disabled (`failing`). */
  failingDisableAfterMs: number;
  /** How long the previous secret keeps signing after a rotation. */
  rotationGraceMs: number;
  userAgent: string;
}

export const DEFAULT_DELIVERY: DeliveryConfig = {
  scheduleMs: [...DEFAULT_SCHEDULE_MS],
  jitter: DEFAULT_JITTER,
  minBackoffMs: DEFAULT_MIN_BACKOFF_MS,
  connectTimeoutMs: 5_000,
  totalTimeoutMs: 15_000,
  maxResponseBytes: 64 * 1024,
  // Renewed every quarter of it while a row is held (docs/delivery.md#leases): how long a crashed
  // dispatcher's rows wait for another one, and twice the database pause a live one rides out.
  leaseMs: 120_000,
  pollIntervalMs: 1_000,
  batchSize: 50,
  concurrency: 64,
  perEndpointConcurrency: 8,
  poolSize: 4,
  recordBatchSize: 100,
  recordDelayMs: 2,
  unreachableRestMs: 1_000,
  // a receiver that answers at all usually does within a few hundred milliseconds
  slowAttemptMs: 1_000,
  failingDisableAfterMs: 5 * 24 * 3600_000,
  rotationGraceMs: 24 * 3600_000,
  userAgent: "AuditReviewService-Webhooks/2.0",
};

type Env = Record<string, string | undefined>;

class ConfigError extends Error {}

function int(env: Env, name: string, fallback: number, min = 0): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new ConfigError(`${name} must be an integer >= ${min}`);
  return n;
}

function intInRange(env: Env, name: string, fallback: number, min: number, max: number): number {
  const n = int(env, name, fallback, min);
  if (n > max) throw new ConfigError(`${name} must be an integer from ${min} to ${max}`);
  return n;
}

function bool(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  if (raw === "true" || raw === "1") return true;
  if (raw === "false" || raw === "0") return false;
  throw new ConfigError(`${name} must be true or false`);
}

function list(env: Env, name: string): string[] {
  return (env[name] ?? "").split(",").map((s) => s.trim()).filter(Boolean);
}

function staticHosts(env: Env): Record<string, string[]> {
  const map: Record<string, string[]> = {};
  for (const pair of (env.ARS_STATIC_HOSTS ?? "").split(";").map((s) => s.trim()).filter(Boolean)) {
    const [name, addrs] = pair.split("=");
    if (!name || !addrs) throw new ConfigError("ARS_STATIC_HOSTS must look like name=addr[,addr];name2=addr");
    map[name.toLowerCase()] = addrs.split(",").map((a) => a.trim());
  }
  return map;
}

/** ARS_METRICS_PORT: unset → the default port; `off` → no metrics; otherwise a port (0: any free one). */
function metricsPort(env: Env): number | null {
  if (env.ARS_METRICS_PORT === "off") return null;
  const port = int(env, "ARS_METRICS_PORT", DEFAULT_METRICS_PORT);
  if (port > 65535) throw new ConfigError("ARS_METRICS_PORT must be a port (0-65535) or off");
  return port;
}

// A CSP source expression that names an origin (scheme, host with an optional leading `*.`, port).
const FRAME_SOURCE = /^(?:'self'|https?:\/\/(?:\*\.)?[A-Za-z0-9.-]+(?::\d{1,5})?)$/;

/**
 * ARS_PORTAL_FRAME_ANCESTORS: the pages that may show the portal in a frame, as origins separated
 * by spaces or commas (or `'self'`); unset or `'none'`: no page may. Anything else (a path, a
 * `;` that would add a directive, a bare `*`) is refused at start-up.
 */
function frameAncestors(env: Env): string {
  const raw = (env.ARS_PORTAL_FRAME_ANCESTORS ?? "").trim();
  if (raw === "" || raw === "'none'" || raw === "none") return "'none'";
  const sources = raw.split(/[\s,]+/).filter(Boolean).map((s) => (s === "self" ? "'self'" : s.replace(/\/$/, "")));
  const bad = sources.filter((s) => !FRAME_SOURCE.test(s));
  if (bad.length) throw new ConfigError(`ARS_PORTAL_FRAME_ANCESTORS must list origins such as https://app.example.com (or 'self'), separated by spaces; not ${bad.join(" ")}`);
  return sources.join(" ");
}

/** ARS_PUBLIC_URL: an http(s) origin, kept without a trailing slash. */
function publicUrl(env: Env): string | undefined {
  const raw = env.ARS_PUBLIC_URL?.trim();
  if (!raw) return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError("ARS_PUBLIC_URL must be a URL such as https://api.example.com");
  }
  if ((url.protocol !== "https:" && url.protocol !== "http:") || url.pathname !== "/" || url.search || url.hash || url.username) {
    throw new ConfigError("ARS_PUBLIC_URL must be an http(s) origin without a path, such as https://api.example.com");
  }
  return url.origin;
}

export function loadConfig(env: Env = process.env): Config {
  const schedule = list(env, "ARS_RETRY_SCHEDULE_MS").map(Number);
  if (schedule.some((n) => !Number.isInteger(n) || n < 0)) throw new ConfigError("ARS_RETRY_SCHEDULE_MS must be a comma list of integers");
  const databaseUrl = env.DATABASE_URL || undefined;
  const port = int(env, "PORT", 3000);
  const metrics = metricsPort(env);
  if (metrics && metrics === port) throw new ConfigError("ARS_METRICS_PORT must differ from PORT: metrics are never served on the public API's port");
  if (databaseUrl && !/^postgres(ql)?:\/\//.test(databaseUrl)) throw new ConfigError("DATABASE_URL must be a postgresql:// URL");
  const databaseReadUrl = env.DATABASE_READ_URL || undefined;
  if (databaseReadUrl && !/^postgres(ql)?:\/\//.test(databaseReadUrl)) throw new ConfigError("DATABASE_READ_URL must be a postgresql:// URL");
  if (databaseReadUrl && !databaseUrl) throw new ConfigError("DATABASE_READ_URL needs DATABASE_URL (a replica of the embedded database does not exist)");
  return {
    host: env.ARS_HOST ?? "127.0.0.1",
    port,
    databaseUrl,
    databaseReadUrl,
    dataDir: defaultDataDir(env),
    inMemory: false,
    encryptionKey: env.ARS_ENCRYPTION_KEY || undefined,
    logLevel: env.ARS_LOG_LEVEL ?? "info",
    validateResponses: bool(env, "ARS_VALIDATE_RESPONSES", false),
    rateLimitPerMinute: int(env, "ARS_RATE_LIMIT_PER_MINUTE", 1200),
    bodyLimitBytes: int(env, "ARS_BODY_LIMIT_BYTES", 1024 * 1024, 1),
    allowCidrs: list(env, "ARS_ALLOW_PRIVATE_CIDRS"),
    staticHosts: staticHosts(env),
    extraCaFile: env.ARS_EXTRA_CA_FILE || undefined,
    dnsTimeoutMs: intInRange(env, "ARS_DNS_TIMEOUT_MS", DEFAULT_DNS_TIMEOUT_MS, 1, 60_000),
    dispatcher: bool(env, "ARS_DISPATCHER", true),
    heap: heapSettings(env, DEFAULT_HEAP),
    workerHeap: heapSettings(env, WORKER_DEFAULT_HEAP),
    listenerGraceMs: int(env, "ARS_LISTENER_GRACE_MS", 60_000, 1),
    listenerLeaseMs: int(env, "ARS_LISTENER_LEASE_MS", 15_000, 1),
    listenerKeepAliveMs: int(env, "ARS_LISTENER_KEEPALIVE_MS", DEFAULT_LISTENER_KEEPALIVE_MS, 100),
    portalFrameAncestors: frameAncestors(env),
    publicUrl: publicUrl(env),
    metricsPort: metrics,
    metricsHost: env.ARS_METRICS_HOST || "127.0.0.1",
    delivery: {
      ...DEFAULT_DELIVERY,
      scheduleMs: schedule.length ? schedule : [...DEFAULT_SCHEDULE_MS],
      leaseMs: int(env, "ARS_DELIVERY_LEASE_MS", DEFAULT_DELIVERY.leaseMs, 1),
      pollIntervalMs: int(env, "ARS_DELIVERY_POLL_MS", DEFAULT_DELIVERY.pollIntervalMs, 1),
      concurrency: int(env, "ARS_DELIVERY_CONCURRENCY", DEFAULT_DELIVERY.concurrency, 1),
      perEndpointConcurrency: int(env, "ARS_DELIVERY_PER_ENDPOINT_CONCURRENCY", DEFAULT_DELIVERY.perEndpointConcurrency, 1),
      poolSize: int(env, "ARS_DELIVERY_POOL_SIZE", DEFAULT_DELIVERY.poolSize, 1),
      batchSize: int(env, "ARS_DELIVERY_BATCH_SIZE", DEFAULT_DELIVERY.batchSize, 1),
    },
    httpLimits: {
      headersTimeoutMs: int(env, "ARS_HTTP_HEADERS_TIMEOUT_MS", DEFAULT_HTTP_LIMITS.headersTimeoutMs, 1),
      requestTimeoutMs: int(env, "ARS_HTTP_REQUEST_TIMEOUT_MS", DEFAULT_HTTP_LIMITS.requestTimeoutMs, 1),
      keepAliveTimeoutMs: int(env, "ARS_HTTP_KEEP_ALIVE_TIMEOUT_MS", DEFAULT_HTTP_LIMITS.keepAliveTimeoutMs, 1),
      maxConnections: int(env, "ARS_HTTP_MAX_CONNECTIONS", DEFAULT_HTTP_LIMITS.maxConnections, 1),
    },
    retentionDays: intInRange(env, "ARS_RETENTION_DAYS", DEFAULT_RETENTION_DAYS, 1, MAX_RETENTION_DAYS),
    // at least a minute: a run takes locks on the busiest tables, however briefly
    housekeepingIntervalMs: intInRange(env, "ARS_HOUSEKEEPING_INTERVAL_MS", DEFAULT_HOUSEKEEPING_INTERVAL_MS, 60_000, 86_400_000),
  };
}

export { ConfigError };

/** ARS_HEAP_GROWING_PERCENT and ARS_SEMI_SPACE_GROWTH_FACTOR, each defaulting to the role's own. */
function heapSettings(env: Env, defaults: HeapSettings): HeapSettings {
  return {
    growingPercent: int(env, "ARS_HEAP_GROWING_PERCENT", defaults.growingPercent),
    semiSpaceGrowthFactor: int(env, "ARS_SEMI_SPACE_GROWTH_FACTOR", defaults.semiSpaceGrowthFactor),
  };
}
