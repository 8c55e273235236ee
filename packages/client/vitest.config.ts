import { vitestConfig } from "@audit-review/test-kit/vitest";

export default vitestConfig({
  // The type tests (test/types/*.test-d.ts): every @ts-expect-error must be a compile error.
  typecheck: {
    enabled: true,
    include: ["test/types/**/*.test-d.ts"],
    tsconfig: "./tsconfig.test.json",
    // Errors outside the type tests are `npm run typecheck`'s business.
    ignoreSourceErrors: true,
  },
});
