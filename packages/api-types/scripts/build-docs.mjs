// Builds the public API reference: bundles (via generate.mjs) and one self-contained HTML page
// that opens offline: RapiDoc (MIT, pinned; its single-file build inlined, no CDN, no web fonts)
// renders the contract in the browser, with the code samples in tabs and a console ("Try") that
// sends real requests to the server that serves the page. The token pasted there stays in the
// page's memory (`persist-auth="false"`, RapiDoc's default: nothing in localStorage or cookies).
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { brotliCompressSync, constants, gzipSync } from "node:zlib";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parse } from "yaml";

const FAVICON_SVG = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="6" fill="#1f4e8c"/><path d="M9 22l7-13 7 13" fill="none" stroke="#fff" stroke-width="3" stroke-linejoin="round"/></svg>';
const pkgDir = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const root = resolve(pkgDir, "../..");
const require = createRequire(import.meta.url);
const env = { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true" };
execFileSync(process.execPath, [join(pkgDir, "scripts/generate.mjs")], { cwd: root, env, stdio: "inherit" });
const output = join(root, "openapi/dist/index.html");

// openapi.docs.yaml: the public bundle with its code samples and the webhooks section (generate.mjs).
const spec = parse(readFileSync(join(root, "openapi/dist/openapi.docs.yaml"), "utf8"));
// RapiDoc's bundle carries the @font-face rules of its default web font (Open Sans from a font
// CDN), used unless `load-fonts="false"`; the page asks for system fonts, and those URLs become
// inert `data:,` so that nothing in the page names a remote resource at all.
const FONT_CDN = /https:\/\/fonts\.(?:gstatic|googleapis)\.com\/[^)"'`\s]*/g;
const bundled = readFileSync(require.resolve("rapidoc/dist/rapidoc-min.js"), "utf8");
if ((bundled.match(FONT_CDN) ?? []).length === 0) throw new Error("build-docs: rapidoc-min.js names no font CDN any more (an upgrade?): review the rewrite below");
const rapidoc = bundled.replace(FONT_CDN, "data:,");
if (/<\/script/i.test(rapidoc)) throw new Error("build-docs: rapidoc-min.js contains </script> (an upgrade?): it cannot be inlined as is");

// Every attribute is RapiDoc's (https://rapidocweb.com/api.html). System fonts: RapiDoc's default
// loads Open Sans from a font CDN, and the page must load nothing from the network.
const attributes = {
  id: "docs",
  "render-style": "focused",
  theme: "light",
  "primary-color": "#1f4e8c",
  "nav-bg-color": "#f6f8fa",
  "nav-text-color": "#1b2733",
  "regular-font": "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif",
  "mono-font": "ui-monospace, SFMono-Regular, Menlo, Consolas, 'Liberation Mono', monospace",
  "load-fonts": "false",
  "show-header": "false",
  "allow-spec-url-load": "false",
  "allow-spec-file-load": "false",
  "allow-search": "true",
  "allow-advanced-search": "false",
  "allow-try": "true",
  "allow-authentication": "true",
  "persist-auth": "false",
  "allow-server-selection": "true",
  "fill-request-fields-with-example": "false",
  "show-curl-before-try": "true",
  "info-description-headings-in-navbar": "true",
  "show-method-in-nav-bar": "as-colored-text",
  "use-path-in-nav-bar": "false",
  "schema-style": "table",
  "schema-description-expanded": "true",
  "default-schema-tab": "schema",
  "sort-endpoints-by": "none",
  "update-route": "true",
  "route-prefix": "#",
};
const attr = Object.entries(attributes).map(([k, v]) => `${k}="${v.replace(/"/g, "&quot;")}"`).join(" ");
// The contract as data, not script: `<` escaped so no string in it can end the element.
const contract = JSON.stringify(spec).replace(/</g, "\\u003c");
const html = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Audit Review Service API v2</title>
<link rel="icon" href="data:image/svg+xml,${encodeURIComponent(FAVICON_SVG)}">
<style>
html, body { margin: 0; height: 100%; }
rapi-doc { width: 100%; height: 100%; }
</style>
</head>
<body>
<rapi-doc ${attr}>
<div slot="nav-logo" style="display:flex;align-items:center;gap:8px;padding:12px 16px 4px;font:600 15px system-ui,sans-serif;color:#1b2733"><img alt="" width="24" height="24" src="data:image/svg+xml,${encodeURIComponent(FAVICON_SVG)}">Audit Review Service API</div>
</rapi-doc>
<script id="ars-contract" type="application/json">${contract}</script>
<script>${rapidoc}</script>
<script>
document.getElementById("docs").loadSpec(JSON.parse(document.getElementById("ars-contract").textContent));
</script>
</body>
</html>
`;
writeFileSync(output, html);

// Compressed once here, never per request: the server sends these to clients that accept them.
for (const file of [output, join(root, "openapi/dist/openapi.public.json"), join(root, "openapi/dist/openapi.public.yaml")]) {
  const raw = readFileSync(file);
  writeFileSync(`${file}.gz`, gzipSync(raw, { level: 9 }));
  writeFileSync(`${file}.br`, brotliCompressSync(raw, { params: { [constants.BROTLI_PARAM_QUALITY]: 9, [constants.BROTLI_PARAM_SIZE_HINT]: raw.length } }));
}
process.stdout.write(`API reference: ${output}\nPublic bundle: ${join(root, "openapi/dist/openapi.public.{yaml,json}")}\n`);
