import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { brotliDecompressSync, gunzipSync } from "node:zlib";
import { Router, type Request, type Response } from "express";

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
  /** First path segments of the page's own links (`/section/…`, `/question-sets`, …). */
  pageRoutes: Set<string>;
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
  const pageRoutes = new Set<string>();
  for (const m of page.identity.toString("utf8").matchAll(/href="\/([a-z0-9-]+)(?:[/"])/g)) pageRoutes.add(m[1]!);
  return {
    page,
    json: read("openapi.public.json", "application/json; charset=utf-8"),
    yaml: read("openapi.public.yaml", "application/yaml; charset=utf-8"),
    favicon: { type: "image/svg+xml", identity: FAVICON, etag: etagOf(FAVICON) },
    pageRoutes,
  };
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
 * What a browser asks of the docs besides the documented GETs, answered before authentication:
 * HEAD of the page and the contract, /favicon.ico, and the page's own links opened in a new tab
 * or copied. The page routes in the browser's history (`/docs#/section/webhooks`) but writes its
 * links as paths at the root (`/section/webhooks`, `/question-sets/…`); those paths redirect to
 * the page at that place.
 */
export function docsBrowserRoutes(assets: DocsAssets): Router {
  const router = Router({ caseSensitive: true, strict: false });
  router.head("/docs", (req, res) => send(req, res, assets.page));
  router.head("/openapi.json", (req, res) => send(req, res, assets.json));
  router.head("/openapi.yaml", (req, res) => send(req, res, assets.yaml));
  router.get("/favicon.ico", (req, res) => send(req, res, assets.favicon));
  router.head("/favicon.ico", (req, res) => send(req, res, assets.favicon));
  router.use((req, res, next) => {
    if (req.method !== "GET" && req.method !== "HEAD") return next();
    const first = /^\/([a-z0-9-]+)(?:\/[A-Za-z0-9._~-]*)*$/.exec(req.path);
    if (!first || !assets.pageRoutes.has(first[1]!)) return next();
    res.redirect(302, `/docs#${req.path}`);
  });
  return router;
}
