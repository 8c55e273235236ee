#!/usr/bin/env node
// CI: every code sample of the rendered docs runs against a live server. The samples are
// rendered from openapi/code-samples.yaml exactly as the docs show them (packages/api-types/
// scripts/code-samples.mjs), with the server's address, a token and live fixture ids instead of
// the examples. Each language gets fresh fixtures (endpoints, a delivery that reached a real
// HTTPS receiver). A recording proxy in front of the server keeps what each sample was answered:
// a sample fails when it exits non-zero, makes other than its one request, gets a status its
// operation does not document as success, or an answer its response schema refuses (Ajv).
// TypeScript samples are type-checked with `tsc --strict` first; Go samples are built together.
//
//   node scripts/ci/code-samples.mjs [--only curl,ts,python,go]   (SAMPLES_TIMING=1: each sample's time)
//   (needs the server built, and out/go-client and out/python-client from the README's
//   commands: scripts/ci/go-client.mjs and python-client.mjs make them)
import { spawn, spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { brotliDecompressSync, gunzipSync } from "node:zlib";
import { Ajv } from "ajv";
import addFormats from "ajv-formats";
import { parse } from "yaml";
import { startReceiver } from "@audit-review/test-kit/receiver";
import { clientMethodNames, operationsOf, readSampleSource, renderAll } from "../../packages/api-types/scripts/code-samples.mjs";
import { GO_ENV } from "./generator.mjs";
import { startLiveServer } from "./live-server.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, "../..");
const started = Date.now();
const log = (msg) => process.stdout.write(`code-samples: ${msg}\n`);
const failures = [];
const fail = (msg) => {
  process.stderr.write(`code-samples: FAILED: ${msg}\n`);
  process.exit(1);
};
const onlyArg = process.argv.indexOf("--only");
const languages = onlyArg > 0 ? process.argv[onlyArg + 1].split(",") : ["curl", "ts", "python", "go"];
const python = process.env.PYTHON || "python3";
const HOOK_HOST = "receiver.code-samples.dev";
const SAMPLE_RECEIVER_HOST = "hooks.example-receiver.com"; // the URL the create sample registers

// The clients the README generates, and the document the docs are rendered from.
for (const [lang, dir] of [["go", "out/go-client"], ["python", "out/python-client"]]) {
  if (languages.includes(lang) && !existsSync(join(root, dir))) fail(`${dir} is missing: run scripts/ci/${lang}-client.mjs first (it runs the README's commands)`);
}
const docsSpecFile = join(root, "openapi/dist/openapi.docs.yaml");
if (!existsSync(docsSpecFile)) fail("openapi/dist/openapi.docs.yaml is missing: run npm run docs");
const spec = parse(readFileSync(docsSpecFile, "utf8"));
const source = readSampleSource(join(root, "openapi/code-samples.yaml"));
const clientMethods = clientMethodNames(join(root, "packages/client/src/client.ts"));
const ops = Object.fromEntries(operationsOf(spec).map((o) => [o.operationId, o]));

// Answers are checked against the contract's response schemas.
const ajv = new Ajv({ strict: false, allErrors: true }); // oneOf does the discriminator's work
addFormats(ajv);
ajv.addSchema(spec, "contract");
const pointer = (...segments) => segments.map((s) => encodeURIComponent(String(s).replace(/~/g, "~0").replace(/\//g, "~1"))).join("/");

function checkAnswer(o, exchange) {
  const response = o.op.responses[String(exchange.status)];
  if (!String(exchange.status).startsWith("2") || !response) return `answered ${exchange.status}, not a documented success: ${exchange.body.slice(0, 600)}`;
  const media = Object.keys(response.content ?? {});
  if (!media.length) return exchange.body.length ? `answered ${exchange.status} with a body where none is documented` : null;
  const type = (exchange.contentType ?? "").split(";")[0].trim();
  if (!media.includes(type)) return `answered ${type}, documented: ${media.join(", ")}`;
  if (!type.includes("json")) return exchange.body.length ? null : "answered an empty body";
  const validate = ajv.compile({ $ref: `contract#/${pointer("paths", o.path, o.method, "responses", String(exchange.status), "content", type, "schema")}` });
  let body;
  try {
    body = JSON.parse(exchange.body);
  } catch {
    return `answered invalid JSON: ${exchange.body.slice(0, 200)}`;
  }
  return validate(body) ? null : `answer does not match the contract: ${ajv.errorsText(validate.errors)}`;
}

// A live server that delivers to a real HTTPS receiver, behind a proxy that records each answer.
const receiver = await startReceiver({ hostname: HOOK_HOST, status: 204 });
const server = await startLiveServer({ publicHosts: [SAMPLE_RECEIVER_HOST], loopbackHosts: [HOOK_HOST], extraCa: receiver.caCert, dispatcher: true });
const upstream = new URL(server.url);
let exchanges = [];
const proxy = http.createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    const forward = http.request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
      const body = [];
      answer.on("data", (c) => body.push(c));
      answer.on("end", () => {
        const buffer = Buffer.concat(body);
        // The client asked for a compressed answer (the docs and the contract are sent so): check what it decodes to.
        const inflate = { br: brotliDecompressSync, gzip: gunzipSync }[answer.headers["content-encoding"]] ?? ((b) => b);
        exchanges.push({ method: req.method, path: req.url, status: answer.statusCode, contentType: answer.headers["content-type"], body: inflate(buffer).toString("utf8") });
        res.writeHead(answer.statusCode, answer.headers);
        res.end(buffer);
      });
    });
    forward.on("error", (err) => res.destroy(err));
    forward.end(Buffer.concat(chunks));
  });
});
await new Promise((r) => proxy.listen(0, "127.0.0.1", r));
const baseUrl = `http://127.0.0.1:${proxy.address().port}`;

const api = async (method, path, body) => {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${server.token}`, ...(body && { "content-type": "application/json" }) },
    body: body && JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path} answered ${res.status}: ${text}`);
  return text ? JSON.parse(text) : null;
};

/** Fresh fixtures: an endpoint to read and change, one to delete, and a delivery that arrived. */
async function fixtures() {
  const endpoint = await api("POST", "/v2/webhook_endpoints", { url: `${receiver.origin}/code-samples` });
  const deletable = await api("POST", "/v2/webhook_endpoints", { url: `${receiver.origin}/code-samples-delete` });
  const delivery = await api("POST", `/v2/webhook_endpoints/${endpoint.id}/test`);
  const deadline = Date.now() + 20_000;
  while ((await api("GET", `/v2/webhook_deliveries/${delivery.id}`)).status !== "succeeded") {
    if (Date.now() > deadline) throw new Error("the fixture delivery never succeeded");
    await new Promise((r) => setTimeout(r, 100));
  }
  const listener = await api("POST", "/v2/webhook_listeners", {});
  const set = server.questionSets[0];
  const event = await server.ingest("/v2/internal/events", { id: randomUUID(), type: "audit.completed", data: { audit_id: randomUUID(), question_set_id: set.id, result: "failed" } });
  return {
    endpoint_id: endpoint.id,
    deletable_endpoint_id: deletable.id,
    delivery_id: delivery.id,
    since: new Date(Date.now() - 3600_000).toISOString(),
    idempotency_key: randomUUID(),
    listener_id: listener.id,
    listener_request_id: randomUUID(),
    event_id: event.id ?? event.event_id,
  };
}

// The server runs in this process: samples run with async spawn, never spawnSync.
function run(cmd, args, opts = {}) {
  return new Promise((done) => {
    const child = spawn(cmd, args, { cwd: root, stdio: ["ignore", "pipe", "pipe"], ...opts, env: { ...process.env, ARS_TOKEN: server.token, ...opts.env } });
    let out = "";
    child.stdout.on("data", (c) => (out += c));
    child.stderr.on("data", (c) => (out += c));
    child.on("close", (code) => done({ code, out }));
  });
}
function runSync(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], ...opts });
  if (r.status !== 0) fail(`${cmd} ${args.join(" ")} exited ${r.status}:\n${(r.stdout + r.stderr).slice(-6000)}`);
}

const work = join(root, "out/code-samples");
rmSync(work, { recursive: true, force: true });

/** Writes the language's samples and returns, per operation, how to run its sample. */
const prepare = {
  curl(samples) {
    return (id) => ["sh", ["-c", samples[id].curl]];
  },
  ts(samples) {
    const dir = join(work, "ts");
    mkdirSync(dir, { recursive: true });
    for (const [id, s] of Object.entries(samples)) writeFileSync(join(dir, `${id}.ts`), `${s.ts}\nexport {};\n`);
    writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({ compilerOptions: { strict: true, outDir: "js", target: "es2022", module: "nodenext", moduleResolution: "nodenext", types: ["node"], skipLibCheck: true }, include: ["*.ts"] }));
    writeFileSync(join(dir, "package.json"), JSON.stringify({ type: "module", private: true }));
    runSync(join(root, "node_modules/.bin/tsc"), ["-p", join(dir, "tsconfig.json")]);
    log("TypeScript samples type-check with --strict");
    return (id) => [process.execPath, [join(dir, "js", `${id}.js`)]];
  },
  python(samples) {
    const dir = join(work, "python");
    mkdirSync(dir, { recursive: true });
    for (const [id, s] of Object.entries(samples)) writeFileSync(join(dir, `${id}.py`), s.python);
    return (id) => [python, [join(dir, `${id}.py`)], { env: { PYTHONPATH: join(root, "out/python-client"), PYTHONDONTWRITEBYTECODE: "1" } }];
  },
  go(samples) {
    const dir = join(work, "go");
    for (const [id, s] of Object.entries(samples)) {
      mkdirSync(join(dir, id), { recursive: true });
      writeFileSync(join(dir, id, "main.go"), `${s.go}\n`);
    }
    writeFileSync(join(dir, "go.mod"), `module audit-review.dev/code-samples\n\ngo 1.19\n\nrequire github.com/audit-review/ars-go v0.0.0\n\nreplace github.com/audit-review/ars-go => ../../go-client\n`);
    mkdirSync(join(dir, "bin"));
    runSync("go", ["build", "-o", join(dir, "bin") + "/", "./..."], { cwd: dir, env: { ...process.env, ...GO_ENV } });
    log("Go samples build");
    return (id) => [join(dir, "bin", id), []];
  },
};

try {
  for (const lang of languages) {
    const t0 = Date.now();
    const samples = renderAll(spec, source, { baseUrl, fixtures: await fixtures(), clientMethods });
    const command = prepare[lang](samples);
    for (const id of Object.keys(samples)) {
      const o = ops[id];
      if (source.operations[id].ci_skip) {
        if (lang === languages[0]) log(`not run: ${id} (${source.operations[id].ci_skip})`);
        continue;
      }
      exchanges = [];
      const [cmd, args, opts] = command(id);
      const t1 = Date.now();
      const { code, out } = await run(cmd, args, opts);
      if (process.env.SAMPLES_TIMING) log(`${lang} ${id}: ${Date.now() - t1} ms`);
      const where = `${lang} sample of ${id}`;
      if (code !== 0) {
        failures.push(`${where} exited ${code}:\n${out.slice(-2000)}`);
        continue;
      }
      const template = new RegExp(`^${o.path.replace(/\{[^}]+\}/g, "[^/?]+")}(\\?|$)`);
      const own = exchanges.filter((e) => e.method === o.method.toUpperCase() && template.test(e.path));
      if (exchanges.length !== 1 || own.length !== 1) {
        failures.push(`${where} made ${exchanges.length} requests (${exchanges.map((e) => `${e.method} ${e.path}`).join(", ")}), expected one ${o.method.toUpperCase()} ${o.path}`);
        continue;
      }
      const problem = checkAnswer(o, own[0]);
      if (problem) failures.push(`${where}: ${problem}`);
    }
    log(`${lang}: ${Object.keys(samples).length} samples ran in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  }
} finally {
  proxy.close();
  await server.close();
  await receiver.close();
}
if (failures.length) fail(`${failures.length} sample(s):\n${failures.join("\n\n")}`);
log(`passed in ${((Date.now() - started) / 1000).toFixed(1)} s: every sample in ${languages.join(", ")} ran and was answered as the contract says`);
process.exit(0);
