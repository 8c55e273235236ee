import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    pool: "forks",
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // The type tests (test/types/*.test-d.ts): every @ts-expect-error must be a compile error.
    typecheck: {
      enabled: true,
      include: ["test/types/**/*.test-d.ts"],
      tsconfig: "./tsconfig.test.json",
      // Errors outside the type tests are `npm run typecheck`'s business.
      ignoreSourceErrors: true,
    },
    reporters: ["default", ["json", { outputFile: "test-results/vitest.json" }]],
  },
});
