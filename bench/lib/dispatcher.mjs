// Dispatcher benchmark: events published through the API fan out to 5 endpoints on a loopback
// HTTPS receiver that answers 200 at once. Measured from the receiver's side: deliveries/s,
// event → first-attempt latency (arrival minus the moment the publish request was sent, keyed
// by webhook-id and endpoint), and the server process's peak RSS. Then the baseline (undici +
// HMAC loop, no database) sends the same signed requests to the same receiver.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { Pool } from "undici";
import { makeCerts } from "./certs.mjs";
import { startChild } from "./children.mjs";
import { makeEvent, percentile } from "./events.mjs";
import { loadServer } from "./pkg.mjs";

const ENDPOINTS = 5;
const HOSTS = Array.from({ length: ENDPOINTS }, (_, i) => `hooks-${i + 1}.bench-receiver.dev`);
const now = () => performance.timeOrigin + performance.now();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function cleanup(databaseUrl, orgId) {
  const c = new pg.Client({ connectionString: databaseUrl });
  await c.connect();
  try {
    await c.query("DELETE FROM webhook_deliveries WHERE org_id = $1", [orgId]);
    await c.query("DELETE FROM events WHERE org_id = $1", [orgId]);
    await c.query("DELETE FROM webhook_endpoints WHERE org_id = $1", [orgId]);
    await c.query("VACUUM (ANALYZE) webhook_deliveries, events, webhook_endpoints");
  } finally {
    await c.end();
  }
}

async function deliveryStates(databaseUrl, orgId) {
  const c = new pg.Client({ connectionString: databaseUrl });
  await c.connect();
  try {
    const { rows } = await c.query("SELECT status, count(*)::int AS n FROM webhook_deliveries WHERE org_id = $1 GROUP BY status", [orgId]);
    return Object.fromEntries(rows.map((r) => [r.status, r.n]));
  } finally {
    await c.end();
  }
}

/** Asks the receiver for its count until `target` requests arrived (or `timeoutMs`). */
async function waitForArrivals(receiver, target, timeoutMs, onTick) {
  const deadline = Date.now() + timeoutMs;
  let seq = 0;
  for (;;) {
    const s = ++seq;
    receiver.send({ type: "count", seq: s });
    const { n } = await receiver.next((m) => m.type === "count" && m.seq === s);
    onTick?.();
    if (n >= target || Date.now() > deadline) return n;
    await sleep(100);
  }
}

async function takeHits(receiver) {
  const seq = Date.now();
  receiver.send({ type: "take", seq });
  return receiver.next((m) => m.type === "hits" && m.seq === seq);
}

/**
 * Publishes `events` through POST /v2/internal/events: with `rate` (events/s) on a fixed
 * schedule (open loop), otherwise as fast as `concurrency` requests in flight allow.
 * Returns the send time of each event id.
 */
async function publish(pool, token, events, { concurrency, rate }) {
  const sentAt = new Map();
  const ackAt = new Map();
  const send = async (ev) => {
    const body = JSON.stringify(ev);
    sentAt.set(ev.id, now());
    const res = await pool.request({
      path: "/v2/internal/events",
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body,
    });
    const text = await res.body.text();
    ackAt.set(ev.id, now());
    if (res.statusCode !== 201) throw new Error(`publish answered ${res.statusCode}: ${text.slice(0, 300)}`);
    const out = JSON.parse(text);
    if (out.deliveries_created !== ENDPOINTS) throw new Error(`publish created ${out.deliveries_created} deliveries, expected ${ENDPOINTS}`);
  };
  if (rate) {
    const t0 = performance.now();
    const pending = [];
    for (let i = 0; i < events.length; i++) {
      const wait = t0 + (i * 1000) / rate - performance.now();
      if (wait > 1) await sleep(wait);
      pending.push(send(events[i]));
    }
    await Promise.all(pending);
  } else {
    let next = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < events.length) await send(events[next++]);
      }),
    );
  }
  return { sentAt, ackAt };
}

function analyse(hits, sentAt, ackAt) {
  const publishSeconds = (Math.max(...ackAt.values()) - Math.min(...sentAt.values())) / 1000;
  const first = new Map();
  let duplicates = 0;
  for (const [id, host, at] of hits) {
    const key = `${id} ${host}`;
    if (first.has(key)) duplicates++;
    else first.set(key, at);
  }
  const fromSend = [];
  const fromAck = [];
  let lastArrival = -Infinity;
  for (const [key, at] of first) {
    const id = key.slice(0, key.indexOf(" "));
    fromSend.push(at - sentAt.get(id));
    fromAck.push(at - ackAt.get(id));
    if (at > lastArrival) lastArrival = at;
  }
  fromSend.sort((a, b) => a - b);
  fromAck.sort((a, b) => a - b);
  const firstSend = Math.min(...sentAt.values());
  const arrivals = [...first.values()].sort((a, b) => a - b);
  return {
    delivered: first.size,
    duplicates,
    seconds: (lastArrival - firstSend) / 1000,
    deliveriesPerSec: first.size / ((lastArrival - firstSend) / 1000),
    receiverPerSec: (arrivals.length - 1) / ((arrivals.at(-1) - arrivals[0]) / 1000),
    publishSeconds,
    eventsPerSec: sentAt.size / publishSeconds,
    p50: percentile(fromSend, 50),
    p99: percentile(fromSend, 99),
    ackP50: percentile(fromAck, 50),
    ackP99: percentile(fromAck, 99),
  };
}

export async function runDispatcherBench({ databaseUrl, orgId, token, eventSet, events: eventCount, paced, publishConcurrency, execArgv, log }) {
  await cleanup(databaseUrl, orgId);
  const certs = makeCerts(HOSTS);
  const dir = mkdtempSync(join(tmpdir(), "ars-bench-"));
  const caFile = join(dir, "ca.pem");
  writeFileSync(caFile, certs.ca);
  const receiver = await startChild("servers/receiver.mjs", {
    name: "receiver",
    env: { BENCH_RECEIVER_KEY: certs.key, BENCH_RECEIVER_CERT: certs.cert },
  });
  const children = [receiver];
  try {
    const product = await startChild("servers/product.mjs", {
      name: "product server (dispatcher)",
      execArgv,
      env: {
        BENCH_SERVER_OPTIONS: JSON.stringify({
          databaseUrl,
          dispatcher: true,
          encryptionKey: randomBytes(32).toString("base64"),
          allowCidrs: ["127.0.0.1/32"],
          staticHosts: Object.fromEntries(HOSTS.map((h) => [h, ["127.0.0.1"]])),
          extraCaFile: caFile,
        }),
      },
    });
    children.push(product);
    // the delivery settings the child runs with (defaults, or ARS_DELIVERY_* from the environment)
    const cfg = (await loadServer()).loadConfig().delivery;
    const pool = new Pool(product.url, { connections: publishConcurrency });

    // 5 endpoints through the API, default settings (all payload fields, signed, no receiver auth)
    const endpoints = [];
    for (const host of HOSTS) {
      const res = await pool.request({
        path: "/v2/webhook_endpoints",
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ url: `https://${host}:${receiver.port}/webhook`, description: "bench receiver" }),
      });
      const body = await res.body.json();
      if (res.statusCode !== 201) throw new Error(`creating the endpoint for ${host} answered ${res.statusCode}: ${JSON.stringify(body)}`);
      endpoints.push({ host, id: body.id, secret: body.secret });
    }
    receiver.send({ type: "secrets", secrets: Object.fromEntries(endpoints.map((e) => [e.host, e.secret])) });

    let peakSampled = 0;
    let peakHeap = null;
    let memSeq = 0;
    const sample = () => {
      const { rssMb } = product.rss();
      if (rssMb > peakSampled) {
        peakSampled = rssMb;
        const seq = ++memSeq;
        product.send({ type: "mem", seq });
        product
          .next((m) => m.type === "mem" && m.seq === seq, 5_000)
          .then((m) => {
            if (rssMb >= peakSampled) peakHeap = { rssMb, heapUsedMb: m.heapUsed / 2 ** 20, heapTotalMb: m.heapTotal / 2 ** 20, externalMb: m.external / 2 ** 20, arrayBuffersMb: m.arrayBuffers / 2 ** 20 };
          })
          .catch(() => undefined);
      }
    };
    const phase = async (name, events, opts) => {
      log(`dispatcher: ${name}: publishing ${events.length} events${opts.rate ? ` at ${opts.rate}/s` : ` as fast as ${publishConcurrency} concurrent requests allow`}`);
      const target = events.length * ENDPOINTS;
      const sampler = setInterval(sample, 100);
      const cpu0 = product.cpuMs();
      const { sentAt, ackAt } = await publish(pool, token, events, opts);
      const arrived = await waitForArrivals(receiver, target, 1_200_000, sample);
      const cpuMs = product.cpuMs() - cpu0;
      clearInterval(sampler);
      const hits = await takeHits(receiver);
      if (hits.badSignatures) throw new Error(`receiver: ${hits.badSignatures} requests with a wrong signature`);
      if (hits.checked.length !== ENDPOINTS) throw new Error(`receiver checked signatures of ${hits.checked.length}/${ENDPOINTS} endpoints only`);
      const a = analyse(hits.hits, sentAt, ackAt);
      if (a.delivered < target) throw new Error(`${name}: only ${a.delivered}/${target} deliveries arrived (${arrived} requests) within 1200 s`);
      // the outcomes must be recorded, too: every delivery succeeded
      let states = {};
      for (let i = 0; i < 300; i++) {
        states = await deliveryStates(databaseUrl, orgId);
        if (!states.pending && !states.retrying) break;
        await sleep(200);
      }
      log(
        `dispatcher: ${name}: server CPU ${(cpuMs / a.delivered).toFixed(2)} ms per delivery (ingestion included); ${a.delivered} deliveries in ${a.seconds.toFixed(1)} s = ${a.deliveriesPerSec.toFixed(0)}/s (publishing took ${a.publishSeconds.toFixed(1)} s = ${a.eventsPerSec.toFixed(0)} events/s); event→first attempt p50 ${a.p50.toFixed(1)} ms p99 ${a.p99.toFixed(1)} ms; states ${JSON.stringify(states)}`,
      );
      return { ...a, events: events.length, states, connections: hits.connections, rate: opts.rate, cpuPerDelivery: cpuMs / a.delivered };
    };

    const burst = await phase("burst", Array.from({ length: eventCount }, (_, i) => makeEvent(i, eventSet)), { concurrency: publishConcurrency });
    // Below capacity by construction: at most half the event rate the burst sustained end to end,
    // so the paced latency is the dispatcher's own and not time spent queueing.
    const pacedRate = Math.max(1, Math.min(paced.rate, Math.floor(burst.deliveriesPerSec / ENDPOINTS / 2)));
    const pacedEvents = Math.min(paced.events, Math.ceil(pacedRate * 20));
    const pacedResult = paced.events
      ? await phase("paced", Array.from({ length: pacedEvents }, (_, i) => makeEvent(eventCount + i, eventSet)), { rate: pacedRate })
      : null;
    const mem = product.rss();
    await pool.close();
    await product.stop();
    children.pop();

    // Baseline: same receiver, same requests, the dispatcher's effective concurrency.
    const concurrency = Math.min(cfg.concurrency, cfg.perEndpointConcurrency * ENDPOINTS);
    log(`dispatcher: baseline: ${eventCount * ENDPOINTS} signed requests with undici at concurrency ${concurrency}`);
    const base = await startChild("servers/dispatch-baseline.mjs", { name: "dispatch baseline" });
    children.push(base);
    base.send({
      ca: certs.ca,
      port: receiver.port,
      endpoints: endpoints.map(({ host, secret }) => ({ host, secret })),
      eventCount,
      eventSet,
      concurrency,
      userAgent: cfg.userAgent,
    });
    const baseCpu0 = base.cpuMs();
    const done = await base.next((m) => m.type === "done", 600_000);
    const baseCpu = base.cpuMs() - baseCpu0;
    await base.stop();
    children.pop();
    const baseHits = await takeHits(receiver);
    if (baseHits.badSignatures) throw new Error(`receiver: ${baseHits.badSignatures} baseline requests with a wrong signature`);
    const baseline = {
      delivered: baseHits.hits.length,
      deliveriesPerSec: done.sent / ((done.finished - done.started) / 1000),
      concurrency,
      cpuPerDelivery: baseCpu / done.sent,
    };
    log(`dispatcher: baseline: ${baseline.delivered} requests at ${baseline.deliveriesPerSec.toFixed(0)}/s, ${baseline.cpuPerDelivery.toFixed(2)} CPU ms per request`);

    return {
      endpoints: ENDPOINTS,
      config: { concurrency: cfg.concurrency, perEndpoint: cfg.perEndpointConcurrency, batchSize: cfg.batchSize, publishConcurrency },
      burst,
      paced: pacedResult,
      peakRssMb: mem.peakMb,
      sampledPeakRssMb: peakSampled,
      peakHeap,
      baseline,
      ratio: burst.deliveriesPerSec / baseline.deliveriesPerSec,
    };
  } finally {
    for (const c of children.reverse()) await c.stop().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
}
