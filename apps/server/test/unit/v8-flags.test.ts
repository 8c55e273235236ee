// The start-up log line naming the V8 flags a role applied (README, "Memory"): one line with the
// flags, none when nothing was applied.
import { describe, expect, it } from "vitest";
import { logV8Flags } from "../../src/v8-flags.js";
import { capturedLogger } from "../harness/captured-logger.js";

const parsed = (lines: string[]) => lines.map((l) => JSON.parse(l) as Record<string, unknown>);

describe("the V8 flags' log line", () => {
  it("when flags were applied, then one info line names them; when none were, then nothing is logged", () => {
    const { lines, logger } = capturedLogger();
    logV8Flags(logger, []);
    expect(lines).toEqual([]);
    logV8Flags(logger, ["--heap-growing-percent=30", "--liftoff-only"]);
    expect(lines).toHaveLength(1);
    const [line] = parsed(lines);
    expect(line).toMatchObject({ level: 30, v8_flags: ["--heap-growing-percent=30", "--liftoff-only"] });
    expect(String(line!.msg)).toMatch(/^V8 flags applied/);
  });
});
