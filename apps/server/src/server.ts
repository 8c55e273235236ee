import { once } from "node:events";
import { createServer, type Server } from "node:http";
import { buildApp } from "./app.js";
import { createDeps, type Deps } from "./deps.js";
import { loadContract } from "./contract/contract.js";
import { answerClientError } from "./http/problem.js";
import { DOCS_DIR, SPEC_PATH } from "./lib/paths.js";
import { boundPort } from "./lib/bound-port.js";
import { applyV8Flags, logV8Flags } from "./v8-flags.js";
import { databaseKind, resolveStartOptions, type StartServerOptions } from "./start-options.js";
import { MAX_HEADER_BYTES } from "./config.js";

export type { StartServerOptions } from "./start-options.js";

export interface RunningServer {
  url: string;
  port: number;
  deps: Deps;
  db: Deps["db"];
  services: Deps["services"];
  /** The in-process delivery engine: for every endpoint, or with `dispatcher: false` only for the listener streams held here. */
  dispatcher: Deps["dispatcher"];
  close(): Promise<void>;
}

/**
 * Starts the API (and the delivery engine unless `dispatcher: false`). Options override the
 * environment's configuration; tests pass `port: 0` and `inMemory: true`.
 */
export async function startServer(opts: StartServerOptions = {}): Promise<RunningServer> {
  const { config, overrides } = resolveStartOptions(opts);
  const contract = loadContract(SPEC_PATH);
  const v8Flags = applyV8Flags(config.heap, databaseKind(config, overrides));
  const deps = await createDeps(config, overrides);
  let server: Server | undefined;
  try {
    logV8Flags(deps.logger, v8Flags);
    const app = buildApp({
      db: deps.db,
      services: deps.services,
      secretBox: deps.secretBox,
      contract,
      logger: deps.logger,
      docsDir: DOCS_DIR,
      validateResponses: config.validateResponses,
      bodyLimitBytes: config.bodyLimitBytes,
      rateLimitPerMinute: config.rateLimitPerMinute,
      requestDurations: deps.metrics?.requests,
      portal: { frameAncestors: config.portalFrameAncestors, publicUrl: config.publicUrl },
      portalObserver: deps.metrics?.portal,
      rateLimitObserver: deps.metrics?.rateLimit,
    });
    // Partitions for today and the days ahead exist before the first request or delivery.
    await deps.housekeeper.start();
    const limits = config.httpLimits;
    server = createServer(
      {
        maxHeaderSize: MAX_HEADER_BYTES,
        headersTimeout: limits.headersTimeoutMs,
        requestTimeout: limits.requestTimeoutMs,
        // how often the two timeouts are enforced (Node's default, 30 s, would stretch them)
        connectionsCheckingInterval: Math.max(25, Math.min(1_000, Math.floor(Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs) / 4))),
      },
      app,
    );
    server.keepAliveTimeout = limits.keepAliveTimeoutMs;
    server.maxConnections = limits.maxConnections;
    server.on("clientError", answerClientError);
    // what an operator sees of clients the limits cut off (nothing of the request is logged)
    server.on("clientError", (err: Error & { code?: string }) => {
      if (err.code === "ERR_HTTP_REQUEST_TIMEOUT") deps.logger.info({ code: err.code }, "client cut off: the request did not arrive in time");
    });
    server.on("drop", () => deps.logger.warn({ max_connections: limits.maxConnections }, "connection refused: too many open connections"));
    await listen(server, config.port, config.host);
    const port = boundPort(server.address());
    const host = config.host === "0.0.0.0" ? "127.0.0.1" : config.host;
    deps.dispatcher.start();
    await deps.listeners.start();
    return running(server, deps, `http://${host.includes(":") ? `[${host}]` : host}:${port}`, port);
  } catch (err) {
    // Nothing may outlive a failed start: the port, the pools, the LISTEN client, the embedded lock.
    if (server?.listening) {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server!.close(() => resolve()));
    }
    await deps.close().catch((closeErr: unknown) => deps.logger.warn({ err: String(closeErr) }, "releasing what a failed start-up opened failed"));
    throw err;
  }
}

async function listen(server: Server, port: number, host: string): Promise<void> {
  server.listen(port, host);
  try {
    await once(server, "listening");
  } catch (err) {
    throw new Error(`the API cannot listen on ${host}:${port} (PORT, ARS_HOST): ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
}

function running(server: Server, deps: Deps, url: string, port: number): RunningServer {
  let closing: Promise<void> | undefined;
  return {
    url,
    port,
    deps,
    db: deps.db,
    services: deps.services,
    dispatcher: deps.dispatcher,
    /**
     * Stops accepting and lets in-flight requests finish while the dispatcher finishes its
     * in-flight attempts, then closes the database.
     */
    close() {
      closing ??= (async () => {
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeIdleConnections();
        // Connections kept alive after their last response would hold close() open for up to the
        // keep-alive timeout; in-flight requests get a grace period, then every socket is closed.
        const grace = setInterval(() => server.closeIdleConnections(), 250);
        const force = setTimeout(() => server.closeAllConnections(), 10_000);
        // Streams never end by themselves: the listeners end theirs first, so the server can close.
        await Promise.all([closed, deps.listeners.stop(), deps.dispatcher.stop()]).finally(() => {
          clearInterval(grace);
          clearTimeout(force);
        });
        await deps.close();
      })();
      return closing;
    },
  };
}
