// Builds the webhook portal into dist/ with esbuild, offline: one script (Preact, the page and
// @audit-review/client bundled and minified) and one stylesheet (Pico CSS and the portal's own),
// each named by a hash of its content (the server caches them for a year), each also written
// brotli- and gzip-compressed (the server never compresses per request), and the page's shell,
// index.html, naming both. Prints the compressed sizes (the page must stay under 200 KB).
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { brotliCompressSync, constants, gzipSync } from "node:zlib";
import { build } from "esbuild";

const pkg = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const dist = join(pkg, "dist");
const BUDGET_BYTES = 200 * 1024;

const result = await build({
  absWorkingDir: pkg,
  entryPoints: { portal: "src/main.tsx", style: "src/styles.css" },
  bundle: true,
  minify: true,
  format: "esm",
  target: ["es2022", "chrome111", "firefox113", "safari16.4"],
  jsx: "automatic",
  jsxImportSource: "preact",
  // the stylesheet's icons (form controls) stay inline as data: URLs, which the CSP allows for images
  loader: { ".svg": "dataurl" },
  legalComments: "none",
  write: false,
  outdir: "out",
  logLevel: "warning",
});

rmSync(dist, { recursive: true, force: true });
mkdirSync(join(dist, "assets"), { recursive: true });
const names = {};
let compressed = 0;
for (const file of result.outputFiles) {
  const ext = file.path.endsWith(".css") ? "css" : "js";
  const bytes = Buffer.from(file.contents);
  const name = `portal-${createHash("sha256").update(bytes).digest("hex").slice(0, 12)}.${ext}`;
  names[ext] = `/portal/assets/${name}`;
  const br = brotliCompressSync(bytes, { params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: bytes.length } });
  writeFileSync(join(dist, "assets", name), bytes);
  writeFileSync(join(dist, "assets", `${name}.br`), br);
  writeFileSync(join(dist, "assets", `${name}.gz`), gzipSync(bytes, { level: 9 }));
  compressed += br.length;
  process.stdout.write(`portal: ${name} ${(bytes.length / 1024).toFixed(1)} KiB, ${(br.length / 1024).toFixed(1)} KiB brotli\n`);
}
const shell = readFileSync(join(pkg, "src/index.html"), "utf8").replace("%STYLESHEET%", names.css).replace("%SCRIPT%", names.js);
writeFileSync(join(dist, "index.html"), shell);
compressed += brotliCompressSync(Buffer.from(shell)).length;
process.stdout.write(`portal: page total ${(compressed / 1024).toFixed(1)} KiB brotli (budget ${BUDGET_BYTES / 1024} KiB)\n`);
if (compressed > BUDGET_BYTES) {
  process.stderr.write("portal: the page is over its 200 KB budget\n");
  process.exit(1);
}
