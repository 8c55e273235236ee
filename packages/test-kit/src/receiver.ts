// A real HTTPS receiver on loopback, like svix's TestReceiver: records each request, then
// answers (a fixed status, or a pluggable handler). Used by the server's delivery tests, the
// client's tests, the CI consumer check and the bench's receiver process.
import { once } from "node:events";
import { createServer as createHttpsServer, type Server } from "node:https";
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from "node:http";
import { createServer as createTcpServer, type AddressInfo, type Socket } from "node:net";
import { createTestCa, type IssuedCert, type TestCa } from "./ca.js";

export interface RecordedRequest {
  method: string;
  /** path plus query string */
  path: string;
  headers: IncomingMessage["headers"];
  /** the body as UTF-8 text */
  body: string;
  /** the body exactly as received */
  rawBody: Buffer;
  receivedAt: Date;
  /** arrival (before the body was read) in epoch ms with sub-ms precision, comparable across processes */
  arrivedAt: number;
  /** the server-side address the client connected to */
  localAddress: string;
}

export type ReceiverHandler = (req: RecordedRequest, res: ServerResponse) => void | Promise<void>;

export interface ReceiverOptions {
  /** the CA that issues the certificate; the shared test CA by default */
  ca?: TestCa;
  /** a ready key and certificate instead (e.g. handed to a child process); `ca` is then unused */
  tls?: IssuedCert;
  hostname?: string;
  status?: number;
  handler?: ReceiverHandler;
  /** certificate names; defaults to [hostname] */
  certNames?: string[];
  /** loopback address to listen on (127.0.0.2 etc. for a destination the address policy refuses) */
  listenAddress?: string;
  /** false: keep nothing (a bench receiving millions of requests); `nextRequest` is then unavailable */
  record?: boolean;
  keepAliveTimeout?: number;
}

export interface Receiver {
  /** `https://<hostname>:<port>/hook` */
  url: string;
  /** `https://<hostname>:<port>` */
  origin: string;
  port: number;
  hostname: string;
  /** PEM of the CA that issued the certificate (undefined when `tls` was given) */
  caCert: string | undefined;
  /** every request, oldest first (empty with `record: false`) */
  requests: RecordedRequest[];
  /** TLS connections accepted so far (a blocked destination must leave this at 0) */
  readonly connections: number;
  setStatus(status: number, headers?: OutgoingHttpHeaders): void;
  setHandler(handler: ReceiverHandler | null): void;
  /** The oldest request not yet taken by nextRequest(), waiting for one if needed. */
  nextRequest(opts?: { timeoutMs?: number }): Promise<RecordedRequest>;
  close(): Promise<void>;
}

const now = (): number => performance.timeOrigin + performance.now();

export async function startReceiver({
  ca,
  tls,
  hostname = "receiver.test-hooks.dev",
  status = 200,
  handler,
  certNames,
  listenAddress = "127.0.0.1",
  record = true,
  keepAliveTimeout,
}: ReceiverOptions = {}): Promise<Receiver> {
  const issuer = tls ? undefined : (ca ?? createTestCa());
  const { key, cert } = tls ?? issuer!.issue(certNames ?? [hostname]);
  let defaultStatus = status;
  let defaultHeaders: OutgoingHttpHeaders = {};
  let currentHandler: ReceiverHandler | null = handler ?? null;
  let connections = 0;
  const requests: RecordedRequest[] = [];
  const unclaimed: RecordedRequest[] = [];
  const waiters: Array<(req: RecordedRequest) => void> = [];
  const sockets = new Set<Socket>();

  const server: Server = createHttpsServer({ key, cert, ...(keepAliveTimeout !== undefined && { keepAliveTimeout }) }, async (req, res) => {
    const arrivedAt = now();
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const rawBody = Buffer.concat(chunks);
    const recorded: RecordedRequest = {
      method: req.method ?? "",
      path: req.url ?? "",
      headers: req.headers,
      body: rawBody.toString("utf8"),
      rawBody,
      receivedAt: new Date(),
      arrivedAt,
      localAddress: req.socket.localAddress ?? "",
    };
    if (record) {
      requests.push(recorded);
      const waiter = waiters.shift();
      if (waiter) waiter(recorded);
      else unclaimed.push(recorded);
    }

    if (currentHandler) {
      await currentHandler(recorded, res);
      return;
    }
    res.writeHead(defaultStatus, { "content-type": "text/plain", ...defaultHeaders });
    res.end("ok");
  });
  server.on("secureConnection", () => {
    connections += 1;
  });
  server.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  });
  // A client hanging up mid-response is what several tests provoke on purpose.
  server.on("tlsClientError", () => {});

  server.listen(0, listenAddress);
  await once(server, "listening");
  const port = (server.address() as AddressInfo).port;

  return {
    url: `https://${hostname}:${port}/hook`,
    origin: `https://${hostname}:${port}`,
    port,
    hostname,
    caCert: issuer?.cert,
    requests,
    get connections() {
      return connections;
    },
    setStatus(code, headers = {}) {
      defaultStatus = code;
      defaultHeaders = headers;
    },
    setHandler(fn) {
      currentHandler = fn;
    },
    nextRequest({ timeoutMs = 10_000 } = {}) {
      if (!record) return Promise.reject(new Error("nextRequest() needs a receiver started with record: true"));
      const ready = unclaimed.shift();
      if (ready) return Promise.resolve(ready);
      return new Promise((resolve, reject) => {
        const waiter = (req: RecordedRequest) => {
          clearTimeout(timer);
          resolve(req);
        };
        const timer = setTimeout(() => {
          waiters.splice(waiters.indexOf(waiter), 1);
          reject(new Error(`receiver got no request within ${timeoutMs} ms`));
        }, timeoutMs);
        waiters.push(waiter);
      });
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      server.close();
      await once(server, "close");
    },
  };
}

/** A port on 127.0.0.1 with nothing listening: connecting to it is refused. */
export async function closedPort(): Promise<number> {
  const server = createTcpServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  server.close();
  await once(server, "close");
  return port;
}

/**
 * A TCP listener on 127.0.0.1 that accepts connections and never says a word: a TLS client
 * waiting for the handshake there runs into its connect timeout.
 */
export async function startSilentServer(): Promise<{ port: number; connections: () => number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  let accepted = 0;
  const server = createTcpServer((socket) => {
    accepted += 1;
    sockets.add(socket);
    socket.on("error", () => {});
    socket.once("close", () => sockets.delete(socket));
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    port: (server.address() as AddressInfo).port,
    connections: () => accepted,
    async close() {
      for (const socket of sockets) socket.destroy();
      server.close();
      await once(server, "close");
    },
  };
}
