// The markdown of bench/RESULTS.md: what ran where, the measured tables, the targets.
import { existsSync, readFileSync } from "node:fs";
import { cpus, loadavg, release, totalmem } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { ROOT } from "./pkg.mjs";

export async function machineInfo(adminUrl) {
  const c = new pg.Client({ connectionString: adminUrl });
  await c.connect();
  let postgres;
  try {
    const v = (await c.query("SHOW server_version")).rows[0].server_version;
    const sb = (await c.query("SHOW shared_buffers")).rows[0].shared_buffers;
    const jit = (await c.query("SHOW jit")).rows[0].jit;
    postgres = `PostgreSQL ${v} (shared_buffers ${sb}, jit ${jit}, otherwise default settings)`;
  } finally {
    await c.end();
  }
  return {
    cores: cpus().length,
    cpu: cpus()[0]?.model?.trim() ?? "unknown",
    memGiB: (totalmem() / 2 ** 30).toFixed(1),
    kernel: `Linux ${release()}`,
    node: `Node ${process.version}`,
    postgres,
    loadavg: loadavg().map((x) => x.toFixed(2)).join(" "),
  };
}

const f0 = (x) => (Number.isFinite(x) ? Math.round(x).toLocaleString("en-US") : "–");
const f1 = (x) => (Number.isFinite(x) ? x.toFixed(1) : "–");
const f2 = (x) => (Number.isFinite(x) ? x.toFixed(2) : "–");
const ms = (x) => (Number.isFinite(x) ? `${x < 10 ? x.toFixed(1) : Math.round(x)}` : "–");
const ok = (b) => (b === undefined ? "–" : b ? "**met**" : "**missed**");

export function renderResults(r) {
  const m = r.machine;
  const s = r.settings;
  const out = [];
  out.push("# Benchmark results", "");
  out.push(`- **Date:** ${(r.date ?? new Date().toISOString()).slice(0, 16).replace("T", " ")} UTC (run took ${Math.round(r.elapsedSeconds / 60)} min${r.seedSeconds ? `, of which seeding ${Math.round(r.seedSeconds)} s` : "; database already seeded"})`);
  out.push(`- **Machine:** ${m.cores} cores (${m.cpu}), ${m.memGiB} GiB RAM, ${m.kernel}; ${m.node}; ${m.postgres} on 127.0.0.1. Load average at start ${m.loadavg}, at the end ${m.loadavgEnd ?? "–"} (1/5/15 min; the machine is shared: other work may run during the bench, which is why product and baseline alternate).`);
  out.push(`- **Command:** \`${r.command}\` (from the repository root, after \`npm ci && npm run build\`, PostgreSQL on 127.0.0.1:5432)`);
  out.push(`- **Data** (database \`${r.db ?? "ars_bench"}\`): org A ${f0(r.volume.a.evaluations)} coding evaluations (80 % completed with embedded E/M + ICD findings, ≈ ${r.facts.stats.findings_bytes} B jsonb per row; table ${r.facts.stats.ce_size}) and ${f0(r.volume.a.sets)} question sets with 18–22 questions each; org B ${f0(r.volume.b.evaluations)} / ${f0(r.volume.b.sets)} in the same tables and indexes; created_at spread over ${r.volume.days} days.`);
  out.push("");

  if (r.lists) {
    out.push("## List endpoints (`limit=100`)", "");
    out.push(`autocannon, ${s.connections} connections, ${s.duration} s per run after a ${s.warmup} s warm-up, ${s.rounds} rounds alternating product and baseline (the order flips every round); medians over rounds. Product = the built server (Express 5, request id, access log, bearer-token check, express-openapi-validator checking every request against the contract, then the list read through \`pg\` with its keyset SQL, one statement per page, and the count cache; Prisma 7 only for the schema and the writes; the default configuration: rate limit counting every request, metrics on; response validation off, as in production). Baseline = \`bench/servers/baseline.mjs\`: \`node:http\` + \`pg\` only, same token check, the product's keyset SQL and count cache, same JSON bytes (asserted before the load). Both run in their own process with a 10-connection pool.`, "");
    if (s.tokens) out.push(`Default configuration: the product's rate limit (${f0(s.rateLimitPerMinute)}/min per token) counts every request; the load is spread over ${s.tokens} tokens in turn (both servers get the same tokens), so it measures the counting, not refusals. Metrics on.`, "");
    const v8 = r.lists.some((x) => x.v8own);
    out.push(`| request | body | product req/s | baseline req/s | ratio (range) | product p50 / p99 ms | baseline p50 / p99 ms | server CPU ms/req product / baseline${v8 ? " | product with V8's own heap sizing: req/s, CPU ms/req; ours / V8's CPU (range)" : ""} |`);
    out.push(`|---|---:|---:|---:|---:|---:|---:|---:${v8 ? "|---:" : ""}|`);
    for (const x of r.lists) {
      const h = x.heapCpuRatios ?? [];
      out.push(
        `| ${x.label} | ${Math.round(x.bytes / 1024)} KiB | ${f0(x.product.rps)} | ${f0(x.baseline.rps)} | ${f2(x.ratio)} (${f2(x.ratioRange[0])}–${f2(x.ratioRange[1])}) | ${ms(x.product.p50)} / ${ms(x.product.p99)} | ${ms(x.baseline.p50)} / ${ms(x.baseline.p99)} | ${f1(x.product.cpu)} / ${f1(x.baseline.cpu)}${v8 ? ` | ${x.v8own ? `${f0(x.v8own.rps)}, ${f2(x.v8own.cpu)}; ${f2(x.product.cpu / x.v8own.cpu)} (${f2(Math.min(...h))}–${f2(Math.max(...h))})` : ""}` : ""} |`,
      );
    }
    out.push("");
    if (r.latency?.length) {
      out.push("Latency without queueing: **1 connection**, sequential requests, product and baseline alternating, medians over rounds:", "");
      out.push("| request | product p50 / p99 ms | baseline p50 / p99 ms |");
      out.push("|---|---:|---:|");
      for (const x of r.latency) out.push(`| ${x.label} | ${ms(x.product.p50)} / ${ms(x.product.p99)} | ${ms(x.baseline.p50)} / ${ms(x.baseline.p99)} |`);
      out.push("");
    }
    if (r.listRss) out.push(`Peak RSS during the list load: product ${f0(r.listRss.product)} MB, baseline ${f0(r.listRss.baseline)} MB${r.listRss.v8own ? `, product with V8's own heap sizing ${f0(r.listRss.v8own)} MB` : ""}.`, "");
  }

  const d = r.dispatcher;
  if (d?.skipped) {
    out.push("## Dispatcher", "", `Not measured: ${d.skipped}.`, "");
  } else if (d) {
    out.push("## Dispatcher", "");
    out.push(`${f0(d.burst?.events ?? d.engine?.events)} \`audit.completed\` events published ${(d.config.publishBatch ?? 1) > 1 ? `${d.config.publishBatch} per request through \`POST /v2/internal/event_batches\` (the burst; the paced phase one per \`POST /v2/internal/events\`)` : "through `POST /v2/internal/events`"} (${s.publishConcurrency} concurrent requests), each fanned out to ${d.endpoints} endpoints (created through the API) on one loopback HTTPS receiver that answers 200 at once (5 host names, a CA made at run time). The server runs the API and the dispatcher in one process (\`dispatcher: true\`, concurrency ${d.config.concurrency}, ${d.config.perEndpoint} per endpoint, claim batch ${d.config.batchSize}, its own pool of ${d.config.poolSize} connections). Deliveries/s = deliveries ÷ (last arrival − first publish sent); latency = receiver arrival − publish request sent, per (webhook-id, endpoint), first attempt. The paced phase publishes on a fixed schedule at half the event rate the burst sustained (capped at \`--paced-rate\`), for at most 20 s, so its latency is the dispatcher's own rather than time spent queueing. Server CPU ms/delivery = CPU time of the server process during the phase ÷ deliveries (publishing included), a cost that other work on the machine disturbs far less than deliveries/s. Every delivery was checked to be recorded \`succeeded\`; signatures of the first request per endpoint were verified by the receiver.`, "");
    out.push("| phase | events | deliveries | s | deliveries/s | publish events/s | event→first attempt p50 / p99 ms | (from publish ack) p50 / p99 ms | server CPU ms/delivery | recorded |");
    out.push("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|");
    const states = (x) => Object.entries(x ?? {}).map(([k, v]) => `${k} ${v}`).join(", ");
    const row = (name, p) =>
      `| ${name} | ${f0(p.events)} | ${f0(p.delivered)} | ${f1(p.seconds)} | ${f0(p.deliveriesPerSec)} | ${f0(p.eventsPerSec)} | ${ms(p.p50)} / ${ms(p.p99)} | ${ms(p.ackP50)} / ${ms(p.ackP99)} | ${f2(p.cpuPerDelivery)} | ${states(p.states)} |`;
    if (d.burst) out.push(row("burst (as fast as possible)", d.burst));
    if (d.paced) out.push(row(`paced (${d.paced.rate} events/s)`, d.paced));
    out.push(`| baseline: undici + HMAC loop, no database, concurrency ${d.baseline.concurrency} | ${f0(d.burst?.events)} | ${f0(d.baseline.delivered)} | | ${f0(d.baseline.deliveriesPerSec)} | | | | ${f2(d.baseline.cpuPerDelivery)} | |`);
    out.push("");
    if (d.burst) out.push(`Ratio product/baseline (deliveries/s, burst): **${f2(d.ratio)}**. Peak RSS of the server process (VmHWM) over both phases: **${f0(d.peakRssMb)} MB**${d.peakHeap ? ` (at the sampled peak of ${f0(d.peakHeap.rssMb)} MB: V8 heap ${f0(d.peakHeap.heapUsedMb)} MB used of ${f0(d.peakHeap.heapTotalMb)} MB, external ${f0(d.peakHeap.externalMb)} MB, array buffers ${f0(d.peakHeap.arrayBuffersMb)} MB)` : ""}.`, "");
    if (d.publishOne) {
      const o = d.publishOne;
      out.push(`**The publish path alone.** ${f0(o.events)} events, one per \`POST /v2/internal/events\`, one request at a time, with no dispatcher running (where event → first attempt starts): p50 **${ms(o.p50)} ms**, p90 ${ms(o.p90)} ms; server CPU ${f2(o.cpuPerEvent)} ms and PostgreSQL CPU ${f2(o.dbCpuPerEvent)} ms per event.`, "");
    }
    if (d.engine) {
      const rounds = d.engine.rounds?.length > 1 ? ` In ${d.engine.rounds.length} rounds, each measuring \`engine\` right before the receivers compared with it (this machine's speed drifts by more than the 10 % bound within minutes); each row is its median round, the worker's peak RSS the highest of the rounds.` : "";
      out.push("**The engine alone and receiver isolation.** The same number of events is stored through the API with no dispatcher running, then one `worker` process (the engine, no HTTP) is started; deliveries/s = the five endpoints' deliveries ÷ (their last arrival − their first). `slow` and `refusing` add a sixth endpoint to every event: one answering after 14 s (the per-attempt limit is 15 s), one whose port refuses connections; slowdown = how many fewer deliveries/s the five others got than in `engine`." + rounds, "");
      out.push("| scenario | deliveries (5 endpoints) | s | deliveries/s | × baseline loop | slowdown of the others | attempts at the 6th endpoint | worker CPU ms/delivery | worker peak RSS MB | recorded (5 endpoints) |");
      out.push("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|");
      for (const [name, x] of [["engine", d.engine], ["slow receiver (14 s)", d.slow], ["refusing receiver", d.refusing]]) {
        if (!x) continue;
        out.push(`| ${name} | ${f0(x.delivered)} | ${f1(x.seconds)} | ${f0(x.deliveriesPerSec)} | ${f2(x.deliveriesPerSec / d.baseline.deliveriesPerSec)} | ${x.slowdown === undefined ? "" : `${f1(x.slowdown * 100)} %`} | ${x.slowdown === undefined ? "" : f0(x.extraRequests)} | ${f2(x.cpuPerDelivery)} | ${f0(x.peakRssMb)} | ${states(x.states)} |`);
      }
      out.push("");
    }
    if (d.twoWorkers) {
      const t = d.twoWorkers;
      out.push(`**Scale-out.** The API (no dispatcher) and two \`worker\` processes on one PostgreSQL; ${f0(t.events)} events published through the API while both run. The receiver saw ${f0(t.requests)} requests for ${f0(t.events * d.endpoints)} deliveries (${f0(t.duplicates)} duplicates by webhook-id and endpoint); recorded: ${states(t.states)}, ${f0(t.attemptRows)} attempt rows; ${f0(t.deliveriesPerSec)} deliveries/s end to end; CPU split between the workers ${t.cpuShare.map((x) => `${Math.round(x * 100)} %`).join(" / ")}. **Every delivery sent exactly once and recorded: ${t.exactlyOnce ? "yes" : "NO"}.**`, "");
    }
  }

  // ---- scale-out topology (scripts/cluster.mjs)
  const c = r.cluster;
  if (c) {
    out.push("## Scale-out topology", "");
    out.push(
      `A PostgreSQL primary and a streaming replica of their own (not the server above), three \`serve\` processes (lists on the replica) behind a round-robin proxy, two \`worker\` processes, an HTTPS receiver; ${c.readers} list readers over ${c.tokens} tokens (rate limit ${c.rateLimitPerMinute}/min per token), ${c.eventsPerSecond} events/s, ${f1(c.seconds)} s of traffic${c.date ? ` (${c.date}, \`${c.command}\`, load average ${c.loadavg})` : ""}.`,
      "",
    );
    out.push("| requests/s | 429s | most 2xx of one token in a window | deliveries/s | deliveries / expected | duplicates | replica lag max | peak RSS MB |");
    out.push("|---:|---:|---:|---:|---:|---:|---:|---|");
    out.push(
      `| ${f0(c.requestsPerSecond)} | ${f0(c.tooMany)} | ${f0(c.maxOkPerTokenWindow ?? c.maxOkPerTokenMinute)} (limit ${f0(c.rateLimitPerMinute)}) | ${f0(c.deliveriesPerSecond)} | ${f0(c.deliveries)} / ${f0(c.expectedDeliveries)} | ${f0(c.duplicates)} | ${ms(c.replicaLag.maxSeconds * 1000)} ms, ${f0(c.replicaLag.maxBytes)} B | ${Object.entries(c.peakRssMb).map(([k, v]) => `${k} ${v}`).join(", ")} |`,
      "",
    );
  }

  // ---- targets
  out.push("## Targets", "");
  out.push("| target | measured | |");
  out.push("|---|---|---|");
  if (r.lists) {
    // issue 13's targets: throughput and CPU per request against the baseline, deep page and count
    // the default configuration (rate limit counting, metrics, partitions, retention) against the raw floor
    const worst = r.lists.reduce((a, b) => (b.ratio < a.ratio ? b : a));
    out.push(`| every list ≥ 0.95 × the baseline's throughput, default configuration | lowest ${f2(worst.ratio)} (${worst.label}); all: ${r.lists.map((x) => `${x.key} ${f2(x.ratio)}`).join(", ")} | ${ok(worst.ratio >= 0.95)} |`);
    const cpuRatio = (x) => x.product.cpu / x.baseline.cpu;
    const heaviest = r.lists.reduce((a, b) => (cpuRatio(b) > cpuRatio(a) ? b : a));
    out.push(`| every list's server CPU per request ≤ 1.10 × the baseline's | highest ${f2(cpuRatio(heaviest))} × (${heaviest.label}); all: ${r.lists.map((x) => `${x.key} ${f2(cpuRatio(x))}`).join(", ")} | ${ok(cpuRatio(heaviest) <= 1.1)} |`);
    const withV8 = r.lists.filter((x) => x.v8own);
    if (withV8.length) {
      const heapRatio = (x) => x.product.cpu / x.v8own.cpu;
      const dearest = withV8.reduce((a, b) => (heapRatio(b) > heapRatio(a) ? b : a));
      out.push(`| list CPU per request with our heap sizing within 5 % of V8's own (same run) | highest ${f2(heapRatio(dearest))} × (${dearest.label}); all: ${withV8.map((x) => `${x.key} ${f2(heapRatio(x))}`).join(", ")} | ${ok(heapRatio(dearest) <= 1.05)} |`);
    }
    for (const [first, deep] of [["ce-first", "ce-deep"], ["qs-first", "qs-deep"]]) {
      const la = r.latency?.find((x) => x.key === first);
      const lb = r.latency?.find((x) => x.key === deep);
      if (la && lb) {
        const ratio = lb.product.p50 / la.product.p50;
        out.push(`| deep page ≤ 1.1 × the first page (p50 at 1 connection, product), ${la.label.split(",")[0]} | ${ms(lb.product.p50)} vs ${ms(la.product.p50)} ms = ${f2(ratio)} × | ${ok(ratio <= 1.1)} |`);
      }
    }
    for (const [plain, total] of [["ce-first", "ce-total"], ["qs-first", "qs-total"]]) {
      const a = r.lists.find((x) => x.key === plain);
      const b = r.lists.find((x) => x.key === total);
      if (a && b) {
        const ratio = b.product.p50 / a.product.p50;
        out.push(`| include_total ≤ 1.5 × the plain page (p50, product, count warm), ${a.label.split(",")[0]} | ${ms(b.product.p50)} vs ${ms(a.product.p50)} ms = ${f2(ratio)} × | ${ok(ratio <= 1.5)} |`);
      }
    }
  }
  if (d && !d.skipped) {
    // the engine's targets (bench/README.md, "Targets"): past its best of 11-25
    if (d.engine) {
      const engineRounds = d.engine.rounds?.length > 1 ? `; median of ${d.engine.rounds.length} runs: ${d.engine.rounds.map(f0).join(", ")}/s` : "";
      out.push(`| engine alone ≥ 0.30 × the undici + HMAC loop | ${f2(d.engine.ratio)} × (${f0(d.engine.deliveriesPerSec)}/s against ${f0(d.baseline.deliveriesPerSec)}/s${engineRounds}) | ${ok(d.engine.ratio >= 0.3)} |`);
      const db = Number.isFinite(d.engine.dbCpuPerDelivery) ? `; PostgreSQL ${f2(d.engine.dbCpuPerDelivery)} ms` : "";
      out.push(`| worker CPU ≤ 0.15 ms per delivery (engine alone) | ${f2(d.engine.cpuPerDelivery)} ms${db} | ${ok(d.engine.cpuPerDelivery <= 0.15)} |`);
    }
    if (d.burst) out.push(`| end-to-end burst ≥ 3,000 deliveries/s on ${m.cores} cores | ${f0(d.burst.deliveriesPerSec)}/s (ingestion included) | ${ok(d.burst.deliveriesPerSec >= 3000)} |`);
    const lat = d.paced ?? d.burst;
    if (lat) {
      out.push(
        `| event→first-attempt p50 < 5 ms | ${d.paced ? `paced (${d.paced.rate} events/s)` : "burst"}: ${ms(lat.p50)} ms from the publish request being sent, ${ms(lat.ackP50)} ms from its acknowledgement (event committed)${lat.publishP50 === undefined ? "" : `; the publish request itself ${ms(lat.publishP50)} ms`} | ${lat.p50 < 5 ? "**met**" : lat.ackP50 < 5 ? "**missed** from send, met from commit" : "**missed**"} |`,
      );
    }
    const v8 = d.v8own;
    const v8Note = (mb) => (Number.isFinite(mb) ? ` (V8's own heap sizing, same run: ${f0(mb)} MB)` : "");
    if (d.burst) out.push(`| serve: peak RSS < 200 MB under the dispatcher burst | ${f0(d.peakRssMb)} MB (API + dispatcher)${v8Note(v8?.peakRssMb)} | ${ok(d.peakRssMb < 200)} |`);
    if (d.engine) out.push(`| worker: peak RSS < 150 MB (engine alone) | ${f0(d.engine.peakRssMb)} MB${v8Note(v8?.engine?.peakRssMb)}; CPU ms/delivery ${f2(d.engine.cpuPerDelivery)}${v8?.engine ? ` vs ${f2(v8.engine.cpuPerDelivery)}` : ""} | ${ok(d.engine.peakRssMb < 150)} |`);
    for (const [key, label] of [["slow", "a receiver answering after 14 s"], ["refusing", "a receiver refusing connections"]]) {
      const x = d[key];
      const each = x?.rounds?.length > 1 ? ` (median of ${x.rounds.length} rounds: ${x.rounds.map((r) => `${f1(r * 100)} %`).join(", ")})` : "";
      if (x) out.push(`| ${label} slows the others by ≤ 10 % | ${f1(x.slowdown * 100)} %${each} | ${ok(x.slowdown <= 0.1)} |`);
    }
    if (d.twoWorkers) out.push(`| two workers: every delivery sent exactly once and recorded | ${f0(d.twoWorkers.requests)} requests, ${f0(d.twoWorkers.duplicates)} duplicates, ${f0(d.twoWorkers.attemptRows)} attempt rows | ${ok(d.twoWorkers.exactlyOnce)} |`);
  }
  out.push("");

  // written by `npm run bench:retention` (bench/retention.mjs), its own scenario and command
  const retention = join(ROOT, "bench", "RETENTION.md");
  if (existsSync(retention)) out.push(readFileSync(retention, "utf8").trim(), "");

  const notes = join(ROOT, "bench", "NOTES.md");
  if (existsSync(notes)) out.push(readFileSync(notes, "utf8").trim(), "");
  return out.join("\n");
}
