#!/usr/bin/env node
// CI: the README's "Reading the docs", as a user does it: `npm run docs` writes the offline page
// and the public bundle; the built server (`serve`, embedded database in a fresh directory,
// PORT=0) then serves /docs, /openapi.json and /openapi.yaml without a token and redirects / to
// /docs. The page must load nothing from the network. HEAD, /favicon.ico, compression (brotli,
// gzip) and caching (ETag, 304) are checked over HTTP; then Debian's Chromium (driven by
// playwright-core) opens the page at 1440×900 and 390×844: it must make no request off the
// server and get no error answer, links of its own opened as new pages must land on it, and it
// must show the Webhooks section and the code samples. Screenshots go to out/docs-screenshots/.
//
//   node scripts/ci/docs-served.mjs     (CHROMIUM=/path/to/chromium to pick the browser)
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { request } from "node:http";
import { brotliDecompressSync, gunzipSync } from "node:zlib";
import { chromium } from "playwright-core";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parse } from "yaml";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const started = Date.now();
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
  const withoutSamples = Object.entries(json.paths).flatMap(([p, item]) => Object.entries(item).filter(([, op]) => op.responses && op["x-codeSamples"]?.length !== 4).map(([m]) => `${m} ${p}`));
  if (withoutSamples.length) fail(`operations without their four code samples: ${withoutSamples.join(", ")}`);

  // HEAD, the icon, compression and caching.
  const head = await get("/docs", { method: "HEAD" });
  if (head.status !== 200 || (await head.text()) !== "" || head.headers.get("etag") !== page.headers.get("etag")) fail(`HEAD /docs answered ${head.status}`);
  const icon = await get("/favicon.ico");
  if (icon.status !== 200 || !icon.headers.get("content-type")?.startsWith("image/")) fail(`/favicon.ico answered ${icon.status} ${icon.headers.get("content-type")}`);
  const sizes = {};
  for (const [encoding, inflate] of [["br", brotliDecompressSync], ["gzip", gunzipSync]]) {
    const r = await raw(`${base}/docs`, { "accept-encoding": encoding });
    if (r.headers["content-encoding"] !== encoding || inflate(r.body).toString("utf8") !== offline) fail(`/docs with Accept-Encoding: ${encoding} is not the page, ${encoding}-encoded`);
    sizes[encoding] = r.body.length;
  }
  const etag = page.headers.get("etag");
  if (!etag || !/max-age=\d+/.test(page.headers.get("cache-control") ?? "")) fail(`/docs has no ETag or Cache-Control: ${etag} ${page.headers.get("cache-control")}`);
  if ((await get("/docs", { headers: { "if-none-match": etag } })).status !== 304) fail("/docs with its ETag is not 304");

  await browserCheck(base, html);
  log(`passed in ${((Date.now() - started) / 1000).toFixed(1)} s: / → /docs, the page (${(html.length / 1024).toFixed(0)} KiB; ${(sizes.br / 1024).toFixed(0)} KiB br, ${(sizes.gzip / 1024).toFixed(0)} KiB gzip) loads nothing remote in Chromium, /openapi.json = /openapi.yaml = the public bundle (${Object.keys(json.paths).length} paths, every operation with samples)`);
} finally {
  server.kill("SIGTERM");
  await new Promise((r) => (server.exitCode !== null ? r() : server.on("exit", r)));
  rmSync(dataDir, { recursive: true, force: true });
}

/** A GET whose body is left as sent (fetch would decompress it). */
function raw(url, headers) {
  return new Promise((resolveRes, reject) => {
    const req = request(url, { headers }, (res) => {
      const chunks = [];
      res.on("data", (c) => chunks.push(c));
      res.on("end", () => resolveRes({ headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on("error", reject);
    req.end();
  });
}

async function browserCheck(base, html) {
  const shots = join(root, "out/docs-screenshots");
  mkdirSync(shots, { recursive: true });
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    // Without the background-networking flags Chromium itself calls out (updates, sync), which
    // would be mistaken for the page's requests.
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  try {
    const ownLinks = [...new Set([...html.matchAll(/href="(\/[a-z0-9-]+(?:\/[a-z0-9-]+)*)"/g)].map((m) => m[1]))];
    for (const [width, height, name] of [[1440, 900, "desktop"], [390, 844, "mobile"]]) {
      const page = await browser.newPage({ viewport: { width, height } });
      page.setDefaultTimeout(20_000);
      const offServer = [];
      const errors = [];
      page.on("request", (r) => {
        const url = r.url();
        if (!url.startsWith(`${base}/`) && !url.startsWith("blob:") && !url.startsWith("data:")) offServer.push(url);
      });
      page.on("response", (r) => r.status() >= 400 && errors.push(`${r.status()} ${r.url()}`));
      await page.goto(`${base}/docs`, { waitUntil: "load" });
      await page.waitForSelector("text=Every list answers the same envelope");
      await page.screenshot({ path: join(shots, `${name}-top.png`) });
      if (name === "desktop" && (await page.innerText("body")).includes("`")) fail("the page shows a literal backtick");
      // Every link of the page's own, opened as a new page (a new tab, a pasted link), lands on it
      // (the server's answer does not depend on the viewport: once is enough).
      for (const link of name === "desktop" ? ownLinks : []) {
        await page.goto(`${base}${link}`, { waitUntil: "load" });
        if (!page.url().startsWith(`${base}/docs#${link}`)) fail(`${link} opened in a new tab landed on ${page.url()}`);
      }
      await page.goto(`${base}/webhook-endpoints/createwebhookendpoint`, { waitUntil: "load" });
      await page.waitForSelector("text=Registers an HTTPS receiver for your org");
      await page.waitForTimeout(500);
      await page.screenshot({ path: join(shots, `${name}-create-webhook-endpoint.png`) });
      const opText = await page.innerText("body");
      if (!opText.includes("curl -X POST") || !opText.includes("$ARS_TOKEN")) fail(`${name}: the create operation shows no curl sample`);
      await page.goto(`${base}/webhooks`, { waitUntil: "load" });
      await page.waitForSelector("text=Delivery statuses");
      await page.screenshot({ path: join(shots, `${name}-webhooks.png`) });
      const text = await page.innerText("body");
      // The footer badge lives in the sidebar, which a phone shows only behind its menu button.
      const desktopOnly = name === "desktop" ? ["API docs by Redoc"] : [];
      for (const expected of ["webhook-signature: v1,", "verifyWebhook", "hmac.compare_digest", "hmac.Equal", ...desktopOnly]) {
        if (!text.includes(expected)) fail(`${name}: the Webhooks section does not show ${JSON.stringify(expected)}`);
      }
      if (offServer.length) fail(`${name}: the page requested ${[...new Set(offServer)].join(", ")}`);
      if (errors.length) fail(`${name}: error answers while browsing: ${errors.join(", ")}`);
      await page.close();
    }
    log(`Chromium: ${ownLinks.length} own links land on the page, no request off the server, no error answer (screenshots in out/docs-screenshots/)`);
  } finally {
    await browser.close();
  }
}
