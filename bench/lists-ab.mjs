#!/usr/bin/env node
// `node bench/lists-ab.mjs --against ../other-checkout` — the deliveries list's pages as users
// request them (`limit=100`: the first page, the second by cursor, one endpoint's first page;
// `--list events`: the events list's first page, its second by cursor, one event by id),
// this checkout's build against another checkout's, on a database `npm run bench:retention` left
// (bench/NOTES.md, "The first page over the days kept"). Both servers run in this one process on
// the same simulated clock (an hour into the day after the database's newest deliveries, as the
// retention bench measures it), and the requests alternate one by one between them, so whatever
// the machine does meanwhile falls on both alike. Prints each page's p50 on both and their ratio.
// `--against .` is an A/A run: what the harness itself tells apart.
//
//   node bench/lists-ab.mjs --against ../other [--list events] [--db ars_bench_retention] [--requests 1500] [--at 2026-11-29T01:00:00Z]
//   node bench/lists-ab.mjs --against ../other --concurrency 8 [--seconds 5] [--rounds 3]
//
// Under load (`--concurrency`) each build serves the page alone for a few seconds at a time, in
// turns, and the CPU of this process (both servers and the clients: the clients' share is the
// same on both sides) and of the database's backends is divided by the requests answered.
// Needs `npm run build` in each checkout (the other with its own `npm ci`) and the database.
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { postgresCpuMs } from "./lib/children.mjs";
import { simulatedClock } from "./lib/days.mjs";
import { p50, sideBySide, timedGet } from "./lib/side-by-side.mjs";

const { values: args } = parseArgs({
  options: {
    "database-url": { type: "string", default: process.env.BENCH_DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres" },
    db: { type: "string", default: "ars_bench_retention" },
    against: { type: "string" },
    list: { type: "string", default: "deliveries" },
    requests: { type: "string", default: "1500" },
    // the simulated clock's start (ISO 8601); default an hour into the day after the newest deliveries
    at: { type: "string" },
    // under load instead: N requests in flight, one build at a time for `seconds`, alternating
    // `rounds` times; this process's CPU (servers and clients) and PostgreSQL's per request
    concurrency: { type: "string" },
    seconds: { type: "string", default: "5" },
    rounds: { type: "string", default: "3" },
  },
});
if (!args.against) throw new Error("--against <checkout> is required (`.` for an A/A run)");
const dist = (checkout) => {
  const file = resolve(checkout, "apps", "server", "dist", "index.js");
  if (!existsSync(file)) throw new Error(`${file} is missing: run npm run build in ${checkout}`);
  return pathToFileURL(file).href;
};
const REQUESTS = Number(args.requests);
const url = new URL(args["database-url"]);
url.pathname = `/${args.db}`;
const databaseUrl = url.toString();

const ours = await import(dist("."));
// the same file imported twice is one module: an A/A run asks for a copy by a query string
const theirs = await import(resolve(args.against) === resolve(".") ? `${dist(".")}?against` : dist(args.against));
const db = await ours.openDatabase({ databaseUrl, poolSize: 2 });
const [{ org_id: org }] = await db.query("SELECT org_id FROM webhook_deliveries GROUP BY 1 ORDER BY count(*) DESC LIMIT 1");
const [{ last }] = await db.query("SELECT max(created_at) AS last FROM webhook_deliveries WHERE org_id = $1", [org]);
const [{ endpoint_id: endpoint }] = await db.query("SELECT endpoint_id FROM webhook_deliveries WHERE org_id = $1 ORDER BY endpoint_id LIMIT 1", [org]);
const { clock } = simulatedClock(args.at ? Date.parse(args.at) : ours.dayStart(new Date(last)).getTime() + ours.DAY_MS + 3_600_000);
const { token } = await ours.createToken(db, { orgId: org, scopes: ours.ALL_SCOPES });
const options = {
  port: 0, metricsPort: 0, databaseUrl, encryptionKey: randomBytes(32).toString("base64"), dispatcher: false, clock: () => clock,
  rateLimitPerMinute: 0, validateResponses: false, logLevel: "warn", retentionDays: 30, housekeepingIntervalMs: ours.DAY_MS,
};
const servers = { against: await theirs.startServer(options), this: await ours.startServer(options) };
const headers = { authorization: `Bearer ${token}` };
if (!["deliveries", "events"].includes(args.list)) throw new Error("--list is deliveries or events");
const path = args.list === "events" ? "/v2/events" : "/v2/webhook_deliveries";
const first = await (await fetch(`${servers.this.url}${path}?limit=100`, { headers })).json();
const pages = {
  "first page": `${path}?limit=100`,
  "second page by cursor": `${path}?limit=100&starting_after=${first.data.at(-1).id}`,
  ...(args.list === "events" ? { "one event": `${path}/${first.data[50].id}` } : { "one endpoint": `${path}?limit=100&endpoint_id=${endpoint}` }),
};
/** `path` on one build for `seconds` with `concurrency` requests in flight: requests/s, CPU ms per request here and in PostgreSQL. */
async function load(base, path, concurrency, seconds) {
  const until = performance.now() + seconds * 1000;
  const cpu = process.cpuUsage();
  const pg0 = postgresCpuMs(args.db);
  const t0 = performance.now();
  let done = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (performance.now() < until) {
      await timedGet(base + path, headers);
      done++;
    }
  }));
  const s = (performance.now() - t0) / 1000;
  const used = process.cpuUsage(cpu);
  return { perSecond: done / s, cpuMs: (used.user + used.system) / 1000 / done, pgMs: (postgresCpuMs(args.db) - pg0) / done };
}

if (args.concurrency) {
  const concurrency = Number(args.concurrency);
  const seconds = Number(args.seconds);
  console.log(`${args.db}, org ${org}, clock at ${clock.now().toISOString()}; ${concurrency} in flight, ${seconds} s per build and turn, ${args.rounds} rounds`);
  for (const [name, path] of Object.entries(pages)) {
    await load(servers.this.url, path, concurrency, 1);
    await load(servers.against.url, path, concurrency, 1);
    const runs = { this: [], against: [] };
    for (let r = 0; r < Number(args.rounds); r++) {
      for (const side of r % 2 ? ["this", "against"] : ["against", "this"]) runs[side].push(await load(servers[side].url, path, concurrency, seconds));
    }
    const med = (side, k) => p50(runs[side].map((x) => x[k]));
    const show = (side) => `${med(side, "perSecond").toFixed(0)}/s, ${med(side, "cpuMs").toFixed(3)} ms here + ${med(side, "pgMs").toFixed(3)} ms PostgreSQL per request`;
    console.log(`${name}: this ${show("this")}; against ${show("against")}; this ÷ against: throughput ${(med("this", "perSecond") / med("against", "perSecond")).toFixed(3)}, CPU here ${(med("this", "cpuMs") / med("against", "cpuMs")).toFixed(3)}, PostgreSQL ${(med("this", "pgMs") / med("against", "pgMs")).toFixed(3)}`);
  }
  await servers.this.close();
  await servers.against.close();
  await db.close();
  process.exit(0);
}

console.log(`${args.db}, org ${org}, ${args.list}, clock at ${clock.now().toISOString()}; ${REQUESTS} requests per page and build, alternating`);
const sides = { this: { url: servers.this.url, headers }, against: { url: servers.against.url, headers } };
const measured = await sideBySide(sides, Object.fromEntries(Object.entries(pages).map(([name, path]) => [name, { this: path, against: path }])), { requests: REQUESTS });
for (const [name, { this: ours, against }] of Object.entries(measured)) {
  console.log(`${name}: this ${ours.toFixed(3)} ms, against ${against.toFixed(3)} ms (p50), this ÷ against ${(ours / against).toFixed(3)}`);
}
await servers.this.close();
await servers.against.close();
await db.close();
process.exit(0);
