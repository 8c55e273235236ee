// Regenerates everything derived from openapi/openapi.yaml: the public bundle (x-internal
// operations stripped, shaped for other-language generators: public-bundle.mjs) as YAML and
// JSON, and the TypeScript types of both the public and the full (internal-included) contract,
// from the unshaped bundle. `--check` fails when committed types are stale.
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parse, stringify } from "yaml";
import { shapeForGenerators, shapeForDocs } from "./public-bundle.mjs";
import { clientMethodNames, readSampleSource, withCodeSamples } from "./code-samples.mjs";

const pkgDir = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const root = resolve(pkgDir, "../..");
const bin = (name) => join(root, "node_modules/.bin", name);
const check = process.argv.includes("--check");
const env = { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true" };
const run = (cmd, args) => execFileSync(cmd, args, { cwd: root, env, stdio: ["ignore", "pipe", "pipe"] });

const bundleDir = join(root, "openapi/dist");
mkdirSync(bundleDir, { recursive: true });
// openapi-typescript reads redocly.yaml from its cwd; run it from an empty folder so the
// project's multi-API lint config does not apply to type generation.
const cwd = mkdtempSync(join(tmpdir(), "ars-ots-"));
const publicYaml = join(cwd, "openapi.public.yaml");
run(bin("redocly"), ["bundle", "public@v2", "-o", publicYaml]);
// Every public operation gets its code samples (openapi/code-samples.yaml), in the bundle users
// download and in the rendered reference.
const bundled = parse(readFileSync(publicYaml, "utf8"));
const samples = readSampleSource(join(root, "openapi/code-samples.yaml"));
const sampleOptions = { clientMethods: clientMethodNames(join(root, "packages/client/src/client.ts")) };
const shaped = withCodeSamples(shapeForGenerators(bundled), samples, sampleOptions);
writeFileSync(join(bundleDir, "openapi.public.yaml"), stringify(shaped, { lineWidth: 0, aliasDuplicateObjects: false }));
writeFileSync(join(bundleDir, "openapi.public.json"), JSON.stringify(shaped, null, 2) + "\n");
// The rendered reference reads the unshaped contract (exact schemas) with the same samples.
const docsSource = shapeForDocs(withCodeSamples(bundled, samples, sampleOptions), parse(readFileSync(join(root, "openapi/webhooks.yaml"), "utf8")));
writeFileSync(join(bundleDir, "openapi.docs.yaml"), stringify(docsSource, { lineWidth: 0, aliasDuplicateObjects: false }));

const outDir = join(pkgDir, "src/generated");
mkdirSync(outDir, { recursive: true });
const targets = [
  { input: publicYaml, output: join(outDir, "public.ts") },
  { input: join(root, "openapi/openapi.yaml"), output: join(outDir, "full.ts") },
];
let stale = false;
for (const { input, output } of targets) {
  const args = [input, "-o", output, "--root-types", "--root-types-no-schema-prefix", "--alphabetize", "--default-non-nullable", "false"];
  if (check) args.push("--check");
  try {
    execFileSync(bin("openapi-typescript"), args, { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
  } catch (err) {
    if (!check) throw err;
    stale = true;
    process.stderr.write(`${output} is stale: run \`npm run generate\` and commit it.\n`);
  }
}
if (stale) process.exit(1);
