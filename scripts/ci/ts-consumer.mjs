#!/usr/bin/env node
// CI: @audit-review/client as a user gets it. `npm pack` makes the two tarballs (prepack builds
// dist), they are installed into an empty project in a temporary directory outside the
// repository, a small consumer (ts-consumer/consumer.ts) is type-checked and compiled with
// `tsc --strict`, and run against a live server: the iterator, ApiError on a 400, creating an
// endpoint, then verifyWebhook and parseAuditCompleted on the delivery the server's engine really
// sent to a local HTTPS receiver (the test kit's receiver and CA); last, the API part again
// through a proxy that adds a field to every JSON object the server answers.
//
//   node scripts/ci/ts-consumer.mjs          (needs the server built: npm run build)
import { randomUUID } from "node:crypto";
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { startReceiver } from "@audit-review/test-kit/receiver";
import { commands } from "./commands.mjs";
import { startFieldAddingProxy } from "./field-adding-proxy.mjs";
import { startLiveServer } from "./live-server.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, "../..");
const HOOK_HOST = "receiver.ts-consumer.dev";
const { log, fail, run, runAsync } = commands("ts-consumer", root);

const work = mkdtempSync(join(tmpdir(), "ars-ts-consumer-"));
try {
  // 1. Pack, as the client README says.
  const packs = join(work, "packs");
  mkdirSync(packs);
  run("npm", ["pack", "-w", "@audit-review/api-types", "-w", "@audit-review/client", "--pack-destination", packs], { env: { ...process.env } });
  const tarballs = readdirSync(packs).filter((f) => f.endsWith(".tgz")).map((f) => join(packs, f));
  if (tarballs.length !== 2) fail(`expected two tarballs, got ${tarballs}`);

  // 2. An empty project outside the repository.
  const project = join(work, "project");
  mkdirSync(project);
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "ts-consumer", private: true, type: "module" }, null, 2));
  copyFileSync(join(here, "ts-consumer/consumer.ts"), join(project, "consumer.ts"));
  copyFileSync(join(here, "ts-consumer/tsconfig.json"), join(project, "tsconfig.json"));
  run("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", ...tarballs, "typescript@~5.9.3", "@types/node@^20"], { cwd: project });
  run("npx", ["tsc", "-p", "tsconfig.json", "--strict"], { cwd: project });
  log("the consumer type-checks with --strict against the installed package");

  // 3. A live server that delivers to a real HTTPS receiver on loopback.
  const receiver = await startReceiver({ hostname: HOOK_HOST, status: 204 });
  const server = await startLiveServer({ loopbackHosts: [HOOK_HOST], extraCa: receiver.caCert, dispatcher: true });
  try {
    const env = {
      ...process.env,
      ARS_BASE_URL: server.url,
      ARS_TOKEN: server.token,
      ARS_RECEIVER_URL: `${receiver.origin}/ts-consumer`,
      ARS_EXPECTED_QUESTION_SET_IDS: JSON.stringify(server.questionSets.map((s) => s.id)),
    };
    const created = JSON.parse((await runAsync("node", ["dist/consumer.js", "api"], { cwd: project, env })).trim());
    log(`iterated, filtered, caught ApiError, created endpoint ${created.endpoint_id}`);

    const set = server.questionSets[0];
    const event = { id: randomUUID(), type: "audit.completed", data: { audit_id: randomUUID(), question_set_id: set.id, document_id: "doc-1", result: "failed", responses: [{ question_id: set.questions[0].id, answer: "No", context: "HPI is empty.", passed: false }] } };
    await server.ingest("/v2/internal/events", event);
    const delivered = await receiver.nextRequest({ timeoutMs: 30_000 });
    const file = join(project, "delivery.json");
    writeFileSync(file, JSON.stringify({ headers: delivered.headers, body_base64: delivered.rawBody.toString("base64"), secret: created.secret }));
    const verified = JSON.parse((await runAsync("node", ["dist/consumer.js", "verify", file], { cwd: project })).trim());
    if (verified.event_id !== event.id || verified.audit_id !== event.data.audit_id || verified.result !== "failed") fail(`verified ${JSON.stringify(verified)} for event ${event.id}`);
    // The contract's compatibility policy: a field added to every answer breaks nothing.
    const proxy = await startFieldAddingProxy(server.url);
    try {
      await runAsync("node", ["dist/consumer.js", "api"], { cwd: project, env: { ...env, ARS_BASE_URL: proxy.url, ARS_RECEIVER_URL: `${receiver.origin}/ts-consumer-added-fields` } });
      if (!proxy.changed()) fail("the field-adding proxy changed no answer");
    } finally {
      await proxy.close();
    }
    log("passed: packed, installed outside the repository, tsc --strict, iterator, ApiError, verifyWebhook on a real delivery, a field added to every answer");
  } finally {
    await server.close();
    await receiver.close();
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
