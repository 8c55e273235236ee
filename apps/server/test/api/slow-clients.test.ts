// Slow or abusive clients are cut off by the server's documented limits (README "Timeouts and
// limits"), shrunk here to milliseconds: headers a byte at a time, a body that trickles, idle
// connections, too many connections, and a 1 MB Authorization header.
import { connect, type Socket } from "node:net";
import { describe, expect, it } from "vitest";
import { DEFAULT_HTTP_LIMITS } from "../../src/config.js";
import { useApiServer } from "../harness/factories.js";

const limits = { ...DEFAULT_HTTP_LIMITS, headersTimeoutMs: 400, requestTimeoutMs: 900, keepAliveTimeoutMs: 600 };
const server = await useApiServer({ httpLimits: limits });
const crowded = await useApiServer({ httpLimits: { ...DEFAULT_HTTP_LIMITS, maxConnections: 3 } });

interface Probe {
  socket: Socket;
  /** resolves when the server closed the connection: what it wrote, and how long after connecting */
  closed: Promise<{ data: string; afterMs: number }>;
}

function open(url: string, onConnect: (s: Socket) => void = () => {}): Promise<Probe> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const started = performance.now();
    const socket = connect(Number(port), hostname);
    let data = "";
    socket.on("data", (d) => (data += String(d)));
    socket.on("error", () => {});
    const closed = new Promise<{ data: string; afterMs: number }>((done) => socket.on("close", () => done({ data, afterMs: performance.now() - started })));
    socket.on("connect", () => {
      onConnect(socket);
      resolve({ socket, closed });
    });
  });
}

/** Writes `text` one byte every `everyMs` until the socket closes. */
function trickle(socket: Socket, text: string, everyMs: number): void {
  let i = 0;
  const timer = setInterval(() => {
    if (socket.destroyed || i >= text.length) return clearInterval(timer);
    socket.write(text[i++]!);
  }, everyMs);
}

describe("timeouts", () => {
  it("when a client sends its headers a byte at a time, then the connection is closed once the headers timeout passes, and the server logs it", async () => {
    const before = server.logs.length;
    const head = `GET /v2/question_sets HTTP/1.1\r\nHost: x\r\nX-Slow: ${"a".repeat(500)}\r\n\r\n`;
    const probe = await open(server.url, (s) => trickle(s, head, 20));
    const { data, afterMs } = await probe.closed;
    expect(data).not.toMatch(/^HTTP\/1\.1 200/);
    expect(afterMs).toBeGreaterThanOrEqual(limits.headersTimeoutMs - 50);
    expect(afterMs).toBeLessThan(head.length * 20); // long before the headers could have arrived
    await expect.poll(() => server.logs.slice(before).some((l) => l.includes("client cut off"))).toBe(true);
  });

  it("when a client connects and sends nothing, then the connection is closed after the headers timeout", async () => {
    const probes = await Promise.all(Array.from({ length: 20 }, () => open(server.url)));
    const results = await Promise.all(probes.map((p) => p.closed));
    for (const r of results) {
      expect(r.data).toBe("");
      expect(r.afterMs).toBeGreaterThanOrEqual(limits.headersTimeoutMs - 50);
      expect(r.afterMs).toBeLessThan(limits.headersTimeoutMs + 5_000);
    }
  });

  it("when the headers arrive but the body trickles, then the connection is closed after the request timeout", async () => {
    const { token } = await server.newOrg();
    const body = JSON.stringify({ url: "https://hooks.acme-receiver.com/x" });
    const probe = await open(server.url, (s) => {
      s.write(`POST /v2/webhook_endpoints HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`);
      trickle(s, body, 100);
    });
    const { data, afterMs } = await probe.closed;
    expect(data).not.toMatch(/^HTTP\/1\.1 201/);
    expect(afterMs).toBeGreaterThanOrEqual(limits.requestTimeoutMs - 50);
    expect(afterMs).toBeLessThan(body.length * 100);
  });

  it("when a kept-alive connection stays idle after a response, then it is closed after the keep-alive timeout", async () => {
    const probe = await open(server.url, (s) => s.write("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
    const { data, afterMs } = await probe.closed;
    expect(data).toMatch(/^HTTP\/1\.1 200/);
    expect(data).toMatch(/\r\nKeep-Alive: timeout=\d+/i);
    expect(afterMs).toBeGreaterThanOrEqual(limits.keepAliveTimeoutMs - 50);
    expect(afterMs).toBeLessThan(limits.keepAliveTimeoutMs + 5_000);
  });
});

describe("limits", () => {
  it("when more connections are open than allowed, then a further one is closed at once and logged; once they go, the server serves again", async () => {
    const before = crowded.logs.length;
    const held = await Promise.all(Array.from({ length: 3 }, () => open(crowded.url)));
    const extra = await open(crowded.url, (s) => s.write("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
    const refused = await extra.closed;
    expect(refused.data).toBe("");
    expect(refused.afterMs).toBeLessThan(DEFAULT_HTTP_LIMITS.headersTimeoutMs);
    await expect.poll(() => crowded.logs.slice(before).some((l) => l.includes("too many open connections"))).toBe(true);
    for (const p of held) p.socket.destroy();
    await Promise.all(held.map((p) => p.closed));
    const again = await open(crowded.url, (s) => s.write("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
    expect((await again.closed).data).toMatch(/^HTTP\/1\.1 200/);
  });

  it("when a 1 MB Authorization header is sent, then 431 HEADERS_TOO_LARGE and the connection is closed without reading it all", async () => {
    const probe = await open(server.url, (s) => {
      s.write(`GET /v2/question_sets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${"A".repeat(1024 * 1024)}\r\n\r\n`);
    });
    const { data } = await probe.closed;
    expect(data).toMatch(/^HTTP\/1\.1 431 /);
    expect(data).toContain('"code":"HEADERS_TOO_LARGE"');
  });
});
