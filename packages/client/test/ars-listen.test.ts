// The `ars-listen` command as built (dist/bin/ars-listen.js) against the real server: a local
// receiver on plain HTTP that verifies every request with verifyWebhook, events published
// through the ingestion API, the command's output, and what the server recorded.
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { randomUUID } from "node:crypto";
import { once } from "node:events";
import { createServer, type IncomingMessage, type Server } from "node:http";
import { connect, createServer as createNetServer, type AddressInfo, type Socket } from "node:net";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { verifyWebhook } from "../src/webhooks/index.js";
import { useTestServer, type TestOrg } from "./harness.js";

const BIN = fileURLToPath(new URL("../dist/bin/ars-listen.js", import.meta.url));
// Keep-alives every 300 ms, so a silent stream is noticed in a second, not in 30.
const server = useTestServer({ dispatcher: true, delivery: { pollIntervalMs: 50, jitter: 0, scheduleMs: [0, 60_000] }, listenerKeepAliveMs: 300 });

interface Received {
  headers: IncomingMessage["headers"];
  body: string;
  verified: boolean;
}

/** A local receiver: records every request, verifies its signature, answers `status`. */
async function startReceiver(secret: () => string, status = 200) {
  const received: Received[] = [];
  const http: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      let verified = true;
      try {
        verifyWebhook({ secret: secret(), headers: req.headers, body });
      } catch {
        verified = false;
      }
      received.push({ headers: req.headers, body, verified });
      res.writeHead(verified ? status : 400).end(verified ? "ok" : "bad signature");
    });
  });
  http.listen(0, "127.0.0.1");
  await once(http, "listening");
  return { url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/hooks`, received, close: () => new Promise<void>((r) => http.close(() => r())) };
}

/**
 * A TCP proxy in front of the server that can go silent: `freeze()` stops passing anything the
 * server sends on the connections that carry a listener's stream, and keeps them open on the
 * server's side even once the client gives up on them, as a dead NAT entry or a suspended laptop
 * would: the server never sees them close. Connections opened later pass as before.
 */
async function startFreezableProxy(target: string) {
  const { hostname, port } = new URL(target);
  const streams = new Set<{ client: Socket; upstream: Socket }>();
  const frozen = new Set<Socket>();
  const all = new Set<Socket>();
  const proxy = createNetServer((client) => {
    const upstream = connect(Number(port), hostname);
    const pair = { client, upstream };
    all.add(client).add(upstream);
    client.once("data", (first: Buffer) => {
      if (first.toString("latin1").startsWith("GET /v2/webhook_listeners/")) streams.add(pair);
    });
    client.pipe(upstream);
    upstream.pipe(client);
    const end = () => {
      client.destroy();
      if (!frozen.has(upstream)) upstream.destroy();
      streams.delete(pair);
    };
    client.on("error", end).on("close", end);
    upstream.on("error", end).on("close", end);
  });
  proxy.listen(0, "127.0.0.1");
  await once(proxy, "listening");
  return {
    url: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
    freeze() {
      for (const { client, upstream } of streams) {
        frozen.add(upstream);
        upstream.unpipe(client);
        client.unpipe(upstream);
        upstream.pause();
      }
    },
    close: () => new Promise<void>((r) => (proxy.close(() => r()), [...all].forEach((s) => s.destroy()))),
  };
}

/** The command with its output split into lines as they come. */
function run(args: string[], token: string, apiUrl = server().url) {
  const child: ChildProcessWithoutNullStreams = spawn(process.execPath, [BIN, "--api-url", apiUrl, ...args], { env: { ...process.env, ARS_TOKEN: token } });
  const lines: string[] = [];
  const errors: string[] = [];
  let waiters: Array<() => void> = [];
  const collect = (into: string[]) => {
    let buffer = "";
    return (chunk: Buffer) => {
      buffer += chunk.toString("utf8");
      const parts = buffer.split("\n");
      buffer = parts.pop()!;
      into.push(...parts);
      for (const w of waiters.splice(0)) w();
    };
  };
  child.stdout.on("data", collect(lines));
  child.stderr.on("data", collect(errors));
  const exited = once(child, "exit");
  return {
    child,
    lines,
    errors,
    exited,
    async line(match: RegExp, from: "stdout" | "stderr" = "stdout", timeoutMs = 15_000): Promise<string> {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = (from === "stdout" ? lines : errors).find((l) => match.test(l));
        if (found) return found;
        if (Date.now() > deadline || child.exitCode !== null) throw new Error(`no line ${match} (stdout: ${lines.join(" | ")}; stderr: ${errors.join(" | ")})`);
        await new Promise<void>((r) => {
          waiters.push(r);
          setTimeout(r, 100);
        });
      }
    },
    stop() {
      waiters = [];
      child.kill("SIGINT");
      return exited;
    },
  };
}

const running: Array<ReturnType<typeof run>> = [];
afterEach(async () => {
  for (const r of running.splice(0)) if (r.child.exitCode === null) await r.stop();
});

async function publish(org: TestOrg, setId: string): Promise<string> {
  const id = randomUUID();
  await org.publishEvent({ id, type: "audit.completed", data: { audit_id: randomUUID(), question_set_id: setId, result: "failed" } });
  return id;
}

describe("ars-listen", () => {
  it("when it forwards to a local receiver, then every delivery arrives verified, is printed, and is recorded succeeded; a stopped receiver's failures are recorded too", async () => {
    const org = await server().newOrg();
    const set = await org.ingestQuestionSet({ set_name: "Listen", set_code: "LSN" });
    let secret = "";
    const receiver = await startReceiver(() => secret);
    const cli = run(["--forward-to", receiver.url], org.token);
    running.push(cli);

    const ready = await cli.line(/^Ready! Your webhook signing secret is whsec_/);
    secret = /(whsec_\S+)/.exec(ready)![1]!;
    await cli.line(/connected: forwarding/, "stderr");
    const printed = run(["--print-secret"], org.token);
    await printed.exited;
    expect(printed.lines).toEqual([secret]);

    const events = [await publish(org, set.id), await publish(org, set.id), await publish(org, set.id)];
    for (const id of events) expect(await cli.line(new RegExp(`audit\\.completed  ${id}  200  \\d+ ms$`))).toMatch(/^\d{4}-\d\d-\d\dT/);

    expect(receiver.received.map((r) => [r.headers["webhook-id"], r.verified])).toEqual(events.map((id) => [id, true]));
    const listenerId = /listener (\S+);/.exec(ready)![1]!;
    // the line is printed as the answer is posted; the server records it a moment later
    const statuses = async () => (await org.client.listWebhookDeliveries({ endpoint_id: listenerId, limit: 100 })).data.map((d) => [d.event_id, d.status]).sort();
    const expected = events.map((id) => [id, "succeeded"]).sort();
    for (let i = 0; JSON.stringify(await statuses()) !== JSON.stringify(expected) && i < 100; i++) await new Promise((r) => setTimeout(r, 50));
    expect(await statuses()).toEqual(expected);

    await receiver.close();
    const lost = await publish(org, set.id);
    expect(await cli.line(new RegExp(`${lost}  connection_error`))).toContain("ECONNREFUSED");
    let delivery = (await org.client.listWebhookDeliveries({ endpoint_id: listenerId, limit: 1 })).data[0]!;
    for (let i = 0; delivery.status !== "retrying" && i < 100; i++) {
      await new Promise((r) => setTimeout(r, 50));
      delivery = (await org.client.listWebhookDeliveries({ endpoint_id: listenerId, limit: 1 })).data[0]!;
    }
    expect(delivery).toMatchObject({ event_id: lost, status: "retrying", last_error: { code: "connection_error" } });
    const attempts = (await org.client.listWebhookDeliveryAttempts(delivery.id)).data;
    expect(attempts[0]).toMatchObject({ response_status: null, error: { code: "connection_error", message: expect.stringContaining("ECONNREFUSED") } });

    const [code] = await cli.stop();
    expect(code).toBe(0);
    // stopped cleanly: the listener is gone, so it no longer counts or queues
    await expect(org.client.getWebhookEndpoint(listenerId)).rejects.toMatchObject({ status: 404 });
  });

  it("when the stream goes silent without closing, then it says so, reconnects, says that too, and forwards again", async () => {
    const org = await server().newOrg();
    const set = await org.ingestQuestionSet({ set_name: "Silent", set_code: "SLN" });
    let secret = "";
    const receiver = await startReceiver(() => secret);
    const proxy = await startFreezableProxy(server().url);
    try {
      const cli = run(["--forward-to", receiver.url, "--idle-timeout", "2"], org.token, proxy.url);
      running.push(cli);
      secret = /(whsec_\S+)/.exec(await cli.line(/^Ready!/))![1]!;
      await cli.line(/ {2}connected: forwarding/, "stderr");
      proxy.freeze();
      expect(await cli.line(/stream lost \(nothing from the server for 2 s, not even a keep-alive/, "stderr")).toContain("reconnecting in");
      await cli.line(/ {2}reconnected: forwarding/, "stderr");
      const id = await publish(org, set.id);
      await cli.line(new RegExp(`audit\\.completed  ${id}  200`));
      expect(receiver.received.map((r) => [r.headers["webhook-id"], r.verified])).toEqual([[id, true]]);
    } finally {
      await proxy.close();
      await receiver.close();
    }
  });

  it("when the server ends the stream (its token revoked), then it prints the server's reason and exits non-zero, as it cannot reconnect", async () => {
    const org = await server().newOrg();
    const receiver = await startReceiver(() => "");
    try {
      const writer = org.token;
      const cli = run(["--forward-to", receiver.url], writer);
      running.push(cli);
      await cli.line(/ {2}connected: forwarding/, "stderr");
      await server().revokeToken(writer);
      expect(await cli.line(/stream lost \(the server ended the stream: the token that opened this stream was revoked\)/, "stderr", 15_000)).toBeTruthy();
      const [code] = await cli.exited;
      expect(code).toBe(1);
      expect(cli.errors.join("\n")).toContain("the server refused the stream (401)");
    } finally {
      await receiver.close();
    }
  });

  it("when the token is missing or an option is wrong, then it says so on stderr and exits non-zero", async () => {
    const noToken = run(["--forward-to", "http://127.0.0.1:9/x"], "");
    const [c1] = await noToken.exited;
    const badUrl = run(["--forward-to", "ftp://x"], "ars_x");
    const [c2] = await badUrl.exited;

    expect(c1).toBe(2);
    expect(noToken.errors.join("\n")).toContain("ARS_TOKEN");
    expect(c2).toBe(2);
    expect(badUrl.errors.join("\n")).toContain("--forward-to must be an http:// or https:// URL");
  });
});

describe("paginateEvents", () => {
  it("when events are published, then paginateEvents walks every one newest first across pages, with the filters", async () => {
    const org = await server().newOrg();
    const set = await org.ingestQuestionSet({ set_name: "Events", set_code: "EVT" });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(await publish(org, set.id));

    const walked: string[] = [];
    for await (const e of org.client.paginateEvents({ query: { limit: 2 } })) walked.push(e.id);
    const one = await org.client.getEvent(ids[0]!);

    expect(walked).toEqual([...ids].reverse());
    expect(one).toMatchObject({ object: "event", id: ids[0], type: "audit.completed", is_test: false, data: { question_set_id: set.id } });
    expect((await org.client.listEvents({ audit_id: one.data!.audit_id })).data.map((e) => e.id)).toEqual([ids[0]]);
  });
});
