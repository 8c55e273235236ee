// Dispatcher benchmark: events published through the API fan out to 5 endpoints on a loopback
// HTTPS receiver that answers 200 at once. Measured from the receiver's side: deliveries/s,
// event → first-attempt latency (arrival minus the moment the publish request was sent, keyed
// by webhook-id and endpoint), and the server process's peak RSS. Then the baseline (undici +
// HMAC loop, no database) sends the same signed requests to the same receiver.
//
// Scenarios (select with --scenarios): `burst` and `paced` (API + dispatcher in one process,
// events published through the API), `engine` (events stored first, then one `worker` process
// started: the engine alone), `slow` and `refusing` (the engine with a sixth endpoint that answers
// after 14 s or refuses connections: how much the other five slow down), `twoWorkers` (the API
// plus two `worker` processes on one PostgreSQL: every delivery sent exactly once and recorded).
export const DISPATCHER_SCENARIOS = ["burst", "paced", "publish", "engine", "slow", "refusing", "twoWorkers"];

/** Events of the `publish` scenario: one per request, one request at a time. */
const PUBLISH_ONE_EVENTS = 1_000;
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { Pool } from "undici";
import { createTestCa } from "@audit-review/test-kit/ca";
import { postgresCpuMs, startChild } from "./children.mjs";
import { dayPartitions } from "./days.mjs";
import { makeEvent, percentile } from "./events.mjs";
import { loadServer } from "./pkg.mjs";

const ENDPOINTS = 5;
const HOSTS = Array.from({ length: ENDPOINTS }, (_, i) => `hooks-${i + 1}.bench-receiver.dev`);
const SLOW_HOST = "slow.bench-receiver.dev";
const REFUSING_HOST = "refusing.bench-receiver.dev";
const SLOW_MS = 14_000;
const now = () => performance.timeOrigin + performance.now();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function cleanup(databaseUrl, orgId, { keepEndpoints = false } = {}) {
  const c = new pg.Client({ connectionString: databaseUrl });
  await c.connect();
  try {
    await c.query("DELETE FROM webhook_delivery_attempts WHERE org_id = $1", [orgId]);
    await c.query("DELETE FROM webhook_deliveries WHERE org_id = $1", [orgId]);
    await c.query("DELETE FROM events WHERE org_id = $1", [orgId]);
    if (!keepEndpoints) await c.query("DELETE FROM webhook_endpoints WHERE org_id = $1", [orgId]);
    // the engine stores into today's partition, as a service that has run a day does
    await dayPartitions(c, 0);
    // the attempts too: a service drops whole day partitions, the bench deletes rows, and the dead
    // attempt rows of earlier runs (hundreds of thousands) would otherwise load every later one
    await c.query("VACUUM (ANALYZE) webhook_delivery_attempts, webhook_deliveries, events, webhook_endpoints");
  } finally {
    await c.end();
  }
}

/** Delivery states of the org (of `endpointIds` only, when given), and how many attempt rows they have. */
async function deliveryStates(databaseUrl, orgId, endpointIds = null) {
  const c = new pg.Client({ connectionString: databaseUrl });
  await c.connect();
  try {
    const { rows } = await c.query(
      `SELECT status, count(*)::int AS n, sum((SELECT count(*) FROM webhook_delivery_attempts a WHERE a.delivery_id = d.id))::int AS attempts
         FROM webhook_deliveries d WHERE org_id = $1 AND ($2::uuid[] IS NULL OR endpoint_id = ANY($2::uuid[])) GROUP BY status`,
      [orgId, endpointIds],
    );
    return Object.fromEntries(rows.map((r) => [r.status, r.n]));
  } finally {
    await c.end();
  }
}

async function attemptsAt(databaseUrl, orgId, host) {
  const c = new pg.Client({ connectionString: databaseUrl });
  await c.connect();
  try {
    const { rows } = await c.query("SELECT count(*)::int AS n FROM webhook_delivery_attempts WHERE org_id = $1 AND url LIKE $2", [orgId, `https://${host}:%`]);
    return rows[0].n;
  } finally {
    await c.end();
  }
}

/** Asks the receiver for its count until `target` requests arrived (or `timeoutMs`). */
async function waitForArrivals(receiver, target, timeoutMs, onTick, hosts = undefined) {
  const deadline = Date.now() + timeoutMs;
  let seq = 0;
  for (;;) {
    const s = ++seq;
    receiver.send({ type: "count", seq: s, hosts });
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
async function publish(pool, token, events, { concurrency, rate, expected = ENDPOINTS, batch = 1 }) {
  const sentAt = new Map();
  const ackAt = new Map();
  // several tokens in turn: each is counted against its own rate limit (the default configuration)
  const tokens = Array.isArray(token) ? token : [token];
  let turn = 0;
  const post = async (path, payload) => {
    const res = await pool.request({
      path,
      method: "POST",
      headers: { authorization: `Bearer ${tokens[turn++ % tokens.length]}`, "content-type": "application/json" },
      body: JSON.stringify(payload),
    });
    const text = await res.body.text();
    if (res.statusCode !== 200 && res.statusCode !== 201) throw new Error(`${path} answered ${res.statusCode}: ${text.slice(0, 300)}`);
    return JSON.parse(text);
  };
  const check = (out) => {
    if (out.deliveries_created !== expected) throw new Error(`publish created ${out.deliveries_created} deliveries, expected ${expected}`);
  };
  // One event per request, or `batch` events per POST /v2/internal/event_batches.
  const send = async (group) => {
    const t = now();
    for (const ev of group) sentAt.set(ev.id, t);
    if (group.length === 1 && batch === 1) check(await post("/v2/internal/events", group[0]));
    else for (const out of (await post("/v2/internal/event_batches", { events: group })).data) check(out);
    const done = now();
    for (const ev of group) ackAt.set(ev.id, done);
  };
  const groups = [];
  for (let i = 0; i < events.length; i += batch) groups.push(events.slice(i, i + batch));
  if (rate) {
    const t0 = performance.now();
    const pending = [];
    for (let i = 0; i < groups.length; i++) {
      const wait = t0 + (i * batch * 1000) / rate - performance.now();
      if (wait > 1) await sleep(wait);
      pending.push(send(groups[i]));
    }
    await Promise.all(pending);
  } else {
    let next = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < groups.length) await send(groups[next++]);
      }),
    );
  }
  return { sentAt, ackAt };
}

function analyse(allHits, sentAt, ackAt, hosts = HOSTS) {
  const hits = allHits.filter((h) => hosts.includes(h[1]));
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
  // the publish request's own time: send → its answer (the event committed)
  const publishMs = [...sentAt.keys()].map((id) => ackAt.get(id) - sentAt.get(id)).sort((a, b) => a - b);
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
    publishP50: percentile(publishMs, 50),
    ackP99: percentile(fromAck, 99),
  };
}

/** A port on 127.0.0.1 where nothing listens (bound once, then closed): connections are refused. */
/** The run whose `by` is the median of `runs` (the lower middle of an even count). */
function medianRun(runs, by) {
  return [...runs].sort((a, b) => by(a) - by(b))[Math.floor((runs.length - 1) / 2)];
}

async function closedPort() {
  const s = createServer();
  await new Promise((resolve) => s.listen(0, "127.0.0.1", resolve));
  const { port } = s.address();
  await new Promise((resolve) => s.close(resolve));
  return port;
}

export async function runDispatcherBench({ databaseUrl, orgId, token, publishTokens, eventSet, events: eventCount, paced, publishConcurrency, publishBatch = 1, receiverRounds = 1, execArgv, env = {}, scenarios, log }) {
  const want = new Set(scenarios?.filter((x) => DISPATCHER_SCENARIOS.includes(x)) ?? []);
  const runs = (name) => want.size === 0 || want.has(name);
  await cleanup(databaseUrl, orgId);
  // The test kit's CA: the receiver's leaf names every bench host; the product trusts the CA.
  const ca = createTestCa();
  const certs = { ca: ca.cert, ...ca.issue([...HOSTS, SLOW_HOST, REFUSING_HOST]) };
  const dir = mkdtempSync(join(tmpdir(), "ars-bench-"));
  const caFile = join(dir, "ca.pem");
  writeFileSync(caFile, certs.ca);
  const receiver = await startChild("servers/receiver.mjs", {
    name: "receiver",
    env: { BENCH_RECEIVER_KEY: certs.key, BENCH_RECEIVER_CERT: certs.cert, BENCH_RECEIVER_DELAYS: JSON.stringify({ [SLOW_HOST]: SLOW_MS }) },
  });
  const children = [receiver];
  const serverOptions = (dispatcher) =>
    JSON.stringify({
      databaseUrl,
      dispatcher,
      encryptionKey,
      allowCidrs: ["127.0.0.1/32"],
      staticHosts: Object.fromEntries([...HOSTS, SLOW_HOST, REFUSING_HOST].map((h) => [h, ["127.0.0.1"]])),
      extraCaFile: caFile,
    });
  const encryptionKey = randomBytes(32).toString("base64");
  let productStarts = 0;
  const startProduct = async (dispatcher) => {
    // each later start profiles into a file of its own (it would overwrite the first's, which the run summarises)
    const n = ++productStarts;
    const own = n === 1 ? execArgv : execArgv.map((a) => (a.startsWith("--cpu-prof-name=") ? a.replace(/\.cpuprofile$/, `-${n}.cpuprofile`) : a));
    const p = await startChild("servers/product.mjs", { name: `product server (dispatcher ${dispatcher})`, execArgv: own, env: { ...env, BENCH_SERVER_OPTIONS: serverOptions(dispatcher) } });
    children.push(p);
    return p;
  };
  const startWorker = async (name) => {
    // each worker profiles into a file of its own
    const own = execArgv.map((a) => (a.startsWith("--cpu-prof-name=") ? a.replace(/\.cpuprofile$/, `-${name.replace(/\W+/g, "-")}.cpuprofile`) : a));
    const w = await startChild("servers/worker.mjs", { name, execArgv: own, env: { ...env, BENCH_SERVER_OPTIONS: serverOptions(true) } });
    children.push(w);
    return w;
  };
  const stopChild = async (c) => {
    await c.stop();
    children.splice(children.indexOf(c), 1);
  };
  const out = { endpoints: ENDPOINTS };
  try {
    // the delivery settings the children run with (defaults, or ARS_DELIVERY_* from the environment)
    const cfg = (await loadServer()).loadConfig().delivery;
    out.config = { concurrency: cfg.concurrency, perEndpoint: cfg.perEndpointConcurrency, batchSize: cfg.batchSize, poolSize: cfg.poolSize, publishConcurrency, publishBatch };
    let product = await startProduct(runs("burst") || runs("paced"));
    let pool = new Pool(product.url, { connections: publishConcurrency });
    const createEndpoint = async (host, port = receiver.port) => {
      const res = await pool.request({
        path: "/v2/webhook_endpoints",
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ url: `https://${host}:${port}/webhook`, description: "bench receiver" }),
      });
      const body = await res.body.json();
      if (res.statusCode !== 201) throw new Error(`creating the endpoint for ${host} answered ${res.statusCode}: ${JSON.stringify(body)}`);
      return { host, id: body.id, secret: body.secret };
    };
    const deleteEndpoint = async (ep) => {
      const res = await pool.request({ path: `/v2/webhook_endpoints/${ep.id}`, method: "DELETE", headers: { authorization: `Bearer ${token}` } });
      await res.body.dump();
      if (res.statusCode !== 204) throw new Error(`deleting endpoint ${ep.host} answered ${res.statusCode}`);
    };

    // 5 endpoints through the API, default settings (all payload fields, signed, no receiver auth)
    const endpoints = [];
    for (const host of HOSTS) endpoints.push(await createEndpoint(host));
    const normalIds = endpoints.map((e) => e.id);
    receiver.send({ type: "secrets", secrets: Object.fromEntries(endpoints.map((e) => [e.host, e.secret])) });
    let nextEvent = 0;
    const newEvents = (n) => Array.from({ length: n }, () => makeEvent(nextEvent++, eventSet));

    /** Peak RSS and, at the sampled peak, the heap split of `child`. */
    const memoryWatch = (child) => {
      const m = { peakSampled: 0, peakHeap: null, seq: 0 };
      m.sample = () => {
        const { rssMb } = child.rss();
        if (rssMb > m.peakSampled) {
          m.peakSampled = rssMb;
          const seq = ++m.seq;
          child.send({ type: "mem", seq });
          child
            .next((x) => x.type === "mem" && x.seq === seq, 5_000)
            .then((x) => {
              if (rssMb >= m.peakSampled) m.peakHeap = { rssMb, heapUsedMb: x.heapUsed / 2 ** 20, heapTotalMb: x.heapTotal / 2 ** 20, externalMb: x.external / 2 ** 20, arrayBuffersMb: x.arrayBuffers / 2 ** 20 };
            })
            .catch(() => undefined);
        }
      };
      return m;
    };

    /** Waits until every delivery to `ids` is recorded (nothing pending or retrying). */
    const recorded = async (ids = normalIds) => {
      let states = {};
      for (let i = 0; i < 300; i++) {
        states = await deliveryStates(databaseUrl, orgId, ids);
        if (!states.pending && !states.retrying) break;
        await sleep(200);
      }
      return states;
    };

    const checkHits = (name, hits, target, a) => {
      if (hits.badSignatures) throw new Error(`receiver: ${hits.badSignatures} requests with a wrong signature`);
      if (a.delivered < target) throw new Error(`${name}: only ${a.delivered}/${target} deliveries arrived`);
    };

    // ---- burst and paced: API + dispatcher in one process, published through the API
    const mem = memoryWatch(product);
    const phase = async (name, events, opts) => {
      log(`dispatcher: ${name}: publishing ${events.length} events${opts.rate ? ` at ${opts.rate}/s` : ` as fast as ${publishConcurrency} concurrent requests allow`}${opts.batch > 1 ? `, ${opts.batch} per request` : ""}`);
      const target = events.length * ENDPOINTS;
      const sampler = setInterval(mem.sample, 100);
      const cpu0 = product.cpuMs();
      const { sentAt, ackAt } = await publish(pool, publishTokens ?? token, events, opts);
      await waitForArrivals(receiver, target, 1_200_000, mem.sample);
      const cpuMs = product.cpuMs() - cpu0;
      clearInterval(sampler);
      const hits = await takeHits(receiver);
      if (hits.checked.length !== ENDPOINTS) throw new Error(`receiver checked signatures of ${hits.checked.length}/${ENDPOINTS} endpoints only`);
      const a = analyse(hits.hits, sentAt, ackAt);
      checkHits(name, hits, target, a);
      const states = await recorded();
      log(
        `dispatcher: ${name}: server CPU ${(cpuMs / a.delivered).toFixed(2)} ms per delivery (ingestion included); ${a.delivered} deliveries in ${a.seconds.toFixed(1)} s = ${a.deliveriesPerSec.toFixed(0)}/s (publishing took ${a.publishSeconds.toFixed(1)} s = ${a.eventsPerSec.toFixed(0)} events/s); event→first attempt p50 ${a.p50.toFixed(1)} ms p99 ${a.p99.toFixed(1)} ms; states ${JSON.stringify(states)}`,
      );
      receiver.send({ type: "secrets", secrets: Object.fromEntries(endpoints.map((e) => [e.host, e.secret])) });
      return { ...a, events: events.length, states, connections: hits.connections, rate: opts.rate, batch: opts.batch ?? 1, cpuPerDelivery: cpuMs / a.delivered };
    };
    if (runs("burst")) out.burst = await phase("burst", newEvents(eventCount), { concurrency: publishConcurrency, batch: publishBatch });
    if (runs("paced")) {
      // Below capacity by construction: at most half the event rate the burst sustained end to end,
      // so the paced latency is the dispatcher's own and not time spent queueing.
      const pacedRate = Math.max(1, Math.min(paced.rate, out.burst ? Math.floor(out.burst.deliveriesPerSec / ENDPOINTS / 2) : paced.rate));
      if (paced.events) out.paced = await phase("paced", newEvents(Math.min(paced.events, Math.ceil(pacedRate * 20))), { rate: pacedRate });
    }
    if (out.burst || out.paced) {
      out.peakRssMb = product.rss().peakMb;
      out.sampledPeakRssMb = mem.peakSampled;
      out.peakHeap = mem.peakHeap;
    }
    await pool.close();
    await stopChild(product);

    // ---- the baseline: same receiver, same requests, the dispatcher's effective concurrency
    const concurrency = Math.min(cfg.concurrency, cfg.perEndpointConcurrency * ENDPOINTS);
    log(`dispatcher: baseline: ${eventCount * ENDPOINTS} signed requests with undici at concurrency ${concurrency}`);
    const base = await startChild("servers/dispatch-baseline.mjs", {
      name: "dispatch baseline",
      // with --profile, the loop profiles too (only the profiler's flags: the product's options are not the loop's)
      execArgv: execArgv.filter((a) => a.startsWith("--cpu-prof")).map((a) => (a.startsWith("--cpu-prof-name=") ? a.replace(/\.cpuprofile$/, "-loop.cpuprofile") : a)),
    });
    children.push(base);
    base.send({ ca: certs.ca, port: receiver.port, endpoints: endpoints.map(({ host, secret }) => ({ host, secret })), eventCount, eventSet, concurrency, userAgent: cfg.userAgent });
    const baseCpu0 = base.cpuMs();
    const done = await base.next((m) => m.type === "done", 600_000);
    const baseCpu = base.cpuMs() - baseCpu0;
    await stopChild(base);
    const baseHits = await takeHits(receiver);
    if (baseHits.badSignatures) throw new Error(`receiver: ${baseHits.badSignatures} baseline requests with a wrong signature`);
    out.baseline = { delivered: baseHits.hits.length, deliveriesPerSec: done.sent / ((done.finished - done.started) / 1000), concurrency, cpuPerDelivery: baseCpu / done.sent };
    log(`dispatcher: baseline: ${out.baseline.delivered} requests at ${out.baseline.deliveriesPerSec.toFixed(0)}/s, ${out.baseline.cpuPerDelivery.toFixed(2)} CPU ms per request`);
    if (out.burst) out.ratio = out.burst.deliveriesPerSec / out.baseline.deliveriesPerSec;

    // ---- the engine alone: events stored through the API (no dispatcher anywhere), then a worker
    product = await startProduct(false);
    pool = new Pool(product.url, { connections: publishConcurrency });
    /**
     * Stores `eventCount` events (fanned out to the five endpoints plus `extra`), then starts one
     * worker and measures how fast the five endpoints' deliveries arrive: first to last arrival.
     */
    const engineRun = async (name, extra = null) => {
      await cleanup(databaseUrl, orgId, { keepEndpoints: true });
      const events = newEvents(eventCount);
      log(`dispatcher: ${name}: storing ${events.length} events (${ENDPOINTS}${extra ? ` + 1 ${extra.label}` : ""} endpoints, no dispatcher running)`);
      const { sentAt, ackAt } = await publish(pool, publishTokens ?? token, events, { concurrency: publishConcurrency, expected: ENDPOINTS + (extra ? 1 : 0), batch: publishBatch });
      await takeHits(receiver);
      receiver.send({ type: "secrets", secrets: Object.fromEntries(endpoints.map((e) => [e.host, e.secret])) });
      log(`dispatcher: ${name}: API process (no dispatcher) peak RSS so far ${product.rss().peakMb.toFixed(0)} MB`);
      const worker = await startWorker(`worker (${name})`);
      const wmem = memoryWatch(worker);
      const sampler = setInterval(wmem.sample, 100);
      const cpu0 = worker.cpuMs();
      const db0 = postgresCpuMs(new URL(databaseUrl).pathname.slice(1));
      const target = events.length * ENDPOINTS;
      await waitForArrivals(receiver, target, 1_200_000, wmem.sample, HOSTS);
      const cpuMs = worker.cpuMs() - cpu0;
      clearInterval(sampler);
      const hits = await takeHits(receiver);
      const a = analyse(hits.hits, sentAt, ackAt);
      checkHits(name, hits, target, a);
      const states = await recorded();
      // the database's side, the outcomes' records included (recorded() waited for them)
      const dbCpuMs = postgresCpuMs(new URL(databaseUrl).pathname.slice(1)) - db0;
      // attempts at the sixth endpoint, from its attempt rows (a refused connection never reaches the receiver)
      // (a slow answer is recorded only when it comes: its requests are counted at the receiver)
      const extraHits = extra ? Math.max(hits.hits.filter((h) => h[1] === extra.host).length, await attemptsAt(databaseUrl, orgId, extra.host)) : 0;
      const peakRssMb = worker.rss().peakMb;
      await stopChild(worker);
      const r = { events: events.length, delivered: a.delivered, duplicates: a.duplicates, seconds: a.delivered / a.receiverPerSec, deliveriesPerSec: a.receiverPerSec, cpuPerDelivery: cpuMs / a.delivered, dbCpuPerDelivery: dbCpuMs / a.delivered, peakRssMb, peakHeap: wmem.peakHeap, states, extraRequests: extraHits };
      if (wmem.peakHeap) log(`dispatcher: ${name}: worker heap at its sampled RSS peak: ${JSON.stringify(Object.fromEntries(Object.entries(wmem.peakHeap).map(([k, v]) => [k, Math.round(v)])))}`);
      log(`dispatcher: ${name}: ${a.delivered} deliveries to the ${ENDPOINTS} endpoints at ${a.receiverPerSec.toFixed(0)}/s (first to last arrival), worker CPU ${r.cpuPerDelivery.toFixed(2)} ms per delivery, PostgreSQL CPU ${r.dbCpuPerDelivery.toFixed(2)} ms per delivery, peak RSS ${peakRssMb.toFixed(0)} MB${extra ? `, ${extraHits} attempts at the endpoint ${extra.label}` : ""}; states ${JSON.stringify(states)}`);
      return r;
    };
    // ---- the publish path alone: one event per request, one request at a time, no dispatcher
    // running. Event → first attempt starts with this request (the paced phase's "from send").
    if (runs("publish")) {
      await cleanup(databaseUrl, orgId, { keepEndpoints: true });
      const events = newEvents(PUBLISH_ONE_EVENTS);
      // tokens in turn: one token's default rate limit (1,200 a minute) would answer 429 within the phase
      const tokens = publishTokens?.length ? publishTokens : [token];
      const dbName = new URL(databaseUrl).pathname.slice(1);
      log(`dispatcher: publish: ${events.length} events, one per POST /v2/internal/events, one at a time (no dispatcher running)`);
      const cpu0 = product.cpuMs();
      const db0 = postgresCpuMs(dbName);
      const took = [];
      for (const [i, ev] of events.entries()) {
        const t = now();
        await publish(pool, tokens[i % tokens.length], [ev], { concurrency: 1 });
        took.push(now() - t);
      }
      took.sort((a, b) => a - b);
      out.publishOne = {
        events: events.length,
        p50: percentile(took, 50),
        p90: percentile(took, 90),
        cpuPerEvent: (product.cpuMs() - cpu0) / events.length,
        dbCpuPerEvent: (postgresCpuMs(dbName) - db0) / events.length,
      };
      log(`dispatcher: publish: p50 ${out.publishOne.p50.toFixed(2)} ms, p90 ${out.publishOne.p90.toFixed(2)} ms, server CPU ${out.publishOne.cpuPerEvent.toFixed(2)} ms and PostgreSQL CPU ${out.publishOne.dbCpuPerEvent.toFixed(2)} ms per event`);
    }

    // The engine alone, and beside each of its runs the engine with a slow or a refusing sixth
    // endpoint. A slowdown is a difference of two throughputs, and this machine's speed drifts by
    // more than the 10 % bound within minutes: each round measures the engine right before the
    // receivers it is compared with, and the figures judged are medians over the rounds.
    const receivers = [
      ["slow", SLOW_HOST, `answering after ${SLOW_MS / 1000} s`, () => receiver.port],
      ["refusing", REFUSING_HOST, "refusing connections", closedPort],
    ].filter(([key]) => runs(key));
    if (runs("engine") || receivers.length) {
      const rounds = receivers.length ? Math.max(1, receiverRounds) : 1;
      const engines = [];
      const withReceiver = Object.fromEntries(receivers.map(([key]) => [key, []]));
      for (let i = 0; i < rounds; i++) {
        const round = rounds > 1 ? ` (round ${i + 1}/${rounds})` : "";
        const engine = await engineRun(`engine${round}`);
        engines.push(engine);
        for (const [key, host, label, port] of receivers) {
          const ep = await createEndpoint(host, await port());
          const r = await engineRun(`${key}${round}`, { host, label });
          await deleteEndpoint(ep);
          r.slowdown = 1 - r.deliveriesPerSec / engine.deliveriesPerSec;
          withReceiver[key].push(r);
          log(`dispatcher: ${key}${round}: the other endpoints got ${(r.slowdown * 100).toFixed(1)} % fewer deliveries/s than the engine run just before`);
        }
      }
      out.engine = { ...medianRun(engines, (r) => r.deliveriesPerSec), peakRssMb: Math.max(...engines.map((r) => r.peakRssMb)), rounds: engines.map((r) => r.deliveriesPerSec) };
      out.engine.ratio = out.engine.deliveriesPerSec / out.baseline.deliveriesPerSec;
      for (const [key] of receivers) {
        const measured = withReceiver[key];
        out[key] = { ...medianRun(measured, (r) => r.slowdown), rounds: measured.map((r) => r.slowdown) };
        if (rounds > 1) log(`dispatcher: ${key}: median slowdown of ${rounds} rounds ${(out[key].slowdown * 100).toFixed(1)} % (${out[key].rounds.map((x) => `${(x * 100).toFixed(1)} %`).join(", ")})`);
      }
    }

    // ---- scale-out: the API plus two workers on one PostgreSQL, events published while they run
    if (runs("twoWorkers")) {
      await cleanup(databaseUrl, orgId, { keepEndpoints: true });
      await takeHits(receiver);
      const workers = [await startWorker("worker 1"), await startWorker("worker 2")];
      const events = newEvents(eventCount);
      log(`dispatcher: twoWorkers: publishing ${events.length} events through the API while two workers deliver`);
      const cpu0 = workers.map((w) => w.cpuMs());
      const { sentAt, ackAt } = await publish(pool, publishTokens ?? token, events, { concurrency: publishConcurrency, batch: publishBatch });
      const target = events.length * ENDPOINTS;
      await waitForArrivals(receiver, target, 1_200_000);
      await sleep(1_000); // a duplicate would arrive after the target count was reached
      const cpu = workers.map((w, i) => w.cpuMs() - cpu0[i]);
      const hits = await takeHits(receiver);
      const a = analyse(hits.hits, sentAt, ackAt);
      checkHits("twoWorkers", hits, target, a);
      const states = await recorded();
      const c = new pg.Client({ connectionString: databaseUrl });
      await c.connect();
      const { rows: [att] } = await c.query(
        `SELECT count(*)::int AS attempts, count(DISTINCT delivery_id)::int AS deliveries FROM webhook_delivery_attempts WHERE org_id = $1`,
        [orgId],
      );
      await c.end();
      for (const w of workers) await stopChild(w);
      out.twoWorkers = {
        events: events.length,
        requests: hits.hits.length,
        delivered: a.delivered,
        duplicates: a.duplicates,
        deliveriesPerSec: a.deliveriesPerSec,
        states,
        attemptRows: att.attempts,
        deliveriesWithAttempts: att.deliveries,
        cpuShare: cpu.map((x) => x / cpu.reduce((p, q) => p + q, 0)),
        exactlyOnce: a.duplicates === 0 && hits.hits.length === target && states.succeeded === target && att.attempts === target,
      };
      log(`dispatcher: twoWorkers: ${hits.hits.length} requests for ${target} deliveries (${a.duplicates} duplicates), ${a.deliveriesPerSec.toFixed(0)}/s end to end; states ${JSON.stringify(states)}; ${att.attempts} attempt rows; CPU split ${out.twoWorkers.cpuShare.map((x) => `${(x * 100).toFixed(0)} %`).join(" / ")}`);
    }
    await pool.close();
    return out;
  } finally {
    for (const c of children.reverse()) await c.stop().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
}
