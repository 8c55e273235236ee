#!/usr/bin/env node
// CI: the receivers the docs' Webhooks section shows (openapi/webhooks.yaml), run as written. The
// server's engine delivers a real `audit.completed` test event to an HTTPS receiver of the test
// kit; that request (headers and raw body) is then replayed to each documented receiver, which
// must answer 204, and again with one byte of the body changed, which it must refuse with 400.
//
//   node scripts/ci/webhook-receivers.mjs [--only TypeScript,Python,Go]   (needs the server built)
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parse } from "yaml";
import { startReceiver } from "@audit-review/test-kit/receiver";
import { GO_ENV } from "./generator.mjs";
import { startLiveServer } from "./live-server.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, "../..");
const started = Date.now();
const log = (msg) => process.stdout.write(`webhook-receivers: ${msg}\n`);
const fail = (msg) => {
  process.stderr.write(`webhook-receivers: FAILED: ${msg}\n`);
  process.exit(1);
};
const HOOK_HOST = "receiver.webhook-receivers.dev";
const { receivers } = parse(readFileSync(join(root, "openapi/webhooks.yaml"), "utf8"));
const onlyArg = process.argv.indexOf("--only");
const languages = onlyArg > 0 ? process.argv[onlyArg + 1].split(",") : Object.keys(receivers);
const python = process.env.PYTHON || "python3";

const buildSync = (cmd, args, opts) => {
  const r = spawnSync(cmd, args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], ...opts });
  if (r.status !== 0) fail(`${cmd} ${args.join(" ")} exited ${r.status}:\n${(r.stdout + r.stderr).slice(-4000)}`);
};

// Each documented receiver, written out and built as a user would.
const work = join(root, "out/webhook-receivers");
rmSync(work, { recursive: true, force: true });
const commands = {
  TypeScript(source) {
    const dir = join(work, "ts");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "receiver.ts"), source);
    writeFileSync(join(dir, "package.json"), JSON.stringify({ type: "module", private: true }));
    writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({ compilerOptions: { strict: true, outDir: "js", target: "es2022", module: "nodenext", moduleResolution: "nodenext", types: ["node"], skipLibCheck: true }, include: ["*.ts"] }));
    buildSync(join(root, "node_modules/.bin/tsc"), ["-p", join(dir, "tsconfig.json")]);
    return [process.execPath, [join(dir, "js/receiver.js")]];
  },
  Python(source) {
    mkdirSync(join(work, "python"), { recursive: true });
    writeFileSync(join(work, "python/receiver.py"), source);
    return [python, [join(work, "python/receiver.py")]];
  },
  Go(source) {
    const dir = join(work, "go");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "main.go"), source);
    writeFileSync(join(dir, "go.mod"), "module audit-review.dev/receiver\n\ngo 1.19\n");
    buildSync("go", ["build", "-o", "receiver", "."], { cwd: dir, env: { ...process.env, ...GO_ENV } });
    return [join(dir, "receiver"), []];
  },
};

const freePort = () =>
  new Promise((r) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => r(port));
    });
  });

async function waitForPort(port, child) {
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) return false;
    const ok = await new Promise((r) => {
      const socket = net.connect(port, "127.0.0.1", () => {
        socket.end();
        r(true);
      });
      socket.on("error", () => r(false));
    });
    if (ok) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}

// 1. A real delivery, captured.
const hooks = await startReceiver({ hostname: HOOK_HOST, status: 204 });
const server = await startLiveServer({ loopbackHosts: [HOOK_HOST], extraCa: hooks.caCert, dispatcher: true });
let delivery, secret;
try {
  const call = async (method, path) => {
    const res = await fetch(`${server.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${server.token}`, "content-type": "application/json" },
      body: method === "POST" && path === "/v2/webhook_endpoints" ? JSON.stringify({ url: `${hooks.origin}/receivers` }) : undefined,
    });
    if (!res.ok) fail(`${method} ${path} answered ${res.status}: ${await res.text()}`);
    return res.json();
  };
  const endpoint = await call("POST", "/v2/webhook_endpoints");
  secret = endpoint.secret;
  await call("POST", `/v2/webhook_endpoints/${endpoint.id}/test`);
  const deadline = Date.now() + 20_000;
  while (!hooks.requests.length) {
    if (Date.now() > deadline) fail("the engine never delivered the test event");
    await new Promise((r) => setTimeout(r, 50));
  }
  delivery = hooks.requests[0];
} finally {
  await server.close();
  await hooks.close();
}
const headers = Object.fromEntries(["content-type", "user-agent", "webhook-id", "webhook-timestamp", "webhook-signature"].map((h) => [h, delivery.headers[h]]));
log(`captured a delivery: webhook-id ${headers["webhook-id"]}, ${delivery.rawBody.length} bytes`);
const tampered = Buffer.from(delivery.rawBody);
tampered[tampered.length - 2] ^= 1;

// 2. Each receiver accepts it, and refuses it changed.
for (const lang of languages) {
  if (!receivers[lang] || !commands[lang]) fail(`no receiver to run for ${lang}`);
  const [cmd, args] = commands[lang](receivers[lang]);
  const port = await freePort();
  const child = spawn(cmd, args, { env: { ...process.env, PORT: String(port), ARS_WEBHOOK_SECRET: secret }, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout.on("data", (c) => (out += c));
  child.stderr.on("data", (c) => (out += c));
  try {
    if (!(await waitForPort(port, child))) fail(`the ${lang} receiver did not listen on ${port}:\n${out}`);
    const post = (body) => fetch(`http://127.0.0.1:${port}/audit-review`, { method: "POST", headers, body });
    const accepted = await post(delivery.rawBody);
    const refused = await post(tampered);
    if (accepted.status !== 204) fail(`the ${lang} receiver answered ${accepted.status} to the real delivery:\n${out}`);
    if (refused.status !== 400) fail(`the ${lang} receiver answered ${refused.status} to a changed body:\n${out}`);
    if (!out.includes(headers["webhook-id"])) fail(`the ${lang} receiver did not log the webhook-id:\n${out}`);
    if (!/\(test\)|true/.test(out)) fail(`the ${lang} receiver did not tell the test delivery by its body (isTest):\n${out}`);
    log(`${lang}: 204 for the delivery, 400 for it changed`);
  } finally {
    child.kill("SIGTERM");
  }
}
log(`passed in ${((Date.now() - started) / 1000).toFixed(1)} s`);
process.exit(0);
