#!/usr/bin/env node
// `npm run cluster` — the scale-out topology on one machine (README "Scaling out"): a PostgreSQL
// primary and a streaming replica (made with the PostgreSQL server binaries), three API processes
// (`serve`, lists on the replica) behind a small round-robin proxy, two `worker` processes, a
// real HTTPS receiver, and traffic for a minute: list reads from several tokens (enough to meet
// the shared rate limit) and audit.completed events. Ends with a one-screen summary.
//
//   npm run cluster [-- --seconds 60 --readers 8 --tokens 2 --events-per-second 100 --rate-limit 300]
//
// Needs `npm run build`. Every process it starts is its own child and is stopped by its pid.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { writeFileSync, mkdtempSync, rmSync, readFileSync } from "node:fs";
import { Agent, createServer, request } from "node:http";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { once } from "node:events";
import pg from "pg";
import { makeEvent } from "../bench/lib/events.mjs";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const DIST = join(ROOT, "apps", "server", "dist");
const KIT = join(ROOT, "packages", "test-kit", "dist");
const RECEIVER_HOST = "hooks.cluster-receiver.com";
const API_PROCESSES = 3;
const WORKERS = 2;

/** VmHWM (peak RSS) of a process in MB, from /proc. */
function peakRssMb(pid) {
  try {
    return Number(/^VmHWM:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1]) / 1024;
  } catch {
    return NaN;
  }
}

/** Starts `ars <command>` (the built CLI) as a child; resolves once `ready` matches its output. */
async function startArs(command, env, ready, name, log) {
  const child = spawn(process.execPath, [join(DIST, "main.js"), command], { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let seen = "";
  const onData = (chunk) => {
    seen = (seen + chunk).slice(-8000);
  };
  child.stdout.setEncoding("utf8").on("data", onData);
  child.stderr.setEncoding("utf8").on("data", onData);
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not start within 60 s:\n${seen}`)), 60_000);
    child.once("exit", (code) => reject(new Error(`${name} exited (${code}):\n${seen}`)));
    const check = () => {
      if (ready.test(seen)) {
        clearTimeout(timer);
        child.stdout.off("data", check);
        child.stderr.off("data", check);
        resolve();
      }
    };
    child.stdout.on("data", check);
    child.stderr.on("data", check);
  });
  child.removeAllListeners("exit");
  log(`${name} started (pid ${child.pid})`);
  return {
    name,
    pid: child.pid,
    output: () => seen,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, "exit");
      child.kill("SIGTERM");
      const hard = setTimeout(() => child.kill("SIGKILL"), 20_000);
      await exited;
      clearTimeout(hard);
    },
  };
}

/** A round-robin HTTP proxy over the API processes: what a load balancer does, in a few lines. */
async function startProxy(ports) {
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  const perBackend = ports.map(() => 0);
  let next = 0;
  const server = createServer((req, res) => {
    const i = next++ % ports.length;
    perBackend[i] += 1;
    const upstream = request({ host: "127.0.0.1", port: ports[i], method: req.method, path: req.url, headers: req.headers, agent }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    });
    upstream.on("error", () => {
      if (!res.headersSent) res.writeHead(502).end();
      else res.destroy();
    });
    req.pipe(upstream);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    perBackend,
    close: () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(resolve);
      agent.destroy();
    }),
  };
}

/**
 * Runs the topology for `seconds` of traffic and returns its figures. `log` gets progress lines.
 * Used by `npm run cluster` and by the bench's `cluster` scenario.
 */
export async function runCluster({ seconds = 60, readers = 8, tokens: tokenCount = 2, eventsPerSecond = 100, batch = 10, rateLimitPerMinute = 300, log = () => undefined } = {}) {
  const { startPrimaryWithReplica } = await import(pathToFileURL(join(KIT, "replica.js")).href);
  const { startReceiver } = await import(pathToFileURL(join(KIT, "receiver.js")).href);
  const { createTestCa } = await import(pathToFileURL(join(KIT, "ca.js")).href);
  const server = await import(pathToFileURL(join(DIST, "index.js")).href);

  const stoppers = [];
  const stopAll = async () => {
    for (const stop of stoppers.reverse()) await stop().catch(() => undefined);
  };
  try {
    // ---- databases
    const pair = await startPrimaryWithReplica();
    stoppers.push(() => pair.stop());
    log(`primary on :${pair.primaryPort}, streaming replica on :${pair.replicaPort}`);
    const admin = new pg.Client({ connectionString: pair.primaryUrl() });
    await admin.connect();
    await admin.query("CREATE DATABASE ars");
    await admin.end();
    const databaseUrl = pair.primaryUrl("ars");
    const db = await server.openDatabase({ databaseUrl, poolSize: 2 });
    let org, reader, ingest;
    try {
      await server.migrate(db);
      org = await server.createOrg(db, { name: "Cluster Health" });
      const readScopes = ["question_sets:read", "coding_evaluations:read", "webhooks:read", "webhooks:write"];
      reader = [];
      for (let i = 0; i < tokenCount; i++) reader.push((await server.createToken(db, { orgId: org.id, scopes: readScopes, name: `reader ${i}` })).token);
      ingest = (await server.createToken(db, { orgId: org.id, scopes: [...readScopes, "internal:ingest"], name: "ingest" })).token;
    } finally {
      await db.close();
    }

    // ---- receiver (the workers trust its CA and reach its name on loopback)
    const work = mkdtempSync(join(tmpdir(), "ars-cluster-"));
    stoppers.push(async () => rmSync(work, { recursive: true, force: true }));
    const ca = createTestCa({ fresh: true });
    const caFile = join(work, "ca.pem");
    writeFileSync(caFile, ca.cert);
    const seen = new Map();
    let received = 0;
    const receiver = await startReceiver({
      ca,
      hostname: RECEIVER_HOST,
      record: false,
      handler: (req, res) => {
        received += 1;
        const key = `${req.path} ${req.headers["webhook-id"]}`;
        seen.set(key, (seen.get(key) ?? 0) + 1);
        res.writeHead(200).end("ok");
      },
    });
    stoppers.push(() => receiver.close());

    const common = {
      DATABASE_URL: databaseUrl,
      ARS_ENCRYPTION_KEY: randomBytes(32).toString("base64"),
      ARS_LOG_LEVEL: "info",
      ARS_STATIC_HOSTS: `${RECEIVER_HOST}=127.0.0.1`,
      ARS_ALLOW_PRIVATE_CIDRS: "127.0.0.1/32",
      ARS_EXTRA_CA_FILE: caFile,
      ARS_RATE_LIMIT_PER_MINUTE: String(rateLimitPerMinute),
      // five processes on one machine: each its own free metrics port
      ARS_METRICS_PORT: "0",
    };

    // ---- seed lists for the readers (the CLI's own seed command, on the primary)
    await new Promise((resolve, reject) => {
      const seed = spawn(process.execPath, [join(DIST, "main.js"), "seed", "--org", org.id, "--question-sets", "50", "--coding-evaluations", "1000"], { env: { ...process.env, ...common }, stdio: "ignore" });
      seed.once("exit", (code) => (code === 0 ? resolve() : reject(new Error(`seed exited ${code}`))));
    });

    // ---- processes
    const apis = [];
    for (let i = 0; i < API_PROCESSES; i++) {
      const api = await startArs("serve", { ...common, DATABASE_READ_URL: pair.replicaUrl("ars"), ARS_DISPATCHER: "false", PORT: "0" }, /listening on http:\/\/127\.0\.0\.1:\d+/, `api ${i + 1}`, log);
      stoppers.push(() => api.stop());
      apis.push(api);
    }
    const ports = apis.map((a) => Number(/listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(a.output())?.[1]));
    if (ports.some((p) => !p)) throw new Error(`could not read the API ports from their logs:\n${apis.map((a) => a.output()).join("\n")}`);
    const workers = [];
    for (let i = 0; i < WORKERS; i++) {
      const worker = await startArs("worker", common, /delivery worker started/, `worker ${i + 1}`, log);
      stoppers.push(() => worker.stop());
      workers.push(worker);
    }
    const proxy = await startProxy(ports);
    stoppers.push(() => proxy.close());
    log(`proxy ${proxy.url} → api ports ${ports.join(", ")}`);

    const call = async (token, path, body) => {
      const res = await fetch(proxy.url + path, {
        method: body ? "POST" : "GET",
        headers: { authorization: `Bearer ${token}`, ...(body && { "content-type": "application/json" }) },
        body: body && JSON.stringify(body),
      });
      const text = await res.text();
      return { status: res.status, body: text, rateLimit: res.headers.get("ratelimit") };
    };
    const endpoints = [];
    for (const path of ["/a", "/b"]) {
      const created = await call(ingest, "/v2/webhook_endpoints", { url: `https://${RECEIVER_HOST}:${receiver.port}${path}` });
      if (created.status !== 201) throw new Error(`creating an endpoint answered ${created.status}: ${created.body}`);
      endpoints.push(JSON.parse(created.body).id);
    }
    const set = JSON.parse((await call(ingest, "/v2/question_sets?limit=1")).body).data[0];

    // ---- traffic
    log(`traffic for ${seconds} s: ${readers} list readers over ${tokenCount} tokens, ${eventsPerSecond} events/s`);
    const statuses = new Map();
    const count = (status) => statuses.set(status, (statuses.get(status) ?? 0) + 1);
    // 2xx per token and rate-limit window: the window is the one the answer's RateLimit field
    // names (t = seconds until it ends; windows end on the database's whole minutes), so a request
    // in flight across a boundary is counted in the window that admitted it
    const okPerTokenWindow = new Map();
    let published = 0;
    let lagMaxSeconds = 0;
    let lagMaxBytes = 0;
    const started = Date.now();
    const until = started + seconds * 1000;
    const paths = ["/v2/question_sets?limit=20", "/v2/coding_evaluations?limit=50", "/v2/coding_evaluations?limit=10&include_total=true", "/v2/question_sets?limit=5&include_total=true"];
    const readLoop = async (i) => {
      for (let n = 0; Date.now() < until; n++) {
        const token = reader[(i + n) % reader.length];
        const { status, rateLimit } = await call(token, paths[n % paths.length]);
        count(status);
        if (status === 200) {
          const t = Number(/;\s*t=(\d+)/.exec(rateLimit ?? "")?.[1]);
          if (!Number.isFinite(t)) throw new Error(`a 200 without a RateLimit field: ${rateLimit}`);
          const key = `${token.slice(-6)} ${Math.round((Date.now() + t * 1000) / 60_000)}`;
          okPerTokenWindow.set(key, (okPerTokenWindow.get(key) ?? 0) + 1);
        }
      }
    };
    const publishLoop = async () => {
      const perBatchMs = (batch / eventsPerSecond) * 1000;
      for (let n = 0; Date.now() < until; n++) {
        const due = started + n * perBatchMs;
        if (due > Date.now()) await new Promise((r) => setTimeout(r, due - Date.now()));
        const events = Array.from({ length: batch }, (_, k) => makeEvent(n * batch + k, set));
        const { status, body } = await call(ingest, "/v2/internal/event_batches", { events });
        count(status);
        if (status === 200 || status === 201) published += events.length;
        else if (status !== 429) throw new Error(`publishing answered ${status}: ${body}`);
      }
    };
    const lagSampler = setInterval(() => {
      pair.lag().then((l) => {
        if (Number.isFinite(l.bytes)) lagMaxBytes = Math.max(lagMaxBytes, l.bytes);
        if (l.seconds !== null) lagMaxSeconds = Math.max(lagMaxSeconds, l.seconds);
      }, () => undefined);
    }, 1000);
    await Promise.all([...Array.from({ length: readers }, (_, i) => readLoop(i)), publishLoop()]);
    const trafficSeconds = (Date.now() - started) / 1000;
    clearInterval(lagSampler);

    // ---- drain: every delivery arrives (and none twice)
    const expected = published * endpoints.length;
    const drainStart = Date.now();
    while (seen.size < expected && Date.now() - drainStart < 120_000) await new Promise((r) => setTimeout(r, 100));
    const deliverySeconds = (Date.now() - started) / 1000;
    await pair.caughtUp().catch(() => undefined);
    const finalLag = await pair.lag();

    const requests = [...statuses.values()].reduce((a, b) => a + b, 0);
    return {
      seconds: trafficSeconds,
      requests,
      requestsPerSecond: requests / trafficSeconds,
      statuses: Object.fromEntries([...statuses].sort(([a], [b]) => a - b)),
      tooMany: statuses.get(429) ?? 0,
      perApiProcess: [...proxy.perBackend],
      maxOkPerTokenWindow: Math.max(0, ...okPerTokenWindow.values()),
      rateLimitPerMinute,
      events: published,
      expectedDeliveries: expected,
      deliveries: seen.size,
      requestsAtReceiver: received,
      duplicates: received - seen.size,
      deliveriesPerSecond: seen.size / deliverySeconds,
      deliverySeconds,
      replicaLag: { maxSeconds: lagMaxSeconds, maxBytes: lagMaxBytes, finalBytes: finalLag.bytes },
      peakRssMb: Object.fromEntries([...apis, ...workers].map((p) => [p.name, Math.round(peakRssMb(p.pid))])),
    };
  } finally {
    await stopAll();
  }
}

/** How far past the limit a token got in a window; the check fails beyond 5 % of the limit. */
export const RATE_LIMIT_TOLERANCE = 0.05;
export function rateLimitCheck(s) {
  const most = s.maxOkPerTokenWindow ?? s.maxOkPerTokenMinute;
  const over = (most - s.rateLimitPerMinute) / s.rateLimitPerMinute;
  const ok = over <= RATE_LIMIT_TOLERANCE;
  const pct = `${over >= 0 ? "+" : ""}${(over * 100).toFixed(1)} %`;
  return { ok, line: `most 2xx of one token in one window ${most} vs limit ${s.rateLimitPerMinute} (${pct}; bound +${RATE_LIMIT_TOLERANCE * 100} % over 3 processes): ${ok ? "ok" : "EXCEEDED"}` };
}

export function renderSummary(s) {
  const f = (n, d = 0) => (Number.isFinite(n) ? n.toFixed(d) : "–");
  return [
    `cluster: 3 API processes (lists on the replica) behind a round-robin proxy, 2 workers, primary + streaming replica`,
    `traffic        ${f(s.seconds, 1)} s, ${s.requests} requests, ${f(s.requestsPerSecond)} requests/s (per API process: ${s.perApiProcess.join(" / ")})`,
    `statuses       ${Object.entries(s.statuses).map(([k, v]) => `${k}: ${v}`).join(", ")}`,
    `429s           ${s.tooMany}; most 2xx of one token in one window: ${s.maxOkPerTokenWindow} (limit ${s.rateLimitPerMinute}, shared by the 3 API processes)`,
    `rate limit     ${rateLimitCheck(s).line}`,
    `deliveries     ${s.deliveries} of ${s.expectedDeliveries} (${s.events} events × 2 endpoints), ${f(s.deliveriesPerSecond)} deliveries/s, all in ${f(s.deliverySeconds, 1)} s`,
    `duplicates     ${s.duplicates} (${s.requestsAtReceiver} requests at the receiver)`,
    `replica lag    max ${f(s.replicaLag.maxSeconds * 1000)} ms, ${s.replicaLag.maxBytes} bytes behind at most; ${s.replicaLag.finalBytes} bytes after the run`,
    `peak RSS (MB)  ${Object.entries(s.peakRssMb).map(([k, v]) => `${k} ${v}`).join(", ")}`,
  ].join("\n");
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values } = parseArgs({
    options: {
      seconds: { type: "string", default: "60" },
      readers: { type: "string", default: "8" },
      tokens: { type: "string", default: "2" },
      "events-per-second": { type: "string", default: "100" },
      "rate-limit": { type: "string", default: "300" },
      help: { type: "boolean", default: false },
    },
  });
  if (values.help) {
    console.log("npm run cluster [-- --seconds 60 --readers 8 --tokens 2 --events-per-second 100 --rate-limit 300]");
    process.exit(0);
  }
  const summary = await runCluster({
    seconds: Number(values.seconds),
    readers: Number(values.readers),
    tokens: Number(values.tokens),
    eventsPerSecond: Number(values["events-per-second"]),
    rateLimitPerMinute: Number(values["rate-limit"]),
    log: (line) => console.error(`[cluster ${new Date().toISOString().slice(11, 19)}] ${line}`),
  });
  console.log(`\n${renderSummary(summary)}`);
  // a cluster that lost or repeated a delivery, or let a token past the shared limit, fails
  const failures = [];
  if (summary.deliveries < summary.expectedDeliveries) failures.push(`${summary.expectedDeliveries - summary.deliveries} deliveries missing`);
  if (summary.duplicates > 0) failures.push(`${summary.duplicates} duplicate deliveries`);
  if (!rateLimitCheck(summary).ok) failures.push(`a token got more than ${RATE_LIMIT_TOLERANCE * 100} % past the limit in one window`);
  if (failures.length) {
    console.error(`cluster: ${failures.join("; ")}`);
    process.exit(1);
  }
  process.exit(0);
}
