import { vitestConfig } from "@audit-review/test-kit/vitest";

export default vitestConfig();
