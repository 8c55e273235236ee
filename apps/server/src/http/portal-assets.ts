// The webhook portal's built files (apps/portal: `npm start` and `npm run build` build them),
// read once when the app is built: the page's shell, and its script and stylesheet with the
// brotli and gzip forms the build wrote. No request bundles or compresses anything.
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Request, Response } from "express";

/** apps/portal/dist, found from this file (src/http or dist/http alike). */
export const PORTAL_DIR = process.env.ARS_PORTAL_DIR ?? fileURLToPath(new URL("../../../portal/dist/", import.meta.url));

interface PortalAsset {
  type: string;
  identity: Buffer;
  br?: Buffer;
  gzip?: Buffer;
  etag: string;
}

export interface PortalAssets {
  /** The page's HTML with `{{session}}` where the session's description goes. */
  shell: string;
  /** The stylesheet's path, for the plain pages too. */
  stylesheet: string;
  /** `/portal/assets/<name>` → the file. Names carry a hash of the content: cached for a year. */
  files: Map<string, PortalAsset>;
}

const TYPES: Record<string, string> = { ".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml" };

export function loadPortalAssets(dir: string = PORTAL_DIR): PortalAssets {
  const shellFile = join(dir, "index.html");
  if (!existsSync(shellFile)) throw new Error(`${shellFile} is missing: build the portal with \`npm run build\` (npm start does).`);
  const files = new Map<string, PortalAsset>();
  for (const name of readdirSync(join(dir, "assets"))) {
    const type = TYPES[name.slice(name.lastIndexOf("."))];
    if (!type) continue;
    const identity = readFileSync(join(dir, "assets", name));
    const pre = (ext: string) => (existsSync(join(dir, "assets", `${name}.${ext}`)) ? readFileSync(join(dir, "assets", `${name}.${ext}`)) : undefined);
    files.set(`/portal/assets/${name}`, { type, identity, br: pre("br"), gzip: pre("gz"), etag: `"${createHash("sha256").update(identity).digest("base64url").slice(0, 22)}"` });
  }
  const shell = readFileSync(shellFile, "utf8");
  const stylesheet = /<link rel="stylesheet" href="([^"]+)"/.exec(shell)?.[1];
  if (!stylesheet || !files.has(stylesheet)) throw new Error(`${shellFile} names no stylesheet of ${join(dir, "assets")}: rebuild the portal`);
  return { shell, stylesheet, files };
}

/** Sends a built asset: brotli or gzip when accepted, a strong ETag, 304 when it matches. */
export function sendPortalAsset(req: Request, res: Response, asset: PortalAsset): void {
  res.setHeader("Cache-Control", "public, max-age=31536000, immutable");
  res.setHeader("ETag", asset.etag);
  res.setHeader("Vary", "Accept-Encoding");
  res.setHeader("Cross-Origin-Resource-Policy", "same-origin");
  res.type(asset.type);
  if (req.get("if-none-match")?.split(",").some((t) => t.trim() === asset.etag)) {
    res.status(304).end();
    return;
  }
  const [encoding, body] =
    asset.br && req.acceptsEncodings("br") === "br" ? ["br", asset.br] : asset.gzip && req.acceptsEncodings("gzip") === "gzip" ? ["gzip", asset.gzip] : [undefined, asset.identity];
  if (encoding) res.setHeader("Content-Encoding", encoding);
  res.setHeader("Content-Length", String(body.length));
  res.end(req.method === "HEAD" ? undefined : body);
}
