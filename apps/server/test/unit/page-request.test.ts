import { describe, expect, it } from "vitest";
import { pageRequest } from "../../src/http/pagination.js";
import { ValidationError } from "../../src/lib/errors.js";

describe("pageRequest", () => {
  it.each([[Infinity], [-Infinity], [Number.NaN], [0], [101], [2.5], ["1e400"], ["abc"]])("when limit is %s, then it names limit instead of reaching the database", (limit) => {
    expect(() => pageRequest({ limit: limit as number })).toThrow(ValidationError);
  });

  it("when limit is absent or within 1..100, then it is used", () => {
    expect(pageRequest({}).limit).toBe(10);
    expect(pageRequest({ limit: 1 }).limit).toBe(1);
    expect(pageRequest({ limit: "100" }).limit).toBe(100);
  });
});
