#!/usr/bin/env node
// CI: the README's "Portal", in a real browser. The built server (`serve`, embedded database in a
// fresh directory, one attempt per delivery so a failure is final at once) delivers to a real
// HTTPS receiver (the test kit's, with its CA trusted through ARS_EXTRA_CA_FILE). A link is minted
// with the README's curl command; Debian's Chromium (playwright-core, as docs-served.mjs launches
// it) follows it from a page of another site and then, with the mouse and the keyboard:
//
//   - creates an endpoint, copies its secret from the clipboard, sends a test event and verifies
//     its signature at the receiver with that secret;
//   - edits the filters, rotates the secret (the next request verifies with the new one), and
//     retries a failed delivery until it succeeds;
//   - disables, enables, recovers and deletes an endpoint (after its confirmation);
//   - creates an endpoint with the keyboard alone;
//   - creates and edits an operational endpoint, which is told of a disable made in the portal;
//   - runs axe-core on every page (no serious or critical violation);
//   - takes screenshots at 1440×900 and 390×844 into out/portal-screenshots/;
//   - is refused writes in a read-only session, and refused a used and an expired link;
//   - shows the portal in a frame of a page ARS_PORTAL_FRAME_ANCESTORS allows.
//
// No request may leave the server (or the test's own pages), no page may log an error, and the
// page must weigh < 200 KB compressed and load in < 1 s. Prints both.
//
//   node scripts/ci/portal.mjs     (after npm run build; CHROMIUM=/path/to/chromium to pick the browser)
/* global document, window -- inside page.evaluate(), which runs in the browser */
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { verifyWebhook } from "@audit-review/client/webhooks";
import { createTestCa } from "@audit-review/test-kit/ca";
import { startReceiver } from "@audit-review/test-kit/receiver";
import { chromium } from "playwright-core";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const started = Date.now();
const shots = join(root, "out/portal-screenshots");
const log = (msg) => process.stdout.write(`portal: ${msg}\n`);
const cleanups = [];
const fail = (msg) => {
  process.stderr.write(`portal: FAILED: ${msg}\n`);
  process.exitCode = 1;
  throw new Error(msg);
};
const check = (ok, msg) => ok || fail(msg);
const RECEIVER_HOST = "hooks.portal-ci.dev";
const AXE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

// ---- the README's command ----------------------------------------------------------------------
const readme = readFileSync(join(root, "README.md"), "utf8");
const portalSection = readme.slice(readme.indexOf("\n## Portal"));
const curlBlock = /```sh\n(curl [^`]*?)```/.exec(portalSection)?.[1];
check(curlBlock, "README's Portal section has no curl block");

mkdirSync(shots, { recursive: true });
const dataDir = mkdtempSync(join(tmpdir(), "ars-portal-"));
cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
/** The page in use, photographed if the run fails (out/portal-screenshots/failure.png). */
let current = null;
try {
  await main().catch(async (err) => {
    await current?.screenshot({ path: join(shots, "failure.png"), fullPage: true }).catch(() => {});
    throw err;
  });
  log(`passed in ${((Date.now() - started) / 1000).toFixed(1)} s (screenshots in out/portal-screenshots/)`);
} finally {
  for (const c of cleanups.reverse()) await c();
}

async function main() {
  // A real HTTPS receiver, trusted through the test CA; its name resolves to loopback, allowed explicitly.
  const ca = createTestCa();
  const receiver = await startReceiver({ ca, hostname: RECEIVER_HOST });
  cleanups.push(() => receiver.close());
  const caFile = join(dataDir, "ca.pem");
  writeFileSync(caFile, ca.cert);

  // The integrator's own site: a page linking to the portal, and one framing it.
  const site = await startSite();
  cleanups.push(() => site.close());

  const server = spawn(process.execPath, [join(root, "apps/server/dist/main.js"), "serve"], {
    cwd: tmpdir(),
    env: {
      ...process.env,
      PORT: "0",
      ARS_DATA_DIR: dataDir,
      ARS_METRICS_PORT: "0",
      ARS_LOG_LEVEL: "info",
      ARS_RETRY_SCHEDULE_MS: "0",
      ARS_STATIC_HOSTS: `${RECEIVER_HOST}=127.0.0.1`,
      ARS_ALLOW_PRIVATE_CIDRS: "127.0.0.1/32",
      ARS_EXTRA_CA_FILE: caFile,
      ARS_PORTAL_FRAME_ANCESTORS: site.framingOrigin,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let serverOut = "";
  server.stdout.on("data", (c) => (serverOut += c));
  server.stderr.on("data", (c) => (serverOut += c));
  cleanups.push(async () => {
    server.kill("SIGTERM");
    await new Promise((r) => (server.exitCode !== null ? r() : server.on("exit", r)));
  });
  const { base, token } = await new Promise((resolveStart, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve did not start:\n${serverOut}`)), 90_000);
    const look = () => {
      const url = /listening on (http:\/\/[^\s]+)/.exec(serverOut)?.[1];
      const t = /token: (ars_[A-Za-z0-9_-]+)/.exec(serverOut)?.[1];
      if (url && t) {
        clearTimeout(timer);
        resolveStart({ base: url, token: t });
      }
    };
    server.stdout.on("data", look);
    server.on("exit", (code) => reject(new Error(`serve exited ${code}:\n${serverOut}`)));
  });
  log(`serve listens on ${base}; receiver at https://${RECEIVER_HOST}:${receiver.port}`);
  const api = async (method, path, body, bearer = token) => {
    const res = await fetch(`${base}${path}`, { method, headers: { authorization: `Bearer ${bearer}`, "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  };
  const orgId = (await api("GET", "/v2/question_sets?limit=1")).body.data[0].org_id;
  await publishAudits(base, orgId, 3);

  /** The README's curl, against this server: a fresh link. */
  const mint = async (body = {}, origin = base) => {
    const cmd = curlBlock.replace(/-d '[^']*'/, `-d '${JSON.stringify(body)}'`);
    const out = await runShell(cmd, { ARS_API_URL: origin, ARS_TOKEN: token });
    const link = JSON.parse(out);
    check(link.object === "portal_session" && link.url.startsWith(`${origin}/portal/${orgId}/start?link=pl_`), `the README's curl answered ${out}`);
    return link;
  };

  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  cleanups.push(() => browser.close());
  const allowed = [base, site.linkingOrigin, site.framingOrigin, base.replace("127.0.0.1", "localhost")];
  const newPage = async (viewport) => {
    const context = await browser.newContext({ viewport, permissions: ["clipboard-read", "clipboard-write"] });
    const page = await context.newPage();
    current = page;
    page.setDefaultTimeout(20_000);
    page.problems = [];
    page.on("request", (r) => {
      const url = r.url();
      if (!allowed.some((o) => url.startsWith(`${o}/`)) && !url.startsWith("data:")) page.problems.push(`request off the server: ${url}`);
    });
    // 4xx answers the page shows (a refused URL, a read-only write) log a console line of their own
    page.on("console", (m) => m.type() === "error" && !/status of 4\d\d/.test(m.text()) && page.problems.push(`console error: ${m.text()}`));
    page.on("response", (r) => (r.status() >= 500 || (r.status() === 404 && r.url().includes("/portal/assets/"))) && page.problems.push(`${r.status()} ${r.url()}`));
    page.on("pageerror", (e) => page.problems.push(`page error: ${e.message}`));
    return page;
  };
  const clean = (page, what) => check(page.problems.length === 0, `${what}: ${page.problems.join("; ")}`);

  // ---- a session, from a link on the integrator's site -----------------------------------------
  const desktop = await newPage({ width: 1440, height: 900 });
  const link = await mint({ read_only: false, expires_in: 300 });
  await desktop.goto(site.linkPage(link.url));
  await desktop.click("text=Manage webhooks");
  await desktop.waitForURL(`${base}/portal/${orgId}/`);
  await desktop.waitForSelector("h1:text('Endpoints')");
  const timing = await loadFigures(desktop);
  check(timing.loadMs < 1000, `the portal took ${timing.loadMs} ms to load`);
  check(timing.compressedBytes < 200 * 1024, `the page weighs ${timing.compressedBytes} bytes compressed`);
  log(`the page: ${(timing.compressedBytes / 1024).toFixed(1)} KiB compressed over the wire (${timing.files} files), loaded in ${timing.loadMs} ms`);
  await desktop.waitForSelector("text=No endpoints yet");
  await axe(desktop, "endpoints (empty)");
  await shot(desktop, "desktop-endpoints-empty");

  // ---- create an endpoint: the API's errors beside their fields, then the secret, copied -------
  await desktop.click("text=Add your first endpoint");
  await desktop.waitForSelector("h1:text('Add an endpoint')");
  await axe(desktop, "new endpoint form");
  await desktop.fill("input[name=url]", `http://${RECEIVER_HOST}:${receiver.port}/hook`);
  await desktop.click("form.endpoint-form button[type=submit]");
  await desktop.waitForSelector("input[name=url][aria-invalid=true]");
  const urlError = await desktop.locator("label:has(input[name=url]) .field-error").innerText();
  check(/https/i.test(urlError), `the URL's error beside it says ${urlError}`);
  await axe(desktop, "new endpoint form with errors");
  await shot(desktop, "desktop-endpoint-errors");
  await desktop.fill("input[name=url]", `https://${RECEIVER_HOST}:${receiver.port}/hook`);
  await desktop.fill("input[name=description]", "Compliance receiver");
  await desktop.click("form.endpoint-form button[type=submit]");
  await desktop.waitForSelector("#secret-title");
  await axe(desktop, "secret shown once");
  await shot(desktop, "desktop-secret-once");
  await desktop.click("text=Copy secret");
  await desktop.waitForSelector("text=Copied");
  const secret = await desktop.evaluate(() => navigator.clipboard.readText());
  check(/^whsec_[A-Za-z0-9+/]{43}=$/.test(secret), `the clipboard holds ${secret}`);
  await desktop.click("text=I have saved the secret");
  await desktop.waitForSelector("text=Recent deliveries");
  const endpointId = desktop.url().split("/").pop();

  // ---- a test event, verified at the receiver with the copied secret ---------------------------
  await desktop.click("text=Send test event");
  const first = await receiver.nextRequest({ timeoutMs: 30_000 });
  verifyWebhook({ secret, headers: first.headers, body: first.body });
  log(`test event ${first.headers["webhook-id"]} verified at the receiver with the copied secret`);
  await desktop.waitForSelector("td >> text=succeeded");
  await axe(desktop, "endpoint");
  await shot(desktop, "desktop-endpoint");

  // ---- edit the filters --------------------------------------------------------------------------
  await desktop.click("button:text('Edit')");
  await desktop.selectOption("select[name=audit_results]", "failed");
  const setId = await desktop.locator("input[name=question_set_ids]").first().getAttribute("value");
  await desktop.locator("input[name=question_set_ids]").first().check();
  await desktop.locator("input[name=payload_fields][value='responses.context']").uncheck();
  await axe(desktop, "edit endpoint");
  await desktop.click("button:text('Save changes')");
  await desktop.waitForSelector("text=Changes saved.");
  const edited = (await api("GET", `/v2/webhook_endpoints/${endpointId}`)).body;
  check(edited.filters.audit_results === "failed" && edited.filters.question_set_ids.join() === setId && !edited.payload.fields.includes("responses.context"), `the edit saved ${JSON.stringify(edited.filters)} ${edited.payload.fields}`);

  // ---- rotate the secret: the next request verifies with the new one -----------------------------
  await desktop.click("button:text('Rotate secret')");
  await desktop.waitForSelector("dialog[open] >> text=Rotate the signing secret?");
  await axe(desktop, "rotate confirmation");
  await desktop.click("dialog[open] >> button:text('Rotate secret')");
  await desktop.waitForSelector("h2:text('New signing secret')");
  await desktop.click("text=Copy secret");
  await desktop.waitForSelector("text=Copied");
  const rotated = await desktop.evaluate(() => navigator.clipboard.readText());
  check(rotated !== secret && rotated.startsWith("whsec_"), "the rotated secret was not copied");
  await desktop.click("text=I have saved the secret");

  // ---- a failed delivery, retried until it succeeds --------------------------------------------
  receiver.setStatus(500);
  await desktop.click("text=Send test event");
  const refused = await receiver.nextRequest({ timeoutMs: 30_000 });
  verifyWebhook({ secret: rotated, headers: refused.headers, body: refused.body });
  check(refused.headers["webhook-signature"].split(" ").length === 2, "during the rotation's grace period a request carries two signatures");
  verifyWebhook({ secret, headers: refused.headers, body: refused.body });
  await desktop.click("text=Deliveries");
  await desktop.selectOption("select[name=status]", "failed");
  await desktop.waitForURL(/status=failed/);
  await desktop.locator("tbody a").first().click();
  await desktop.waitForSelector("text=HTTP 500");
  await axe(desktop, "failed delivery");
  await shot(desktop, "desktop-delivery-failed");
  receiver.setStatus(200);
  await desktop.click("button:text('Retry now')");
  await receiver.nextRequest({ timeoutMs: 30_000 });
  await desktop.waitForSelector(".page-head .badge:text('succeeded')", { timeout: 30_000 });
  await desktop.waitForSelector("text=manual");
  await axe(desktop, "retried delivery");
  await shot(desktop, "desktop-delivery");
  log("a failed delivery was retried from the portal and succeeded");

  // ---- deliveries and events -----------------------------------------------------------------------
  await desktop.click("text=Deliveries");
  await desktop.selectOption("select[name=status]", "");
  await desktop.waitForSelector("tbody tr");
  await axe(desktop, "deliveries");
  await shot(desktop, "desktop-deliveries");
  await desktop.click("nav >> text=Events");
  await desktop.waitForSelector("tbody tr");
  await axe(desktop, "events");
  await shot(desktop, "desktop-events");
  await desktop.locator("tbody a").first().click();
  await desktop.waitForSelector("h2:text('As published')");
  await axe(desktop, "event");
  await desktop.click("nav >> text=Endpoints");
  await desktop.waitForSelector("tbody tr");
  await axe(desktop, "endpoints");
  await shot(desktop, "desktop-endpoints");
  clean(desktop, "desktop session");

  // ---- the keyboard alone: a new endpoint ---------------------------------------------------------
  const keys = await newPage({ width: 1440, height: 900 });
  await keys.goto((await mint()).url);
  await keys.waitForSelector("h1:text('Endpoints')");
  const tabTo = async (matches, what) => {
    for (let i = 0; i < 60; i++) {
      await keys.keyboard.press("Tab");
      if (await keys.evaluate(matches)) return;
    }
    fail(`the keyboard never reached ${what}`);
  };
  await tabTo(() => document.activeElement?.textContent?.trim() === "Add endpoint", "Add endpoint");
  await keys.keyboard.press("Enter");
  await keys.waitForSelector("h1:text('Add an endpoint')");
  await tabTo(() => document.activeElement?.getAttribute("name") === "url", "the URL field");
  await keys.keyboard.type(`https://${RECEIVER_HOST}:${receiver.port}/keyboard`);
  await keys.keyboard.press("Tab");
  await keys.keyboard.type("Typed, never clicked");
  await tabTo(() => document.activeElement?.getAttribute("name") === "audit_results", "the audit results");
  await keys.keyboard.press("ArrowDown"); // a closed <select> moves to the next option: passed audits only
  await tabTo(() => document.activeElement?.getAttribute("type") === "submit", "the submit button");
  await keys.keyboard.press("Enter");
  await keys.waitForSelector("#secret-title");
  check(await keys.evaluate(() => document.activeElement?.id === "secret-title"), "focus did not move to the secret");
  await tabTo(() => document.activeElement?.textContent?.trim() === "Copy secret", "Copy secret");
  await keys.keyboard.press("Enter");
  await keys.waitForSelector("text=Copied");
  const keyed = await keys.evaluate(() => navigator.clipboard.readText());
  await tabTo(() => document.activeElement?.textContent?.trim() === "I have saved the secret", "the done button");
  await keys.keyboard.press("Enter");
  await keys.waitForSelector("text=Recent deliveries");
  const created = (await api("GET", "/v2/webhook_endpoints?limit=100")).body.data.find((e) => e.url.endsWith("/keyboard"));
  check(created?.description === "Typed, never clicked" && created.filters.audit_results === "passed" && created.signing.secret_hint.endsWith(keyed.slice(-4)), `the keyboard's endpoint is ${JSON.stringify(created)}`);
  clean(keys, "keyboard session");
  log("an endpoint was created with the keyboard alone");

  // ---- disable, enable, recover, delete (with its confirmation) ------------------------------------
  await keys.click("button:text-is('Disable')");
  await keys.waitForSelector("text=Endpoint disabled.");
  check((await api("GET", `/v2/webhook_endpoints/${created.id}`)).body.status === "disabled", "Disable did not disable the endpoint");
  await keys.click("button:text-is('Enable')");
  await keys.waitForSelector("text=Endpoint enabled.");
  await keys.click("summary:text('Recover failed deliveries')");
  await keys.click("button:text-is('Recover')");
  await keys.waitForSelector("text=failed deliveries queued again.");
  await keys.click("button:text-is('Delete')");
  await keys.waitForSelector("dialog[open] >> text=Delete this endpoint?");
  await axe(keys, "delete confirmation");
  await shot(keys, "desktop-delete-confirmation");
  await keys.click("dialog[open] >> button:text('Delete endpoint')");
  await keys.waitForSelector("h1:text('Endpoints')");
  check((await api("GET", `/v2/webhook_endpoints/${created.id}`)).status === 404, "Delete did not delete the endpoint");
  clean(keys, "endpoint lifecycle");
  log("an endpoint was disabled, enabled, recovered and deleted from the portal");

  // ---- an operational endpoint: created and edited from the portal, told of a disable made there ----
  await desktop.goto(`${base}/portal/${orgId}/endpoints/new`);
  await desktop.waitForSelector("h1:text('Add an endpoint')");
  await desktop.selectOption("select[name=kind]", "operational");
  check((await desktop.locator("legend:text('Payload')").count()) === 0, "the form of an operational endpoint offers payload settings");
  await desktop.fill("input[name=url]", `https://${RECEIVER_HOST}:${receiver.port}/ops`);
  await axe(desktop, "new operational endpoint form");
  await desktop.click("form.endpoint-form button[type=submit]");
  await desktop.waitForSelector("#secret-title");
  await desktop.click("text=Copy secret");
  await desktop.waitForSelector("text=Copied");
  const opsSecret = await desktop.evaluate(() => navigator.clipboard.readText());
  await desktop.click("text=I have saved the secret");
  await desktop.waitForSelector("text=Recent deliveries");
  const opsId = desktop.url().split("/").pop();
  check((await api("GET", `/v2/webhook_endpoints/${opsId}`)).body.kind === "operational", "the portal did not create an operational endpoint");
  await desktop.click("button:text('Edit')");
  await desktop.fill("input[name=description]", "On-call notifications");
  await desktop.click("button:text('Save changes')");
  await desktop.waitForSelector("text=Changes saved.");
  await axe(desktop, "operational endpoint");
  await desktop.goto(`${base}/portal/${orgId}/endpoints/${endpointId}`);
  await desktop.waitForSelector("text=Recent deliveries");
  await desktop.click("button:text-is('Disable')");
  await desktop.waitForSelector("text=Endpoint disabled.");
  const deadline = Date.now() + 30_000;
  let ops;
  while (!(ops = receiver.requests.find((r) => r.path === "/ops")) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
  check(ops, "no operational notification reached the operational endpoint's receiver");
  const notice = JSON.parse(verifyWebhook({ secret: opsSecret, headers: ops.headers, body: ops.body }).body);
  check(notice.type === "webhook_endpoint.disabled" && notice.data.endpointId === endpointId && notice.data.disabledReason === "manual", `the notification was ${JSON.stringify(notice)}`);
  await desktop.click("button:text-is('Enable')");
  await desktop.waitForSelector("text=Endpoint enabled.");
  log("an operational endpoint was created and edited from the portal, and got a verified webhook_endpoint.disabled for a disable made there");

  // ---- a phone -------------------------------------------------------------------------------------
  const phone = await newPage({ width: 390, height: 844 });
  await phone.goto((await mint()).url);
  await phone.waitForSelector("tbody tr");
  await axe(phone, "endpoints on a phone");
  await shot(phone, "mobile-endpoints");
  await phone.goto(`${base}/portal/${orgId}/endpoints/${endpointId}`);
  await phone.waitForSelector("text=Recent deliveries");
  await axe(phone, "endpoint on a phone");
  await shot(phone, "mobile-endpoint");
  await phone.goto(`${base}/portal/${orgId}/endpoints/new`);
  await phone.waitForSelector("h1:text('Add an endpoint')");
  await shot(phone, "mobile-new-endpoint");
  await phone.goto(`${base}/portal/${orgId}/deliveries`);
  await phone.waitForSelector("tbody tr");
  await axe(phone, "deliveries on a phone");
  await shot(phone, "mobile-deliveries");
  await phone.locator("tbody a").first().click();
  await phone.waitForSelector("h2:text('Attempts')");
  await shot(phone, "mobile-delivery");
  await phone.goto(`${base}/portal/${orgId}/events`);
  await phone.waitForSelector("tbody tr");
  await shot(phone, "mobile-events");
  clean(phone, "phone session");

  // ---- read-only: everything shown, no write offered, a forced write refused ----------------------
  const reader = await newPage({ width: 1440, height: 900 });
  await reader.goto((await mint({ read_only: true, expires_in: 120 })).url);
  await reader.waitForSelector("tbody tr");
  await reader.waitForSelector(".session-bar >> text=Read-only");
  check((await reader.locator("text=Add endpoint").count()) === 0, "a read-only session offers Add endpoint");
  await reader.goto(`${base}/portal/${orgId}/endpoints/${endpointId}`);
  await reader.waitForSelector("text=Recent deliveries");
  for (const label of ["Edit", "Send test event", "Disable", "Rotate secret", "Delete"]) {
    check((await reader.locator(`button:text-is('${label}')`).count()) === 0, `a read-only session has a ${label} button`);
  }
  await axe(reader, "read-only endpoint");
  await shot(reader, "desktop-read-only");
  const forced = await reader.evaluate(async ([org, id]) => {
    const res = await fetch(`/portal/${org}/api/v2/webhook_endpoints/${id}`, { method: "PATCH", headers: { "content-type": "application/json" }, body: JSON.stringify({ status: "disabled" }) });
    return { status: res.status, body: await res.json() };
  }, [orgId, endpointId]);
  check(forced.status === 403 && forced.body.code === "INSUFFICIENT_SCOPE", `a read-only session's write answered ${JSON.stringify(forced)}`);
  check((await api("GET", `/v2/webhook_endpoints/${endpointId}`)).body.status === "enabled", "the read-only write changed the endpoint");
  check(!(await reader.evaluate(() => document.cookie)).includes("ars_portal"), "the session cookie is readable by the page's scripts");
  clean(reader, "read-only session");
  log("a read-only session showed everything, offered no write and was refused one");

  // ---- used and expired links ----------------------------------------------------------------------
  const refusedPage = await newPage({ width: 1440, height: 900 });
  const once = await mint();
  await refusedPage.goto(once.url);
  await refusedPage.waitForSelector("h1:text('Endpoints')");
  const used = await refusedPage.goto(once.url);
  check(used.status() === 410 && (await refusedPage.innerText("h1")) === "This link has already been used", `a used link answered ${used.status()}`);
  await axe(refusedPage, "used link");
  await shot(refusedPage, "desktop-link-used");
  const brief = await mint({ expires_in: 1 });
  await waitUntil(new Date(brief.expires_at).getTime() + 1500);
  const expired = await refusedPage.goto(brief.url);
  check(expired.status() === 410 && (await refusedPage.innerText("h1")) === "This link has expired", `an expired link answered ${expired.status()}`);
  await refusedPage.click("form.sign-out button").catch(() => {}); // a plain page has no sign-out
  log("a used and an expired link were refused with a plain page");

  // ---- sign out ------------------------------------------------------------------------------------
  await desktop.click("text=Sign out");
  await desktop.waitForSelector("h1:text('You are signed out')");
  const after = await desktop.goto(`${base}/portal/${orgId}/`);
  check(after.status() === 401, `after signing out the portal answered ${after.status()}`);

  // ---- embedded in the integrator's dashboard (same site, allowed by ARS_PORTAL_FRAME_ANCESTORS) ----
  const localBase = base.replace("127.0.0.1", "localhost");
  const embedded = await newPage({ width: 1440, height: 900 });
  await embedded.goto(site.framePage((await mint({}, localBase)).url));
  const frame = embedded.frameLocator("iframe");
  await frame.locator("h1:text('Endpoints')").waitFor();
  await shot(embedded, "desktop-embedded");
  clean(embedded, "embedded portal");
  log(`the portal loads in a frame of ${site.framingOrigin} (ARS_PORTAL_FRAME_ANCESTORS)`);

  log(`axe-core ${JSON.parse(readFileSync(createRequire(import.meta.url).resolve("axe-core/package.json"), "utf8")).version} on ${axe.pages} pages: no serious or critical violation`);
  check(!/ars_[A-Za-z0-9_-]{43}|pl_[A-Za-z0-9_-]{43}|ps_[A-Za-z0-9_-]{43}|whsec_/.test(serverOut.split("listening on")[1] ?? ""), "the server logged a token, a link, a session cookie or a secret");
  check(/"msg":"portal session started"/.test(serverOut) && /"msg":"portal session ended"/.test(serverOut), "the server did not log session start and end");
}

/** What the page cost: compressed bytes of the shell and its files, and the time to its load event. */
async function loadFigures(page) {
  await page.reload({ waitUntil: "load" });
  await page.waitForSelector("h1:text('Endpoints')");
  return page.evaluate(() => {
    const nav = performance.getEntriesByType("navigation")[0];
    const files = performance.getEntriesByType("resource").filter((r) => r.name.includes("/portal/assets/"));
    // transferSize is 0 for a cached file: count what the wire would carry (encodedBodySize)
    const compressedBytes = nav.encodedBodySize + files.reduce((n, r) => n + r.encodedBodySize, 0);
    return { loadMs: Math.round(nav.loadEventEnd - nav.startTime), compressedBytes, files: files.length + 1 };
  });
}

async function axe(page, what) {
  // evaluated through the DevTools protocol: the page's CSP (rightly) refuses an injected <script>
  if (!(await page.evaluate(() => "axe" in window))) await page.evaluate(AXE);
  const result = await page.evaluate(async () => {
    const r = await window.axe.run(document, { resultTypes: ["violations"] });
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.map((n) => n.target.join(" ")).slice(0, 3) }));
  });
  const bad = result.filter((v) => v.impact === "serious" || v.impact === "critical");
  check(bad.length === 0, `axe-core on ${what}: ${JSON.stringify(bad)}`);
  axe.pages = (axe.pages ?? 0) + 1;
}

async function shot(page, name) {
  await page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
}

async function waitUntil(epochMs) {
  while (Date.now() < epochMs) await new Promise((r) => setTimeout(r, Math.min(250, epochMs - Date.now())));
}

function runShell(cmd, env) {
  return new Promise((resolveRun, reject) => {
    const child = spawn("sh", ["-c", cmd], { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (c) => (out += c));
    child.stderr.on("data", (c) => (err += c));
    child.on("close", (code) => (code === 0 ? resolveRun(out) : reject(new Error(`${cmd} exited ${code}: ${err}`))));
  });
}

/** Audits published through the internal API, with a token minted by the CLI (it reaches the running server). */
async function publishAudits(base, orgId, n) {
  const minted = await runShell(`node ${join(root, "apps/server/dist/main.js")} tokens create --org ${orgId} --scopes internal:ingest,question_sets:read --json`, { ARS_DATA_DIR: dataDir });
  const ingest = JSON.parse(minted).token;
  const headers = { authorization: `Bearer ${ingest}`, "content-type": "application/json" };
  const sets = (await (await fetch(`${base}/v2/question_sets?limit=${n}`, { headers })).json()).data;
  for (let i = 0; i < n; i++) {
    const body = { id: randomUUID(), type: "audit.completed", data: { audit_id: randomUUID(), question_set_id: sets[i % sets.length].id, result: i % 2 ? "passed" : "failed", document_id: `doc-${i + 1}` } };
    const res = await fetch(`${base}/v2/internal/events`, { method: "POST", headers, body: JSON.stringify(body) });
    check(res.status === 201 || res.status === 202, `publishing an audit answered ${res.status}: ${await res.text()}`);
  }
}

/**
 * The integrator's site, on other origins than the server: a page on `localhost` linking to the
 * portal (another site than 127.0.0.1, so the link is followed cross-site, as from a real
 * dashboard), and a page framing it (on `localhost`, the same site as a portal reached at
 * `localhost`, which SameSite=Strict needs inside a frame).
 */
async function startSite() {
  const server = createServer((req, res) => {
    const url = new URL(req.url, "http://x");
    const target = url.searchParams.get("to") ?? "";
    const escaped = target.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
    const body = url.pathname === "/frame"
      ? `<!doctype html><html lang="en"><title>Dashboard</title><h1>Your dashboard</h1><iframe title="Webhook portal" src="${escaped}" width="1200" height="700"></iframe></html>`
      : `<!doctype html><html lang="en"><title>Dashboard</title><h1>Your dashboard</h1><a href="${escaped}">Manage webhooks</a></html>`;
    res.writeHead(200, { "content-type": "text/html" }).end(body);
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address();
  const origin = `http://localhost:${port}`;
  return {
    linkingOrigin: origin,
    framingOrigin: origin,
    linkPage: (to) => `${origin}/link?to=${encodeURIComponent(to)}`,
    framePage: (to) => `${origin}/frame?to=${encodeURIComponent(to)}`,
    close: () => new Promise((r) => server.close(r)),
  };
}
