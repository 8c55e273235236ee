#!/usr/bin/env node
// `node bench/claim-cpu.mjs` — the PostgreSQL backend's CPU per claim, the engine's hot statement,
// for this checkout's build and, with --against, another checkout's, measured alternately in one
// run on one database (bench/NOTES.md, "The claim's own days"). A database the guard or the bench
// left (the engine's deliveries still in it) is made a queue again: every delivery pending and
// due, then a first claim holds some rows in flight, as a dispatcher would, and each measured
// claim runs in a transaction rolled back, so every round claims from the same state with the
// statement the engine prepares (a generic plan, as the engine's pool keeps).
//
//   node bench/claim-cpu.mjs [--db ars_bench_guard] [--against ../other-checkout] [--claims 200] [--rounds 3]
//
// Needs `npm run build` in each checkout and PostgreSQL on the same machine (it reads the
// backend's CPU time from /proc).
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import pg from "pg";

const { values: args } = parseArgs({
  options: {
    "database-url": { type: "string", default: process.env.BENCH_DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres" },
    db: { type: "string", default: "ars_bench_guard" },
    against: { type: "string" },
    claims: { type: "string", default: "200" },
    rounds: { type: "string", default: "3" },
    limit: { type: "string", default: "20" },
  },
});

const url = new URL(args["database-url"]);
url.pathname = `/${args.db}`;
const here = resolve(import.meta.dirname, "..");
const builds = [["this checkout", here], ...(args.against ? [["--against", resolve(args.against)]] : [])];
const load = async (root) => import(`${root}/apps/server/dist/repos/deliveries-queue.repo.js`);

/** The backend's user + system CPU in ms (clock ticks of 10 ms). */
const cpuMs = (pid) => {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(f[11]) + Number(f[12])) * 10;
};

async function measure(root) {
  const { claimStatement } = await load(root);
  const c = new pg.Client({ connectionString: url.toString(), options: "-c plan_cache_mode=force_generic_plan" });
  await c.connect();
  try {
    await c.query("UPDATE webhook_deliveries SET status = 'pending', locked_until = NULL, lease_owner = NULL, next_attempt_at = now() - interval '1 minute', attempt_count = 0");
    await c.query("VACUUM ANALYZE webhook_deliveries");
    const [{ floor }] = (await c.query("SELECT min(created_at) AS floor FROM webhook_deliveries WHERE status IN ('pending', 'retrying')")).rows;
    const base = { leaseMs: 120_000, perEndpoint: 8, scope: { kind: "all", streams: [] }, skipEndpoints: [] };
    // the floor a claim before would have answered (a build whose claim takes one argument ignores it)
    const statement = (r) => claimStatement({ ...base, leaseToken: randomUUID(), limit: Number(args.limit), now: new Date(), ...r }, floor);
    const first = statement({ busyEndpoints: new Map(), inFlight: [] });
    const held = (await c.query({ text: first.sql, values: first.params, name: first.name })).rows.filter((r) => r.id);
    const busy = new Map();
    for (const r of held) busy.set(r.endpoint_id, (busy.get(r.endpoint_id) ?? 0) + 1);
    const inFlight = held.map((r) => r.id);
    const [{ pid }] = (await c.query("SELECT pg_backend_pid() AS pid")).rows;
    const n = Number(args.claims);
    let rows = 0;
    const cpu0 = cpuMs(pid);
    for (let i = 0; i < n; i++) {
      const s = statement({ busyEndpoints: busy, inFlight });
      await c.query("BEGIN");
      rows += (await c.query({ text: s.sql, values: s.params, name: s.name })).rows.filter((r) => r.id).length;
      await c.query("ROLLBACK");
    }
    return { msPerClaim: (cpuMs(pid) - cpu0) / n, rowsPerClaim: rows / n };
  } finally {
    await c.end();
  }
}

const results = new Map(builds.map(([name]) => [name, []]));
for (let round = 1; round <= Number(args.rounds); round++) {
  for (const [name, root] of builds) {
    const r = await measure(root);
    results.get(name).push(r.msPerClaim);
    console.log(`round ${round} ${name.padEnd(13)} ${r.msPerClaim.toFixed(2)} ms of backend CPU per claim (${r.rowsPerClaim.toFixed(0)} rows each, in a rolled-back transaction)`);
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const [mine, other] = builds.map(([name]) => median(results.get(name)));
console.log(`\nmedian: this checkout ${mine.toFixed(2)} ms${other !== undefined ? `, --against ${other.toFixed(2)} ms: ${(mine / other).toFixed(2)} ×` : ""}`);
