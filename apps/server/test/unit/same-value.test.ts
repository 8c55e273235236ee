import { describe, expect, it } from "vitest";
import { sameValue } from "../../src/lib/same-value.js";

describe("sameValue", () => {
  it("when objects differ only in key order (as JSONB returns them), then they are the same", () => {
    expect(sameValue({ b: 1, a: [{ y: null, x: "s" }] }, { a: [{ x: "s", y: null }], b: 1 })).toBe(true);
  });

  it.each([
    [{ a: 1 }, { a: 2 }],
    [{ a: 1 }, { a: 1, b: 2 }],
    [[1, 2], [2, 1]],
    [[1], { 0: 1 }],
    [null, {}],
    [0, false],
    [new Date(0), new Date(1)],
    [new Date(0), 0],
  ])("when %j and %j differ, then they are not the same", (a, b) => {
    expect(sameValue(a, b)).toBe(false);
  });

  it("when dates name the same instant, then they are the same; an undefined key counts as absent", () => {
    expect(sameValue(new Date("2026-11-20T00:00:00.000Z"), new Date(Date.UTC(2026, 10, 20)))).toBe(true);
    expect(sameValue({ a: 1, b: undefined }, { a: 1 })).toBe(true);
  });
});
