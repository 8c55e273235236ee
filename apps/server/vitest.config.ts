import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    pool: "forks",
    // Files share a worker's module cache: each one still starts its own server and database,
    // but Prisma's client, Express and the validator are loaded once per worker, not per file.
    isolate: false,
    testTimeout: 60_000,
    hookTimeout: 120_000,
    reporters: ["default", ["json", { outputFile: "test-results/vitest.json" }]],
  },
});
