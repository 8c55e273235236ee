#!/usr/bin/env node
// CI: the README's quick start ("Your first delivery", the same blocks as the docs' Quick start:
// scripts/ci/docs-served.mjs compares them), "Developing a receiver on your machine: ars-listen"
// and "Reconciling with the Events API", as a user runs them, in an empty project outside the
// repository, against a live server (its delivery engine on) that serves the client packages:
//
//   npm install "$ARS_API_URL/clients/…api-types….tgz" "$ARS_API_URL/clients/…client….tgz"
//   export ARS_WEBHOOK_SECRET=$(npx ars-listen --print-secret)
//   node receiver.mjs &                        (started as its own process, so it can be killed)
//   npx ars-listen --forward-to http://localhost:4242/webhooks
//   curl -X POST "$ARS_API_URL/v2/webhook_endpoints/$ARS_LISTENER_ID/test" …   (step 4)
//
// The test event must arrive, verify and be printed as a test; then events are published
// through the internal ingestion API: every delivery must arrive at the receiver, verify, be
// printed by ars-listen and be recorded `succeeded`. Then the receiver is killed: the next
// delivery's attempt must record the failure (`connection_error`). Last, reconcile.mjs must list
// the published events through GET /v2/events.
//
//   node scripts/ci/listen.mjs          (needs npm run docs and the server built; port 4242 free)
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { commands } from "./commands.mjs";
import { startLiveServer } from "./live-server.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, "../..");
const { log, fail, runAsync } = commands("listen", root);


// ---- what the README says, taken from it -------------------------------------------------------
const readme = readFileSync(join(root, "README.md"), "utf8");
const sectionOf = (heading) => {
  const at = readme.indexOf(heading);
  if (at < 0) fail(`README has no ${heading}`);
  return readme.slice(at, readme.indexOf("\n## ", at));
};
const quick = sectionOf("### Your first delivery");
const reconciling = sectionOf("### Reconciling with the Events API");
const snippet = (section, firstLine) => {
  const start = section.indexOf(`\`\`\`js\n${firstLine}`);
  if (start < 0) fail(`README has no js block starting with ${firstLine}`);
  const body = section.slice(start + "```js\n".length);
  return body.slice(0, body.indexOf("```"));
};
const lineOf = (section, prefix) => section.split("\n").find((l) => l.startsWith(prefix)) ?? fail(`README has no line starting with ${prefix}`);
const RECEIVER = snippet(quick, "// receiver.mjs");
const RECONCILE = snippet(reconciling, "// reconcile.mjs");
const INSTALL = lineOf(quick, 'npm install "$ARS_API_URL/clients/');
const PRINT_SECRET = "export ARS_WEBHOOK_SECRET=$(npx ars-listen --print-secret)";
const RECEIVER_CMD = "node receiver.mjs &";
const LISTEN_CMD = "npx ars-listen --forward-to http://localhost:4242/webhooks";
const TEST_EVENT = lineOf(quick, 'curl -X POST "$ARS_API_URL/v2/webhook_endpoints/$ARS_LISTENER_ID/test"');
for (const line of [PRINT_SECRET, RECEIVER_CMD, LISTEN_CMD]) if (!quick.includes(`\n${line}\n`)) fail(`the README's quick start no longer has the line: ${line}`);

// ---- a process whose output lines can be waited for ----------------------------------------
function start(name, cmd, args, opts) {
  log(`$ ${[cmd, ...args].join(" ")}   (${name})`);
  // its own process group: npx runs the command as a grandchild, and a signal must reach it as ^C would
  const child = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"], detached: true, ...opts });
  const lines = [];
  const collect = (stream) => {
    let buf = "";
    stream.on("data", (c) => {
      buf += c;
      const parts = buf.split("\n");
      buf = parts.pop();
      for (const l of parts) lines.push(l);
    });
  };
  collect(child.stdout);
  collect(child.stderr);
  const exited = new Promise((r) => child.on("exit", (code, signal) => r({ code, signal })));
  return {
    child,
    lines,
    exited,
    signal: (sig) => {
      try {
        process.kill(-child.pid, sig);
      } catch {
        // already gone
      }
    },
    async line(match, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = lines.find((l) => match.test(l));
        if (found) return found;
        if (Date.now() > deadline || child.exitCode !== null) fail(`${name}: no line ${match} within ${timeoutMs} ms; output:\n${lines.join("\n")}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
  };
}

async function portFree(port) {
  return new Promise((r) => {
    const probe = createServer().once("error", () => r(false)).once("listening", () => probe.close(() => r(true)));
    probe.listen(port);
  });
}

async function waitFor(what, read, ok, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (ok(value)) return value;
    if (Date.now() > deadline) fail(`${what}; last seen: ${JSON.stringify(value)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

if (!(await portFree(4242))) fail("port 4242 (the README's receiver port) is in use on this machine");
const work = mkdtempSync(join(tmpdir(), "ars-listen-"));
const processes = [];
let server;
try {
  // 1. A live server with its delivery engine, serving the client packages; the user's environment points at it.
  server = await startLiveServer({ dispatcher: true });
  const env = { ...process.env, ARS_API_URL: server.url, ARS_TOKEN: server.token };
  const api = async (path) => {
    const res = await fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${server.token}` } });
    if (!res.ok) fail(`GET ${path} answered ${res.status}: ${await res.text()}`);
    return res.json();
  };

  // 2. The client as the quick start installs it: from the server, into an empty project outside the repository.
  const project = join(work, "project");
  mkdirSync(project);
  await runAsync("bash", ["-c", `set -e\n${INSTALL}`], { cwd: project, env });
  writeFileSync(join(project, "receiver.mjs"), RECEIVER);
  writeFileSync(join(project, "reconcile.mjs"), RECONCILE);

  // 3. The quick start's commands.
  const secret = (await runAsync("bash", ["-c", `set -e\n${PRINT_SECRET}\necho "$ARS_WEBHOOK_SECRET"`], { cwd: project, env })).trim();
  if (!/^whsec_[A-Za-z0-9+/=]+$/.test(secret)) fail(`--print-secret printed ${JSON.stringify(secret)}`);
  const receiver = start("receiver", "node", ["receiver.mjs"], { cwd: project, env: { ...env, ARS_WEBHOOK_SECRET: secret } });
  processes.push(receiver);
  await receiver.line(/receiver listening on/);
  const listen = start("ars-listen", "bash", ["-c", `exec ${LISTEN_CMD}`], { cwd: project, env });
  processes.push(listen);
  const ready = await listen.line(/^Ready! Your webhook signing secret is /);
  if (!ready.includes(secret)) fail(`ars-listen signs with another secret than --print-secret gave: ${ready}`);
  const listenerId = /listener ([0-9a-f-]{36});/.exec(ready)?.[1] ?? fail(`no listener id in: ${ready}`);
  await listen.line(/connected: forwarding deliveries/);
  log(`ars-listen is connected (listener ${listenerId}) and forwards to the receiver`);
  // Step 4: a test event to the listener arrives, verifies and says it is a test.
  const testDelivery = JSON.parse(await runAsync("bash", ["-c", `set -e\n${TEST_EVENT}`], { cwd: project, env: { ...env, ARS_LISTENER_ID: listenerId } }));
  const tested = await receiver.line(/^verified [0-9a-f-]{36} \(test\)$/);
  if (!tested.includes(testDelivery.event_id)) fail(`the receiver verified ${tested}, the test delivery was of event ${testDelivery.event_id}`);
  await listen.line(new RegExp(`audit\\.completed  ${testDelivery.event_id}  200  \\d+ ms$`));
  await waitFor("the test delivery recorded succeeded", () => api(`/v2/webhook_deliveries/${testDelivery.id}`), (d) => d.status === "succeeded");
  log("quick start: the test event arrived, verified as a test, and was recorded succeeded");

  // 4. Events in through the ingestion API; each must arrive, verify, print and be recorded.
  const since = new Date(Date.now() - 1000).toISOString();
  const set = server.questionSets[0];
  const publish = async () => {
    const id = randomUUID();
    await server.ingest("/v2/internal/events", { id, type: "audit.completed", data: { audit_id: randomUUID(), question_set_id: set.id, result: "failed", responses: [{ question_id: set.questions[0].id, answer: "No", passed: false }] } });
    return id;
  };
  const events = [];
  for (let i = 0; i < 5; i++) events.push(await publish());
  for (const id of events) {
    await receiver.line(new RegExp(`^verified ${id}$`));
    await listen.line(new RegExp(`audit\\.completed  ${id}  200  \\d+ ms$`));
  }
  if (receiver.lines.some((l) => l.startsWith("rejected"))) fail(`the receiver rejected a signature:\n${receiver.lines.join("\n")}`);
  const deliveries = await waitFor(
    "every delivery to the listener recorded succeeded",
    async () => (await api(`/v2/webhook_deliveries?endpoint_id=${listenerId}&limit=100`)).data.filter((d) => !d.is_test),
    (list) => list.length === events.length && list.every((d) => d.status === "succeeded"),
  );
  for (const d of deliveries) {
    const attempts = (await api(`/v2/webhook_deliveries/${d.id}/attempts`)).data;
    if (attempts.length !== 1 || attempts[0].response_status !== 200 || attempts[0].url !== `listener:${listenerId}`) fail(`attempts of ${d.id}: ${JSON.stringify(attempts)}`);
  }
  log(`${events.length} deliveries arrived, verified with verifyWebhook, printed by ars-listen and recorded succeeded`);

  // 5. The receiver dies: the attempt records the failure.
  receiver.signal("SIGKILL");
  await receiver.exited;
  const lost = await publish();
  await listen.line(new RegExp(`${lost}  connection_error`));
  const failed = await waitFor(
    "the delivery to the killed receiver recorded as a failed attempt",
    async () => (await api(`/v2/webhook_deliveries?endpoint_id=${listenerId}&limit=1`)).data[0],
    (d) => d?.event_id === lost && d.status === "retrying",
  );
  const [attempt] = (await api(`/v2/webhook_deliveries/${failed.id}/attempts`)).data;
  if (attempt?.error?.code !== "connection_error" || attempt.response_status !== null) fail(`the failed attempt reads ${JSON.stringify(attempt)}`);
  log(`receiver killed: the attempt recorded ${attempt.error.code} (${attempt.error.message})`);

  // 6. Reconciling: reconcile.mjs lists every published event, oldest first.
  const out = await runAsync("node", ["reconcile.mjs"], { cwd: project, env: { ...env, SINCE: since } });
  const listed = out.trim().split("\n").map((l) => l.split(" ")[1]).filter((id) => id !== testDelivery.event_id);
  const published = [...events, lost];
  if (JSON.stringify(listed) !== JSON.stringify(published)) fail(`reconcile.mjs listed ${JSON.stringify(listed)}, expected ${JSON.stringify(published)}`);
  log(`reconcile.mjs listed the ${published.length} events through GET /v2/events, oldest first`);

  // 7. ^C: ars-listen stops cleanly and removes its listener.
  listen.signal("SIGINT");
  // npx passes the signal on and ends by it; ars-listen itself ends cleanly, after removing its listener
  const { code, signal } = await listen.exited;
  if (code !== 0 && signal !== "SIGINT") fail(`ars-listen ended with ${code ?? signal} on SIGINT`);
  await waitFor(
    "the listener removed after ^C",
    async () => (await fetch(`${server.url}/v2/webhook_endpoints/${listenerId}`, { headers: { authorization: `Bearer ${server.token}` } })).status,
    (status) => status === 404,
  );
  log("passed: client installed from the server, quick start followed, ars-listen forwards verified deliveries, failures recorded, events reconciled, ^C cleans up");
} finally {
  for (const p of processes) p.signal("SIGKILL");
  await server?.close();
  rmSync(work, { recursive: true, force: true });
}
