import { describe, expect, it } from "vitest";
import { createCountCache } from "../../src/repos/count-cache.js";

/** A count whose duration and result the test controls, on a clock the test moves. */
function harness() {
  let now = 0;
  const calls: Array<{ resolve: (n: number) => void }> = [];
  const cache = createCountCache({ now: () => now, slowMs: 50, freshMs: 5_000, maxAgeMs: 10_000 });
  const count = () => new Promise<number>((resolve) => calls.push({ resolve }));
  return {
    cache,
    calls,
    count,
    advance: (ms: number) => (now += ms),
  };
}

const settle = () => new Promise((r) => setImmediate(r));

describe("count cache", () => {
  it("when identical counts run at once, then they share one query", async () => {
    const h = harness();
    const a = h.cache.get("k", h.count);
    const b = h.cache.get("k", h.count);
    expect(h.calls).toHaveLength(1);
    h.calls[0]!.resolve(7);
    expect(await Promise.all([a, b])).toEqual([7, 7]);
  });

  it("when a count is fast, then it is not kept: the next request counts again", async () => {
    const h = harness();
    const a = h.cache.get("k", h.count);
    h.advance(10);
    h.calls[0]!.resolve(1);
    await a;
    const b = h.cache.get("k", h.count);
    expect(h.calls).toHaveLength(2);
    h.calls[1]!.resolve(2);
    expect(await b).toBe(2);
  });

  it("when a slow count is under 5 s old, then it is served without a query; up to 10 s old with one background refresh", async () => {
    const h = harness();
    const first = h.cache.get("k", h.count);
    h.advance(500);
    h.calls[0]!.resolve(1_000_000);
    expect(await first).toBe(1_000_000);

    h.advance(4_000); // 4.5 s after the count started
    expect(await h.cache.get("k", h.count)).toBe(1_000_000);
    expect(h.calls).toHaveLength(1);

    h.advance(1_000); // 5.5 s: stale, served, one refresh starts
    expect(await h.cache.get("k", h.count)).toBe(1_000_000);
    expect(await h.cache.get("k", h.count)).toBe(1_000_000);
    expect(h.calls).toHaveLength(2);

    h.advance(600);
    h.calls[1]!.resolve(1_000_005);
    await settle();
    expect(await h.cache.get("k", h.count)).toBe(1_000_005);
    expect(h.calls).toHaveLength(2);
  });

  it("when a kept count is 10 s old, then the request waits for a new count", async () => {
    const h = harness();
    const first = h.cache.get("k", h.count);
    h.advance(100);
    h.calls[0]!.resolve(5);
    await first;
    h.advance(10_000);
    const next = h.cache.get("k", h.count);
    expect(h.calls).toHaveLength(2);
    h.calls[1]!.resolve(6);
    expect(await next).toBe(6);
  });

  it("when filters differ, then their counts are kept apart", async () => {
    const h = harness();
    const a = h.cache.get("org\nstatus=failed", h.count);
    const b = h.cache.get("org\nstatus=completed", h.count);
    expect(h.calls).toHaveLength(2);
    h.advance(100);
    h.calls[0]!.resolve(1);
    h.calls[1]!.resolve(2);
    expect(await Promise.all([a, b])).toEqual([1, 2]);
  });

  it("when a count fails, then every waiter sees the failure and the next request counts again", async () => {
    const cache = createCountCache();
    const failing = () => Promise.reject(new Error("boom"));
    await expect(Promise.all([cache.get("k", failing), cache.get("k", failing)])).rejects.toThrow("boom");
    expect(await cache.get("k", () => Promise.resolve(3))).toBe(3);
  });
});
