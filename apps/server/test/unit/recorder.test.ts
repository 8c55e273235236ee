import { describe, expect, it } from "vitest";
import { adjustableClock } from "../../src/delivery/clock.js";
import { createRecorder } from "../../src/delivery/recorder.js";

/** A write that holds each batch until the test lets it go, so batching is observable. */
function heldWrites() {
  const batches: number[][] = [];
  const release: (() => void)[] = [];
  const write = (batch: number[]) => {
    batches.push(batch);
    return new Promise<string[]>((resolve) => release.push(() => resolve(batch.map((n) => `ok ${n}`))));
  };
  return { batches, release, write };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe("recorder (group commit)", () => {
  it("When outcomes arrive within the delay, Then they are written as one batch and each caller gets its own result", async () => {
    const clock = adjustableClock();
    const w = heldWrites();
    const r = createRecorder({ write: w.write, clock, maxBatch: 10, maxDelayMs: 1_000 });
    const results = [r.record(1), r.record(2), r.record(3)];
    await tick();
    expect(w.batches).toEqual([]);
    clock.advance(1_000);
    expect(w.batches).toEqual([[1, 2, 3]]);
    w.release[0]!();
    expect(await Promise.all(results)).toEqual(["ok 1", "ok 2", "ok 3"]);
  });

  it("When a batch fills up, Then it is written at once without waiting for the delay", () => {
    const w = heldWrites();
    const r = createRecorder({ write: w.write, clock: adjustableClock(), maxBatch: 2, maxDelayMs: 60_000 });
    void r.record(1);
    void r.record(2);
    expect(w.batches).toEqual([[1, 2]]);
  });

  it("When writes are busy, Then what arrives meanwhile gathers and goes out as soon as one finishes", async () => {
    const w = heldWrites();
    const r = createRecorder({ write: w.write, clock: adjustableClock(), maxBatch: 2, maxDelayMs: 60_000, maxWrites: 1 });
    for (let i = 1; i <= 5; i++) void r.record(i);
    expect(w.batches).toEqual([[1, 2]]);
    expect(r.pending).toBe(5);
    w.release[0]!();
    await tick();
    expect(w.batches).toEqual([[1, 2], [3, 4]]);
    const flushed = r.flush();
    w.release[1]!();
    await tick();
    expect(w.batches.at(-1)).toEqual([5]);
    w.release[2]!();
    await flushed;
    expect(r.pending).toBe(0);
  });

  it("When a batch cannot be written, Then every caller of that batch sees the error", async () => {
    const r = createRecorder<number, string>({ write: () => Promise.reject(new Error("db down")), clock: adjustableClock(), maxBatch: 2, maxDelayMs: 1 });
    await expect(Promise.all([r.record(1), r.record(2)])).rejects.toThrow("db down");
  });
});
