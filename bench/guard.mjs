#!/usr/bin/env node
// `npm run bench:guard` — a short bench CI runs (bench/README.md, "The guard"): on small generated
// data, the server CPU each list request and each delivery costs, against a baseline measured in
// the same run on the same machine — the node:http + pg floor for the lists, the undici + HMAC
// loop for the engine, as `npm run bench` measures them — and a non-zero exit past the bounds
// below. CPU time per unit, not throughput: it is what a shared, loaded machine disturbs least,
// and a ratio to a baseline measured minutes apart cancels most of what is left.
//
//   npm run bench:guard [-- --db ars_bench_guard --database-url postgresql://…/postgres]
//
// Needs `npm run build` and PostgreSQL. About 2–3 minutes on 2 cores.
import pg from "pg";
import { randomBytes } from "node:crypto";
import { loadavg } from "node:os";
import { parseArgs } from "node:util";

const { values: args } = parseArgs({
  options: {
    "database-url": { type: "string", default: process.env.BENCH_DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres" },
    db: { type: "string", default: "ars_bench_guard" },
    rounds: { type: "string", default: "3" },
    duration: { type: "string", default: "3" },
    connections: { type: "string", default: "16" },
    tokens: { type: "string", default: "256" },
    events: { type: "string", default: "1000" },
    idle: { type: "string", default: "25" },
    together: { type: "string", default: "on" },
    help: { type: "boolean", default: false },
  },
});

/**
 * The bounds, each a ratio of the product's server CPU per unit to its baseline's in the same
 * run (bench/README.md, "The guard"). Healthy runs on the project's 2 shared cores at load
 * averages 7–12 measured 1.16–1.31 × for the lists' geometric mean, 0.96–1.53 × per scenario
 * (`status=failed`, the smallest page, highest: the fixed cost per request weighs most there;
 * single rounds up to 1.70 ×) and 2.0–2.5 × for the engine. The young generation kept at its
 * initial size (the regression this was written against) measured 1.99–2.41 × per list, 2.17 ×
 * their mean. On the AMD EPYC instances of 2026-11-28 the same build measured higher: the
 * mean 1.05–1.41 × (1.33–1.41 × in the runs outside CI), and the 53 KB page 1.48–1.79 × by
 * its medians, single rounds up to 1.85 ×: the framework's fixed cost per request (≈ 0.3–0.5 ms,
 * bench/NOTES.md "What the 53 KB page pays for") weighs more where the floor's page costs
 * 0.9–1.0 ms. A list scenario fails alone past LIST_EACH, the 53 KB page past LIST_SMALL_PAGE
 * (a 1.5 × regression of it reads ≈ 2.4 ×); LIST_ALL bounds the geometric mean over the eight,
 * where one noisy round weighs less: a 1.5 × regression of every list lifts the mean from ≈ 1.35 to
 * ≈ 2.0. ENGINE_DB bounds the PostgreSQL backends' CPU per delivery (claims, records, their
 * plans over the 30 kept day partitions) against the same loop: 1.45–1.56 × in healthy runs on
 * this machine (0.30–0.33 ms per delivery; 4.2–5.1 × before the engine's statements were planned
 * once per connection), so a doubling of the database's side fails. The guard's database is made
 * fresh, its partitions never analyzed while empty: it does not meet the plans made on an empty
 * day (bench/NOTES.md), which test/db/empty-day-plans.test.ts holds instead.
 */
export const BOUNDS = { LIST_EACH: 1.8, LIST_SMALL_PAGE: 2.1, LIST_ALL: 1.6, ENGINE: 5, ENGINE_DB: 3 };
/** The scenario whose page is small enough for the fixed cost per request to dominate (LIST_SMALL_PAGE). */
const SMALL_PAGE = "ce-status";

if (args.help) {
  console.log(`npm run bench:guard [-- options]
  --database-url URL   an admin URL of the PostgreSQL server (postgresql://postgres@127.0.0.1:5432/postgres)
  --db NAME            the guard's database (ars_bench_guard; created and seeded when missing)
  --rounds N           rounds per list scenario, product and baseline loaded at the same time (3)
  --duration S         seconds per round (3); --connections N (16 to each server); --tokens N (256)
  --events N           events stored for the engine (1000, five deliveries each)
  --idle S             seconds the servers idle before the list load (25), as a service does between bursts
  --together on|off    load product and baseline at the same time (on) or alternately (off)
bounds (product CPU per unit ÷ baseline's, same run): each list ≤ ${BOUNDS.LIST_EACH} × (the 53 KB page ≤ ${BOUNDS.LIST_SMALL_PAGE} ×), lists' geometric mean ≤ ${BOUNDS.LIST_ALL} ×, engine ≤ ${BOUNDS.ENGINE} ×`);
  process.exit(0);
}

// small generated data (10,000 coding evaluations; 1,200 question sets, so the page after 90 % of
// them is still a full page): set before the seeder is loaded (it sizes its volume when imported)
process.env.BENCH_SCALE ??= "0.01";
process.env.BENCH_SETS_SCALE ??= "0.12";
const { startChild } = await import("./lib/children.mjs");
const { runDispatcherBench } = await import("./lib/dispatcher.mjs");
const { listScenarios, load, median, verifyIdentical } = await import("./lib/lists.mjs");
const { loadServer } = await import("./lib/pkg.mjs");
const { ensureDatabase, ensureOrgs, ensureSeeded, seedFacts, withDatabase } = await import("./lib/seed.mjs");
const { dayPartitions } = await import("./lib/days.mjs");

const started = Date.now();
/**
 * Day partitions a service has in its steady state (30 kept days by default): a statement that
 * does not name its rows' day reads every one of them, which two partitions would hide.
 */
const KEPT_DAYS = 30;

/** The kept days' partitions and today's (bench/lib/days.mjs). */
async function keptDays(url, days) {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await dayPartitions(c, days);
  } finally {
    await c.end();
  }
}
const int = (name) => {
  const n = Number(args[name]);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name} must be a positive number`);
  return n;
};
const log = (msg) => console.log(`[guard ${new Date().toISOString().slice(11, 19)}] ${msg}`);
log(`load average ${loadavg().map((x) => x.toFixed(2)).join(" ")}`);

const server = await loadServer();
await ensureDatabase(args["database-url"], args.db, { reseed: false });
const databaseUrl = withDatabase(args["database-url"], args.db);
const db = await server.openDatabase({ databaseUrl });
let orgs;
const tokens = [];
try {
  await server.migrate(db);
  orgs = await ensureOrgs(server, db);
  for (let i = 0; i < int("tokens"); i++) {
    const minted = await server.createToken(db, {
      orgId: orgs.a,
      scopes: ["question_sets:read", "coding_evaluations:read", "webhooks:read", "webhooks:write", "internal:ingest"],
      name: `guard ${i}`,
    });
    tokens.push(minted.token);
  }
} finally {
  await db.close();
}
await ensureSeeded({ url: databaseUrl, orgs, force: false });
await keptDays(databaseUrl, KEPT_DAYS);
const facts = await seedFacts(databaseUrl, orgs);
const encryptionKey = randomBytes(32).toString("base64");

const rows = [];
const failures = [];

// ---- lists: the product in its default configuration (rate limit counting every request over the tokens) against the floor
{
  const scenarios = listScenarios(facts);
  const product = await startChild("servers/product.mjs", { name: "product server", env: { BENCH_SERVER_OPTIONS: JSON.stringify({ databaseUrl, dispatcher: false, encryptionKey }) } });
  const baseline = await startChild("servers/baseline.mjs", { name: "baseline server", env: { DATABASE_URL: databaseUrl } });
  try {
    const servers = { product: product.url, baseline: baseline.url };
    const cpu = { product: product.cpuMs, baseline: baseline.cpuMs };
    await verifyIdentical(scenarios, servers, tokens[0]);
    // A server that has idled for a while, as one does between bursts: the first collection
    // after the pause sees a low allocation rate (under 1 KB/ms: at most 16 MB over 25 s) and V8
    // shrinks the young generation to 1 MB semispaces. Heap settings that keep it from growing
    // back (the regression this guard was written against) cost every page from then on; a
    // server loaded from its first second never shows that. The young generation's size is
    // printed with each scenario.
    log(`servers idle for ${int("idle")} s first`);
    await new Promise((resolve) => setTimeout(resolve, int("idle") * 1000));
    const rounds = int("rounds");
    const duration = int("duration");
    const connections = int("connections");
    log(`lists: ${scenarios.length} scenarios × ${rounds} rounds × ${duration} s, product and floor loaded at once, ${connections} connections each, ${tokens.length} tokens`);
    for (const s of scenarios) {
      await Promise.all(["product", "baseline"].map((side) => load(servers[side] + s.path, tokens, { connections, duration: 1, cpuMs: cpu[side] })));
      const ratios = [];
      const cpus = { product: [], baseline: [] };
      for (let round = 1; round <= rounds; round++) {
        const r = {};
        if (args.together === "on") {
          // both at once: whatever else runs on the machine meanwhile weighs on both alike
          const [p, b] = await Promise.all(["product", "baseline"].map((side) => load(servers[side] + s.path, tokens, { connections, duration, cpuMs: cpu[side] })));
          Object.assign(r, { product: p, baseline: b });
        } else {
          const order = round % 2 ? ["product", "baseline"] : ["baseline", "product"];
          for (const side of order) r[side] = await load(servers[side] + s.path, tokens, { connections, duration, cpuMs: cpu[side] });
        }
        ratios.push(r.product.cpuPerRequest / r.baseline.cpuPerRequest);
        cpus.product.push(r.product.cpuPerRequest);
        cpus.baseline.push(r.baseline.cpuPerRequest);
      }
      const ratio = median(ratios);
      const bound = s.key === SMALL_PAGE ? BOUNDS.LIST_SMALL_PAGE : BOUNDS.LIST_EACH;
      const ok = ratio <= bound;
      if (!ok) failures.push(`${s.key}: ${ratio.toFixed(2)} × the floor's CPU per request (bound ${bound} ×)`);
      rows.push({ what: s.key, unit: "request", product: median(cpus.product), baseline: median(cpus.baseline), ratio, range: [Math.min(...ratios), Math.max(...ratios)], bound, ok });
      product.send({ type: "mem", seq: s.key });
      const mem = await product.next((m) => m.type === "mem" && m.seq === s.key, 5_000);
      log(`${s.key.padEnd(17)} young generation ${(mem.newSpace / 2 ** 20).toFixed(0)} MB; CPU ms/request ${median(cpus.product).toFixed(2)} vs floor ${median(cpus.baseline).toFixed(2)}: ${ratio.toFixed(2)} × (rounds ${ratios.map((x) => x.toFixed(2)).join(", ")})`);
    }
  } finally {
    await product.stop();
    await baseline.stop();
  }
  const lists = rows.filter((r) => r.unit === "request");
  const mean = Math.exp(lists.reduce((a, r) => a + Math.log(r.ratio), 0) / lists.length);
  const ok = mean <= BOUNDS.LIST_ALL;
  if (!ok) failures.push(`lists together: geometric mean ${mean.toFixed(2)} × the floor's CPU per request (bound ${BOUNDS.LIST_ALL} ×)`);
  rows.push({ what: "lists (geometric mean)", unit: "request", ratio: mean, bound: BOUNDS.LIST_ALL, ok });
}

// ---- the engine alone (a worker process) against the undici + HMAC loop, the same signed requests
{
  const d = await runDispatcherBench({
    databaseUrl,
    orgId: orgs.a,
    token: tokens[0],
    publishTokens: tokens,
    eventSet: facts.eventSet,
    events: int("events"),
    paced: { events: 0, rate: 1 },
    publishConcurrency: 8,
    publishBatch: 20,
    execArgv: [],
    scenarios: ["engine"],
    log,
  });
  const ratio = d.engine.cpuPerDelivery / d.baseline.cpuPerDelivery;
  const ok = ratio <= BOUNDS.ENGINE;
  if (!ok) failures.push(`engine: ${ratio.toFixed(2)} × the loop's CPU per delivery (bound ${BOUNDS.ENGINE} ×)`);
  rows.push({ what: "engine (worker)", unit: "delivery", product: d.engine.cpuPerDelivery, baseline: d.baseline.cpuPerDelivery, ratio, bound: BOUNDS.ENGINE, ok });
  // the database's side: claims, records and their plans over the kept days' partitions
  const dbRatio = d.engine.dbCpuPerDelivery / d.baseline.cpuPerDelivery;
  const dbOk = dbRatio <= BOUNDS.ENGINE_DB;
  if (!dbOk) failures.push(`engine, database side: ${dbRatio.toFixed(2)} × the loop's CPU per delivery (bound ${BOUNDS.ENGINE_DB} ×)`);
  rows.push({ what: "engine (PostgreSQL)", unit: "delivery", product: d.engine.dbCpuPerDelivery, baseline: d.baseline.cpuPerDelivery, ratio: dbRatio, bound: BOUNDS.ENGINE_DB, ok: dbOk });
}

const f2 = (x) => (Number.isFinite(x) ? x.toFixed(2) : "–");
console.log(`\nbench:guard — server CPU per unit, product ÷ same-run baseline (${((Date.now() - started) / 1000).toFixed(0)} s, load average ${loadavg().map((x) => x.toFixed(2)).join(" ")})`);
console.log(`${"what".padEnd(24)} ${"unit".padEnd(9)} ${"product ms".padStart(10)} ${"baseline ms".padStart(11)} ${"ratio".padStart(6)} ${"bound".padStart(6)}`);
for (const r of rows) {
  const range = r.range ? ` (${f2(r.range[0])}–${f2(r.range[1])})` : "";
  console.log(`${r.what.padEnd(24)} ${r.unit.padEnd(9)} ${f2(r.product).padStart(10)} ${f2(r.baseline).padStart(11)} ${f2(r.ratio).padStart(6)} ${`≤ ${r.bound}`.padStart(6)} ${r.ok ? "ok" : "FAILED"}${range}`);
}
if (failures.length) {
  console.error(`\nbench:guard FAILED:\n  ${failures.join("\n  ")}`);
  process.exit(1);
}
console.log("\nbench:guard: every figure within its bound");
process.exit(0);
