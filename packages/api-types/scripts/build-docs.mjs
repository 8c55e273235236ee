// Builds the public API reference: bundles (via generate.mjs) and one self-contained HTML page
// that opens offline (Redoc inlined, no CDN).
import { execFileSync } from "node:child_process";
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
process.stdout.write(`API reference: ${output}\nPublic bundle: ${join(root, "openapi/dist/openapi.public.{yaml,json}")}\n`);
