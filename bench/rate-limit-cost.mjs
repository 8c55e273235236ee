// What the shared rate limit costs per request (README "Scaling out"): the counting statement
// alone, on the unlogged table the migration creates and on a logged copy (what UNLOGGED saves),
// then a cheap API request end to end with the limit on and off (server CPU per request).
//
//   flock /tmp/ars-bench.lock node bench/rate-limit-cost.mjs [--database-url postgresql://…/postgres] [--db NAME]
//
// Needs `npm run build`. Creates (and drops at the end) its own database, `ars_rate_limit_cost` by default.
import { randomBytes } from "node:crypto";
import { parseArgs } from "node:util";
import autocannon from "autocannon";
import pg from "pg";
import { startChild, cpuMsOf } from "./lib/children.mjs";
import { loadServer } from "./lib/pkg.mjs";

const { values: args } = parseArgs({
  options: {
    "database-url": { type: "string", default: process.env.BENCH_DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres" },
    db: { type: "string", default: "ars_rate_limit_cost" },
    statements: { type: "string", default: "5000" },
    duration: { type: "string", default: "8" },
    rounds: { type: "string", default: "2" },
  },
});
const adminUrl = args["database-url"];
const dbUrl = adminUrl.replace(/\/[^/]*$/, `/${args.db}`);
const log = (...a) => console.error("[rate-limit-cost]", ...a);

const admin = new pg.Client({ connectionString: adminUrl });
await admin.connect();
await admin.query(`DROP DATABASE IF EXISTS ${args.db} WITH (FORCE)`);
await admin.query(`CREATE DATABASE ${args.db}`);

const server = await loadServer();
const db = await server.openDatabase({ databaseUrl: dbUrl, poolSize: 2 });
await server.migrate(db);
const org = await server.createOrg(db, { name: "rate-limit-cost" });
const { token } = await server.createToken(db, { orgId: org.id, scopes: ["question_sets:read"] });
await db.exec("CREATE TABLE rate_limit_windows_logged (LIKE rate_limit_windows INCLUDING ALL)");

const { rateLimitsRepo } = await import(new URL("../apps/server/dist/repos/rate-limits.repo.js", import.meta.url).href);

/** Swaps the logged copy in under the product's table name, so both runs use the product's own statement. */
async function useTable(logged) {
  const [{ persistence }] = await db.query("SELECT relpersistence AS persistence FROM pg_class WHERE relname = 'rate_limit_windows'");
  if ((persistence === "p") === logged) return;
  await db.exec(`ALTER TABLE rate_limit_windows RENAME TO rate_limit_windows_swap;
                 ALTER TABLE rate_limit_windows_logged RENAME TO rate_limit_windows;
                 ALTER TABLE rate_limit_windows_swap RENAME TO rate_limit_windows_logged`);
}

async function statementCost(logged) {
  await useTable(logged);
  const client = new pg.Client({ connectionString: dbUrl });
  await client.connect();
  const [{ pid }] = (await client.query("SELECT pg_backend_pid() AS pid")).rows;
  const repo = rateLimitsRepo({ query: async (text, values) => (await client.query(text, values)).rows });
  const n = Number(args.statements);
  for (let i = 0; i < 200; i++) await repo.take([{ key: `warm-${i % 20}`, n: 1 }]);
  const cpu0 = cpuMsOf(pid);
  const t0 = performance.now();
  for (let i = 0; i < n; i++) await repo.take([{ key: `token-${i % 50}`, n: 1 }]);
  const wallUs = ((performance.now() - t0) * 1000) / n;
  const backendUs = ((cpuMsOf(pid) - cpu0) * 1000) / n;
  await client.end();
  return { table: logged ? "logged table" : "unlogged table (the migration's)", wallUs, backendUs };
}

async function endToEnd(rateLimitPerMinute) {
  const child = await startChild("servers/product.mjs", {
    env: { BENCH_SERVER_OPTIONS: JSON.stringify({ databaseUrl: dbUrl, rateLimitPerMinute, encryptionKey: randomBytes(32).toString("base64") }) },
    name: `product (rate limit ${rateLimitPerMinute})`,
  });
  try {
    const url = `${child.url}/v2/question_sets?limit=1`;
    await autocannon({ url, connections: 8, duration: 2, headers: { authorization: `Bearer ${token}` } });
    const cpu0 = child.cpuMs();
    const r = await autocannon({ url, connections: 8, duration: Number(args.duration), headers: { authorization: `Bearer ${token}` } });
    const requests = r.requests.total;
    if (r.non2xx || r.errors) throw new Error(`${r.non2xx} non-2xx, ${r.errors} errors`);
    return { rateLimitPerMinute, reqPerSec: r.requests.average, cpuMsPerReq: (child.cpuMs() - cpu0) / requests, p50: r.latency.p50 };
  } finally {
    await child.stop();
  }
}

try {
  const statements = [];
  for (const logged of [false, true, false, true]) statements.push(await statementCost(logged));
  await useTable(false);
  const runs = [];
  for (let round = 0; round < Number(args.rounds); round++) {
    for (const limit of round % 2 ? [1_000_000_000, 0] : [0, 1_000_000_000]) {
      log(`end to end, round ${round + 1}, rate limit ${limit ? "on" : "off"}`);
      runs.push(await endToEnd(limit));
    }
  }
  const f = (n, d = 0) => n.toFixed(d);
  console.log("| counting statement | wall µs/statement | PostgreSQL backend CPU µs/statement |\n|---|---:|---:|");
  for (const s of statements) console.log(`| ${s.table} (${args.statements} sequential, 50 keys) | ${f(s.wallUs)} | ${f(s.backendUs)} |`);
  console.log("\n| `GET /v2/question_sets?limit=1`, 8 connections | req/s | server CPU ms/req | p50 ms |\n|---|---:|---:|---:|");
  for (const r of runs) console.log(`| rate limit ${r.rateLimitPerMinute ? "on (shared, database)" : "off"} | ${f(r.reqPerSec)} | ${f(r.cpuMsPerReq, 3)} | ${r.p50} |`);
} finally {
  await db.close();
  await admin.query(`DROP DATABASE IF EXISTS ${args.db} WITH (FORCE)`);
  await admin.end();
}
