// The start-up log line naming the V8 flags a role applied (README, "Memory"): one line with the
// flags, none when nothing was applied.
import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/lib/logger.js";
import { logV8Flags } from "../../src/v8-flags.js";

function captured() {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(JSON.parse(chunk.toString("utf8")) as Record<string, unknown>);
      done();
    },
  });
  return { lines, logger: createLogger({ level: "info", destination }) };
}

describe("the V8 flags' log line", () => {
  it("when flags were applied, then one info line names them; when none were, then nothing is logged", () => {
    const { lines, logger } = captured();
    logV8Flags(logger, []);
    expect(lines).toEqual([]);
    logV8Flags(logger, ["--heap-growing-percent=30", "--liftoff-only"]);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 30, v8_flags: ["--heap-growing-percent=30", "--liftoff-only"] });
    expect(String(lines[0]!.msg)).toMatch(/^V8 flags applied/);
  });
});
