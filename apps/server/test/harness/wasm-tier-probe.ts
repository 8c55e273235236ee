// Run in a child process with --allow-natives-syntax (test/unit/wasm-tiering.test.ts): applies
// the tiering for the database named in argv (or starts `serve`/`worker` on a PostgreSQL that
// refuses connections: the flag must be set before the database is opened), runs a hot
// WebAssembly loop and prints the tier its code ended at.
import { startServer } from "../../src/server.js";
import { applyWasmTiering } from "../../src/wasm-tiering.js";
import { startWorker } from "../../src/worker.js";

const mode = process.argv[2];
let applied: string[] = [];
if (mode === "serve" || mode === "worker") {
  const refused = { databaseUrl: "postgresql://postgres@127.0.0.1:1/none", logLevel: "silent" as const };
  const started = mode === "serve" ? startServer({ ...refused, port: 0 }) : startWorker(refused);
  await started.then(
    () => {
      throw new Error("started on a database that refuses connections");
    },
    () => undefined,
  );
} else {
  applied = applyWasmTiering(mode === "postgres" ? "postgres" : "pglite");
}

// (func (export "sum") (param i32) (result i32): adds n + (n-1) + … + 1 in a loop
// prettier-ignore
const bytes = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
  0x01, 0x06, 0x01, 0x60, 0x01, 0x7f, 0x01, 0x7f,
  0x03, 0x02, 0x01, 0x00,
  0x07, 0x07, 0x01, 0x03, 0x73, 0x75, 0x6d, 0x00, 0x00,
  0x0a, 0x1b, 0x01, 0x19, 0x01, 0x01, 0x7f, 0x03, 0x40, 0x20, 0x01, 0x20, 0x00, 0x6a, 0x21, 0x01,
  0x20, 0x00, 0x41, 0x01, 0x6b, 0x22, 0x00, 0x0d, 0x00, 0x0b, 0x20, 0x01, 0x0b,
]);
// the test project's type libraries declare no WebAssembly value; Node has it
const wasm = (globalThis as unknown as { WebAssembly: { instantiate(b: Uint8Array): Promise<{ instance: { exports: Record<string, unknown> } }> } }).WebAssembly;
const { instance } = await wasm.instantiate(bytes);
const sum = instance.exports.sum as (n: number) => number;
// natives syntax is only parsed in code compiled at run time
const isTurboFan = new Function("f", "return %IsTurboFanFunction(f)") as (f: unknown) => boolean;
const deadline = Date.now() + 3_000;
let result = 0;
while (!isTurboFan(sum) && Date.now() < deadline) {
  result = sum(100_000);
  // the optimizing compiler works on a background thread: let it finish
  await new Promise((resolve) => setTimeout(resolve, 5));
}
process.stdout.write(JSON.stringify({ applied, turbofan: isTurboFan(sum), result }));
