// Builds the public API reference: bundles (via generate.mjs) and one self-contained HTML page
// that opens offline (Redoc inlined, no CDN).
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const pkgDir = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const root = resolve(pkgDir, "../..");
const env = { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true" };
execFileSync(process.execPath, [join(pkgDir, "scripts/generate.mjs")], { cwd: root, env, stdio: "inherit" });
const output = join(root, "openapi/dist/index.html");
execFileSync(
  join(root, "node_modules/.bin/redocly"),
  ["build-docs", "public@v2", "--inlineBundle", "--title", "Audit Review Service API v2", "-o", output],
  { cwd: root, env, stdio: ["ignore", "ignore", "inherit"] },
);
// Redoc's bundle still names a few remote resources: the "powered by" logo (an <img> it hides
// when loading fails), icon-set base URLs and a telemetry endpoint. The page must load nothing
// from the network, so each becomes an inert `data:,` URL.
const html = readFileSync(output, "utf8").replace(/https:\/\/(?:cdn\.redoc\.ly|cdn\.redocly\.com|otel\.cloud\.redocly\.com)\/[^`"'\s)]*/g, "data:,");
writeFileSync(output, html);
process.stdout.write(`API reference: ${output}\nPublic bundle: ${join(root, "openapi/dist/openapi.public.{yaml,json}")}\n`);
