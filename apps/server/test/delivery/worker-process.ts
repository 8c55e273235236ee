// `ars worker` in a child process, configured only by environment variables, as an operator runs
// it: for tests that kill a worker (SIGKILL) or run one on a host whose clock is off.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll } from "vitest";
import { RECEIVER_HOST, type DeliveryHarness } from "./support.js";

const MAIN = resolve(import.meta.dirname, "../../src/main.ts");
/** Preloaded to run a process on a host clock `ARS_TEST_HOST_CLOCK_SKEW_MS` off (test/harness/skewed-host-clock.mjs). */
export const SKEWED_HOST_CLOCK = resolve(import.meta.dirname, "../harness/skewed-host-clock.mjs");

export interface WorkerProcess {
  child: ChildProcess;
  output(): string;
  exited: Promise<unknown>;
}

/**
 * `ars worker` processes for this test file: `spawn` starts one and resolves once it reports that
 * it runs; every one still running is killed after the file. (Called at the top of a file: files
 * share this module's instance, so nothing here is module state.)
 */
export function useWorkerProcesses(h: () => DeliveryHarness) {
  const dir = mkdtempSync(join(tmpdir(), "ars-worker-"));
  const children: ChildProcess[] = [];
  afterAll(() => {
    for (const c of children) c.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  });
  return {
    async spawn(env: Record<string, string>, nodeArgs: string[] = []): Promise<WorkerProcess> {
      const harness = h();
      const caFile = join(dir, "ca.pem");
      writeFileSync(caFile, harness.ca.cert);
      const config = harness.server.server.deps.config;
      const child = spawn(process.execPath, [...nodeArgs, "--import", "tsx", MAIN, "worker"], {
        env: {
          ...process.env,
          DATABASE_URL: config.databaseUrl,
          ARS_ENCRYPTION_KEY: config.encryptionKey,
          ARS_STATIC_HOSTS: `${RECEIVER_HOST}=127.0.0.1`,
          ARS_ALLOW_PRIVATE_CIDRS: "127.0.0.1/32",
          ARS_EXTRA_CA_FILE: caFile,
          ARS_LOG_LEVEL: "warn",
          ...env,
        },
      });
      children.push(child);
      let output = "";
      child.stdout!.on("data", (c) => (output += c));
      child.stderr!.on("data", (c) => (output += c));
      const exited = new Promise((done) => child.once("exit", done));
      await new Promise<void>((ready, fail) => {
        child.stdout!.on("data", () => output.includes("delivery worker running") && ready());
        void exited.then(() => fail(new Error(`worker exited before it ran:\n${output}`)));
      });
      return { child, output: () => output, exited };
    },
  };
}
