// List benchmark: the same requests against the product and the baseline, alternating, several
// rounds, at fixed concurrency; bodies are first checked to be byte-identical.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import autocannon from "autocannon";
import { ROOT } from "./pkg.mjs";

export function listScenarios(facts) {
  const ce = "/v2/coding_evaluations?limit=100";
  const qs = "/v2/question_sets?limit=100";
  return [
    { key: "ce-first", label: "coding evaluations, first page", path: ce, expect: 100 },
    { key: "ce-deep", label: "coding evaluations, page after 900,000 rows", path: `${ce}&starting_after=${facts.deepEvaluationId}`, expect: 100 },
    { key: "ce-total", label: "coding evaluations, first page + include_total", path: `${ce}&include_total=true`, expect: 100 },
    { key: "ce-status", label: "coding evaluations, status=failed", path: `${ce}&status=failed`, expect: 100 },
    {
      key: "ce-created-after",
      label: "coding evaluations, created_after (1 year)",
      path: `${ce}&created_after=${encodeURIComponent(facts.createdAfter)}`,
      expect: 100,
    },
    { key: "qs-first", label: "question sets (~20 questions each), first page", path: qs, expect: 100 },
    { key: "qs-deep", label: "question sets, page after 9,000 sets", path: `${qs}&starting_after=${facts.deepSetId}`, expect: 100 },
    { key: "qs-total", label: "question sets, first page + include_total", path: `${qs}&include_total=true`, expect: 100 },
  ];
}

function firstDifference(a, b) {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
  return a.length === b.length ? -1 : n;
}

/** Fails loudly unless both servers answer every scenario with the same bytes. */
export async function verifyIdentical(scenarios, servers, token) {
  const outDir = join(ROOT, "bench", ".out");
  for (const s of scenarios) {
    const bodies = {};
    for (const [name, url] of Object.entries(servers)) {
      const res = await fetch(url + s.path, { headers: { authorization: `Bearer ${token}` } });
      bodies[name] = await res.text();
      if (res.status !== 200) throw new Error(`${name} answered ${res.status} to ${s.path}: ${bodies[name].slice(0, 500)}`);
    }
    const [pName, bName] = Object.keys(bodies);
    const p = bodies[pName];
    const b = bodies[bName];
    const at = firstDifference(p, b);
    if (at !== -1) {
      mkdirSync(outDir, { recursive: true });
      writeFileSync(join(outDir, `${s.key}.${pName}.json`), p);
      writeFileSync(join(outDir, `${s.key}.${bName}.json`), b);
      throw new Error(
        `NOT byte-identical: ${s.path}\n  first difference at byte ${at}\n  ${pName}: …${p.slice(Math.max(0, at - 80), at + 80)}…\n  ${bName}: …${b.slice(Math.max(0, at - 80), at + 80)}…\n  bodies written to bench/.out/`,
      );
    }
    const parsed = JSON.parse(p);
    if (parsed.data.length !== s.expect && (parsed.has_more || !parsed.data.length)) {
      throw new Error(`${s.path}: expected ${s.expect} items, got ${parsed.data.length}`);
    }
    s.bytes = Buffer.byteLength(p);
    s.totalCount = parsed.total_count;
  }
}

/**
 * autocannon options that send `token`, or with an array of tokens each request the next one in
 * turn: the product counts every request against its token's rate limit (the default
 * configuration), so the load is spread over many tokens to measure the counting, not refusals.
 */
export function authorised(token) {
  if (!Array.isArray(token)) return { headers: { authorization: `Bearer ${token}` } };
  const headers = token.map((t) => ({ authorization: `Bearer ${t}` }));
  let next = 0;
  return { requests: [{ setupRequest: (req) => ({ ...req, headers: { ...req.headers, ...headers[next++ % headers.length] } }) }] };
}

/**
 * One autocannon run; throws on any error or non-2xx answer. `cpuMs` reads the server process's
 * CPU time, so each run also yields CPU ms per request: a cost that other work on a shared
 * machine disturbs much less than req/s.
 */
export async function load(url, token, { connections, duration, cpuMs }) {
  const cpu0 = cpuMs?.();
  const r = await autocannon({ url, connections, duration, pipelining: 1, ...authorised(token) });
  const cpu = cpuMs ? cpuMs() - cpu0 : NaN;
  if (r.errors || r.timeouts || r.non2xx) {
    throw new Error(`load on ${url}: ${r.errors} errors, ${r.timeouts} timeouts, ${r.non2xx} non-2xx`);
  }
  return {
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    requests: r.requests.total,
    bytesPerSec: r.throughput.average,
    cpuPerRequest: cpu / r.requests.total,
  };
}

export const median = (xs) => {
  const s = [...xs].filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (!s.length) return NaN;
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/**
 * Rounds × scenarios × {product, baseline}; the order of the two flips every round so drift
 * (caches, autovacuum, thermal) does not favour one side. Returns per scenario the medians.
 */
export async function runLists({ scenarios, servers, cpu, token, rounds, duration, connections, warmup, onProgress }) {
  // product, baseline and, when given, `v8own`: the product with V8's own heap sizing
  const sides = Object.keys(servers);
  const results = new Map(scenarios.map((s) => [s.key, Object.fromEntries(sides.map((side) => [side, []]))]));
  for (const s of scenarios) {
    for (const side of sides) await load(servers[side] + s.path, token, { connections, duration: warmup, cpuMs: cpu[side] });
  }
  for (let round = 1; round <= rounds; round++) {
    for (const s of scenarios) {
      const order = round % 2 ? sides : [...sides].reverse();
      for (const side of order) {
        const r = await load(servers[side] + s.path, token, { connections, duration, cpuMs: cpu[side] });
        results.get(s.key)[side].push(r);
        onProgress?.(
          `round ${round}/${rounds} ${s.key.padEnd(17)} ${side.padEnd(8)} ${r.rps.toFixed(0).padStart(6)} req/s  p50 ${r.p50} ms  p99 ${r.p99} ms  ${r.cpuPerRequest.toFixed(1)} CPU ms/req`,
        );
      }
    }
  }
  return scenarios.map((s) => {
    const r = results.get(s.key);
    const sum = (side) => ({
      rps: median(r[side].map((x) => x.rps)),
      p50: median(r[side].map((x) => x.p50)),
      p99: median(r[side].map((x) => x.p99)),
      cpu: median(r[side].map((x) => x.cpuPerRequest)),
      runs: r[side],
    });
    const product = sum("product");
    const baseline = sum("baseline");
    const perRound = r.product.map((p, i) => p.rps / r.baseline[i].rps);
    const out = { ...s, product, baseline, ratio: product.rps / baseline.rps, ratioRange: [Math.min(...perRound), Math.max(...perRound)] };
    if (r.v8own) {
      out.v8own = sum("v8own");
      // CPU per request of our heap settings over V8's own, round by round (the same load, back to back)
      out.heapCpuRatios = r.product.map((p, i) => p.cpuPerRequest / r.v8own[i].cpuPerRequest);
    }
    return out;
  });
}

/**
 * Latency without queueing: one connection, product and baseline alternating, for the first
 * page and the deep page of each list. At 16 connections a saturated server's latency is
 * mostly time spent waiting in line; at 1 it is what one request costs.
 */
export async function runLatencyProbe({ scenarios, servers, cpu, token, rounds, duration, onProgress }) {
  const keys = ["ce-first", "ce-deep", "qs-first", "qs-deep"];
  const picked = scenarios.filter((s) => keys.includes(s.key));
  const out = new Map(picked.map((s) => [s.key, { product: [], baseline: [] }]));
  for (let round = 1; round <= rounds; round++) {
    for (const s of picked) {
      const order = round % 2 ? ["product", "baseline"] : ["baseline", "product"];
      for (const side of order) {
        const r = await load(servers[side] + s.path, token, { connections: 1, duration, cpuMs: cpu[side] });
        out.get(s.key)[side].push(r);
        onProgress?.(`latency ${round}/${rounds} ${s.key.padEnd(9)} ${side.padEnd(8)} p50 ${r.p50} ms  p99 ${r.p99} ms  (${r.rps.toFixed(0)} req/s at 1 connection)`);
      }
    }
  }
  return picked.map((s) => {
    const r = out.get(s.key);
    const sum = (side) => ({ p50: median(r[side].map((x) => x.p50)), p99: median(r[side].map((x) => x.p99)), rps: median(r[side].map((x) => x.rps)) });
    return { key: s.key, label: s.label, product: sum("product"), baseline: sum("baseline") };
  });
}
