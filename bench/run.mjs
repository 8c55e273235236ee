#!/usr/bin/env node
// `npm run bench` — measures the API's list endpoints against a node:http + pg baseline and the
// delivery engine against an undici + HMAC baseline, in one run, on PostgreSQL. See README.md.
import { randomBytes } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { startChild } from "./lib/children.mjs";
import { runDispatcherBench } from "./lib/dispatcher.mjs";
import { listScenarios, runLatencyProbe, runLists, verifyIdentical } from "./lib/lists.mjs";
import { DIST, hasDispatcher, loadServer, ROOT, V8_OWN_HEAP_ENV } from "./lib/pkg.mjs";
import { summariseProfile } from "./lib/profile.mjs";
import { machineInfo, renderResults } from "./lib/report.mjs";
import { ensureDatabase, ensureOrgs, ensureSeeded, seedFacts, VOLUME, withDatabase } from "./lib/seed.mjs";

const { values: args } = parseArgs({
  options: {
    reseed: { type: "boolean", default: false },
    only: { type: "string" }, // lists | dispatcher | cluster
    "cluster-seconds": { type: "string", default: "60" }, // traffic of the scale-out topology scenario
    scenarios: { type: "string" }, // comma list of scenario keys (list and dispatcher ones)
    rounds: { type: "string", default: "3" },
    duration: { type: "string", default: "10" },
    warmup: { type: "string", default: "2" },
    connections: { type: "string", default: "16" },
    tokens: { type: "string", default: "256" }, // the load is spread over this many tokens (the rate limit counts each)
    "heap-compare": { type: "string", default: "on" }, // on: the product also with V8's own heap sizing, side by side (off: skip)
    "latency-duration": { type: "string", default: "4" }, // seconds per run of the 1-connection latency probe (0: skip)
    "latency-rounds": { type: "string", default: "5" },
    events: { type: "string", default: "10000" },
    "paced-events": { type: "string", default: "2000" },
    "paced-rate": { type: "string", default: "100" },
    "publish-concurrency": { type: "string", default: "16" },
    "receiver-rounds": { type: "string", default: "3" }, // rounds of engine, then engine with a slow / refusing sixth endpoint (slowdowns judged on medians)
    "publish-batch": { type: "string", default: "20" }, // events per request in the dispatcher burst (POST /v2/internal/event_batches); 1: one per POST /v2/internal/events
    profile: { type: "boolean", default: false },
    "product-node-options": { type: "string", default: "" }, // extra node flags for the product server, e.g. "--max-old-space-size=128"
    "database-url": { type: "string", default: process.env.BENCH_DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres" },
    db: { type: "string", default: process.env.BENCH_DB ?? "ars_bench" },
    "no-write": { type: "boolean", default: false },
    render: { type: "boolean", default: false }, // re-render RESULTS.md from bench/results.json (e.g. after editing NOTES.md)
    help: { type: "boolean", default: false },
  },
});

if (args.help) {
  console.log(`npm run bench [-- options]
  --reseed                drop and re-create the bench database (otherwise reused when its counts are right)
  --only lists|dispatcher|cluster   run one part (cluster: the scale-out topology of npm run cluster;
                          its figures are merged into bench/results.json and RESULTS.md unless --no-write)
  --cluster-seconds S     traffic of the cluster scenario (60)
  --scenarios a,b         scenarios to run (lists: ce-first ce-deep ce-total ce-status ce-created-after qs-first qs-deep qs-total;
                          dispatcher: burst paced publish engine slow refusing twoWorkers); a half with none of its keys runs all of its own
  --rounds N              alternating product/baseline rounds (3)
  --latency-duration S    seconds per run of the 1-connection latency probe of first and deep pages (4; 0 skips it)
  --latency-rounds N      its rounds (5)
  --duration S            seconds per autocannon run (10); --warmup S (2); --connections N (16)
  --tokens N              tokens the load is spread over, each counted by the default rate limit (256)
  --heap-compare on|off   also run the product with V8's own heap sizing (lists: a third server in every
                          round; dispatcher: burst and engine again) and print both side by side (on)
  --events N              dispatcher burst events (10000); --paced-events N (2000) --paced-rate R (100/s)
  --receiver-rounds N     rounds of the engine alone beside the slow and refusing receivers (3): each slowdown
                          is against the engine run just before it, the figures judged are medians
  --publish-batch N       events per ingestion request in the burst (20, through publishEvents; 1 = publishEvent)
  --profile               run the product (and baseline) server with --cpu-prof; summaries in bench/profiles/
  --product-node-options="--max-old-space-size=128"   extra node flags for the product server (note the =)
  --database-url URL      an admin URL of the PostgreSQL server (postgresql://postgres@127.0.0.1:5432/postgres)
  --db NAME               the bench database (ars_bench)
  --no-write              do not write bench/RESULTS.md
  --render                only re-render bench/RESULTS.md from bench/results.json (after editing NOTES.md)`);
  process.exit(0);
}

if (args.render) {
  const last = JSON.parse(readFileSync(join(ROOT, "bench", "results.json"), "utf8"));
  const markdown = renderResults(last);
  writeFileSync(join(ROOT, "bench", "RESULTS.md"), markdown);
  console.log(markdown);
  process.exit(0);
}

const int = (name) => {
  const n = Number(args[name]);
  if (!Number.isFinite(n) || n < 0) throw new Error(`--${name} must be a number`);
  return n;
};
const log = (msg) => console.log(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}`);
const command = `npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(" ")}` : ""}`;
const started = Date.now();

function warnIfStale() {
  let newest = 0;
  const walk = (dir) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else newest = Math.max(newest, statSync(p).mtimeMs);
    }
  };
  walk(join(ROOT, "apps", "server", "src"));
  if (newest > statSync(join(DIST, "index.js")).mtimeMs) log("WARNING: apps/server/src is newer than dist: run `npm run build` to measure the current code");
}

const profileDir = join(ROOT, "bench", "profiles");
const stamp = new Date().toISOString().replace(/[:.]/g, "-");
const profArgs = (name) => (args.profile ? ["--cpu-prof", `--cpu-prof-dir=${profileDir}`, `--cpu-prof-name=${name}-${stamp}.cpuprofile`] : []);
const productArgs = (name) => [...args["product-node-options"].split(" ").filter(Boolean), ...profArgs(name)];
function reportProfile(name) {
  if (!args.profile) return;
  const file = join(profileDir, `${name}-${stamp}.cpuprofile`);
  const s = summariseProfile(file, 30);
  const text = `profile ${file}\ntotal sampled ${s.totalMs.toFixed(0)} ms\n\nself time by package:\n${s.packages.join("\n")}\n\nself time by function:\n${s.functions.join("\n")}\n`;
  writeFileSync(file.replace(/\.cpuprofile$/, ".txt"), text);
  console.log(`\n${text}`);
}

const runLists_ = !args.only || args.only === "lists";
const runDispatch = !args.only || args.only === "dispatcher";
const runClusterPart = !args.only || args.only === "cluster";

/** The scale-out topology of `npm run cluster` (scripts/cluster.mjs), with the settings it ran with. */
async function clusterScenario() {
  const { runCluster } = await import("../scripts/cluster.mjs");
  const settings = { seconds: int("cluster-seconds"), readers: 8, tokens: 2, eventsPerSecond: 100, rateLimitPerMinute: 300 };
  log(`cluster: ${settings.seconds} s of traffic`);
  return { ...settings, ...(await runCluster({ ...settings, log })), date: new Date().toISOString(), command, loadavg: loadavg().map((x) => x.toFixed(2)).join(" ") };
}

if (args.only === "cluster") {
  // The topology brings its own primary and replica: no bench database, no seeding.
  const cluster = await clusterScenario();
  const path = join(ROOT, "bench", "results.json");
  const last = JSON.parse(readFileSync(path, "utf8"));
  const markdown = renderResults({ ...last, cluster });
  console.log(`\n${markdown}`);
  if (!args["no-write"]) {
    writeFileSync(path, `${JSON.stringify({ ...last, cluster }, null, 2)}\n`);
    writeFileSync(join(ROOT, "bench", "RESULTS.md"), markdown);
    log("written: the cluster figures into bench/results.json and bench/RESULTS.md (the other sections are kept)");
  }
  process.exit(0);
}

const server = await loadServer();
warnIfStale();
const machine = await machineInfo(args["database-url"]);
log(`${machine.cores} cores, ${machine.memGiB} GiB, load average ${machine.loadavg}; ${machine.node}; ${machine.postgres}`);

// ---- database ---------------------------------------------------------------------------------
await ensureDatabase(args["database-url"], args.db, { reseed: args.reseed });
const databaseUrl = withDatabase(args["database-url"], args.db);
const db = await server.openDatabase({ databaseUrl });
let orgs;
let token;
/** The load's tokens: the product runs with its default rate limit, which counts every request against its token. */
const tokens = [];
try {
  const migrated = await server.migrate(db);
  // A migration edited after this database applied it (while it was being written) is not applied
  // again: the bench would measure its first version. Say so; --reseed starts from a new database.
  if (migrated.modifiedAfterApply.length) log(`WARNING: migrations changed after this database applied them (their first version is what runs here; --reseed rebuilds it): ${migrated.modifiedAfterApply.join(", ")}`);
  orgs = await ensureOrgs(server, db);
  for (let i = 0; i < Math.max(1, int("tokens")); i++) {
    const minted = await server.createToken(db, {
      orgId: orgs.a,
      scopes: ["question_sets:read", "coding_evaluations:read", "webhooks:read", "webhooks:write", "internal:ingest"],
      name: `bench ${stamp} ${i}`,
    });
    tokens.push(minted.token);
  }
  token = tokens[0];
} finally {
  await db.close();
}
const seedStart = Date.now();
const didSeed = await ensureSeeded({ url: databaseUrl, orgs, force: args.reseed });
const seedSeconds = didSeed ? (Date.now() - seedStart) / 1000 : null;
const facts = await seedFacts(databaseUrl, orgs);
log(`data: coding_evaluations ${facts.stats.ce_size}, question sets + questions ${facts.stats.qs_size}, findings ≈ ${facts.stats.findings_bytes} B/row stored`);

const encryptionKey = randomBytes(32).toString("base64");
const results = { machine, command, db: args.db, volume: VOLUME, facts, seedSeconds, lists: null, listRss: null, dispatcher: null, settings: {} };
results.settings = {
  rounds: int("rounds"),
  duration: int("duration"),
  warmup: int("warmup"),
  connections: int("connections"),
  latencyDuration: int("latency-duration"),
  latencyRounds: int("latency-rounds"),
  events: int("events"),
  pacedEvents: int("paced-events"),
  pacedRate: int("paced-rate"),
  publishConcurrency: int("publish-concurrency"),
  publishBatch: Math.max(1, int("publish-batch")),
  receiverRounds: Math.max(1, int("receiver-rounds")),
  tokens: tokens.length,
  rateLimitPerMinute: server.loadConfig().rateLimitPerMinute,
  heapCompare: args["heap-compare"] !== "off",
};
log(`default configuration: rate limit ${results.settings.rateLimitPerMinute}/min per token, load spread over ${tokens.length} tokens; metrics on${results.settings.heapCompare ? "; heap sizing: ours and V8's own side by side" : ""}`);

// ---- lists ------------------------------------------------------------------------------------
if (runLists_) {
  let scenarios = listScenarios(facts);
  const keep = new Set((args.scenarios ?? "").split(",").filter(Boolean));
  if ([...keep].some((k) => scenarios.some((s) => s.key === k))) scenarios = scenarios.filter((s) => keep.has(s.key));
  const product = await startChild("servers/product.mjs", {
    name: "product server",
    execArgv: productArgs("product-lists"),
    env: { BENCH_SERVER_OPTIONS: JSON.stringify({ databaseUrl, dispatcher: false, encryptionKey }) },
  });
  const baseline = await startChild("servers/baseline.mjs", {
    name: "baseline server",
    execArgv: profArgs("baseline-lists"),
    env: { DATABASE_URL: databaseUrl },
  });
  const v8own = results.settings.heapCompare
    ? await startChild("servers/product.mjs", {
        name: "product server (V8's own heap sizing)",
        execArgv: productArgs("product-v8own-lists"),
        env: { ...V8_OWN_HEAP_ENV, BENCH_SERVER_OPTIONS: JSON.stringify({ databaseUrl, dispatcher: false, encryptionKey }) },
      })
    : null;
  try {
    const servers = { product: product.url, baseline: baseline.url, ...(v8own && { v8own: v8own.url }) };
    await verifyIdentical(scenarios, servers, token);
    log(`bodies byte-identical for ${scenarios.length} requests (${scenarios.map((s) => `${s.key} ${(s.bytes / 1024).toFixed(0)} KiB`).join(", ")})`);
    const { rounds, duration, connections, warmup } = results.settings;
    const eta = scenarios.length * Object.keys(servers).length * (rounds * duration + warmup);
    log(`lists: ${scenarios.length} scenarios × ${Object.keys(servers).length} servers × ${rounds} rounds × ${duration} s, ${connections} connections (≈ ${Math.ceil(eta / 60)} min)`);
    const cpu = { product: product.cpuMs, baseline: baseline.cpuMs, ...(v8own && { v8own: v8own.cpuMs }) };
    results.lists = await runLists({ scenarios, servers, cpu, token: tokens, rounds, duration, connections, warmup, onProgress: log });
    if (results.settings.latencyDuration > 0) {
      log(`latency at 1 connection: first and deep pages, ${results.settings.latencyRounds} rounds × ${results.settings.latencyDuration} s`);
      results.latency = await runLatencyProbe({
        scenarios,
        servers: { product: servers.product, baseline: servers.baseline },
        cpu,
        token: tokens,
        rounds: results.settings.latencyRounds,
        duration: results.settings.latencyDuration,
        onProgress: log,
      });
    }
    results.listRss = { product: product.rss().peakMb, baseline: baseline.rss().peakMb, ...(v8own && { v8own: v8own.rss().peakMb }) };
  } finally {
    await product.stop();
    await baseline.stop();
    await v8own?.stop();
  }
  reportProfile("product-lists");
  reportProfile("baseline-lists");
}

// ---- dispatcher -------------------------------------------------------------------------------
if (runDispatch) {
  if (!hasDispatcher()) {
    log("dispatcher: apps/server/dist/delivery/dispatcher.js is not in the build: skipped");
    results.dispatcher = { skipped: "the build has no delivery dispatcher (apps/server/src/delivery/dispatcher.ts)" };
  } else {
    const dispatcherRun = (extra) =>
      runDispatcherBench({
        databaseUrl,
        orgId: orgs.a,
        token,
        publishTokens: tokens,
        eventSet: facts.eventSet,
        events: results.settings.events,
        paced: { events: results.settings.pacedEvents, rate: results.settings.pacedRate },
        publishConcurrency: results.settings.publishConcurrency,
        publishBatch: results.settings.publishBatch,
        receiverRounds: results.settings.receiverRounds,
        execArgv: productArgs("product-dispatcher"),
        scenarios: args.scenarios?.split(","),
        log,
        ...extra,
      });
    results.dispatcher = await dispatcherRun({});
    reportProfile("product-dispatcher");
    // memory is what the heap sizing buys: the burst and the engine again with V8's own, same data
    const dispatcherKeys = ["burst", "paced", "publish", "engine", "slow", "refusing", "twoWorkers"];
    const given = (args.scenarios ?? "").split(",").filter((k) => dispatcherKeys.includes(k));
    const memoryScenarios = given.length ? given.filter((k) => k === "burst" || k === "engine") : ["burst", "engine"];
    if (results.settings.heapCompare && !results.dispatcher.skipped && memoryScenarios.length) {
      log(`dispatcher with V8's own heap sizing: ${memoryScenarios.join(", ")}`);
      const v8 = await dispatcherRun({ env: V8_OWN_HEAP_ENV, scenarios: memoryScenarios, execArgv: args["product-node-options"].split(" ").filter(Boolean) });
      results.dispatcher.v8own = { burst: v8.burst, engine: v8.engine, peakRssMb: v8.peakRssMb };
    }
  }
}

if (runClusterPart) results.cluster = await clusterScenario();

results.elapsedSeconds = (Date.now() - started) / 1000;
results.date = new Date().toISOString();
results.machine.loadavgEnd = (await import("node:os")).loadavg().map((x) => x.toFixed(2)).join(" ");
const markdown = renderResults(results);
console.log(`\n${markdown}`);
const complete = runLists_ && runDispatch && !args.scenarios;
results.complete = complete && !args["no-write"];
const outDir = join(ROOT, "bench", ".out");
mkdirSync(outDir, { recursive: true });
writeFileSync(join(outDir, "last-run.md"), markdown);
writeFileSync(join(outDir, "last-run.json"), JSON.stringify(results, null, 2));
if (complete && !args["no-write"]) {
  writeFileSync(join(ROOT, "bench", "RESULTS.md"), markdown);
  writeFileSync(join(ROOT, "bench", "results.json"), `${JSON.stringify(results, null, 2)}\n`);
  log("written: bench/RESULTS.md and bench/results.json (the raw numbers of the same run)");
} else {
  log("partial run: written to bench/.out/last-run.md only (bench/RESULTS.md is kept for full runs)");
}
process.exit(0);
