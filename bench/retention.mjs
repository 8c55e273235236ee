#!/usr/bin/env node
// `npm run bench:retention` — 65 simulated days of traffic on PostgreSQL with a 30-day retention
// window: does the database stop growing, does housekeeping stay as fast on day 60 as on day 1,
// and do lists and the delivery engine? See README.md ("Retention").
//
// Each simulated day's traffic is generated in SQL (generate_series: events, five deliveries per
// event, their attempts), stamped with that day's times and UUIDv7 ids, as publishing would
// store them. Then the server's own housekeeping runs on a clock set to the end of that day. The
// API and the engine are measured for real on day 1 and day 60: a product server (in this
// process, on the same simulated clock) answers list requests, and its dispatcher delivers
// freshly published events to a loopback HTTPS receiver.
//
// The targets (day 60 within 10 % of day 1) are judged after the run, on a database holding one
// day against this run's database after its last day, measured in the same minutes: the lists by
// two servers in this process, one on each database, their requests alternating one by one; the
// engine by child runs, one database then the other, a few times over. Day 1 and day 60 of the run
// itself are ten minutes apart, and a shared 2-core machine's speed drifts by more than 10 % in ten
// minutes; the in-run figures are reported beside.
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import pg from "pg";
import { simulatedClock } from "./lib/days.mjs";
import { sideBySide } from "./lib/side-by-side.mjs";
import { loadServer, ROOT } from "./lib/pkg.mjs";
import { machineInfo, renderResults } from "./lib/report.mjs";

const { values: args } = parseArgs({
  options: {
    days: { type: "string", default: "65" },
    "events-per-day": { type: "string", default: "12000" },
    "retention-days": { type: "string", default: "30" },
    "measure-days": { type: "string", default: "1,60" },
    "engine-events": { type: "string", default: "2000" },
    "list-requests": { type: "string", default: "300" },
    // requests per page and database of the side-by-side list comparison after the run
    "side-by-side-requests": { type: "string", default: "1000" },
    "database-url": { type: "string", default: process.env.BENCH_DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres" },
    db: { type: "string", default: "ars_bench_retention" },
    "no-write": { type: "boolean", default: false },
    render: { type: "boolean", default: false }, // only re-render RETENTION.md, the chart and RESULTS.md from retention-results.json
    // measure again on the database a full run left (its last day), without generating anything:
    // a before/after comparison of a change in minutes (prints, writes nothing)
    "measure-only": { type: "boolean", default: false },
    // rounds of the alternating comparison at the end of the run (a one-day database, then this one)
    "alternate-rounds": { type: "string", default: "3" },
    // print the measurement as one `RESULT {json}` line (the alternating comparison's children)
    emit: { type: "boolean", default: false },
  },
});
if (args.render) {
  const saved = JSON.parse(readFileSync(join(ROOT, "bench", "retention-results.json"), "utf8"));
  writeOutputs(saved);
  process.exit(0);
}
const DAYS = Number(args.days);
const PER_DAY = Number(args["events-per-day"]);
const RETENTION = Number(args["retention-days"]);
const MEASURE = args["measure-days"].split(",").map(Number);
const ENDPOINTS = 5;
const HOST = "hooks.retention-bench.dev";

const server = await loadServer();
const { createTestCa } = await import("@audit-review/test-kit/ca");
const { startReceiver } = await import("@audit-review/test-kit/receiver");
const DAY = server.DAY_MS;
const log = (...a) => console.log(`[retention ${new Date().toISOString().slice(11, 19)}]`, ...a);

// ---- database -----------------------------------------------------------------------------
const admin = new pg.Client({ connectionString: args["database-url"] });
await admin.connect();
if (!args["measure-only"]) {
  await admin.query(`DROP DATABASE IF EXISTS ${args.db} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${args.db}`);
}
await admin.end();
const url = new URL(args["database-url"]);
url.pathname = `/${args.db}`;
const databaseUrl = url.toString();
const db = await server.openDatabase({ databaseUrl, poolSize: 4 });
await server.migrate(db);

// ---- simulated time -------------------------------------------------------------------------
// Day 0 starts at today's 00:00 UTC; within a simulated day the clock runs at real speed from
// where the bench put it, so the engine's timers and leases behave as in production.
const day0 = server.dayStart(new Date()).getTime();
const { clock, setClock } = simulatedClock(day0);

// ---- the product server, its org, endpoints and a receiver ------------------------------------
const ca = createTestCa();
const receiver = await startReceiver({ ca, hostname: HOST, record: false, status: 200 });
let received = 0;
receiver.setHandler((_req, res) => {
  received++;
  res.writeHead(200).end();
});
const product = await server.startServer({
  port: 0,
  databaseUrl,
  encryptionKey: randomBytes(32).toString("base64"),
  dispatcher: true,
  // the server's one clock is this simulated one (instead of the database's)
  clock: () => clock,
  rateLimitPerMinute: 0,
  validateResponses: false,
  // in this process, whose standard output is the report; the bench compares the product with
  // itself (day 60 against day 1), so its lines would cost both sides alike
  logLevel: "warn",
  staticHosts: { [HOST]: ["127.0.0.1"] },
  allowCidrs: ["127.0.0.1/32"],
  extraCa: ca.cert,
  retentionDays: RETENTION,
  // the bench runs housekeeping itself, once per simulated day
  housekeepingIntervalMs: DAY,
});
const org = await server.createOrg(db, { name: "Retention bench" });
const { token } = await server.createToken(db, { orgId: org.id, scopes: server.ALL_SCOPES });
const api = (path, init = {}) =>
  fetch(`${product.url}${path}`, { ...init, headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...init.headers } });
const endpoints = [];
for (let i = 0; i < ENDPOINTS; i++) {
  const res = await api("/v2/webhook_endpoints", { method: "POST", body: JSON.stringify({ url: `${receiver.origin}/hook/${i}` }) });
  if (res.status !== 201) throw new Error(`create endpoint: ${res.status} ${await res.text()}`);
  endpoints.push((await res.json()).id);
}
const qsRes = await api("/v2/internal/question_sets", {
  method: "POST",
  body: JSON.stringify({ set_name: "Bench", set_code: "B", is_production: true, allow_doc_upload: false, thresholds: [{ label: "pass", min_score: 80 }], questions: [{ query: "Documented?", question_type: "yes_no" }] }),
});
if (qsRes.status !== 201) throw new Error(`ingest question set: ${qsRes.status} ${await qsRes.text()}`);
const questionSet = await qsRes.json();

// ---- one simulated day of traffic, in SQL ------------------------------------------------------
const v7 = (ts) => `encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid()) placing
  substring(int8send(floor(extract(epoch from ${ts}) * 1000)::bigint) from 3) from 1 for 6), 52, 1), 53, 1), 'hex')::uuid`;
const RESPONSES = JSON.stringify([
  { question_id: questionSet.questions[0].id, query: "Is the chief complaint documented in the note?", answer: "Yes", context: "CC: chest pain for two days.", passed: true, informational: false },
]);

async function generateDay(d) {
  const from = new Date(day0 + d * DAY);
  const step = DAY / PER_DAY;
  // one statement per day, as publishing writes an event with its deliveries: events, then five
  // deliveries each (97 % succeeded at once, 2 % failed after two attempts, 1 % still retrying
  // at the day's end), then their attempt rows
  await db.query(
    `WITH ev AS (
       INSERT INTO events (id, org_id, type, audit_id, question_set_id, result, responses, occurred_at, created_at)
       SELECT ${v7("ts")}, $1, 'audit.completed', gen_random_uuid(), $2, 'passed', $3::jsonb, ts, ts
         FROM (SELECT $4::timestamptz + (n * $5) * interval '1 millisecond' AS ts FROM generate_series(0, $6 - 1) n) s
       RETURNING id, org_id, audit_id, created_at
     ), dl AS (
       INSERT INTO webhook_deliveries (id, org_id, endpoint_id, event_id, event_type, audit_id, is_test, status, attempt_count,
                                       next_attempt_at, last_response_status, delivered_at, created_at, updated_at)
       SELECT ${v7("e.created_at")}, e.org_id, ep, e.id, 'audit.completed', e.audit_id, false,
              CASE WHEN r < 0.97 THEN 'succeeded' WHEN r < 0.99 THEN 'failed' ELSE 'retrying' END,
              CASE WHEN r < 0.97 THEN 1 ELSE 2 END, e.created_at + interval '5 minutes',
              CASE WHEN r < 0.97 THEN 200 ELSE 500 END, CASE WHEN r < 0.97 THEN e.created_at + interval '80 milliseconds' END,
              e.created_at, e.created_at + interval '80 milliseconds'
         FROM (SELECT ev.*, random() AS r FROM ev) e, unnest($7::uuid[]) ep
       RETURNING id, org_id, endpoint_id, status, attempt_count, created_at
     )
     INSERT INTO webhook_delivery_attempts (id, org_id, delivery_id, endpoint_id, attempt_number, trigger, url, started_at, duration_ms, response_status, response_body)
     SELECT ${v7("d.created_at + (a - 1) * interval '5 seconds'")}, d.org_id, d.id, d.endpoint_id, a, 'scheduled', 'https://hooks.example/hook',
            d.created_at + (a - 1) * interval '5 seconds', 80, CASE WHEN d.status = 'succeeded' THEN 200 ELSE 500 END, 'ok'
       FROM dl d, generate_series(1, d.attempt_count) a`,
    [org.id, questionSet.id, RESPONSES, from, step, PER_DAY, endpoints],
  );
  // the previous day's retries end (the engine would have sent them overnight)
  await db.query(`UPDATE webhook_deliveries SET status = 'succeeded', delivered_at = updated_at WHERE status = 'retrying' AND created_at < $1`, [from]);
}

// ---- measurements ------------------------------------------------------------------------
const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))];

async function listLatency(api, endpoint) {
  const n = Number(args["list-requests"]);
  const first = "/v2/webhook_deliveries?limit=100";
  const page = await (await api(`/v2/webhook_deliveries?limit=100`)).json();
  const deep = `/v2/webhook_deliveries?limit=100&starting_after=${page.data.at(-1).id}`;
  const out = {};
  for (const [key, path] of [["first", first], ["cursor", deep], ["endpoint", `${first}&endpoint_id=${endpoint}`]]) {
    const times = [];
    for (let i = 0; i < n + 30; i++) {
      const t = performance.now();
      const res = await api(path);
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`${path}: ${res.status}`);
      if (i >= 30) times.push(performance.now() - t);
    }
    out[key] = pct(times, 0.5);
  }
  return out;
}

async function engineThroughput() {
  const events = Number(args["engine-events"]);
  const want = received + events * ENDPOINTS;
  const started = performance.now();
  const batches = [];
  for (let i = 0; i < events; i += 20) {
    batches.push({
      events: Array.from({ length: Math.min(20, events - i) }, () => ({
        id: crypto.randomUUID(),
        type: "audit.completed",
        data: { audit_id: crypto.randomUUID(), question_set_id: questionSet.id, result: "passed", responses: [{ question_id: questionSet.questions[0].id, answer: "Yes" }] },
      })),
    });
  }
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < batches.length) {
        const body = batches[next++];
        const res = await api("/v2/internal/event_batches", { method: "POST", body: JSON.stringify(body) });
        if (res.status >= 300) throw new Error(`publish: ${res.status} ${await res.text()}`);
      }
    }),
  );
  while (received < want) await new Promise((r) => setTimeout(r, 20));
  const seconds = (performance.now() - started) / 1000;
  return { deliveries: events * ENDPOINTS, seconds, perSecond: (events * ENDPOINTS) / seconds };
}

/**
 * Before a measurement: the tables vacuumed and analyzed, and no autovacuum worker running on any
 * database. Right after the last day was written, PostgreSQL was still vacuuming what the run left
 * on two shared cores, and the big database measured up to 20 % slower than twenty minutes later
 * (bench/NOTES.md, "Drift, and day 60 measured against day 1 in the same minutes"): both sides are
 * measured as a service runs once its maintenance has caught up.
 */
async function settle(db) {
  const t = performance.now();
  await db.exec("VACUUM (ANALYZE) webhook_deliveries, events, webhook_delivery_attempts, event_ids");
  const vacuumMs = performance.now() - t;
  let waitedMs = 0;
  for (; waitedMs < 300_000; waitedMs += 250) {
    const [{ n }] = await db.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE backend_type = 'autovacuum worker'");
    if (n === 0) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  log(`settled: VACUUM (ANALYZE) ${vacuumMs.toFixed(0)} ms, then ${waitedMs} ms for autovacuum workers to finish`);
  return { vacuumMs: Math.round(vacuumMs), waitedMs };
}

const sizeMb = async () => Number((await db.query("SELECT pg_database_size(current_database()) AS b"))[0].b) / 1048576;
const count = async (table) => Number((await db.query(`SELECT count(*) AS n FROM ${table}`))[0].n);

// ---- the run -------------------------------------------------------------------------------
const housekeeper = server.createHousekeeper({
  db,
  retention: server.retention(RETENTION),
  clock,
  logger: product.deps.logger,
  intervalMs: DAY,
});
const series = [];
const measured = {};
const started = Date.now();
if (args["measure-only"]) {
  // the day after the last a full run generated, at its first hour; the lists are the full run's
  // org's (its deliveries), the engine delivers to this run's endpoints (the full run's secrets
  // were sealed with its own key), and the full run's last retries end first
  const [{ org_id: earlier }] = await db.query("SELECT org_id FROM events ORDER BY created_at LIMIT 1");
  const [{ last }] = await db.query("SELECT max(created_at) AS last FROM events WHERE org_id = $1", [earlier]);
  const d = Math.floor((new Date(last).getTime() - day0) / DAY) + 1;
  setClock(day0 + d * DAY + 3_600_000);
  await db.query("UPDATE webhook_deliveries SET status = 'succeeded', delivered_at = updated_at WHERE status IN ('pending', 'retrying') AND org_id <> $1", [org.id]);
  const listToken = (await server.createToken(db, { orgId: earlier, scopes: server.ALL_SCOPES })).token;
  const listApi = (path) => fetch(`${product.url}${path}`, { headers: { authorization: `Bearer ${listToken}` } });
  const [, , { id: endpoint }] = await db.query("SELECT id FROM webhook_endpoints WHERE org_id = $1 ORDER BY id", [earlier]);
  const settled = await settle(db);
  const m = { day: d, settled, lists: await listLatency(listApi, endpoint), engine: await engineThroughput() };
  log(`day ${d} (measure only): ${JSON.stringify(m)}`);
  if (args.emit) console.log(`RESULT ${JSON.stringify(m)}`);
  await product.close();
  await receiver.close();
  await db.close();
  process.exit(0);
}
for (let d = 0; d < DAYS; d++) {
  setClock(day0 + d * DAY + 3_600_000);
  if (MEASURE.includes(d)) {
    log(`day ${d}: measuring lists and the engine`);
    const settled = await settle(db);
    measured[d] = { settled, lists: await listLatency(api, endpoints[2]), engine: await engineThroughput() };
    log(`day ${d}:`, JSON.stringify(measured[d]));
    if (args.emit) console.log(`RESULT ${JSON.stringify({ day: d, ...measured[d] })}`);
    // a child measures and is done: what it would write after its last measurement is not read
    if (args.emit && d === Math.max(...MEASURE)) break;
  }
  const t = performance.now();
  await generateDay(d);
  const generateMs = performance.now() - t;
  // the day's last housekeeping run (one an hour in production; the others would find nothing)
  setClock(day0 + d * DAY + 23.5 * 3_600_000);
  let run = await housekeeper.runOnce();
  // the server's own loop may hold the lock for a moment (its first run, at start)
  for (let tries = 0; run.skipped && tries < 100; tries++) {
    await new Promise((r) => setTimeout(r, 50));
    run = await housekeeper.runOnce();
  }
  if (run.skipped) throw new Error(`day ${d}: housekeeping skipped`);
  await db.exec("ANALYZE webhook_deliveries, events, webhook_delivery_attempts");
  const point = {
    day: d,
    sizeMb: await sizeMb(),
    deliveries: await count("webhook_deliveries"),
    housekeepingMs: run.durationMs,
    dropped: run.partitionsDropped.length,
    created: run.partitionsCreated.length,
    removed: run.removed,
    generateMs: Math.round(generateMs),
  };
  series.push(point);
  log(`day ${d}: ${point.deliveries} deliveries, ${point.sizeMb.toFixed(0)} MB, housekeeping ${point.housekeepingMs} ms (dropped ${point.dropped}, removed ${point.removed.webhook_deliveries} deliveries)`);
}
await product.close();
await receiver.close();
await db.close();
if (args.emit) process.exit(0);
const alternated = alternate(Number(args["alternate-rounds"]));
const sideBySideLists = alternated ? await listsSideBySide(Number(args["side-by-side-requests"])) : null;
const elapsedS = (Date.now() - started) / 1000;

/** A child run of this script with this run's settings and `extra`; its standard output. */
function child(extra) {
  const common = ["--database-url", args["database-url"], "--engine-events", args["engine-events"], "--list-requests", args["list-requests"], "--events-per-day", args["events-per-day"], "--emit"];
  return execFileSync(process.execPath, [fileURLToPath(import.meta.url), ...extra, ...common], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"], maxBuffer: 64 * 1024 * 1024 });
}

/**
 * Day 1 against the last day, measured in the same minutes: each round measures a fresh database
 * holding one day (its own child run of this script), then this run's database as its last day
 * left it (`--measure-only`). Medians over the rounds.
 */
function alternate(rounds) {
  if (rounds <= 0) return null;
  const measure = (extra) => {
    const out = child(extra);
    const line = out.split("\n").find((l) => l.startsWith("RESULT "));
    if (!line) throw new Error(`no RESULT line from ${extra.join(" ")}`);
    return JSON.parse(line.slice("RESULT ".length));
  };
  const early = [];
  const late = [];
  for (let i = 0; i < rounds; i++) {
    early.push(measure(["--db", `${args.db}_day1`, "--days", "2", "--measure-days", "1", "--no-write"]));
    late.push(measure(["--db", args.db, "--measure-only"]));
    log(`alternating round ${i + 1}/${rounds}: day 1 ${JSON.stringify(early.at(-1))}; day ${late.at(-1).day} ${JSON.stringify(late.at(-1))}`);
  }
  const median = (xs) => pct(xs, 0.5);
  const summary = (ms) => ({
    day: ms[0].day,
    lists: Object.fromEntries(["first", "cursor", "endpoint"].map((k) => [k, median(ms.map((m) => m.lists[k]))])),
    engine: { deliveries: ms[0].engine.deliveries, perSecond: median(ms.map((m) => m.engine.perSecond)) },
  });
  return { rounds, early: summary(early), late: summary(late), raw: { early, late } };
}

/**
 * The lists of day 1 and of the last day side by side: a database holding one day (a child run
 * that generates day 0 and stops) and this run's database, each served by a server of this build
 * in this process on its own simulated clock (an hour into the day after its newest deliveries,
 * as the in-run measurement), the requests alternating between the two one by one. Each side reads
 * its org with the most deliveries (the child runs above published theirs under orgs of their own).
 */
async function listsSideBySide(requests) {
  child(["--db", `${args.db}_day1`, "--days", "1", "--measure-days=-1", "--no-write"]);
  const sides = {};
  const paths = { first: {}, cursor: {}, endpoint: {} };
  const days = {};
  const opened = [];
  for (const [side, name] of [["early", `${args.db}_day1`], ["late", args.db]]) {
    const u = new URL(args["database-url"]);
    u.pathname = `/${name}`;
    const sideDb = await server.openDatabase({ databaseUrl: u.toString(), poolSize: 2 });
    await settle(sideDb);
    const [{ org_id: orgId }] = await sideDb.query("SELECT org_id FROM webhook_deliveries GROUP BY 1 ORDER BY count(*) DESC LIMIT 1");
    const [{ last }] = await sideDb.query("SELECT max(created_at) AS last FROM webhook_deliveries WHERE org_id = $1", [orgId]);
    const [, , { id: endpoint }] = await sideDb.query("SELECT id FROM webhook_endpoints WHERE org_id = $1 ORDER BY id", [orgId]);
    const at = server.dayStart(new Date(last)).getTime() + DAY;
    days[side] = side === "early" ? 1 : Math.round((at - day0) / DAY);
    const { clock: sideClock } = simulatedClock(at + 3_600_000);
    const { token: sideToken } = await server.createToken(sideDb, { orgId, scopes: server.ALL_SCOPES });
    const srv = await server.startServer({
      port: 0, metricsPort: 0, databaseUrl: u.toString(), encryptionKey: randomBytes(32).toString("base64"), dispatcher: false,
      clock: () => sideClock, rateLimitPerMinute: 0, validateResponses: false, logLevel: "warn", retentionDays: RETENTION, housekeepingIntervalMs: DAY,
    });
    opened.push(srv, sideDb);
    const headers = { authorization: `Bearer ${sideToken}` };
    sides[side] = { url: srv.url, headers };
    const page = await (await fetch(`${srv.url}/v2/webhook_deliveries?limit=100`, { headers })).json();
    paths.first[side] = "/v2/webhook_deliveries?limit=100";
    paths.cursor[side] = `/v2/webhook_deliveries?limit=100&starting_after=${page.data.at(-1).id}`;
    paths.endpoint[side] = `/v2/webhook_deliveries?limit=100&endpoint_id=${endpoint}`;
  }
  log(`lists side by side: day ${days.early} and day ${days.late}, ${requests} requests per page and day, alternating`);
  const p = await sideBySide(sides, paths, { requests });
  for (const o of opened) await o.close();
  const lists = (side) => Object.fromEntries(Object.entries(p).map(([k, v]) => [k, v[side]]));
  const out = { requests, early: { day: days.early, lists: lists("early") }, late: { day: days.late, lists: lists("late") } };
  log(`lists side by side: ${JSON.stringify(out)}`);
  return out;
}

// ---- report ----------------------------------------------------------------------------------
const steady = series.filter((p) => p.day > RETENTION + 1);
const plateau = { min: Math.min(...steady.map((p) => p.sizeMb)), max: Math.max(...steady.map((p) => p.sizeMb)) };
// like for like: the first ten runs that drop a day (the window's first days) against the last ten
const hk = (from, to) => series.filter((p) => p.day >= from && p.day <= to).map((p) => p.housekeepingMs);
const hkEarly = pct(hk(RETENTION + 2, RETENTION + 11), 0.5);
const hkLate = pct(hk(DAYS - 10, DAYS - 1), 0.5);
const result = {
  date: new Date().toISOString(),
  command: `flock /tmp/ars-bench.lock npm run bench:retention${process.argv.slice(2).length ? ` -- ${process.argv.slice(2).join(" ")}` : ""}`,
  machine: await machineInfo(args["database-url"]),
  settings: { days: DAYS, eventsPerDay: PER_DAY, deliveriesPerDay: PER_DAY * ENDPOINTS, retentionDays: RETENTION, engineEvents: Number(args["engine-events"]), listRequests: Number(args["list-requests"]) },
  elapsedS,
  series,
  measured,
  alternated,
  sideBySideLists,
  plateau,
  housekeepingMedianMs: { early: hkEarly, late: hkLate },
};
writeOutputs(result);

function writeOutputs(r) {
  const svg = sizeChart(r.series, r.settings.retentionDays);
  const md = retentionMarkdown(r);
  console.log(md);
  if (!args["no-write"]) {
    if (!args.render) writeFileSync(join(ROOT, "bench", "retention-results.json"), JSON.stringify(r, null, 2) + "\n");
    writeFileSync(join(ROOT, "bench", "retention-size.svg"), svg);
    writeFileSync(join(ROOT, "bench", "RETENTION.md"), md);
    // RESULTS.md embeds RETENTION.md (lib/report.mjs): re-render it from the last full bench run
    const results = JSON.parse(readFileSync(join(ROOT, "bench", "results.json"), "utf8"));
    writeFileSync(join(ROOT, "bench", "RESULTS.md"), renderResults(results));
  } else {
    mkdirSync(join(ROOT, "bench", ".out"), { recursive: true });
    writeFileSync(join(ROOT, "bench", ".out", "retention-size.svg"), svg);
    writeFileSync(join(ROOT, "bench", ".out", "retention.md"), md);
  }
}

function ratio(x, y) {
  return y / x;
}

function retentionMarkdown(r) {
  const m = r.measured;
  const f1 = (x) => x.toFixed(1);
  const within = (x, y) => Math.abs(ratio(x, y) - 1) <= 0.1;
  const ok = (c) => (c ? "✅" : "❌");
  const lines = [
    `## Retention: ${r.settings.days} simulated days on PostgreSQL`,
    "",
    `${r.date.slice(0, 10)}, \`${r.command}\` (${f1(r.elapsedS / 60)} min; a loaded machine shared with other developers: ${r.machine.cores} cores, load ${r.machine.loadavg}, ${r.machine.postgres}).`,
    `${r.settings.eventsPerDay.toLocaleString("en")} events and ${r.settings.deliveriesPerDay.toLocaleString("en")} deliveries a simulated day (${(r.settings.deliveriesPerDay * r.settings.days / 1e6).toFixed(1)} million in all, with their attempts), generated in SQL and stamped with the simulated day;`,
    `\`ARS_RETENTION_DAYS=${r.settings.retentionDays}\`; the server's own housekeeping run once at the end of every simulated day.`,
    "",
    "![Database size and housekeeping duration over simulated days](retention-size.svg)",
    "",
    "| | result | |",
    "|---|---|---|",
    `| database size plateaus after the window (days ${r.settings.retentionDays + 2}–${r.settings.days - 1}) | ${f1(r.plateau.min)}–${f1(r.plateau.max)} MB (peak of all days ${f1(Math.max(...r.series.map((p) => p.sizeMb)))} MB) | ${ok(r.plateau.max <= r.plateau.min * 1.1)} |`,
    `| housekeeping run (each drops a day), median of days ${r.settings.retentionDays + 2}–${r.settings.retentionDays + 11} vs the last 10 | ${r.housekeepingMedianMs.early} ms vs ${r.housekeepingMedianMs.late} ms | ${ok(r.housekeepingMedianMs.late <= r.housekeepingMedianMs.early * 1.1)} |`,
  ];
  const listName = (key) => (key === "first" ? "first page" : key === "cursor" ? "second page by cursor" : "one endpoint");
  // day x against day y: the three lists and the engine, each judged against its bound
  const f2 = (x) => x.toFixed(2);
  const listsJudged = (x, y, how, digits = f1) =>
    ["first", "cursor", "endpoint"].map((key) =>
      `| list p50 (\`limit=100\`, ${listName(key)}), day ${x.day} vs day ${y.day}${how} | ${digits(x.lists[key])} ms vs ${digits(y.lists[key])} ms (×${ratio(x.lists[key], y.lists[key]).toFixed(2)}) | ${ok(within(x.lists[key], y.lists[key]))} |`);
  const engineJudged = (x, y, how) =>
    `| engine throughput (${x.engine.deliveries.toLocaleString("en")} deliveries published and delivered), day ${x.day} vs day ${y.day}${how} | ${f1(x.engine.perSecond)}/s vs ${f1(y.engine.perSecond)}/s (×${ratio(x.engine.perSecond, y.engine.perSecond).toFixed(2)}) | ${ok(ratio(x.engine.perSecond, y.engine.perSecond) >= 0.9)} |`;
  const judged = (x, y, how) => [...listsJudged(x, y, how), engineJudged(x, y, how)];
  const unjudged = (x, y, how) =>
    `| ${how}, day ${x.day} vs day ${y.day} | ${["first", "cursor", "endpoint"].map((key) => `${listName(key)} ${f1(x.lists[key])} vs ${f1(y.lists[key])} ms`).join(", ")} | |`;
  const [a, b] = Object.keys(m).map(Number);
  const inRun = m[a] && m[b] ? [{ day: a, ...m[a] }, { day: b, ...m[b] }] : null;
  const alt = r.alternated;
  if (alt) {
    // the targets: both states measured in the same minutes (see the top of bench/retention.mjs)
    const sbs = r.sideBySideLists;
    if (sbs) {
      lines.push(...listsJudged(sbs.early, sbs.late, `, after the run: two servers, one per database, ${sbs.requests.toLocaleString("en")} requests each alternating one by one`, f2));
      lines.push(engineJudged(alt.early, alt.late, `, medians of ${alt.rounds} alternating rounds after the run`));
      lines.push(unjudged(alt.early, alt.late, `lists in those rounds (a process per database, ${r.settings.listRequests ?? 300} sequential requests per page; medians)`));
    } else {
      lines.push(...judged(alt.early, alt.late, `, medians of ${alt.rounds} alternating rounds after the run`));
    }
    if (inRun) {
      const [x, y] = inRun;
      const lists = ["first", "cursor", "endpoint"].map((key) => `${listName(key)} ${f1(x.lists[key])} vs ${f1(y.lists[key])} ms`).join(", ");
      lines.push(`| the same during the run, day ${x.day} vs day ${y.day} (ten minutes apart: the machine's drift included) | ${lists}; engine ${f1(x.engine.perSecond)}/s vs ${f1(y.engine.perSecond)}/s | |`);
    }
  } else if (inRun) {
    lines.push(...judged(inRun[0], inRun[1], ""));
  }
  lines.push("", "| day | deliveries kept | size MB | housekeeping ms | partitions dropped |", "|---|---|---|---|---|");
  for (const p of r.series.filter((p) => p.day % 5 === 0 || p.day === r.settings.days - 1)) {
    lines.push(`| ${p.day} | ${p.deliveries.toLocaleString("en")} | ${f1(p.sizeMb)} | ${p.housekeepingMs} | ${p.dropped} |`);
  }
  return lines.join("\n") + "\n";
}

function sizeChart(points, window) {
  const W = 720, H = 360, L = 60, R = 60, T = 30, B = 50;
  const maxDay = points.at(-1).day;
  const maxMb = Math.max(...points.map((p) => p.sizeMb)) * 1.1;
  const maxMs = Math.max(...points.map((p) => p.housekeepingMs), 1) * 1.2;
  const x = (d) => L + (d / maxDay) * (W - L - R);
  const y = (mb) => H - B - (mb / maxMb) * (H - T - B);
  const y2 = (ms) => H - B - (ms / maxMs) * (H - T - B);
  const size = points.map((p) => `${x(p.day).toFixed(1)},${y(p.sizeMb).toFixed(1)}`).join(" ");
  const bars = points.map((p) => `<rect x="${(x(p.day) - 2).toFixed(1)}" y="${y2(p.housekeepingMs).toFixed(1)}" width="4" height="${(H - B - y2(p.housekeepingMs)).toFixed(1)}" fill="#f4a261" opacity="0.7"/>`).join("");
  const ticks = [];
  for (let d = 0; d <= maxDay; d += 10) ticks.push(`<text x="${x(d)}" y="${H - B + 18}" text-anchor="middle">${d}</text>`);
  for (let i = 0; i <= 4; i++) {
    const mb = (maxMb / 4) * i;
    ticks.push(`<text x="${L - 8}" y="${y(mb) + 4}" text-anchor="end">${mb.toFixed(0)}</text>`);
    const ms = (maxMs / 4) * i;
    ticks.push(`<text x="${W - R + 8}" y="${y2(ms) + 4}">${ms.toFixed(0)}</text>`);
  }
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">
<rect width="${W}" height="${H}" fill="#fff"/>
<text x="${W / 2}" y="18" text-anchor="middle" font-size="14">Database size (line, MB, left) and housekeeping run (bars, ms, right) per simulated day</text>
<line x1="${L}" y1="${H - B}" x2="${W - R}" y2="${H - B}" stroke="#333"/><line x1="${L}" y1="${T}" x2="${L}" y2="${H - B}" stroke="#333"/><line x1="${W - R}" y1="${T}" x2="${W - R}" y2="${H - B}" stroke="#333"/>
<line x1="${x(window + 1)}" y1="${T}" x2="${x(window + 1)}" y2="${H - B}" stroke="#888" stroke-dasharray="4 4"/>
<text x="${x(window + 1) + 4}" y="${T + 12}" fill="#555">first day removed (window ${window} days)</text>
${bars}
<polyline points="${size}" fill="none" stroke="#1d3557" stroke-width="2.5"/>
${ticks.join("\n")}
<text x="${W / 2}" y="${H - 12}" text-anchor="middle">simulated day</text>
</svg>
`;
}
