#!/usr/bin/env node
/* global document */
// CI: the README's "Reading the docs", as a user does it: `npm run docs` writes the offline page,
// the public bundle and the client packages; the built server (`serve`, embedded database in a
// fresh directory, PORT=0) then serves /docs, /openapi.json and /openapi.yaml without a token and
// redirects / to /docs. The page must load nothing from the network and weigh at most 1 MB
// compressed. HEAD, /favicon.ico, compression (brotli, gzip), caching (ETag, 304), the error
// catalogue (every problem `type` redirects to its entry) and /clients are checked over HTTP;
// then Debian's Chromium (driven by playwright-core) opens the page at 1440×900 and 390×844: it
// must make no request off the server and get no error answer, show the quick start exactly as
// the README has it, the Webhooks section with its receivers in tabs, and the code samples; and
// from its console ("Try"), with a token pasted in its Authentication section, a read call must
// reach this server and show its answer, with nothing stored in the browser. Screenshots go to
// out/docs-screenshots/.
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

  const MAX_COMPRESSED = 1_000_000;
  if (sizes.br > MAX_COMPRESSED || sizes.gzip > MAX_COMPRESSED) fail(`the page weighs ${sizes.br} bytes br, ${sizes.gzip} bytes gzip: more than ${MAX_COMPRESSED} compressed`);

  // The error catalogue: every code's problem type resolves to its entry on the page.
  const codes = json.components.schemas.ErrorCode.enum;
  for (const code of codes) {
    const slug = code.toLowerCase().replace(/_/g, "-");
    const r = await get(`/problems/${slug}`, { redirect: "manual" });
    const entry = `overview--${code.toLowerCase()}`;
    if (r.status !== 302 || r.headers.get("location") !== `/docs#${entry}`) fail(`/problems/${slug} answered ${r.status} → ${r.headers.get("location")}`);
    if (!json.info.description.includes(`\n### ${code}\n`)) fail(`the error catalogue has no entry for ${code}`);
  }
  const problem = await (await get("/v2/nope")).json();
  if (problem.type !== "/problems/not-found") fail(`a problem's type is ${problem.type}`);
  // The client packages the docs name are served.
  const clientsPage = await (await get("/clients")).text();
  for (const file of ["audit-review-api-types-0.1.0.tgz", "audit-review-client-0.1.0.tgz", "audit_review-0.1.0-py3-none-any.whl"]) {
    if (!clientsPage.includes(file) || (await get(`/clients/${file}`, { method: "HEAD" })).status !== 200) fail(`/clients does not serve ${file}`);
  }

  await browserCheck(base, html, json);
  log(`passed in ${((Date.now() - started) / 1000).toFixed(1)} s: / → /docs, the page (${(html.length / 1024).toFixed(0)} KiB; ${(sizes.br / 1024).toFixed(0)} KiB br, ${(sizes.gzip / 1024).toFixed(0)} KiB gzip) loads nothing remote in Chromium, /openapi.json = /openapi.yaml = the public bundle (${Object.keys(json.paths).length} paths, every operation with samples), ${codes.length} problem types resolve to their entries`);
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

/** The page's text, shadow trees included (the renderer draws inside them; a host's innerText does not reach there). */
function deepText(page) {
  return page.evaluate(() => {
    const parts = [];
    const walk = (node) => {
      // a code block whole (its highlighting splits it into many spans), anything else by its leaves
      if (node.tagName === "PRE" || node.tagName === "P" || node.tagName === "TD") {
        if (node.offsetParent !== null) parts.push(node.innerText);
        return;
      }
      if (node.shadowRoot) walk(node.shadowRoot);
      for (const child of node.children ?? []) walk(child);
      if (node.nodeType === 1 && !node.children.length && node.offsetParent !== null) parts.push(node.innerText);
    };
    walk(document.body);
    return parts.join("\n");
  });
}

/** The fenced blocks of a Markdown text, in order. */
function fences(markdown) {
  return [...markdown.matchAll(/```[a-z]*\n([\s\S]*?)\n```/g)].map((m) => m[1]);
}

async function browserCheck(base, html, json) {
  const shots = join(root, "out/docs-screenshots");
  rmSync(shots, { recursive: true, force: true });
  mkdirSync(shots, { recursive: true });
  // The quick start, as the README has it: the same blocks in the same order.
  const readme = readFileSync(join(root, "README.md"), "utf8");
  const readmeQuick = readme.slice(readme.indexOf("### Your first delivery"), readme.indexOf("\n## ", readme.indexOf("### Your first delivery")));
  const description = json.info.description;
  const docsQuick = description.slice(description.indexOf("## Quick start"), description.indexOf("\n## ", description.indexOf("## Quick start") + 3));
  if (!fences(docsQuick).length || JSON.stringify(fences(docsQuick)) !== JSON.stringify(fences(readmeQuick))) {
    fail(`the docs' quick start and the README's "Your first delivery" differ:\n${JSON.stringify(fences(docsQuick), null, 1)}\n---\n${JSON.stringify(fences(readmeQuick), null, 1)}`);
  }
  const token = await readOnlyToken();
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    // Without the background-networking flags Chromium itself calls out (updates, sync), which
    // would be mistaken for the page's requests.
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  try {
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
      const shown = (text) => page.locator("rapi-doc").getByText(text, { exact: false }).first();
      await page.goto(`${base}/docs`, { waitUntil: "load" });
      await shown("From a token to a verified delivery").waitFor();
      await page.screenshot({ path: join(shots, `${name}-quick-start.png`) });
      // Each quick-start block is on the page as the README has it.
      const codeTexts = await page.locator("rapi-doc pre code, rapi-doc pre").allInnerTexts();
      for (const block of fences(docsQuick)) {
        if (!codeTexts.some((t) => t.trim() === block.trim())) fail(`${name}: the page does not show the quick-start block:\n${block}`);
      }

      await page.goto(`${base}/docs#post-/v2/webhook_endpoints`, { waitUntil: "load" });
      await shown("Registers an HTTPS receiver for your org").waitFor();
      await page.waitForTimeout(300);
      await page.screenshot({ path: join(shots, `${name}-create-webhook-endpoint.png`) });
      const opText = await deepText(page);
      if (!opText.includes('curl -X POST "$ARS_API_URL/v2/webhook_endpoints"') || !opText.includes("Idempotency-Key: $(od")) fail(`${name}: the create operation shows no runnable curl sample`);

      await page.goto(`${base}/docs#post-audit.completed`, { waitUntil: "load" });
      await shown("Delivery statuses").waitFor();
      await page.screenshot({ path: join(shots, `${name}-webhooks.png`) });
      // The receivers are tabs; each shows its code, highlighted (token spans).
      for (const [tab, expected] of [["TypeScript receiver", "verifyWebhook"], ["Python receiver", "hmac.compare_digest"], ["Go receiver", "hmac.Equal"]]) {
        await page.locator("rapi-doc button, rapi-doc .tab-btn").filter({ hasText: tab }).first().click();
        await shown(expected).waitFor();
        const highlighted = await page.locator("rapi-doc .tab-content:not([style*='display:none']) .token, rapi-doc code .token").count();
        if (!highlighted) fail(`${name}: the ${tab} is not highlighted`);
      }
      await page.screenshot({ path: join(shots, `${name}-webhook-receivers.png`) });
      const hookText = await deepText(page);
      for (const expected of ["webhook-signature: v1,", "isTest"]) {
        if (!hookText.includes(expected)) fail(`${name}: the Webhooks section does not show ${JSON.stringify(expected)}`);
      }

      // The console: paste a read-only token, send a read call, see this server's answer.
      await page.goto(`${base}/docs#auth`, { waitUntil: "load" });
      await page.locator("rapi-doc input.api-key-input").fill(token);
      await page.locator("rapi-doc button", { hasText: "SET" }).click();
      await page.goto(`${base}/docs#get-/v2/question_sets`, { waitUntil: "load" });
      await shown("Lists your org's question sets").waitFor();
      const answered = page.waitForResponse((r) => r.url().startsWith(`${base}/v2/question_sets`));
      await page.locator("rapi-doc button", { hasText: /^TRY$/ }).first().click();
      const response = await answered;
      const body = await response.json();
      if (response.status() !== 200 || body.object !== "list" || !Array.isArray(body.data) || !body.data.length) fail(`${name}: the console's call answered ${response.status()} ${JSON.stringify(body).slice(0, 200)}`);
      if (response.request().headers().authorization !== `Bearer ${token}`) fail(`${name}: the console did not send the pasted token`);
      await shown("Response Status: OK:200").waitFor();
      await shown(body.data[0].set_name).waitFor();
      await page.screenshot({ path: join(shots, `${name}-console.png`) });
      const stored = await page.evaluate(() => JSON.stringify([Object.entries(localStorage), Object.entries(sessionStorage), document.cookie]));
      if (stored.includes(token.slice(4, 20))) fail(`${name}: the token was stored in the browser: ${stored}`);

      if (offServer.length) fail(`${name}: the page requested ${[...new Set(offServer)].join(", ")}`);
      if (errors.length) fail(`${name}: error answers while browsing: ${errors.join(", ")}`);
      await page.close();
    }
    log(`Chromium: quick start as in the README, receivers in highlighted tabs, the console's read call answered 200 from this server with the pasted token (kept in memory only), no request off the server (screenshots in out/docs-screenshots/)`);
  } finally {
    await browser.close();
  }
}

/** A token with the read scopes only, minted with the CLI (over the running server's socket), as the docs suggest. */
async function readOnlyToken() {
  const cli = (...args) => {
    const r = spawnSync(process.execPath, [join(root, "apps/server/dist/main.js"), ...args, "--json"], { env: { ...process.env, ARS_DATA_DIR: dataDir }, encoding: "utf8" });
    if (r.status !== 0) fail(`ars ${args.join(" ")} exited ${r.status}: ${r.stderr}`);
    return JSON.parse(r.stdout);
  };
  const [org] = cli("orgs", "list");
  return cli("tokens", "create", "--org", org.id, "--scopes", "question_sets:read,coding_evaluations:read,webhooks:read,events:read").token;
}
