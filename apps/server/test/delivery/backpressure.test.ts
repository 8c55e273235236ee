// Backpressure (docs/delivery.md#backpressure): while the database does not take the engine's
// outcomes, claiming holds back, so what a dispatcher holds stays within its bound however long
// the stall lasts; once the database answers again every delivery is recorded, each sent once.
// On PostgreSQL the stall is real: another connection holds the attempt history locked, while
// claims (which never touch it) and receivers keep going. PGlite is one connection, where a lock
// stalls claims as well; there the outcome writes of the dispatcher's database are held back.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { Database } from "../../src/db/client.js";
import type { Dispatcher } from "../../src/delivery/dispatcher.js";
import { onPostgres } from "../harness/db.js";
import { dispatcherFrom, drainDispatcher } from "../harness/drain.js";
import type { TestOrg } from "../harness/server.js";
import { deliveriesOf, endpointFor, gate, publish, useDeliveryServer } from "./support.js";

// Small limits, so the bound is reached quickly: concurrency + batch + 2 record batches = 24.
const DELIVERY = { concurrency: 6, perEndpointConcurrency: 3, batchSize: 8, recordBatchSize: 5, pollIntervalMs: 20 };
const EVENTS = 30;
const h = await useDeliveryServer(DELIVERY, { dispatcher: false });

let org: TestOrg;
const started: Dispatcher[] = [];
beforeEach(async () => {
  org = await h.server.newOrg();
});
afterEach(async () => {
  for (const d of started.splice(0)) await d.stop();
});

function dispatcherOn(db: Database): Dispatcher {
  const deps = h.server.server.deps;
  const d = dispatcherFrom(deps, { db });
  started.push(d);
  d.start();
  return d;
}

/** The database as it is, but for outcome writes (they store attempt rows), which wait for `stall()` to resolve. */
function withStalledRecords(db: Database, stall: () => Promise<void>): Database {
  return new Proxy(db, {
    get(target, prop) {
      if (prop === "query") {
        return async (sql: string, params?: unknown[]) => {
          if (sql.includes("INSERT INTO webhook_delivery_attempts")) await stall();
          return target.query(sql, params);
        };
      }
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/**
 * Publishes EVENTS to two fast endpoints during a stall (`begin` to `end`), sampling the
 * dispatcher's holdings all along; checks the bound held, then that everything was recorded once.
 */
async function throughStall(dispatcher: Dispatcher, stall: { begin(): Promise<void>; end(): Promise<void> }): Promise<void> {
  const r = await h.receiver();
  const endpoints = [await endpointFor(org.api, `${r.url}/0`), await endpointFor(org.api, `${r.url}/1`)];
  const { maxHeld } = dispatcher.stats();
  // the slow lane is as large as the shared slots (docs/delivery.md#slow-receivers)
  expect(maxHeld).toBe(2 * DELIVERY.concurrency + DELIVERY.batchSize + 2 * DELIVERY.recordBatchSize);
  let most = { held: 0, unrecorded: 0 };
  const sampler = setInterval(() => {
    const s = dispatcher.stats();
    most = { held: Math.max(most.held, s.held), unrecorded: Math.max(most.unrecorded, s.unrecorded) };
  }, 1);
  try {
    await stall.begin();
    for (let i = 0; i < EVENTS; i++) await publish(org.api);
    // The engine sends until it holds its bound, then waits: arrivals stop growing.
    let seen = -1;
    await vi.waitUntil(() => {
      const stuck = r.requests.length === seen && dispatcher.stats().unrecorded >= 2 * DELIVERY.recordBatchSize;
      seen = r.requests.length;
      return stuck;
    }, { timeout: 20_000, interval: 300 });
    // Nothing was recorded meanwhile, so everything sent is still held.
    expect(r.requests.length).toBeLessThanOrEqual(maxHeld);
    expect(r.requests.length).toBeLessThan(EVENTS * endpoints.length);
    await stall.end();
    await vi.waitUntil(() => r.requests.length >= EVENTS * endpoints.length, { timeout: 30_000, interval: 50 });
    await drainDispatcher({ ...h.server.server.deps, dispatcher }, { timeoutMs: 30_000 });
  } finally {
    clearInterval(sampler);
    await stall.end();
  }
  expect(most.held, "rows held at the most").toBeLessThanOrEqual(maxHeld);
  expect(most.unrecorded, "outcomes waiting at the most").toBeLessThanOrEqual(maxHeld);
  // the stall was real: more outcomes waited than claiming lets pass
  expect(most.unrecorded).toBeGreaterThan(2 * DELIVERY.recordBatchSize);

  const sent = r.requests.map((q) => `${q.path} ${String(q.headers["webhook-id"])}`);
  expect(sent).toHaveLength(EVENTS * endpoints.length);
  expect(new Set(sent).size).toBe(sent.length);
  for (const e of endpoints) {
    const rows = await deliveriesOf(org.api, e.id);
    expect(rows).toHaveLength(EVENTS);
    for (const d of rows) expect(d).toMatchObject({ status: "succeeded", attempt_count: 1 });
    const [{ n }] = (await h.server.server.db.query<{ n: number }>("SELECT count(*)::int AS n FROM webhook_delivery_attempts WHERE endpoint_id = $1", [e.id])) as [{ n: number }];
    expect(n).toBe(EVENTS);
  }
}

describe("a database that does not take outcomes", () => {
  it("When outcome writes stall, Then the dispatcher holds no more than its bound, and afterwards every delivery is recorded, sent once", async () => {
    let stalled: ReturnType<typeof gate> | null = null;
    const db = withStalledRecords(h.server.server.db, () => stalled?.promise ?? Promise.resolve());
    const dispatcher = dispatcherOn(db);
    await throughStall(dispatcher, {
      begin: async () => void (stalled = gate()),
      end: async () => stalled?.open(),
    });
  });

  it.skipIf(!onPostgres)("When another connection holds the attempt history locked, Then the dispatcher holds no more than its bound, and afterwards every delivery is recorded, sent once (PostgreSQL only)", async () => {
    const dispatcher = dispatcherOn(h.server.server.db);
    const unlock = gate();
    let holder: Promise<void> | null = null;
    await throughStall(dispatcher, {
      async begin() {
        const locked = gate();
        holder = h.server.server.db.transaction(async (tx) => {
          await tx.query("LOCK TABLE webhook_delivery_attempts IN ACCESS EXCLUSIVE MODE");
          locked.open();
          await unlock.promise;
        });
        await locked.promise;
      },
      async end() {
        unlock.open();
        await holder;
      },
    });
  });
});
