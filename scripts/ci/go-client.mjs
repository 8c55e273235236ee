#!/usr/bin/env node
// CI: the README's "Generating a client" commands for Go, verbatim, from the repository root;
// then a small program (go-client/main.go) is built against the generated package with Debian's
// Go and run against a live server: a cursor walk, a filtered list, a 400 read as a problem,
// creating a webhook endpoint and fetching it back. The endpoint it created is checked from our
// side too. Before anything, the bundled generator jar must be the official 7.0.0 jar.
// Needs Java 11+ and Go 1.19+ (Debian: golang-go; .ci/run installs it). No Go module is
// downloaded: the generated client needs only the standard library.
//
//   node scripts/ci/go-client.mjs            (needs the server built: npm run build)
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { readFileSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { runClientCheck, runClientCheckWithAddedFields } from "./client-check.mjs";
import { startLiveServer } from "./live-server.mjs";
import { GO_ENV, OFFICIAL_JAR_SHA256, jarPath } from "./generator.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, "../..");
const started = Date.now();
const log = (msg) => process.stdout.write(`go-client: ${msg}\n`);
const fail = (msg) => {
  process.stderr.write(`go-client: FAILED: ${msg}\n`);
  process.exit(1);
};
const sh = (command, cwd = root) => {
  log(`$ ${command}`);
  const r = spawnSync(command, { cwd, shell: true, stdio: ["ignore", "pipe", "pipe"], encoding: "utf8" });
  if (r.status !== 0) fail(`\`${command}\` exited ${r.status}:\n${(r.stdout + r.stderr).slice(-4000)}`);
  return r.stdout;
};

// 0. The generator is the official jar, byte for byte.
const sha = createHash("sha256").update(readFileSync(jarPath(root))).digest("hex");
if (sha !== OFFICIAL_JAR_SHA256) fail(`${jarPath(root)} has sha256 ${sha}, not the official 7.0.0 jar's ${OFFICIAL_JAR_SHA256}`);
log(`the generator jar is the official 7.0.0 (sha256 ${sha.slice(0, 12)}…)`);

// 1. Exactly the README's commands.
rmSync(join(root, "out/go-client"), { recursive: true, force: true });
sh("npm run docs");
sh("npx openapi-generator-cli generate -i openapi/dist/openapi.public.yaml -g go -o out/go-client --additional-properties packageName=ars,enumClassPrefix=true --git-user-id audit-review --git-repo-id ars-go");
sh("cd out/go-client && GOFLAGS=-mod=mod GOPROXY=off go build ./...");

// 2. A program that uses the package, built the same way.
const binary = join(root, "out/go-client-check");
const build = spawnSync("go", ["build", "-o", binary, "."], { cwd: join(here, "go-client"), env: { ...process.env, ...GO_ENV }, encoding: "utf8" });
if (build.status !== 0) fail(`the check program does not build against the generated package:\n${build.stdout}${build.stderr}`);
log(`built against the generated package with ${spawnSync("go", ["version"], { encoding: "utf8" }).stdout.trim()}`);

// 3. Against a live server (in this process: the binary runs with async spawn).
const server = await startLiveServer();
try {
  await runClientCheck(server, { label: "go-client", cmd: binary });
  await runClientCheckWithAddedFields(server, { label: "go-client", cmd: binary });
  log("a field added to every answer breaks nothing");
  log(`passed in ${((Date.now() - started) / 1000).toFixed(1)} s: generated, built, walked every page, filtered, read a 400 as a problem, created an endpoint and fetched it back`);
} finally {
  await server.close();
}
// a failure above has already exited (fail) or thrown (non-zero exit); the server's handles would keep us alive
process.exit(0);
