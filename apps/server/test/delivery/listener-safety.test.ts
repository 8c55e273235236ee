// What a webhook listener may not do to the service (README, "Developing a receiver"): a
// listener is a transport of the one engine, under its slots, leases and backpressure, so one
// that never answers cannot freeze the server; a stream ends within seconds when its token is
// revoked or loses webhooks:write, or its listener is deleted or disabled; a client that stops
// reading is dropped at a bounded buffer; what crosses NOTIFY is bounded.
import { spawn, type ChildProcess } from "node:child_process";
import { afterAll, describe, expect, it } from "vitest";
import { decodeForwarded, encodeForwarded } from "../../src/delivery/transports/listener.js";
import { ingestQuestionSet, problemOf, publishEvent, rawProblem } from "../harness/factories.js";
import { measureLoopDelay } from "../harness/loop-delay.js";
import { moved, scrape, valueOf } from "../harness/metrics.js";
import { createListener, deliveryOf, openStream, until } from "./listener-streams.js";
import { useDeliveryServer } from "./support.js";

// Leases longer than the test; a stream is checked every CHECK_MS (a third of the lease, at most 2 s).
const { server } = await useDeliveryServer(
  { totalTimeoutMs: 1_500, scheduleMs: [0, 60_000, 60_000], perEndpointConcurrency: 8 },
  { listenerGraceMs: 60_000, listenerLeaseMs: 120_000 },
);
const metricsUrl = server.server.deps.metrics!.listener.url;
/** The contract's promise: a stream ends within 5 s of what ends it. */
const ENDS_WITHIN_MS = 5_000;

/** A token of the org with these scopes, with its id (to revoke it). */
async function tokenOf(orgId: string, scopes: string[] = ["webhooks:read", "webhooks:write"]) {
  return server.server.services.tokens.createToken(orgId, scopes, "listener test");
}

/** Waits for the stream's `closed` event; resolves with its reason and how long it took. */
async function closedWithin(stream: Awaited<ReturnType<typeof openStream>>, after: number): Promise<{ reason: string; ms: number }> {
  const closed = (await stream.next("closed", ENDS_WITHIN_MS + 2_000)) as { reason: string };
  return { reason: closed.reason, ms: performance.now() - after };
}

describe("a listener that never answers", () => {
  it("when it takes a dozen test deliveries and answers none, then the server keeps answering, the event loop keeps its pace, and every attempt is recorded as a timeout", async () => {
    const { api, token } = await server.newOrg();
    const listener = await createListener(api);
    const stream = await openStream(server, token, listener.id);
    await stream.next("ready");
    const sent = [];
    for (let i = 0; i < 12; i++) {
      const res = await api.POST("/v2/webhook_endpoints/{endpoint_id}/test", { params: { path: { endpoint_id: listener.id } } });
      expect(res.response.status).toBe(201);
      sent.push(res.data!);
    }
    // as many on the stream as the endpoint's slots allow, none answered; the rest wait their turn
    for (let i = 0; i < 8; i++) await stream.next("delivery");
    // The server answers throughout, while the attempts time out and the waiting ones go down the
    // stream; the event loop is measured over just that stall.
    const delay = await measureLoopDelay(async () => {
      const started = performance.now();
      while (performance.now() - started < 4_000) {
        const t0 = performance.now();
        const health = await fetch(`${server.url}/healthz`);
        expect(health.status).toBe(200);
        // a freeze never answers; a machine short of CPU answers late (the loop's delay below judges our code)
        expect(performance.now() - t0, "/healthz answered").toBeLessThan(5_000);
        await new Promise((r) => setTimeout(r, 100));
      }
    });
    for (const d of sent) {
      const row = await until(server, () => deliveryOf(api, d.event_id, listener.id), (x) => x?.status === "retrying", 15_000);
      expect(row.last_error).toMatchObject({ code: "timeout" });
    }
    console.info(`event-loop delay over the stall: p99 ${delay.main.p99Ms.toFixed(1)} ms, max ${delay.main.maxMs.toFixed(1)} ms (an idle thread beside it: p99 ${delay.reference.p99Ms.toFixed(1)} ms)`);
    // A loop that spins without awaiting would hold it for seconds (a freeze: no /healthz answer
    // at all). What a busy machine adds delays the idle thread as much, and is allowed for.
    expect(delay.main.p99Ms - delay.reference.p99Ms, "event-loop delay p99 (ms) beyond an idle thread's").toBeLessThan(100);
    expect(delay.main.maxMs - delay.reference.maxMs, "event-loop delay max (ms) beyond an idle thread's").toBeLessThan(1_000);
  });
});

describe("a stream ends within 5 s when it may no longer run", () => {
  it("when the token that opened it is revoked, then the stream gets `closed` naming why and ends; the metric counts it", async () => {
    const org = await server.newOrg();
    const listener = await createListener(org.api);
    const { id, token } = await tokenOf(org.orgId);
    const stream = await openStream(server, token, listener.id);
    await stream.next("ready");
    const before = await scrape(metricsUrl);
    const revokedAt = performance.now();
    expect(await server.server.services.tokens.revoke(id)).toBe(true);
    const { reason, ms } = await closedWithin(stream, revokedAt);
    expect(reason).toBe("the token that opened this stream was revoked");
    expect(ms).toBeLessThan(ENDS_WITHIN_MS);
    expect(moved(before, await scrape(metricsUrl), "ars_listener_streams_closed_total", { reason: "revoked" })).toBe(1);
    expect(server.logs.some((l) => l.includes("webhook listener stream ended by the server") && l.includes(listener.id))).toBe(true);
    // a new stream with the revoked token is refused
    await rawProblem((await openStream(server, token, listener.id)).response, { status: 401, code: "UNAUTHENTICATED" });
  });

  it("when its token loses webhooks:write, then the stream ends", async () => {
    const org = await server.newOrg();
    const listener = await createListener(org.api);
    const { id, token } = await tokenOf(org.orgId);
    const stream = await openStream(server, token, listener.id);
    await stream.next("ready");
    const at = performance.now();
    await server.server.db.query("UPDATE api_tokens SET scopes = ARRAY['webhooks:read'] WHERE id = $1", [id]);
    const { reason, ms } = await closedWithin(stream, at);
    expect(reason).toBe("the token that opened this stream no longer holds webhooks:write");
    expect(ms).toBeLessThan(ENDS_WITHIN_MS);
  });

  it("when its listener is deleted, then the stream ends; when it is disabled, the stream ends and a new one is refused until it is enabled again", async () => {
    const { api, token } = await server.newOrg();
    const deleted = await createListener(api);
    const s1 = await openStream(server, token, deleted.id);
    await s1.next("ready");
    let at = performance.now();
    await api.DELETE("/v2/webhook_endpoints/{endpoint_id}", { params: { path: { endpoint_id: deleted.id } } });
    let closed = await closedWithin(s1, at);
    expect(closed.reason).toBe("the listener was deleted");
    expect(closed.ms).toBeLessThan(ENDS_WITHIN_MS);

    const disabled = await createListener(api);
    const path = { params: { path: { endpoint_id: disabled.id } } };
    const s2 = await openStream(server, token, disabled.id);
    await s2.next("ready");
    at = performance.now();
    await api.PATCH("/v2/webhook_endpoints/{endpoint_id}", { ...path, body: { status: "disabled" } });
    closed = await closedWithin(s2, at);
    expect(closed.reason).toBe("the listener was disabled");
    expect(closed.ms).toBeLessThan(ENDS_WITHIN_MS);
    await rawProblem((await openStream(server, token, disabled.id)).response, { status: 409, code: "ENDPOINT_DISABLED" });
    await api.PATCH("/v2/webhook_endpoints/{endpoint_id}", { ...path, body: { status: "enabled" } });
    await (await openStream(server, token, disabled.id)).next("ready");
  });

  it("when 21 listeners are created, streamed and deleted in turn, then no stream outlives its listener and the org never holds more than its limits", async () => {
    const { api, token } = await server.newOrg();
    const ids: string[] = [];
    for (let i = 0; i < 21; i++) {
      const listener = await createListener(api);
      ids.push(listener.id);
      const stream = await openStream(server, token, listener.id);
      await stream.next("ready");
      await api.DELETE("/v2/webhook_endpoints/{endpoint_id}", { params: { path: { endpoint_id: listener.id } } });
      if (i === 20) await closedWithin(stream, performance.now());
    }
    // none of these 21 streams is held (the server is shared with this file's other tests, whose
    // streams end when their clients leave: only this test's own are judged here), and the gauge
    // counts exactly what is held
    const mine = () => server.server.deps.listeners.held().filter((id) => ids.includes(id));
    await expect.poll(mine, { timeout: ENDS_WITHIN_MS + 2_000 }).toEqual([]);
    expect(valueOf(await scrape(metricsUrl), "ars_listener_streams")).toBe(server.server.deps.listeners.held().length);
  });
});

/** A client that opens the stream and never reads: SO_RCVBUF of 4 KiB, set before connecting. */
const SLOW_CLIENT = `
import socket, sys, time
port, path, token = sys.argv[1], sys.argv[2], sys.argv[3]
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect(("127.0.0.1", int(port)))
s.sendall(f"GET {path} HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nAuthorization: Bearer {token}\\r\\n\\r\\n".encode())
time.sleep(600)
`;

const clients: ChildProcess[] = [];
afterAll(() => {
  for (const c of clients) c.kill("SIGKILL");
});

describe("a client that stops reading", () => {
  it("when more than 1 MiB waits for it and it reads nothing for 5 s, then its connection is dropped with a log line, its attempts fail to connect and are retried, and a client that reads may connect", async () => {
    const { api, token } = await server.newOrg();
    const set = await ingestQuestionSet(api, { questions: Array.from({ length: 30 }, (_, i) => ({ query: `Question ${i}?`, question_type: "yes_no" as const })) });
    const listener = await createListener(api);
    // A client that sends the request and never reads a byte. Its receive buffer is set small
    // before it connects (Node cannot): with the kernel's autotuning a paused socket would take
    // tens of MB on loopback before anything waited in the server.
    const client = spawn("python3", ["-c", SLOW_CLIENT, new URL(server.url).port, `/v2/webhook_listeners/${listener.id}/stream`, token], { stdio: "ignore" });
    clients.push(client);
    await expect.poll(() => server.server.deps.listeners.held().includes(listener.id), { timeout: 10_000 }).toBe(true);
    const before = await scrape(metricsUrl);
    // Large events: each delivery carries about 300 KB of responses, eight go down at once. The
    // server's own socket takes up to 4 MB (net.ipv4.tcp_wmem) before anything waits in it.
    const responses = set.questions.map((q) => ({ question_id: q.id, answer: "Yes", context: "x".repeat(10_000), passed: true }));
    const events: string[] = [];
    for (let i = 0; i < 24; i++) events.push((await publishEvent(api, { data: { question_set_id: set.id, responses } })).request.id);
    await expect.poll(() => server.server.deps.listeners.held().includes(listener.id), { timeout: 20_000 }).toBe(false);
    expect(moved(before, await scrape(metricsUrl), "ars_listener_streams_closed_total", { reason: "slow_client" })).toBe(1);
    expect(server.logs.some((l) => l.includes("webhook listener stream ended by the server") && l.includes("stopped reading"))).toBe(true);
    // Nothing is lost: every delivery is still queued, those sent down the stream retrying (their
    // answers timed out). Events published once it had dropped made none: it was disconnected.
    const rows = (await Promise.all(events.map((id) => deliveryOf(api, id, listener.id)))).filter((d) => d !== undefined);
    expect(rows.length).toBeGreaterThanOrEqual(8);
    expect(rows.every((d) => d.status === "pending" || d.status === "retrying")).toBe(true);
    // the hold is released: a client that reads may connect at once
    const again = await openStream(server, token, listener.id);
    expect(again.response.status).toBe(200);
    await again.next("ready").catch((e: unknown) => {
      console.error(server.logs.filter((l) => l.includes(listener.id)).map((l) => l.slice(0, 300)).join("\n"));
      throw e;
    });
  });
});

describe("answers crossing processes (NOTIFY carries at most 8000 bytes)", () => {
  it("when an answer carries the largest body and message the contract allows, in the characters that grow most when escaped, then its forwarded form fits and comes back as the attempt keeps it", () => {
    const id = "0193a5b2-7c4e-7a10-9d2f-3b1c2d4e5f80";
    const controls = "\u0001\"\\".repeat(65_536 / 3);
    const withBody = encodeForwarded(id, { request_id: id, status: 500, body: controls, duration_ms: 3_600_000 });
    const emoji = "😀".repeat(250); // 500 UTF-16 units, 1,000 bytes of UTF-8
    const withError = encodeForwarded(id, { request_id: id, error: { code: "connection_error", message: emoji }, duration_ms: 1 });
    for (const payload of [withBody, withError]) expect(Buffer.byteLength(payload)).toBeLessThan(8_000);
    const back = decodeForwarded(withBody)!;
    expect(back.listenerId).toBe(id);
    expect(back.answer.status).toBe(500);
    expect(Buffer.byteLength(back.answer.body!)).toBeLessThanOrEqual(1024);
    expect(controls.startsWith(back.answer.body!)).toBe(true);
    expect(decodeForwarded(withError)!.answer.error).toEqual({ code: "connection_error", message: emoji });
  });

  it("when an answer's body is larger than the contract allows, then 400 names `body`", async () => {
    const { api } = await server.newOrg();
    const listener = await createListener(api);
    problemOf(
      await api.POST("/v2/webhook_listeners/{listener_id}/answers", {
        params: { path: { listener_id: listener.id } },
        body: { request_id: crypto.randomUUID(), status: 200, body: "x".repeat(65_537), duration_ms: 1 },
      }),
      { status: 400, code: "VALIDATION_ERROR", name: "body" },
    );
  });
});
