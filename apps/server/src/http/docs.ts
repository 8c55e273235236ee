import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { brotliDecompressSync, gunzipSync } from "node:zlib";
import { Router, type Request, type Response } from "express";
import { arrayOf, recordOf } from "../lib/narrow.js";

/** One served file: its bytes, the compressed forms the build wrote, and its validator. */
interface Asset {
  type: string;
  identity: Buffer;
  br?: Buffer;
  gzip?: Buffer;
  etag: string;
}

export interface DocsAssets {
  page: Asset;
  json: Asset;
  yaml: Asset;
  favicon: Asset;
  /** The error catalogue: `/problems/<slug>` (a problem's `type`) → the code's entry on the page. */
  problems: Map<string, string>;
  /** The client packages the docs build wrote (`clients/…`), by their path under `/clients/`. */
  clients: Map<string, Asset>;
}

// A small mark, so browsers asking for /favicon.ico get an icon, not a problem document.
const FAVICON = Buffer.from(
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="6" fill="#1f4e8c"/>' +
    '<path d="M9 22l7-13 7 13" fill="none" stroke="#fff" stroke-width="3" stroke-linejoin="round"/></svg>',
);

/**
 * The reference page and the public contract, read once when the app is built: the files are
 * build artifacts (npm run docs, which also writes their gzip and brotli forms), so no request
 * renders, bundles or compresses anything.
 */
export function loadDocs(docsDir: string): DocsAssets {
  const read = (name: string, type: string): Asset => {
    const file = join(docsDir, name);
    let identity: Buffer;
    try {
      identity = readFileSync(file);
    } catch {
      throw new Error(`${file} is missing: build it with \`npm run docs\` (npm start and npm run build do).`);
    }
    // A compressed form is used only if it is exactly this file (an older build's is ignored).
    const compressed = (ext: string, inflate: (b: Buffer) => Buffer): Buffer | undefined => {
      if (!existsSync(`${file}.${ext}`)) return undefined;
      const buf = readFileSync(`${file}.${ext}`);
      return inflate(buf).equals(identity) ? buf : undefined;
    };
    return { type, identity, gzip: compressed("gz", gunzipSync), br: compressed("br", brotliDecompressSync), etag: etagOf(identity) };
  };
  const page = read("index.html", "text/html; charset=utf-8");
  const json = read("openapi.public.json", "application/json; charset=utf-8");
  return {
    page,
    json,
    yaml: read("openapi.public.yaml", "application/yaml; charset=utf-8"),
    favicon: { type: "image/svg+xml", identity: FAVICON, etag: etagOf(FAVICON) },
    problems: problemCatalogue(json.identity),
    clients: clientPackages(join(docsDir, "clients")),
  };
}

/**
 * Every error code of the contract (`ErrorCode`), by the slug its problem `type` ends in
 * (`RATE_LIMITED` → `rate-limited`), to the id the page gives its catalogue entry: the reference
 * renders the description's `### RATE_LIMITED` heading as `overview--rate_limited`.
 */
function problemCatalogue(publicBundle: Buffer): Map<string, string> {
  const spec: unknown = JSON.parse(publicBundle.toString("utf8"));
  const codes = arrayOf(recordOf(recordOf(recordOf(recordOf(spec).components).schemas).ErrorCode).enum);
  const out = new Map<string, string>();
  for (const code of codes) if (typeof code === "string") out.set(code.toLowerCase().replace(/_/g, "-"), `overview--${code.toLowerCase()}`);
  return out;
}

// What each client archive is, for the browser and the package managers that fetch it.
const CLIENT_TYPES: Array<[RegExp, string]> = [
  [/\.tgz$/, "application/gzip"],
  [/\.(whl|zip)$/, "application/zip"],
  [/\.tar\.gz$/, "application/gzip"],
  [/\.info$/, "application/json"],
  [/(\.mod|\/list)$/, "text/plain; charset=utf-8"],
];

/** The archives `npm run docs` packed (npm tarballs, a Python wheel, a Go module proxy tree), read once. */
function clientPackages(dir: string): Map<string, Asset> {
  const out = new Map<string, Asset>();
  if (!existsSync(dir)) return out;
  const walk = (at: string): void => {
    for (const name of readdirSync(at)) {
      const file = join(at, name);
      if (statSync(file).isDirectory()) {
        walk(file);
        continue;
      }
      const path = relative(dir, file).split("\\").join("/");
      const type = CLIENT_TYPES.find(([re]) => re.test(path))?.[1];
      if (!type) continue;
      const identity = readFileSync(file);
      out.set(path, { type, identity, etag: etagOf(identity) });
    }
  };
  walk(dir);
  return out;
}

function etagOf(buf: Buffer): string {
  return `"${createHash("sha256").update(buf).digest("base64url").slice(0, 27)}"`;
}

/** Sends an asset: the best encoding the client accepts, a strong ETag, 304 when it matches. */
function send(req: Request, res: Response, asset: Asset): void {
  res.setHeader("Cache-Control", "public, max-age=300");
  res.setHeader("ETag", asset.etag);
  res.setHeader("Vary", "Accept-Encoding");
  res.type(asset.type);
  const inm = req.get("if-none-match");
  if (inm && inm.split(",").some((t) => t.trim().replace(/^W\//, "") === asset.etag)) {
    res.status(304).end();
    return;
  }
  // Brotli when the client takes it (smaller), else gzip, else the bytes as they are.
  const encoding = asset.br && req.acceptsEncodings("br") === "br" ? "br" : asset.gzip && req.acceptsEncodings("gzip") === "gzip" ? "gzip" : undefined;
  const body = encoding === "br" ? asset.br! : encoding === "gzip" ? asset.gzip! : asset.identity;
  if (encoding) res.setHeader("Content-Encoding", encoding);
  res.setHeader("Content-Length", String(body.length));
  if (req.method === "HEAD") res.end();
  else res.end(body);
}

/** GET of the documented operations (getDocs, getOpenApiJson, getOpenApiYaml), after validation. */
export function docsRoutes(assets: DocsAssets): Router {
  const router = Router({ caseSensitive: true, strict: false });
  router.get("/docs", (req, res) => send(req, res, assets.page));
  router.get("/openapi.json", (req, res) => send(req, res, assets.json));
  router.get("/openapi.yaml", (req, res) => send(req, res, assets.yaml));
  return router;
}

/**
 * What a browser or a package manager asks of the docs besides the documented GETs, answered
 * before authentication: HEAD of the page and the contract, /favicon.ico, a problem's `type`
 * (`/problems/rate-limited` redirects to its entry in the page's error catalogue, `/problems` to
 * the catalogue), and the client packages the server was built with (`/clients/…`, listed at
 * `/clients`).
 */
export function docsBrowserRoutes(assets: DocsAssets): Router {
  const router = Router({ caseSensitive: true, strict: false });
  router.head("/docs", (req, res) => send(req, res, assets.page));
  router.head("/openapi.json", (req, res) => send(req, res, assets.json));
  router.head("/openapi.yaml", (req, res) => send(req, res, assets.yaml));
  router.get("/favicon.ico", (req, res) => send(req, res, assets.favicon));
  router.head("/favicon.ico", (req, res) => send(req, res, assets.favicon));
  router.get("/problems", (_req, res) => res.redirect(302, "/docs#overview--errors"));
  router.get("/problems/:slug", (req, res, next) => {
    const entry = assets.problems.get(String(req.params.slug));
    if (!entry) return next();
    res.redirect(302, `/docs#${entry}`);
  });
  const index = clientIndex(assets.clients);
  router.get("/clients", (req, res) => send(req, res, index));
  router.use("/clients", (req, res, next) => {
    if (req.method !== "GET" && req.method !== "HEAD") return next();
    const asset = assets.clients.get(decodeURIComponent(req.path.slice(1)));
    if (!asset) return next();
    send(req, res, asset);
  });
  return router;
}

/** `/clients`: a page listing the packages with the line that installs each. */
function clientIndex(clients: Map<string, Asset>): Asset {
  const esc = (s: string) => s.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);
  const files = [...clients.keys()].filter((p) => !p.startsWith("go/")).sort();
  const goZip = [...clients.keys()].find((p) => p.startsWith("go/") && p.endsWith(".zip"));
  const items = files.map((f) => `<li><a href="/clients/${esc(f)}">${esc(f)}</a></li>`);
  if (goZip) items.push(`<li>Go module proxy: <code>GOPROXY=&lt;this server&gt;/clients/go</code> (<a href="/clients/${esc(goZip)}">${esc(goZip)}</a>)</li>`);
  const body = items.length
    ? `<ul>${items.join("")}</ul>`
    : "<p>No client package was built with this server: run <code>npm run docs</code> in its repository.</p>";
  const html = Buffer.from(
    `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Client packages</title></head><body style="font-family:system-ui,sans-serif;max-width:50rem;margin:2rem auto">` +
      `<h1>Client packages of this server</h1>${body}<p>How to install each: <a href="/docs#overview--client-libraries">Client libraries</a>.</p></body></html>`,
  );
  return { type: "text/html; charset=utf-8", identity: html, etag: etagOf(html) };
}
