// A process on PostgreSQL keeps its WebAssembly (Prisma's query compiler, undici's parser) on the
// baseline compiler; on the embedded database PGlite keeps V8's tiering; a flag the operator
// gives Node wins. Each case runs in its own process: the flag is process-wide.
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";

const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx/package.json").replace(/package\.json$/, "dist/loader.mjs")).href;
const probe = fileURLToPath(new URL("../harness/wasm-tier-probe.ts", import.meta.url));

async function tierAfterHotLoop(database: string, nodeFlags: string[] = []): Promise<{ applied: string[]; turbofan: boolean; result: number }> {
  const child = spawn(process.execPath, [...nodeFlags, "--allow-natives-syntax", "--import", tsx, probe, database], { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (out += chunk));
  const code = await new Promise((resolve) => child.once("exit", resolve));
  expect(code).toBe(0);
  return JSON.parse(out);
}

describe("WebAssembly tiering by database", () => {
  it("on PostgreSQL a hot WebAssembly loop stays on the baseline compiler", async () => {
    const r = await tierAfterHotLoop("postgres");
    expect(r).toEqual({ applied: ["--liftoff-only"], turbofan: false, result: 705082704 });
  }, 30_000);

  it("on the embedded database the same loop is optimized (PGlite is WebAssembly and runs every query)", async () => {
    const r = await tierAfterHotLoop("pglite");
    expect(r).toEqual({ applied: [], turbofan: true, result: 705082704 });
  }, 30_000);

  it("serve and worker on PostgreSQL set it before they open the database", async () => {
    for (const role of ["serve", "worker"]) {
      expect(await tierAfterHotLoop(role), role).toEqual({ applied: [], turbofan: false, result: 705082704 });
    }
  }, 30_000);

  it("a tiering flag given to Node wins", async () => {
    const r = await tierAfterHotLoop("postgres", ["--no-liftoff-only"]);
    expect(r).toEqual({ applied: [], turbofan: true, result: 705082704 });
  }, 30_000);
});
