import { vitestConfig } from "@audit-review/test-kit/vitest";

export default vitestConfig({
  // Files share a worker's module cache: each one still starts its own server and database,
  // but Prisma's client, Express and the validator are loaded once per worker, not per file.
  isolate: false,
});
