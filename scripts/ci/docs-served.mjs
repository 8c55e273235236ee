#!/usr/bin/env node
// CI: the README's "Reading the docs", as a user does it: `npm run docs` writes the offline page
// and the public bundle; the built server (`serve`, embedded database in a fresh directory,
// PORT=0) then serves /docs, /openapi.json and /openapi.yaml without a token and redirects / to
// /docs. The page must load nothing from the network.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parse } from "yaml";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const log = (msg) => process.stdout.write(`docs-served: ${msg}\n`);
const fail = (msg) => {
  process.stderr.write(`docs-served: FAILED: ${msg}\n`);
  process.exitCode = 1;
  throw new Error(msg);
};

const docs = spawnSync("npm", ["run", "docs"], { cwd: root, encoding: "utf8" });
if (docs.status !== 0) fail(`npm run docs exited ${docs.status}:\n${docs.stdout}${docs.stderr}`);
for (const f of ["index.html", "openapi.public.yaml", "openapi.public.json"]) {
  if (!existsSync(join(root, "openapi/dist", f))) fail(`npm run docs did not write openapi/dist/${f}`);
}
const offline = readFileSync(join(root, "openapi/dist/index.html"), "utf8");

const dataDir = mkdtempSync(join(tmpdir(), "ars-docs-"));
const server = spawn(process.execPath, [join(root, "apps/server/dist/main.js"), "serve"], {
  cwd: tmpdir(), // started from elsewhere: the server finds its docs relative to itself
  env: { ...process.env, PORT: "0", ARS_DATA_DIR: dataDir, ARS_DISPATCHER: "false", ARS_LOG_LEVEL: "warn", ARS_METRICS_PORT: "0" },
  stdio: ["ignore", "pipe", "inherit"],
});
try {
  const base = await new Promise((resolveUrl, reject) => {
    let out = "";
    const timer = setTimeout(() => reject(new Error(`the server did not say where it listens:\n${out}`)), 60_000);
    server.stdout.on("data", (chunk) => {
      out += chunk;
      const m = /listening on (http:\/\/[^\s]+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolveUrl(m[1]);
      }
    });
    server.on("exit", (code) => reject(new Error(`serve exited ${code}:\n${out}`)));
  });
  log(`serve listens on ${base}`);
  const get = (path, init) => fetch(`${base}${path}`, init);

  const root302 = await get("/", { redirect: "manual" });
  if (root302.status !== 302 || root302.headers.get("location") !== "/docs") fail(`GET / answered ${root302.status} → ${root302.headers.get("location")}`);

  const page = await get("/docs");
  const html = await page.text();
  if (page.status !== 200 || !page.headers.get("content-type")?.startsWith("text/html")) fail(`GET /docs answered ${page.status} ${page.headers.get("content-type")}`);
  if (html !== offline) fail("GET /docs is not the page npm run docs wrote");
  const loads = [
    ...html.matchAll(/<(?:script|img|iframe|source|embed)\b[^>]*\bsrc\s*=\s*["']?(?:https?:)?\/\/[^"'\s>]*/gi),
    ...html.matchAll(/<link\b[^>]*\bhref\s*=\s*["']?(?:https?:)?\/\/[^"'\s>]*/gi),
    ...html.matchAll(/url\(\s*["']?(?:https?:)?\/\/[^)"']*/gi),
    ...html.matchAll(/https:\/\/(?:cdn\.redoc\.ly|cdn\.redocly\.com|otel\.cloud\.redocly\.com)\/[^`"'\s)]*/g),
  ].map((m) => m[0]);
  if (loads.length) fail(`the page loads from the network: ${loads.join(", ")}`);

  const json = await (await get("/openapi.json")).json();
  const yaml = parse(await (await get("/openapi.yaml")).text());
  if (JSON.stringify(json) !== JSON.stringify(yaml)) fail("/openapi.json and /openapi.yaml differ");
  if (JSON.stringify(json) !== JSON.stringify(JSON.parse(readFileSync(join(root, "openapi/dist/openapi.public.json"), "utf8")))) fail("/openapi.json is not openapi/dist/openapi.public.json");
  const internal = Object.keys(json.paths).filter((p) => p.includes("/internal/"));
  if (internal.length || JSON.stringify(json).includes('"x-internal":true')) fail(`the public bundle holds internal operations: ${internal}`);
  log(`passed: / → /docs, the page (${(html.length / 1024).toFixed(0)} KiB) loads nothing remote, /openapi.json = /openapi.yaml = the public bundle (${Object.keys(json.paths).length} paths)`);
} finally {
  server.kill("SIGTERM");
  await new Promise((r) => (server.exitCode !== null ? r() : server.on("exit", r)));
  rmSync(dataDir, { recursive: true, force: true });
}
