import { describe, expect, it } from "vitest";
import { adjustableClock } from "../harness/clock.js";
import { createRecorder, type RecorderOptions } from "../../src/delivery/recorder.js";
import { createLogger } from "../../src/lib/logger.js";

const fulfilled = <R>(value: R): PromiseSettledResult<R> => ({ status: "fulfilled", value });
const rejected = (reason: unknown): PromiseSettledResult<never> => ({ status: "rejected", reason });

/** A write that holds each batch until the test settles it, so batching and retries are observable. */
function heldWrites() {
  const batches: number[][] = [];
  const settle: ((results: PromiseSettledResult<string>[] | Error) => void)[] = [];
  const write = (batch: number[]) => {
    batches.push(batch);
    return new Promise<PromiseSettledResult<string>[]>((resolve, reject) =>
      settle.push((results) => (results instanceof Error ? reject(results) : resolve(results))),
    );
  };
  /** settles the n-th batch: every item written */
  const ok = (n: number) => settle[n]!(batches[n]!.map((i) => fulfilled(`ok ${i}`)));
  return { batches, settle, ok, write };
}

/** The recorder's log lines, parsed. */
function logLines() {
  const lines: { level: number; msg: string; [k: string]: unknown }[] = [];
  const log = createLogger({ level: "debug", destination: { write: (s: string) => void lines.push(JSON.parse(s)) } });
  return { lines, log };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));
const ERROR = 50;

type Options = RecorderOptions<number, string>;
function recorder(write: Options["write"], over: Partial<Options> = {}) {
  const clock = adjustableClock();
  const { lines, log } = logLines();
  // key: the item's tens, so 11 and 12 are one delivery's outcomes
  const r = createRecorder<number, string>({ write, keyOf: (n) => String(Math.floor(n / 10)), clock, log, maxBatch: 10, maxDelayMs: 60_000, ...over });
  return { r, clock, lines };
}

describe("recorder (group commit)", () => {
  it("When outcomes arrive within the delay, Then they are written as one batch and each caller gets its own result", async () => {
    const w = heldWrites();
    const { r, clock } = recorder(w.write, { maxDelayMs: 1_000 });
    const results = [r.record(10), r.record(20), r.record(30)];
    await tick();
    expect(w.batches).toEqual([]);
    clock.advance(1_000);
    expect(w.batches).toEqual([[10, 20, 30]]);
    w.ok(0);
    expect(await Promise.all(results)).toEqual(["ok 10", "ok 20", "ok 30"]);
  });

  it("When a batch fills up, Then it is written at once without waiting for the delay", () => {
    const w = heldWrites();
    const { r } = recorder(w.write, { maxBatch: 2 });
    void r.record(10);
    void r.record(20);
    expect(w.batches).toEqual([[10, 20]]);
  });

  it("When writes are busy, Then what arrives meanwhile gathers and goes out as soon as one finishes", async () => {
    const w = heldWrites();
    const { r } = recorder(w.write, { maxBatch: 2, maxWrites: 1 });
    for (let i = 1; i <= 5; i++) void r.record(i * 10);
    expect(w.batches).toEqual([[10, 20]]);
    expect(r.pending()).toBe(5);
    w.ok(0);
    await tick();
    expect(w.batches).toEqual([[10, 20], [30, 40]]);
    const flushed = r.flush();
    w.ok(1);
    await tick();
    expect(w.batches.at(-1)).toEqual([50]);
    w.ok(2);
    await flushed;
    expect(r.pending()).toBe(0);
  });
});

describe("recorder (an outcome whose write failed is written again, never dropped)", () => {
  it("When a whole batch cannot be written, Then it is written again after a backoff and the callers get the written results", async () => {
    const w = heldWrites();
    const { r, clock } = recorder(w.write, { maxBatch: 2, retryDelayMs: 1_000 });
    const results = Promise.all([r.record(10), r.record(20)]);
    w.settle[0]!(new Error("Connection terminated unexpectedly"));
    await tick();
    expect(r.pending()).toBe(2);
    expect(w.batches).toHaveLength(1);
    clock.advance(1_000);
    expect(w.batches).toEqual([[10, 20], [10, 20]]);
    w.ok(1);
    expect(await results).toEqual(["ok 10", "ok 20"]);
    expect(r.pending()).toBe(0);
  });

  it("When the write throws before it returns a promise, Then the batch is kept and written again like any failed write", async () => {
    let calls = 0;
    const write = (batch: number[]) => {
      if (++calls === 1) throw new Error("no connection to hand out");
      return Promise.resolve(batch.map((n) => fulfilled(`ok ${n}`)));
    };
    const { r, clock } = recorder(write, { maxBatch: 1, retryDelayMs: 1_000 });
    const result = r.record(10);
    await tick();
    expect(r.pending()).toBe(1);
    clock.advance(1_000);
    expect(await result).toBe("ok 10");
    expect(calls).toBe(2);
  });

  it("When one part of a batch fails, Then only its items are written again; the others resolve at once", async () => {
    const w = heldWrites();
    const { r, clock } = recorder(w.write, { maxBatch: 2, retryDelayMs: 1_000 });
    const written = r.record(10);
    const failed = r.record(20);
    w.settle[0]!([fulfilled("ok 10"), rejected(new Error("deadlock"))]);
    expect(await written).toBe("ok 10");
    expect(r.pending()).toBe(1);
    clock.advance(1_000);
    expect(w.batches.at(-1)).toEqual([20]);
    w.ok(1);
    expect(await failed).toBe("ok 20");
  });

  it("When an item is waiting to be written again, Then a later outcome of the same key waits behind it; other keys go ahead", async () => {
    const w = heldWrites();
    const { r, clock } = recorder(w.write, { maxBatch: 1, retryDelayMs: 1_000 });
    const first = r.record(11);
    w.settle[0]!(new Error("Connection terminated unexpectedly"));
    await tick();
    const second = r.record(12);
    const other = r.record(20);
    await tick();
    expect(w.batches).toEqual([[11], [20]]); // 12 waits for 11
    w.ok(1);
    expect(await other).toBe("ok 20");
    clock.advance(1_000);
    expect(w.batches.at(-1)).toEqual([11]);
    w.ok(2);
    await tick();
    expect(w.batches.at(-1)).toEqual([12]);
    w.ok(3);
    expect([await first, await second]).toEqual(["ok 11", "ok 12"]);
  });

  it("When writes keep failing past the bound, Then it logs an error naming what is kept, backs off up to its cap, and still writes once the database answers", async () => {
    const w = heldWrites();
    const { r, clock, lines } = recorder(w.write, { maxBatch: 1, retryDelayMs: 1_000, maxRetryDelayMs: 4_000, stuckAfterMs: 10_000 });
    const result = r.record(10);
    const fail = async (n: number) => {
      w.settle[n]!(new Error("the database system is starting up"));
      await tick();
    };
    await fail(0);
    const delays: number[] = [];
    for (let n = 1; n <= 5; n++) {
      // the next try comes exactly when its backoff is over
      const before = w.batches.length;
      let waited = 0;
      while (w.batches.length === before) {
        clock.advance(500);
        waited += 500;
      }
      delays.push(waited);
      await fail(n);
    }
    expect(delays).toEqual([1_000, 2_000, 4_000, 4_000, 4_000]);
    const errors = lines.filter((l) => l.level === ERROR);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ unwritten: 1, err: "the database system is starting up" });
    expect(r.pending()).toBe(1);
    const flushed = r.flush(); // no waiting out the backoff
    expect(w.batches).toHaveLength(7);
    w.ok(6);
    expect(await result).toBe("ok 10");
    await flushed;
    expect(lines.at(-1)).toMatchObject({ msg: "delivery outcome written after its write failed", failed_writes: 6 });
  });
});
