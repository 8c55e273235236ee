// The dispatcher's slot accounting (src/delivery/slots.ts) on its own: per-endpoint and total
// concurrency, claim-ahead room, rows taken out, and the recording backlog that holds claims back.
import { describe, expect, it } from "vitest";
import { createSlots, type SlotLimits, type SlotRow } from "../../src/delivery/slots.js";

const LIMITS: SlotLimits = { concurrency: 3, perEndpoint: 2, ahead: 3, batchSize: 4, maxUnrecorded: 2, slowLane: 3 };

let n = 0;
const row = (endpointId: string): SlotRow => ({ id: `d${++n}`, endpointId });
const rows = (endpointId: string, count: number) => Array.from({ length: count }, () => row(endpointId));

describe("starting rows", () => {
  it("When rows of several endpoints wait, Then at most perEndpoint of one endpoint and concurrency in all start, in claim order", () => {
    const slots = createSlots(LIMITS);
    const a = rows("a", 3);
    const b = rows("b", 2);
    for (const r of [...a, ...b]) slots.add(r);
    expect(slots.startable()).toEqual([a[0], a[1], b[0]]);
    expect(slots.stats()).toEqual({ held: 5, waiting: 2, sending: 3, unrecorded: 0, slow: 0 });
    expect(slots.startable()).toEqual([]);
  });

  it("When an attempt is over, Then its slot starts the next row of that endpoint while the row stays held until recorded", () => {
    const slots = createSlots(LIMITS);
    const a = rows("a", 3);
    for (const r of a) slots.add(r);
    slots.startable();
    expect(slots.stateOf(a[2]!.id)).toBe("waiting");
    expect(slots.stateOf(a[0]!.id)).toBe("sending");
    slots.attemptOver(a[0]!);
    expect(slots.stateOf(a[0]!.id)).toBe("recording");
    expect(slots.stats()).toMatchObject({ held: 3, sending: 1, unrecorded: 1 });
    expect(slots.startable()).toEqual([a[2]]);
    slots.done(a[0]!);
    expect(slots.stateOf(a[0]!.id)).toBeUndefined();
    expect(slots.get(a[1]!.id)).toBe(a[1]);
    expect(slots.stats()).toEqual({ held: 2, waiting: 0, sending: 2, unrecorded: 0, slow: 0 });
    expect(slots.size).toBe(2);
  });

  it("When a row is added twice, Then it is refused", () => {
    const slots = createSlots(LIMITS);
    const r = row("a");
    slots.add(r);
    expect(() => slots.add({ ...r })).toThrow(/already held/);
  });
});

describe("taking rows out", () => {
  it("When an endpoint's waiting rows are taken, Then only they leave, and its rows on the wire stay", () => {
    const slots = createSlots(LIMITS);
    const a = rows("a", 4);
    const b = rows("b", 1);
    for (const r of [...a, ...b]) slots.add(r);
    slots.startable(); // a0, a1, b0
    expect(slots.takeWaitingOf("a")).toEqual([a[2], a[3]]);
    expect(slots.stats()).toEqual({ held: 3, waiting: 0, sending: 3, unrecorded: 0, slow: 0 });
    expect(slots.held().map((r) => r.id).sort()).toEqual([a[0]!.id, a[1]!.id, b[0]!.id].sort());
  });

  it("When waiting rows match, Then they are taken out wherever they wait, and a row being sent is never taken", () => {
    const slots = createSlots({ ...LIMITS, concurrency: 1 });
    const a = rows("a", 2);
    const b = rows("b", 2);
    for (const r of [...a, ...b]) slots.add(r);
    slots.startable(); // a0
    const drop = new Set([a[0]!.id, a[1]!.id, b[1]!.id]);
    expect(slots.takeWaiting((r) => drop.has(r.id))).toEqual([a[1], b[1]]);
    expect(slots.stats()).toEqual({ held: 2, waiting: 1, sending: 1, unrecorded: 0, slow: 0 });
    slots.attemptOver(a[0]!);
    expect(slots.startable()).toEqual([b[0]]);
  });

  it("When a waiting row is done (dropped), Then it leaves without touching the slots", () => {
    const slots = createSlots(LIMITS);
    const [r] = rows("a", 1);
    slots.add(r!);
    slots.done(r!);
    expect(slots.stats()).toEqual({ held: 0, waiting: 0, sending: 0, unrecorded: 0, slow: 0 });
  });
});

describe("what a claim may take", () => {
  it("When an endpoint holds rows, Then a claim's room for it is perEndpoint at most, within ahead × perEndpoint", () => {
    const slots = createSlots(LIMITS); // cap: 3 × 2 = 6 per endpoint
    for (const r of rows("a", 5)) slots.add(r);
    for (const r of rows("b", 1)) slots.add(r);
    const claim = slots.reserve(4);
    expect(claim.room).toEqual(new Map([["a", 1], ["b", 2]]));
    // a second claim on the wire meanwhile sees the first one's room reserved
    const second = slots.reserve(2);
    expect(second.room).toEqual(new Map([["a", 0], ["b", 2]]));
    claim.release();
    second.release();
    expect(slots.reserve(1).room).toEqual(new Map([["a", 1], ["b", 2]]));
  });

  it("When rows are held, Then free rows are a batch at most, within concurrency plus a batch, less what claims on the wire may add", () => {
    const slots = createSlots(LIMITS); // concurrency 3 + batch 4 = 7
    expect(slots.freeRows()).toBe(4);
    for (const r of rows("a", 3)) slots.add(r);
    expect(slots.freeRows()).toBe(4);
    const claim = slots.reserve(2);
    expect(slots.freeRows()).toBe(2);
    claim.release();
    claim.release(); // twice is once
    expect(slots.freeRows()).toBe(4);
    for (const r of rows("b", 2)) slots.add(r);
    expect(slots.freeRows()).toBe(2);
  });

  it("When more outcomes wait to be recorded than maxUnrecorded, Then claiming holds back by the excess, down to nothing", () => {
    const slots = createSlots({ ...LIMITS, concurrency: 10, perEndpoint: 10, batchSize: 4, maxUnrecorded: 2 });
    const sent = rows("a", 8);
    for (const r of sent) slots.add(r);
    slots.startable();
    for (const r of sent) slots.attemptOver(r);
    // 8 unrecorded, 6 beyond the bound: 10 + 4 - 6 = 8 would be room, but a claim takes a batch at most
    expect(slots.stats()).toMatchObject({ held: 8, sending: 0, unrecorded: 8 });
    expect(slots.freeRows()).toBe(4);
    for (const r of rows("b", 8)) slots.add(r);
    // 10 + 4 - 8 waiting - 6 excess
    expect(slots.freeRows()).toBe(0);
    for (const r of sent.slice(0, 4)) slots.done(r);
    // 4 unrecorded, 2 beyond: 14 - 8 - 2
    expect(slots.freeRows()).toBe(4);
  });

  it("However recording lags, Then what is held plus claimed stays within concurrency + batchSize + maxUnrecorded", () => {
    const limits = { ...LIMITS, concurrency: 4, perEndpoint: 4, batchSize: 3, maxUnrecorded: 2 };
    const slots = createSlots(limits);
    const bound = limits.concurrency + limits.batchSize + limits.maxUnrecorded;
    // Claim whatever is free, start what can start, and never record: a stalled database.
    for (let round = 0; round < 20; round++) {
      const free = slots.freeRows();
      for (const r of rows(`e${round % 3}`, free)) slots.add(r);
      for (const r of slots.startable()) slots.attemptOver(r);
      expect(slots.stats().held).toBeLessThanOrEqual(bound);
    }
    expect(slots.freeRows()).toBe(0);
    expect(slots.stats().held).toBe(bound);
  });
});

describe("the slow lane", () => {
  it("When an attempt is judged slow, Then its endpoint's rows on the wire and waiting leave the shared slots and claim budget, up to the lane", () => {
    const slots = createSlots({ ...LIMITS, concurrency: 2, perEndpoint: 2, slowLane: 3 }); // budget 2 + 4
    const s = rows("s", 3);
    for (const r of s) slots.add(r);
    expect(slots.startable()).toEqual([s[0], s[1]]);
    expect([...slots.sendingOldestFirst()]).toEqual([s[0], s[1]]);
    expect(slots.freeRows()).toBe(3); // 6 - 2 sending - 1 waiting
    const f = rows("f", 2);
    for (const r of f) slots.add(r);
    expect(slots.startable()).toEqual([]); // the shared slots are the slow receiver's

    slots.slow(s[0]!);
    expect([...slots.sendingOldestFirst()]).toEqual([s[1]]);
    // one attempt judged slow: its endpoint's waiting row counts in the lane too (1 + 1)
    expect(slots.stats()).toMatchObject({ sending: 2, waiting: 3, slow: 2 });
    expect(slots.startable()).toEqual([f[0]]);
    slots.slow(s[1]!);
    expect(slots.stats().slow).toBe(3); // 2 sending + 1 waiting: the lane, full
    expect(slots.beyondSlowLane()).toBe(0);
    expect(slots.startable()).toEqual([f[1]]);
    // 6 + 3 in the lane - 4 sending - 1 waiting
    expect(slots.freeRows()).toBe(4);

    // its attempts end: back to the shared count
    slots.attemptOver(s[0]!);
    slots.attemptOver(s[1]!);
    expect(slots.stats()).toMatchObject({ sending: 2, slow: 0 });
    expect(slots.startable()).toEqual([]); // f's two hold both shared slots; s[2] waits
  });

  it("When a slow receiver holds more than the lane, Then the rest count against the shared slots", () => {
    const slots = createSlots({ ...LIMITS, concurrency: 2, perEndpoint: 2, slowLane: 1 });
    const s = rows("s", 2);
    for (const r of s) slots.add(r);
    slots.startable();
    slots.slow(s[0]!);
    slots.slow(s[1]!);
    expect(slots.stats().slow).toBe(1);
    expect(slots.beyondSlowLane()).toBe(1);
    const [f] = rows("f", 1);
    slots.add(f!);
    expect(slots.startable()).toEqual([f]); // 2 sending - 1 in the lane: one shared slot left
    const [g] = rows("g", 1);
    slots.add(g!);
    expect(slots.startable()).toEqual([]);
  });

  it("When an endpoint is a slow receiver, Then claims take no rows of it ahead of its slots", () => {
    const slots = createSlots(LIMITS); // ahead 3 × perEndpoint 2
    const s = rows("s", 3);
    for (const r of s) slots.add(r);
    slots.startable(); // s0, s1 sending; s2 waiting
    const before = slots.reserve(4);
    expect(before.room.get("s")).toBe(2); // up to ahead × perEndpoint = 6 held
    before.release();
    slots.slow(s[0]!);
    const after = slots.reserve(4);
    expect(after.room.get("s")).toBe(0); // 3 held already: more than its 2 slots
    after.release();
  });

  it("However slow receivers and recording lag, Then what is held stays within concurrency + batchSize + maxUnrecorded + the lane", () => {
    const limits = { ...LIMITS, concurrency: 4, perEndpoint: 2, batchSize: 3, maxUnrecorded: 2, slowLane: 4 };
    const slots = createSlots(limits);
    const bound = limits.concurrency + limits.batchSize + limits.maxUnrecorded + limits.slowLane;
    // Claim what is free, start what can, judge every attempt slow, never end one: endpoints
    // that hang, then the database stalls for the rest.
    for (let round = 0; round < 30; round++) {
      const free = slots.freeRows();
      for (const r of rows(`e${round % 5}`, free)) slots.add(r);
      for (const r of slots.startable()) {
        if (round < 15) slots.slow(r);
        else slots.attemptOver(r);
      }
      expect(slots.stats().held).toBeLessThanOrEqual(bound);
    }
    expect(slots.freeRows()).toBe(0);
  });
});
