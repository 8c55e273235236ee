import { configDefaults } from "vitest/config";
import { vitestConfig } from "@audit-review/test-kit/vitest";

// Files whose assertions measure time against a bound the contract sets, run after every other
// file, on a machine the rest of the suite no longer loads. The throttle test counts deliveries
// per second at the receiver against the contract's `rate_limit` plus a tenth
// (docs/delivery.md#rate-limits): beside the heaviest files (ordered delivery's worker processes,
// the contract fuzz) on two cores, senders starved of CPU for a step (200 ms) deliver one
// delivery late into the next second, and the receiver counted 7.
const ALONE = ["test/delivery/throttle.test.ts"];

export default vitestConfig({
  // Files share a worker's module cache: each one still starts its own server and database,
  // but Prisma's client, Express and the validator are loaded once per worker, not per file.
  isolate: false,
  // each project names its own files (a project's arrays are added to these)
  include: [],
  projects: [
    { extends: true, test: { name: "server", include: ["test/**/*.test.ts"], exclude: [...configDefaults.exclude, ...ALONE], sequence: { groupOrder: 0 } } },
    { extends: true, test: { name: "server-alone", include: ALONE, sequence: { groupOrder: 1 } } },
  ],
});
