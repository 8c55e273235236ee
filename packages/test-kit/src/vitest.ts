// The base vitest configuration of every package's tests.
import { availableParallelism } from "node:os";
import { defineConfig, type ViteUserConfig } from "vitest/config";

type TestOptions = NonNullable<ViteUserConfig["test"]>;

export function vitestConfig(test: TestOptions = {}): ViteUserConfig {
  return defineConfig({
    test: {
      include: ["test/**/*.test.ts"],
      pool: "forks",
      // One worker per core: the tests are CPU-bound (PGlite, TLS, the server in process), so
      // more workers only queue behind each other.
      maxWorkers: availableParallelism(),
      testTimeout: 60_000,
      hookTimeout: 120_000,
      reporters: ["default", ["json", { outputFile: "test-results/vitest.json" }]],
      // Every server a test starts (in process or spawned) opens its metrics listener on a free
      // port: on the default port, parallel test files would collide.
      env: { ARS_METRICS_PORT: "0", ...test.env },
      ...test,
    },
  });
}
