#!/usr/bin/env node
// CI: every code sample of the rendered docs runs as printed against a live server. Each sample's
// text is taken from the page the server serves (the contract it renders, embedded in it), not
// rendered again; each client is installed with the page's own install line ("Client
// libraries") from the server's /clients into a folder outside the repository. Samples read
// ARS_API_URL, ARS_TOKEN and the ids they need (ARS_ENDPOINT_ID, …) from the environment, which
// is all CI sets: the server's address, a token and fresh fixtures per language (endpoints, a
// delivery that reached a real HTTPS receiver, an event, a listener). A recording proxy in front
// of the server keeps what each sample was answered: a sample fails when it exits non-zero,
// makes other than its one request, gets a status its operation does not document as success,
// or an answer its response schema refuses (Ajv). TypeScript samples are type-checked with
// `tsc --strict` first; Go samples are built together.
//
//   node scripts/ci/code-samples.mjs [--only curl,ts,python,go]   (SAMPLES_TIMING=1: each sample's time)
//   (needs `npm run docs`, which packs the clients the server serves, and the server built;
//   Python 3 with venv and Debian's python3-urllib3 python3-dateutil python3-certifi python3-six,
//   whose packages the venv sees, since no Python registry is reachable here; Go 1.19+)
import { spawn, spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { brotliDecompressSync, gunzipSync } from "node:zlib";
import { Ajv } from "ajv";
import addFormats from "ajv-formats";
import { startReceiver } from "@audit-review/test-kit/receiver";
import { operationsOf, readSampleSource } from "../../packages/api-types/scripts/code-samples.mjs";
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

const source = readSampleSource(join(root, "openapi/code-samples.yaml"));
if (!existsSync(join(root, "openapi/dist/clients"))) fail("openapi/dist/clients is missing: run npm run docs (it packs the clients the server serves)");

// A live server that delivers to a real HTTPS receiver; the samples come from the page it serves.
const receiver = await startReceiver({ hostname: HOOK_HOST, status: 204 });
const server = await startLiveServer({ publicHosts: [SAMPLE_RECEIVER_HOST], loopbackHosts: [HOOK_HOST], extraCa: receiver.caCert, dispatcher: true });
const pageHtml = await (await fetch(`${server.url}/docs`)).text();
const embedded = /<script id="ars-contract" type="application\/json">([\s\S]*?)<\/script>/.exec(pageHtml);
if (!embedded) fail("the served /docs page embeds no contract (script#ars-contract)");
const spec = JSON.parse(embedded[1]);
const ops = Object.fromEntries(operationsOf(spec).map((o) => [o.operationId, o]));
const KEYS = { curl: "Shell", ts: "TypeScript", python: "Python", go: "Go" };
const samples = Object.fromEntries(
  Object.entries(ops).map(([id, o]) => [id, Object.fromEntries(Object.entries(KEYS).map(([key, lang]) => [key, o.op["x-codeSamples"]?.find((x) => x.lang === lang)?.source ?? fail(`${id} shows no ${lang} sample`)]))]),
);
// The install lines, as the page's "Client libraries" shows them.
const installLine = (prefix) => {
  const table = spec.info.description.slice(spec.info.description.indexOf("## Client libraries"));
  const at = table.indexOf(`\`${prefix}`);
  if (at < 0) fail(`the page's Client libraries show no install line starting with ${prefix}`);
  return table.slice(at + 1, table.indexOf("`", at + 1));
};
const INSTALL = { ts: installLine('npm install "$ARS_API_URL/clients/'), python: installLine('pip install "$ARS_API_URL/clients/'), go: installLine('GOPROXY="$ARS_API_URL/clients/go') };

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

// A proxy that records each answer.
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

/** Fresh fixtures as the samples' environment: an endpoint to read and change, one to delete, a delivery that arrived, a listener, an event. */
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
  const env = {
    endpoint_id: endpoint.id,
    delivery_id: delivery.id,
    event_id: event.id ?? event.event_id,
    listener_id: listener.id,
    listener_request_id: randomUUID(),
  };
  const vars = (values) => Object.fromEntries(Object.entries(source.variables).filter(([, d]) => d.env).map(([name, d]) => [d.env, values[name]]));
  // The delete sample deletes $ARS_ENDPOINT_ID: it gets an endpoint of its own.
  return { all: vars(env), deleteWebhookEndpoint: vars({ ...env, endpoint_id: deletable.id }) };
}

/**
 * An org holds at most 5 listeners until they are deleted, and each language's fixtures and its
 * createWebhookListener sample make two: the next language starts with none, as a user's org would.
 */
async function deleteListeners() {
  let path = "/v2/webhook_endpoints?limit=100";
  const listeners = [];
  for (;;) {
    const page = await api("GET", path);
    listeners.push(...page.data.filter((e) => e.url.startsWith("listener:")));
    if (!page.has_more) break;
    path = `/v2/webhook_endpoints?limit=100&starting_after=${page.data.at(-1).id}`;
  }
  for (const l of listeners) await api("DELETE", `/v2/webhook_endpoints/${l.id}`);
}

// The server runs in this process: samples run with async spawn, never spawnSync.
function run(cmd, args, opts = {}) {
  return new Promise((done) => {
    const child = spawn(cmd, args, { cwd: work, stdio: ["ignore", "pipe", "pipe"], ...opts, env: { ...process.env, ARS_API_URL: baseUrl, ARS_TOKEN: server.token, ...opts.env } });
    let out = "";
    child.stdout.on("data", (c) => (out += c));
    child.stderr.on("data", (c) => (out += c));
    child.on("close", (code) => done({ code, out }));
  });
}
function runSync(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { cwd: work, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], ...opts });
  if (r.status !== 0) fail(`${cmd} ${args.join(" ")} exited ${r.status}:\n${(r.stdout + r.stderr).slice(-6000)}`);
}
/** A line of the page run as it is, in a shell, with the server's address in ARS_API_URL (async: the server is in this process). */
async function installWith(lang, dir, env = {}) {
  log(`$ ${INSTALL[lang]}   (in ${dir})`);
  const { code, out } = await run("bash", ["-c", `set -e\n${INSTALL[lang]}`], { cwd: dir, env: { ARS_API_URL: server.url, ...env } });
  if (code !== 0) fail(`the ${lang} install line exited ${code}:\n${out.slice(-4000)}`);
}

// Outside the repository: nothing of the checkout can be picked up by accident.
const work = mkdtempSync(join(tmpdir(), "ars-code-samples-"));

/** Installs the language's client as the page says, writes its samples, and returns, per operation, how to run its sample. */
const prepare = {
  async curl() {
    return (id) => ["sh", ["-c", samples[id].curl]];
  },
  async ts() {
    const dir = join(work, "ts");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "code-samples", type: "module", private: true }));
    await installWith("ts", dir);
    for (const [id, s] of Object.entries(samples)) writeFileSync(join(dir, `${id}.ts`), `${s.ts}\nexport {};\n`);
    // Node's types from the repository's toolchain; the client's from what the install line installed.
    writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({ compilerOptions: { strict: true, outDir: "js", target: "es2022", module: "nodenext", moduleResolution: "nodenext", types: ["node"], typeRoots: [join(root, "node_modules/@types")], skipLibCheck: true }, include: ["*.ts"] }));
    runSync(join(root, "node_modules/.bin/tsc"), ["-p", join(dir, "tsconfig.json")]);
    log("TypeScript samples type-check with --strict against the installed client");
    return (id) => [process.execPath, [join(dir, "js", `${id}.js`)], { cwd: dir }];
  },
  async python() {
    const dir = join(work, "python");
    mkdirSync(dir, { recursive: true });
    // The client's dependencies come from Debian's packages (no Python registry here): the venv sees them.
    runSync(python, ["-m", "venv", "--system-site-packages", join(dir, "venv")]);
    const venv = { PATH: `${join(dir, "venv/bin")}:${process.env.PATH}`, PIP_NO_INDEX: "1", PIP_DISABLE_PIP_VERSION_CHECK: "1" };
    await installWith("python", dir, venv);
    for (const [id, s] of Object.entries(samples)) writeFileSync(join(dir, `${id}.py`), s.python);
    return (id) => [join(dir, "venv/bin/python"), [join(dir, `${id}.py`)], { cwd: dir, env: { PYTHONDONTWRITEBYTECODE: "1" } }];
  },
  async go() {
    const dir = join(work, "go");
    mkdirSync(dir, { recursive: true });
    const goEnv = { GOMODCACHE: join(work, "gomodcache"), GOFLAGS: "-modcacherw" };
    runSync("go", ["mod", "init", "audit-review.dev/code-samples"], { cwd: dir, env: { ...process.env, ...goEnv } });
    await installWith("go", dir, goEnv);
    for (const [id, s] of Object.entries(samples)) {
      mkdirSync(join(dir, id), { recursive: true });
      writeFileSync(join(dir, id, "main.go"), `${s.go}\n`);
    }
    mkdirSync(join(dir, "bin"));
    runSync("go", ["build", "-o", join(dir, "bin") + "/", "./..."], { cwd: dir, env: { ...process.env, ...goEnv, ...GO_ENV, GOFLAGS: "-mod=mod -modcacherw" } });
    log("Go samples build against the module from the server");
    return (id) => [join(dir, "bin", id), []];
  },
};

try {
  for (const lang of languages) {
    const t0 = Date.now();
    const command = await prepare[lang]();
    const fixtureEnv = await fixtures();
    for (const id of Object.keys(samples)) {
      const o = ops[id];
      if (source.operations[id].ci_skip) {
        if (lang === languages[0]) log(`not run: ${id} (${source.operations[id].ci_skip})`);
        continue;
      }
      exchanges = [];
      const [cmd, args, opts = {}] = command(id);
      opts.env = { ...opts.env, ...(fixtureEnv[id] ?? fixtureEnv.all) };
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
    await deleteListeners();
  }
} finally {
  proxy.close();
  await server.close();
  await receiver.close();
  rmSync(work, { recursive: true, force: true });
}
if (failures.length) fail(`${failures.length} sample(s):\n${failures.join("\n\n")}`);
log(`passed in ${((Date.now() - started) / 1000).toFixed(1)} s: every sample in ${languages.join(", ")} ran and was answered as the contract says`);
process.exit(0);
