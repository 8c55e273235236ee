import { describe, expect, it } from "vitest";
import { adjustableClock, every } from "../../src/delivery/clock.js";

describe("adjustableClock", () => {
  it("When time is advanced, Then now() moves and the timers that fell due fire in due order, the rest later", () => {
    const clock = adjustableClock();
    const fired: string[] = [];
    const t0 = clock.now().getTime();
    clock.setTimeout(() => fired.push("b"), 20_000);
    clock.setTimeout(() => fired.push("a"), 10_000);
    const c = clock.setTimeout(() => fired.push("c"), 30_000);
    clock.advance(25_000);
    expect(fired).toEqual(["a", "b"]);
    expect(clock.now().getTime() - t0).toBeGreaterThanOrEqual(25_000);
    c.cancel();
    clock.advance(10_000);
    expect(fired).toEqual(["a", "b"]);
  });

  it("When every() runs on it, Then each advance past a period fires it once more", () => {
    const clock = adjustableClock();
    let n = 0;
    const h = every(clock, 1_000, () => n++);
    clock.advance(1_000);
    clock.advance(1_000);
    expect(n).toBe(2);
    h.cancel();
    clock.advance(5_000);
    expect(n).toBe(2);
  });
});
