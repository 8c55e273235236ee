#!/usr/bin/env node
// CI: the shipped Prometheus rules and a real Prometheus scraping the service.
//  1. The README's commands, verbatim: `promtool check rules` and `promtool test rules` on ops/prometheus/.
//  2. A live `serve` (dispatcher off) and a live `worker`, built from apps/server/dist, on one
//     PostgreSQL database, each with its metrics listener on a port of its own; a real HTTPS receiver
//     (the test kit's CA and receiver); Debian's Prometheus scraping both every second, with the
//     alert rules loaded.
//  3. Traffic: events published while the receiver holds its answers (the queue fills), then
//     released (the deliveries succeed). Prometheus's HTTP API must show the queue rising and
//     draining, the worker's outcomes and attempts, the API's requests; then the worker is stopped
//     and its target must go down.
//
//   node scripts/ci/prometheus.mjs     (needs the server built, PostgreSQL at PG_ADMIN_URL, and
//                                       Debian's prometheus package: .ci/run installs it)
import { spawn, spawnSync } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { createOrg, createToken, migrate, openDatabase } from "@audit-review/server";
import { createTestCa } from "@audit-review/test-kit/ca";
import { startReceiver } from "@audit-review/test-kit/receiver";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const PROMETHEUS = process.env.PROMETHEUS_BIN || "/usr/bin/prometheus";
const PG_ADMIN_URL = process.env.PG_ADMIN_URL || "postgresql://postgres@127.0.0.1:5432/postgres";
const RECEIVER_HOST = "hooks.ci-prometheus.dev";
const EVENTS = 20;
const log = (msg) => process.stdout.write(`prometheus: ${msg}\n`);
const cleanups = [];
async function cleanup() {
  for (const fn of cleanups.splice(0).reverse()) await Promise.resolve().then(fn).catch(() => undefined);
}
async function fail(msg) {
  process.stderr.write(`prometheus: FAILED: ${msg}\n`);
  await cleanup();
  process.exit(1);
}
const sh = (command) => {
  log(`$ ${command}`);
  const r = spawnSync(command, { cwd: root, shell: true, encoding: "utf8" });
  if (r.status !== 0) return fail(`\`${command}\` exited ${r.status}:\n${r.stdout}${r.stderr}`);
  process.stdout.write(r.stdout);
};

/** A port free right now on loopback. */
const freePort = () =>
  new Promise((ok, ko) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => ok(port));
    });
    s.on("error", ko);
  });

/** Waits for `check` to return a truthy value, every 250 ms, for at most `ms`. */
async function until(what, check, ms = 60_000) {
  const deadline = Date.now() + ms;
  let last;
  for (;;) {
    try {
      last = await check();
      if (last) return last;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) return fail(`timed out waiting for ${what} (last: ${last instanceof Error ? last.message : JSON.stringify(last)})`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** Starts a CLI role and resolves once it said `ready` on stdout. */
function startRole(args, env, ready) {
  const child = spawn(process.execPath, [join(root, "apps/server/dist/main.js"), ...args], { cwd: tmpdir(), env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout.on("data", (c) => (out += c));
  child.stderr.on("data", (c) => (out += c));
  const exited = new Promise((r) => child.once("exit", r));
  cleanups.push(async () => {
    if (child.exitCode === null) child.kill("SIGTERM");
    await exited;
  });
  return new Promise((ok, ko) => {
    child.stdout.on("data", () => out.includes(ready) && ok({ child, exited, output: () => out }));
    void exited.then((code) => ko(new Error(`${args[0]} exited ${code} before it was ready:\n${out}`)));
  });
}

// 1. The README's commands.
sh("promtool check rules ops/prometheus/alerts.yml");
sh("promtool test rules ops/prometheus/alerts.test.yml");

// 2. A database, the receiver, the two roles, Prometheus.
const dbName = `ars_ci_prom_${Date.now()}_${process.pid}`;
const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
try {
  await admin.connect();
} catch (err) {
  if (process.env.CI === "true") await fail(`PostgreSQL is not reachable at ${PG_ADMIN_URL}, and CI=true requires it: ${err.message}`);
  log(`PostgreSQL is not reachable at ${PG_ADMIN_URL}: the live scrape (serve and worker share a database) is skipped outside CI`);
  process.exit(0);
}
await admin.query(`CREATE DATABASE ${dbName}`);
cleanups.push(async () => {
  await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  await admin.end();
});
const databaseUrl = `${PG_ADMIN_URL.replace(/\/[^/]*$/, "")}/${dbName}`;
const db = await openDatabase({ databaseUrl });
await migrate(db);
const org = await createOrg(db, { name: "ci-prometheus" });
const { token } = await createToken(db, { orgId: org.id, scopes: ["webhooks:read", "webhooks:write", "question_sets:read", "internal:ingest"] });
await db.close();

const work = mkdtempSync(join(tmpdir(), "ars-prometheus-"));
cleanups.push(() => rmSync(work, { recursive: true, force: true }));
const ca = createTestCa();
writeFileSync(join(work, "ca.pem"), ca.cert);
let release;
const held = new Promise((r) => (release = r));
const receiver = await startReceiver({
  ca,
  hostname: RECEIVER_HOST,
  handler: async (_req, res) => {
    await held;
    res.writeHead(200).end();
  },
});
cleanups.push(() => receiver.close());

const [serveMetricsPort, workerMetricsPort, prometheusPort] = [await freePort(), await freePort(), await freePort()];
const common = {
  DATABASE_URL: databaseUrl,
  ARS_ENCRYPTION_KEY: randomBytes(32).toString("base64"),
  ARS_LOG_LEVEL: "warn",
  ARS_STATIC_HOSTS: `${RECEIVER_HOST}=127.0.0.1`,
  ARS_ALLOW_PRIVATE_CIDRS: "127.0.0.1/32",
  ARS_EXTRA_CA_FILE: join(work, "ca.pem"),
  ARS_DELIVERY_POLL_MS: "200",
};
const serve = await startRole(["serve"], { ...common, PORT: "0", ARS_DISPATCHER: "false", ARS_METRICS_PORT: String(serveMetricsPort) }, "listening on");
const api = /listening on (http:\/\/\S+)/.exec(serve.output())[1];
const worker = await startRole(["worker"], { ...common, ARS_METRICS_PORT: String(workerMetricsPort) }, "delivery worker running");
log(`serve at ${api} (metrics :${serveMetricsPort}), worker (metrics :${workerMetricsPort})`);

writeFileSync(join(work, "prometheus.yml"), `
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - ${join(root, "ops/prometheus/alerts.yml")}
scrape_configs:
  - job_name: ars-serve
    static_configs: [{ targets: ["127.0.0.1:${serveMetricsPort}"] }]
  - job_name: ars-worker
    static_configs: [{ targets: ["127.0.0.1:${workerMetricsPort}"] }]
`);
sh(`promtool check config ${join(work, "prometheus.yml")}`);
const prometheus = spawn(PROMETHEUS, [
  `--config.file=${join(work, "prometheus.yml")}`,
  `--storage.tsdb.path=${join(work, "data")}`,
  `--web.listen-address=127.0.0.1:${prometheusPort}`,
  "--log.level=warn",
], { stdio: ["ignore", "ignore", "pipe"] });
let prometheusLog = "";
prometheus.stderr.on("data", (c) => (prometheusLog += c));
const prometheusExited = new Promise((r) => prometheus.once("exit", r));
cleanups.push(async () => {
  if (prometheus.exitCode === null) prometheus.kill("SIGTERM");
  await prometheusExited;
});

const promBase = `http://127.0.0.1:${prometheusPort}`;
/** An instant query: the result vector's values by their job label (or the only value as `_`). */
async function query(expr) {
  const res = await fetch(`${promBase}/api/v1/query?query=${encodeURIComponent(expr)}`);
  const body = await res.json();
  if (body.status !== "success") throw new Error(`${expr}: ${JSON.stringify(body)}`);
  return Object.fromEntries(body.data.result.map((r) => [r.metric.job ?? "_", Number(r.value[1])]));
}

await until("Prometheus to scrape both targets", async () => {
  const up = await query('up{job=~"ars-(serve|worker)"}');
  return up["ars-serve"] === 1 && up["ars-worker"] === 1;
});
log("Prometheus scrapes serve and worker");
const rules = await (await fetch(`${promBase}/api/v1/rules`)).json();
const loaded = rules.data.groups.flatMap((g) => g.rules.map((r) => r.name));
if (loaded.length < 8 || !loaded.includes("ArsDeliveryQueueStalled")) await fail(`alert rules not loaded: ${loaded.join(", ")}`);
log(`alert rules loaded: ${loaded.join(", ")}`);

// 3. Traffic: the receiver holds its answers while events are published, so the queue fills.
const call = async (method, path, body) => {
  const res = await fetch(`${api}${path}`, { method, headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: body && JSON.stringify(body) });
  if (!res.ok) await fail(`${method} ${path} answered ${res.status}: ${await res.text()}`);
  return res.json();
};
const set = await call("POST", "/v2/internal/question_sets", { set_name: "CI prometheus", set_code: "CI-PROM", is_production: false, questions: [{ query: "Q" }] });
await call("POST", "/v2/webhook_endpoints", { url: receiver.url });
for (let i = 0; i < EVENTS; i++) {
  await call("POST", "/v2/internal/events", { id: randomUUID(), type: "audit.completed", data: { audit_id: randomUUID(), question_set_id: set.id, result: "failed" } });
}
const due = await until(`the queue to show ${EVENTS} due deliveries`, async () => {
  const q = await query("max(ars_delivery_queue_due_rows)");
  return q._ === EVENTS && q;
});
log(`queue while the receiver holds: ${JSON.stringify(due)} due rows`);
await until("both processes to report the same queue", async () => {
  const q = await query("ars_delivery_queue_due_rows");
  return q["ars-serve"] === EVENTS && q["ars-worker"] === EVENTS;
});
await until("the oldest due row to age", async () => (await query("max(ars_delivery_queue_oldest_due_age_seconds)"))._ > 0);

release();
await until(`${EVENTS} succeeded outcomes on the worker`, async () => (await query('ars_delivery_outcomes_total{outcome="succeeded", error_code="none"}'))["ars-worker"] === EVENTS);
await until("the queue to drain", async () => (await query("max(ars_delivery_queue_due_rows)"))._ === 0);
const checks = {
  "the queue's peak over the run": ["max(max_over_time(ars_delivery_queue_due_rows[5m]))", (v) => v._ === EVENTS],
  "attempts timed by the worker": ["ars_delivery_attempt_duration_seconds_count", (v) => v["ars-worker"] === EVENTS && v["ars-serve"] === 0],
  "first attempts timed by the worker": ["ars_delivery_first_attempt_delay_seconds_count", (v) => v["ars-worker"] === EVENTS],
  "outcomes recorded in batches": ["ars_delivery_record_batch_size_sum", (v) => v["ars-worker"] === EVENTS],
  "no outcome from serve (its dispatcher is off)": ['sum by (job) (ars_delivery_outcomes_total{job="ars-serve"})', (v) => v["ars-serve"] === 0],
  "publishEvent requests on serve": ['ars_http_request_duration_seconds_count{operation="publishEvent", status_class="2xx"}', (v) => v["ars-serve"] === EVENTS],
  "the engine pool of the worker": ['ars_db_pool_connections_max{pool="engine"}', (v) => v["ars-worker"] > 0],
  "process memory of both": ["process_resident_memory_bytes", (v) => v["ars-serve"] > 0 && v["ars-worker"] > 0],
  "no alert firing": ['ALERTS{alertstate="firing"}', (v) => Object.keys(v).length === 0],
};
for (const [what, [expr, ok]] of Object.entries(checks)) {
  const v = await until(what, async () => {
    const r = await query(expr);
    return ok(r) && r;
  }, 10_000);
  log(`${what}: ${expr} → ${JSON.stringify(v)}`);
}

// The worker stops: its target goes down (what ArsTargetDown watches).
worker.child.kill("SIGTERM");
await worker.exited;
await until("the stopped worker's target to go down", async () => (await query('up{job="ars-worker"}'))["ars-worker"] === 0);
log("the stopped worker's target is down");
if (/level=error/.test(prometheusLog)) await fail(`Prometheus logged errors:\n${prometheusLog}`);
await cleanup();
log("OK");
