// The throttle's rule (domain/delivery/throttle.ts), which the claim statement applies in SQL; the
// statement itself is held to it end to end by test/delivery/throttle.test.ts.
import { describe, expect, it } from "vitest";
import { allowance, maxPerSecond, throttleBurst } from "../../src/domain/delivery/throttle.js";

// epoch microseconds, as the database keeps throttle_next_at
const now = Date.parse("2026-11-26T22:00:00.000Z") * 1000;
const at = (ms: number) => now + ms * 1000;

describe("allowance (a generic cell rate algorithm over throttle_next_at)", () => {
  it("When an endpoint's throttle is idle, Then a claim may take one burst: a tenth of a second's worth, at least one", () => {
    expect(throttleBurst(5)).toBe(1);
    expect(throttleBurst(10)).toBe(1);
    expect(throttleBurst(11)).toBe(2);
    expect(throttleBurst(1000)).toBe(100);
    expect(allowance(5, null, now).allowed).toBe(1);
    expect(allowance(1000, at(-60_000), now).allowed).toBe(100);
    expect(maxPerSecond(5)).toBe(6);
  });

  it("When rows were taken, Then the throttle moves on one step per row and nothing more is allowed until the step is over", () => {
    const first = allowance(5, null, now);
    const next = first.after(1);
    expect(next).toEqual(at(200));
    expect(allowance(5, next, at(199)).allowed).toBe(0);
    expect(allowance(5, next, at(200)).allowed).toBe(1);
  });

  it("When a claim comes less than a step late, Then its row takes the step it was due, so lateness does not slow the pace", () => {
    const due = at(-150);
    const late = allowance(5, due, now);
    expect(late.allowed).toBe(1);
    expect(late.after(1)).toBe(at(50));
    // idle for longer: it starts again one step back, never saving up more than one burst
    const idle = allowance(5, at(-10_000), now);
    expect(idle.allowed).toBe(1);
    expect(idle.after(1)).toBe(now);
  });

  it("When a burst is part used, Then only its rest is allowed, and an idle spell never saves up more than one burst", () => {
    // rate 100: steps of 10 ms, bursts of 10
    const after = allowance(100, null, now).after(4);
    expect(allowance(100, after, now).allowed).toBe(6);
    expect(allowance(100, after, at(20)).allowed).toBe(8);
    expect(allowance(100, after, at(200)).allowed).toBe(10);
    expect(allowance(100, at(-3_600_000), now).allowed).toBe(10);
  });

  it("When rows are taken at the pace allowed for a long time, Then no second holds more than the rate plus one burst", () => {
    for (const rate of [1, 5, 7, 50, 333, 1000]) {
      let nextAt: number | null = null;
      const starts: number[] = [];
      // a claim every millisecond, then for the second half at irregular moments (up to 300 ms
      // apart, a fixed sequence), taking all it may, for five seconds
      let seed = rate;
      const gap = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), 1 + (seed % 300));
      for (let t = 0; t < 5000; t += t < 2500 ? 1 : gap()) {
        const a = allowance(rate, nextAt, at(t));
        for (let i = 0; i < a.allowed; i++) starts.push(t);
        if (a.allowed) nextAt = a.after(a.allowed);
      }
      for (let i = 0, j = 0; i < starts.length; i++) {
        while (j < starts.length && starts[j]! < starts[i]! + 1000) j++;
        expect(j - i, `rate ${rate}`).toBeLessThanOrEqual(maxPerSecond(rate));
      }
      expect(starts.length, `rate ${rate}`).toBeLessThanOrEqual(rate * 5 + throttleBurst(rate));
      expect(starts.length, `rate ${rate}`).toBeGreaterThanOrEqual(rate === 1 ? 3 : rate * 2.5);
    }
  });
});
