#!/usr/bin/env node
// CI: the README's Java and C# commands, verbatim. Both clients are generated, and the generator's
// output is checked to be there; neither is compiled here: their builds need Maven Central and
// NuGet, which these machines cannot reach (the README says so).
//
//   node scripts/ci/java-csharp-generate.mjs   (after npm run docs)
import { spawnSync } from "node:child_process";
import { existsSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const started = Date.now();
const log = (msg) => process.stdout.write(`java-csharp: ${msg}\n`);
const fail = (msg) => {
  process.stderr.write(`java-csharp: FAILED: ${msg}\n`);
  process.exit(1);
};
const commands = [
  ["npx openapi-generator-cli generate -i openapi/dist/openapi.public.yaml -g java -o out/java-client --additional-properties library=native", "out/java-client/pom.xml", "out/java-client/src/main/java/org/openapitools/client/api/WebhookEndpointsApi.java"],
  ["npx openapi-generator-cli generate -i openapi/dist/openapi.public.yaml -g csharp -o out/csharp-client --additional-properties packageName=AuditReview.Client", "out/csharp-client/AuditReview.Client.sln", "out/csharp-client/src/AuditReview.Client/Api/WebhookEndpointsApi.cs"],
];
if (!existsSync(join(root, "openapi/dist/openapi.public.yaml"))) fail("openapi/dist/openapi.public.yaml is missing: run npm run docs");
for (const [command, ...expected] of commands) {
  rmSync(join(root, command.split(" -o ")[1].split(" ")[0]), { recursive: true, force: true });
  log(`$ ${command}`);
  const r = spawnSync(command, { cwd: root, shell: true, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  if (r.status !== 0) fail(`exited ${r.status}:\n${(r.stdout + r.stderr).slice(-4000)}`);
  for (const file of expected) if (!existsSync(join(root, file))) fail(`${file} was not generated`);
}
log(`passed in ${((Date.now() - started) / 1000).toFixed(1)} s: both generated (not compiled: Maven Central and NuGet are out of reach)`);
