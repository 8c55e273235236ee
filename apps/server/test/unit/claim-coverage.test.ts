// When a finished attempt starts a claim of its own (src/delivery/claim-coverage.ts): only when
// the claims may have left due rows behind that a freed slot could take.
import { describe, expect, it } from "vitest";
import { mayLeaveRows, type ClaimCoverage } from "../../src/delivery/claim-coverage.js";
import type { Claim } from "../../src/repos/deliveries-queue.repo.js";

type Ep = { rate_limit: number | null; delivery_order: "unordered" | "ordered" };
const claimOf = (rows: string[], endpoints: Record<string, Partial<Ep>> = {}, heldBack = 0) =>
  ({
    rows: rows.map((endpoint_id) => ({ endpoint_id })),
    endpoints: new Map(Object.entries(endpoints).map(([id, e]) => [id, { rate_limit: null, delivery_order: "unordered", ...e }])),
    throttle: { heldBack, waitMs: null },
  }) as unknown as Pick<Claim, "rows" | "endpoints" | "throttle">;
const coverage = (c: Partial<ClaimCoverage> = {}): ClaimCoverage => ({ limit: 10, perEndpoint: 3, room: new Map(), skippedUntilSent: false, ...c });

describe("a claim that took every due row it could see", () => {
  it("When it took fewer rows of each endpoint than it had room for, Then nothing was left behind", () => {
    expect(mayLeaveRows(claimOf(["a", "a", "b"], { a: {}, b: {} }), coverage())).toBe(false);
    expect(mayLeaveRows(claimOf([]), coverage())).toBe(false);
    expect(mayLeaveRows(claimOf(["a"], { a: {} }), coverage({ room: new Map([["a", 2]]) }))).toBe(false);
  });
});

describe("a claim that may have stopped short", () => {
  it.each([
    ["took as many rows as it could", claimOf(["a", "b", "c"], { a: {}, b: {}, c: {} }), coverage({ limit: 3 })],
    ["took an endpoint's whole room", claimOf(["a", "a", "a"], { a: {} }), coverage()],
    ["took what room was left of an endpoint it holds rows of", claimOf(["a"], { a: {} }), coverage({ room: new Map([["a", 1]]) })],
    ["skipped an endpoint whose rows fill its share", claimOf([]), coverage({ room: new Map([["a", 0]]) })],
    ["skipped rate-limited endpoints with rows waiting here", claimOf([]), coverage({ skippedUntilSent: true })],
    ["took an ordered endpoint's head", claimOf(["a"], { a: { delivery_order: "ordered" } }), coverage()],
    ["took rows of a rate-limited endpoint", claimOf(["a"], { a: { rate_limit: 5 } }), coverage()],
    ["left rows to a throttle", claimOf([], {}, 1), coverage()],
  ])("When it %s, Then a freed slot claims again", (_what, claim, c) => {
    expect(mayLeaveRows(claim, c)).toBe(true);
  });
});
