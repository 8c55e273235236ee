import { once } from "node:events";
import { createServer, type Server } from "node:http";
import { buildApp } from "./app.js";
import { createDeps, type Deps } from "./deps.js";
import { loadOperations } from "./http/operations.js";
import { answerClientError } from "./http/problem.js";
import { internOneByteNames } from "./lib/one-byte-names.js";
import { DOCS_DIR, SPEC_PATH } from "./lib/paths.js";
import { boundPort } from "./lib/bound-port.js";
import { resolveStartOptions, type StartServerOptions } from "./start-options.js";

export type { StartServerOptions } from "./start-options.js";

export interface RunningServer {
  url: string;
  port: number;
  deps: Deps;
  db: Deps["db"];
  services: Deps["services"];
  /** The in-process delivery engine; null with `dispatcher: false`. */
  dispatcher: Deps["dispatcher"];
  close(): Promise<void>;
}

/**
 * Starts the API (and the delivery engine unless `dispatcher: false`). Options override the
 * environment's configuration; tests pass `port: 0` and `inMemory: true`.
 */
export async function startServer(opts: StartServerOptions = {}): Promise<RunningServer> {
  const { config, overrides } = resolveStartOptions(opts);
  internOneByteNames(SPEC_PATH);
  const deps = await createDeps(config, overrides);
  const app = buildApp({
    db: deps.db,
    services: deps.services,
    secretBox: deps.secretBox,
    operations: loadOperations(SPEC_PATH),
    logger: deps.logger,
    specPath: SPEC_PATH,
    docsDir: DOCS_DIR,
    validateResponses: config.validateResponses,
    bodyLimitBytes: config.bodyLimitBytes,
    rateLimitPerMinute: config.rateLimitPerMinute,
    requestDurations: deps.metrics?.requests,
  });
  // Partitions for today and the days ahead exist before the first request or delivery.
  await deps.housekeeper.start();
  const server: Server = createServer(app);
  // Idle keep-alive connections outlive the clients' and load balancers' own idle timeouts
  // (typically 4–60 s), so a client never reuses a socket the server is closing (ECONNRESET).
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  server.on("clientError", answerClientError);
  server.listen(config.port, config.host);
  await once(server, "listening");
  const port = boundPort(server.address());
  const host = config.host === "0.0.0.0" ? "127.0.0.1" : config.host;
  deps.dispatcher?.start();
  await deps.listeners.start();
  let closing: Promise<void> | undefined;
  return {
    url: `http://${host.includes(":") ? `[${host}]` : host}:${port}`,
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
        await Promise.all([closed, deps.listeners.stop(), deps.dispatcher?.stop()]).finally(() => {
          clearInterval(grace);
          clearTimeout(force);
        });
        await deps.close();
      })();
      return closing;
    },
  };
}
