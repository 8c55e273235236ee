// The queue signal (src/delivery/queue-signal.ts) wakes this process's dispatcher at once and
// other processes' through LISTEN/NOTIFY: each exactly once. Its own notification coming back
// through PostgreSQL must not wake it a second time (a second claim that finds nothing).
import { afterAll, beforeAll, expect, it } from "vitest";
import { createQueueSignal, type QueueSignal } from "../../src/delivery/queue-signal.js";
import { createTestDatabase, onPostgres, type TestDatabase } from "../harness/db.js";

let t: TestDatabase;
const signals: QueueSignal[] = [];
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(async () => {
  for (const s of signals) await s.close();
  await t?.close();
});

const wakes = (s: QueueSignal) => {
  const seen = { n: 0 };
  s.onWake(() => seen.n++);
  return seen;
};

it(`When a process notifies, Then its own dispatcher wakes once and another process's once (${onPostgres ? "PostgreSQL" : "PGlite: in process only"})`, async () => {
  const here = await createQueueSignal(t.db, (err) => { throw err; });
  const there = await createQueueSignal(t.db, (err) => { throw err; });
  signals.push(here, there);
  const own = wakes(here);
  const other = wakes(there);
  here.notify();
  expect(own.n).toBe(1); // at once, in process
  if (onPostgres) await expect.poll(() => other.n, { timeout: 5_000 }).toBe(1);
  // whatever comes back through PostgreSQL meanwhile is not a second wake-up
  await new Promise((r) => setTimeout(r, 300));
  expect(own.n).toBe(1);
  expect(other.n).toBe(onPostgres ? 1 : 0);
});
