// One closing line for a test run: `N passed, N failed`, summed over every package's vitest JSON
// report. `npm test` prints it after turbo's per-package output; `.ci/run` prints it over both
// database runs. Exits 1 when anything failed or nothing ran.
//   node scripts/test-summary.mjs --clear     remove the reports of an earlier run
//   node scripts/test-summary.mjs [dir]       sum the reports in the packages, or in dir
import { existsSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";

const root = join(import.meta.dirname, "..");
const packageReports = () =>
  ["packages", "apps"].flatMap((group) =>
    readdirSync(join(root, group))
      .map((name) => join(root, group, name, "test-results", "vitest.json"))
      .filter((file) => existsSync(file)),
  );

const arg = process.argv[2];
if (arg === "--clear") {
  for (const file of packageReports()) rmSync(file);
  process.exit(0);
}
const files = arg ? readdirSync(arg).map((name) => join(arg, name)) : packageReports();
let passed = 0;
let failed = 0;
// named again at the end, so a log read from its tail says which test failed and why
const failures = [];
const firstLine = (text) => String(text ?? "").split("\n").find((line) => line.trim() !== "")?.slice(0, 300) ?? "";
for (const file of files) {
  const report = JSON.parse(readFileSync(file, "utf8"));
  const run = file.split("/").at(-1).split("-")[0];
  passed += report.numPassedTests;
  failed += report.numFailedTests;
  for (const result of report.testResults) {
    const where = result.name.replace(`${root}/`, "");
    const failedTests = result.assertionResults.filter((a) => a.status === "failed");
    for (const test of failedTests) failures.push(`${arg ? `[${run}] ` : ""}${where} > ${test.fullName}\n    ${firstLine(test.failureMessages?.[0])}`);
    // a file that failed to load, or failed in a hook, has no failed test of its own: count it once
    if (result.status === "failed" && failedTests.length === 0) {
      failed += 1;
      failures.push(`${arg ? `[${run}] ` : ""}${where} (the file, outside any test)\n    ${firstLine(result.message)}`);
    }
  }
}
if (failures.length > 0) console.log(`\nfailed:\n${failures.map((f) => `  ${f}`).join("\n")}`);
console.log(`\n${passed} passed, ${failed} failed`);
process.exit(failed > 0 || passed === 0 ? 1 : 0);
