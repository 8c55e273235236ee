// What a log line costs the process that writes it (docs/operations.md "Logs"): the service's
// logger (apps/server/dist/lib/logger.js: batched writes, its own redaction) against pino's
// defaults with the redaction the service had before (one write per line, wildcard `redact`
// paths), both against the same loop logging nothing, measured in the same run.
//
//   node bench/logging.mjs [--lines 100000] [--rounds 3]
//
// Each configuration runs in a child process of its own, its standard output a file (as under a
// log shipper or systemd), writing one delivery-attempt line per turn of the event loop with a
// little work between lines, as the engine does; CPU is the child's own (all its threads: the
// thread pool's writes included). Needs `npm run build`.
import { spawnSync } from "node:child_process";
import { mkdtempSync, openSync, closeSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";
import { assertBuilt } from "./lib/pkg.mjs";

const { values: args } = parseArgs({
  options: {
    lines: { type: "string", default: "100000" },
    rounds: { type: "string", default: "3" },
    child: { type: "string" },
  },
});
const LINES = Number(args.lines);

if (args.child) {
  // ---- the child: one configuration
  const line = () => ({
    deliveryId: "0193a0b2-4d5e-7f00-8a00-000000000001", createdAt: new Date(), endpointId: "0193a0b2-4d5e-7f00-8a00-000000000002",
    leaseToken: "a1b2c3:17", event_id: "evt_0193a0b24d5e7f008a00000000000003", attempt: 1, response_status: 200, error_code: null, outcome: "succeeded", duration_ms: 1.234,
  });
  let log;
  if (args.child === "service" || args.child === "none") {
    const { createLogger } = await import(new URL("../apps/server/dist/lib/logger.js", import.meta.url).href);
    log = createLogger({ level: args.child === "none" ? "warn" : "info" });
  } else {
    const { pino } = await import("pino");
    // the service's logger before batching and its own redaction: pino's default destination
    log = pino({
      level: "info", base: { service: "audit-review" },
      redact: {
        paths: ["authorization", "headers.authorization", "req.headers.authorization", "token", "secret", "password", "client_secret",
          "*.authorization", "*.token", "*.secret", "*.password", "*.client_secret", "*.headers"],
        censor: "[redacted]",
      },
    });
  }
  let sink = 0;
  const c0 = process.cpuUsage();
  await new Promise((resolve) => {
    let i = 0;
    const step = () => {
      for (let k = 0; k < 2_000; k++) sink += k; // the work between two lines
      log.info(line(), "delivery attempt");
      if (++i < LINES) setImmediate(step);
      else resolve();
    };
    step();
  });
  const c = process.cpuUsage(c0);
  // the report goes on stderr: stdout is the log
  process.stderr.write(`${JSON.stringify({ cpuUs: c.user + c.system, sink })}\n`);
  process.exit(0);
}

assertBuilt();
const dir = mkdtempSync(join(tmpdir(), "ars-logging-"));
const me = fileURLToPath(import.meta.url);
const configs = ["none", "service", "pino-defaults"];
const results = Object.fromEntries(configs.map((c) => [c, []]));
const bytes = {};
for (let round = 0; round < Number(args.rounds); round++) {
  // the order turns every round, so a drift of the machine does not favour one configuration
  for (const cfg of round % 2 ? [...configs].reverse() : configs) {
    const out = join(dir, `${cfg}.log`);
    const fd = openSync(out, "w");
    const r = spawnSync(process.execPath, [me, "--child", cfg, "--lines", String(LINES)], { stdio: ["ignore", fd, "pipe"], encoding: "utf8" });
    closeSync(fd);
    if (r.status !== 0) throw new Error(`${cfg} failed: ${r.stderr}`);
    const { cpuUs } = JSON.parse(r.stderr.trim().split("\n").pop());
    results[cfg].push(cpuUs / LINES);
    bytes[cfg] = statSync(out).size;
  }
}
rmSync(dir, { recursive: true, force: true });
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const base = median(results.none);
console.log(`${LINES} lines per run, ${args.rounds} rounds, CPU µs per line (median; the loop's own work, no line, is ${base.toFixed(1)} µs: ${results.none.map((x) => x.toFixed(1)).join(" · ")})`);
for (const cfg of ["service", "pino-defaults"]) {
  const m = median(results[cfg]);
  if (bytes[cfg] < LINES * 100) throw new Error(`${cfg} wrote ${bytes[cfg]} bytes: lines went missing`);
  console.log(`  ${cfg.padEnd(14)} ${m.toFixed(1).padStart(6)} µs per turn, ${(m - base).toFixed(1).padStart(6)} µs for the line   (runs: ${results[cfg].map((x) => x.toFixed(1)).join(" · ")})`);
}
const svc = median(results.service) - base;
const pinoDefaults = median(results["pino-defaults"]) - base;
console.log(`the service's line costs ${(svc / pinoDefaults).toFixed(2)} × what pino's defaults cost`);
