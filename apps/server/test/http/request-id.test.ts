import { describe, expect, it } from "vitest";
import { newRequestId } from "../../src/http/request-id.js";

describe("newRequestId", () => {
  it("when many ids are made, across several refills of the random pool, then each is req_ + 24 hex digits and none repeats", () => {
    const ids = Array.from({ length: 2000 }, newRequestId);
    for (const id of ids) expect(id).toMatch(/^req_[0-9a-f]{24}$/);
    expect(new Set(ids).size).toBe(ids.length);
  });
});
