// The metrics listener: `GET /metrics` in Prometheus's text format, on its own port and address
// (loopback by default), never on the public API's.
import { once } from "node:events";
import { createServer } from "node:http";
import type { Registry } from "prom-client";
import { boundPort } from "../lib/bound-port.js";
import type { Logger } from "../lib/logger.js";

export interface MetricsListener {
  url: string;
  close(): Promise<void>;
}

export async function startMetricsListener({ registry, host, port, logger }: { registry: Registry; host: string; port: number; logger: Logger }): Promise<MetricsListener> {
  const server = createServer((req, res) => {
    const path = (req.url ?? "").split("?")[0];
    if (path !== "/metrics" || (req.method !== "GET" && req.method !== "HEAD")) {
      res.writeHead(404, { "content-type": "text/plain" }).end("not found: metrics are at GET /metrics\n");
      return;
    }
    registry.metrics().then(
      (text) => res.writeHead(200, { "content-type": registry.contentType }).end(req.method === "HEAD" ? undefined : text),
      (err: unknown) => {
        logger.error({ err: err instanceof Error ? err.message : String(err) }, "metrics: scrape failed");
        res.writeHead(500, { "content-type": "text/plain" }).end("scrape failed\n");
      },
    );
  });
  server.listen(port, host);
  try {
    await once(server, "listening");
  } catch (err) {
    throw new Error(`metrics listener cannot listen on ${host}:${port} (ARS_METRICS_PORT, ARS_METRICS_HOST): ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
  const bound = boundPort(server.address());
  const url = `http://${host.includes(":") ? `[${host}]` : host}:${bound}/metrics`;
  logger.info({ url }, "metrics listening");
  return {
    url,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
