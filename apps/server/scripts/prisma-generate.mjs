#!/usr/bin/env node
// Generates the Prisma client (prisma-client generator) into src/generated/prisma/.
//
// Why a script instead of a bare `prisma generate`:
// - prisma insists on locating the schema-engine binary even though generate never runs it, and
//   the binary cannot be downloaded here; any existing file satisfies the lookup.
// - the CLI is chatty and takes ~2 s; a stamp of the inputs lets repeated runs (turbo, watch
//   loops, every test run) skip the work, and output is shown only when something fails.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const serverDir = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const schemaPath = resolve(serverDir, "../../prisma/schema.prisma");
const outputDir = join(serverDir, "src/generated/prisma");
const stampPath = join(outputDir, ".inputs.sha256");

const require = createRequire(import.meta.url);
const prismaPackageJson = require.resolve("prisma/package.json");
const prismaCli = join(dirname(prismaPackageJson), "build/index.js");
const prismaVersion = JSON.parse(readFileSync(prismaPackageJson, "utf8")).version;
const clientVersion = JSON.parse(readFileSync(require.resolve("@prisma/client/package.json"), "utf8")).version;

const inputsHash = createHash("sha256")
  .update(readFileSync(schemaPath))
  .update(`\0prisma@${prismaVersion}\0@prisma/client@${clientVersion}`)
  .digest("hex");

const force = process.argv.includes("--force");
const upToDate =
  !force &&
  existsSync(join(outputDir, "client.ts")) &&
  existsSync(stampPath) &&
  readFileSync(stampPath, "utf8").trim() === inputsHash;

if (!upToDate) {
  const result = spawnSync(
    process.execPath,
    [prismaCli, "generate", "--schema", schemaPath, "--no-hints"],
    {
      cwd: serverDir,
      encoding: "utf8",
      env: {
        ...process.env,
        PRISMA_SCHEMA_ENGINE_BINARY: process.env.PRISMA_SCHEMA_ENGINE_BINARY || process.execPath,
        CHECKPOINT_DISABLE: "1",
        PRISMA_HIDE_UPDATE_MESSAGE: "1",
      },
    },
  );
  if (result.status !== 0) {
    process.stderr.write(result.stdout ?? "");
    process.stderr.write(result.stderr ?? "");
    if (result.error) process.stderr.write(`${result.error.message}\n`);
    process.exit(result.status ?? 1);
  }
  writeFileSync(stampPath, `${inputsHash}\n`);
  process.stdout.write(`prisma client generated (prisma ${prismaVersion})\n`);
}
