#!/usr/bin/env node
// CI: the README's "Generating a client" commands for Python, verbatim, from the repository root;
// then the generated package is imported and used against a live server
// (python_client_check.py: a cursor walk, a filtered list, a 400 as ApiException, creating a
// webhook endpoint), and the endpoint it created is checked from our side.
// Needs Java 11+ and Python 3 with urllib3, python-dateutil, certifi and six (Debian:
// python3-urllib3 python3-dateutil python3-certifi python3-six; .ci/run installs them).
//
//   node scripts/ci/python-client.mjs        (needs the server built: npm run build)
//   PYTHON=/usr/bin/python3 node …           (pick the interpreter)
import { spawnSync } from "node:child_process";
import { rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { runClientCheck, runClientCheckWithAddedFields } from "./client-check.mjs";
import { startLiveServer } from "./live-server.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, "../..");
const python = process.env.PYTHON || "python3";
const log = (msg) => process.stdout.write(`python-client: ${msg}\n`);
const fail = (msg) => {
  process.stderr.write(`python-client: FAILED: ${msg}\n`);
  process.exit(1);
};
const sh = (command) => {
  log(`$ ${command}`);
  const r = spawnSync(command, { cwd: root, shell: true, stdio: ["ignore", "pipe", "pipe"], encoding: "utf8" });
  if (r.status !== 0) fail(`\`${command}\` exited ${r.status}:\n${(r.stdout + r.stderr).slice(-4000)}`);
};

// 1. Exactly the README's commands.
rmSync(join(root, "out/python-client"), { recursive: true, force: true });
sh("npm run docs");
sh("npx openapi-generator generate -i openapi/dist/openapi.public.yaml -g python -o out/python-client --additional-properties packageName=audit_review,projectName=audit-review,packageVersion=0.1.0");

// 2. The package imports.
const clientDir = join(root, "out/python-client");
const env = { ...process.env, PYTHONPATH: [clientDir, process.env.PYTHONPATH].filter(Boolean).join(":"), PYTHONDONTWRITEBYTECODE: "1" };
const imported = spawnSync(python, ["-c", "import audit_review, sys; print(sys.version.split()[0])"], { env, encoding: "utf8" });
if (imported.status !== 0) fail(`the generated package does not import with ${python}:\n${imported.stderr}`);
log(`imports on Python ${imported.stdout.trim()}`);

// 3. Against a live server.
const server = await startLiveServer();
try {
  await runClientCheck(server, { label: "python-client", cmd: python, args: [join(here, "python_client_check.py")], env });
  await runClientCheckWithAddedFields(server, { label: "python-client", cmd: python, args: [join(here, "python_client_check.py")], env });
  log("a field added to every answer breaks nothing");
  log("passed: generated, imported, walked every page, filtered, got ApiException on a 400, created an endpoint");
} finally {
  await server.close();
}
// a failure above has already exited (fail) or thrown (non-zero exit); the server's handles would keep us alive
process.exit(0);
