// Builds the public API reference: bundles (via generate.mjs) and one self-contained HTML page
// that opens offline (Redoc inlined, no CDN).
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { brotliCompressSync, constants, gzipSync } from "node:zlib";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const FAVICON_SVG = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="6" fill="#1f4e8c"/><path d="M9 22l7-13 7 13" fill="none" stroke="#fff" stroke-width="3" stroke-linejoin="round"/></svg>';
const pkgDir = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const root = resolve(pkgDir, "../..");
const env = { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true" };
execFileSync(process.execPath, [join(pkgDir, "scripts/generate.mjs")], { cwd: root, env, stdio: "inherit" });
const output = join(root, "openapi/dist/index.html");
execFileSync(
  join(root, "node_modules/.bin/redocly"),
  // openapi.docs.yaml: the public bundle with its code samples and the webhooks section (generate.mjs).
  ["build-docs", "openapi/dist/openapi.docs.yaml", "--inlineBundle", "--title", "Audit Review Service API v2", "-o", output],
  { cwd: root, env, stdio: ["ignore", "ignore", "inherit"] },
);
// Redoc's bundle still names a few remote resources: the "powered by" logo (an <img> it hides
// when loading fails), icon-set base URLs and a telemetry endpoint. The page must load nothing
// from the network, so each becomes an inert `data:,` URL.
let html = readFileSync(output, "utf8").replace(/https:\/\/(?:cdn\.redoc\.ly|cdn\.redocly\.com|otel\.cloud\.redocly\.com)\/[^`"'\s)]*/g, "data:,");
// Without its remote logo the footer badge would read "API docs by" and nothing: name it in words
// (in the server-rendered markup and in the script that hydrates it, so both agree).
html = replaceOnce(html, "<p>API docs by</p>", "<p>API docs by Redoc</p>");
html = replaceOnce(html, "children:`API docs by`", "children:`API docs by Redoc`");
// An inline icon, so the browser asks the server for no /favicon.ico.
html = replaceOnce(html, "<meta charset=\"utf8\" />", `<meta charset="utf8" /><link rel="icon" href="data:image/svg+xml,${encodeURIComponent(FAVICON_SVG)}">`);
writeFileSync(output, html);

// Compressed once here, never per request: the server sends these to clients that accept them.
for (const file of [output, join(root, "openapi/dist/openapi.public.json"), join(root, "openapi/dist/openapi.public.yaml")]) {
  const raw = readFileSync(file);
  writeFileSync(`${file}.gz`, gzipSync(raw, { level: 9 }));
  writeFileSync(`${file}.br`, brotliCompressSync(raw, { params: { [constants.BROTLI_PARAM_QUALITY]: 9, [constants.BROTLI_PARAM_SIZE_HINT]: raw.length } }));
}

function replaceOnce(text, from, to) {
  const at = text.indexOf(from);
  if (at < 0 || text.indexOf(from, at + 1) >= 0) throw new Error(`build-docs: expected exactly one ${JSON.stringify(from)} in Redoc's page (a Redoc upgrade?)`);
  return text.slice(0, at) + to + text.slice(at + from.length);
}
process.stdout.write(`API reference: ${output}\nPublic bundle: ${join(root, "openapi/dist/openapi.public.{yaml,json}")}\n`);
