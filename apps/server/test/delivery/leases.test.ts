// Leases (docs/delivery.md#leases): a row a dispatcher holds, waiting for a slot or being
// attempted, stays its own however long that takes, because its lease is renewed while held; a
// waiting row whose lease was lost is dropped, never sent. (Whose lease has run out is judged by
// the database's clock, not a worker's: test/delivery/clock-skew.test.ts.)
import type { ServerResponse } from "node:http";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { RecordedRequest } from "@audit-review/test-kit/receiver";
import type { Database } from "../../src/db/client.js";
import type { QueryOptions } from "../../src/db/types.js";
import type { Dispatcher } from "../../src/delivery/dispatcher.js";
import { dispatcherFrom, drainDispatcher, idleOf, manualSignal } from "../harness/drain.js";
import { moved, scrape } from "../harness/metrics.js";
import type { TestOrg } from "../harness/server.js";
import { deliveriesOf, endpointFor, gate, publish, useDeliveryServer } from "./support.js";

const LEASE_MS = 1_000;
/** Three leases: every row waits and is attempted for longer than a lease. */
const RECEIVER_DELAY_MS = 3 * LEASE_MS;
const DELIVERY = { leaseMs: LEASE_MS, concurrency: 2, perEndpointConcurrency: 1, totalTimeoutMs: 10_000 };
const h = await useDeliveryServer(DELIVERY);

let org: TestOrg;
const others: Dispatcher[] = [];
beforeEach(async () => {
  org = await h.server.newOrg();
});
afterEach(async () => {
  for (const d of others.splice(0)) await d.stop();
});

/** A second engine on the same database, as another worker would run it (its own leases and slots). */
function secondDispatcher(): Dispatcher {
  const deps = h.server.server.deps;
  const d = dispatcherFrom(deps, { config: { ...deps.config.delivery } });
  others.push(d);
  return d;
}

/** How many times each (endpoint path, webhook-id) arrived. */
function arrivals(requests: readonly RecordedRequest[]): Map<string, number> {
  const seen = new Map<string, number>();
  for (const q of requests) {
    const key = `${q.path} ${String(q.headers["webhook-id"])}`;
    seen.set(key, (seen.get(key) ?? 0) + 1);
  }
  return seen;
}

const attemptRows = async (deliveryId: string) =>
  (await h.server.server.db.query<{ n: number }>("SELECT count(*)::int AS n FROM webhook_delivery_attempts WHERE delivery_id = $1", [deliveryId]))[0]!.n;

describe("leases held by live dispatchers", () => {
  it("When two dispatchers share the queue and the receiver takes three leases per request, Then every delivery is sent exactly once and recorded with its attempt", async () => {
    const endpoints: Array<{ id: string }> = [];
    // Who sent each request: the lease owner of its row, read while the request is on the wire.
    const senders = new Set<string>();
    const r = await h.receiver({
      handler: async (req: RecordedRequest, res: ServerResponse) => {
        const endpoint = endpoints[Number(req.path.split("/").pop())]!;
        const [row] = await h.server.server.db.query<{ lease_owner: string | null }>(
          "SELECT lease_owner FROM webhook_deliveries WHERE event_id = $1 AND endpoint_id = $2",
          [req.headers["webhook-id"], endpoint.id],
        );
        senders.add(String(row?.lease_owner).replace(/:\d+$/, ""));
        setTimeout(() => res.writeHead(200).end(), RECEIVER_DELAY_MS);
      },
    });
    for (let i = 0; i < 2; i++) endpoints.push(await endpointFor(org.api, `${r.url}/${i}`));
    const second = secondDispatcher();
    second.start();

    // 4 events × 2 endpoints: each dispatcher sends one row per endpoint at a time and claims
    // up to three ahead, so rows wait in memory for several leases before their turn.
    const EVENTS = 4;
    for (let i = 0; i < EVENTS; i++) await publish(org.api);
    const expected = EVENTS * endpoints.length;
    await vi.waitUntil(() => r.requests.length >= expected, { timeout: 30_000, interval: 50 });
    await Promise.all([drainDispatcher(h.server.server.deps, { timeoutMs: 30_000 }), idleOf(second)]);
    await drainDispatcher(h.server.server.deps, { timeoutMs: 30_000 });

    const seen = arrivals(r.requests);
    expect(seen.size).toBe(expected);
    expect([...seen].filter(([, n]) => n > 1), "deliveries sent more than once").toEqual([]);
    for (const e of endpoints) {
      for (const d of await deliveriesOf(org.api, e.id)) {
        expect(d).toMatchObject({ status: "succeeded", attempt_count: 1 });
        expect(await attemptRows(d.id)).toBe(1);
      }
    }
    // Both dispatchers held rows; every request went out under its sender's lease.
    expect(senders.size, [...senders].join(", ")).toBe(2);
    expect(senders.has(second.id)).toBe(true);
  });

  it("When a waiting row's lease is taken from its dispatcher, Then that dispatcher drops it unsent, and it goes out once the taker's lease runs out", async () => {
    const r = await h.receiver({ handler: (_req, res) => void setTimeout(() => res.writeHead(200).end(), RECEIVER_DELAY_MS) });
    const ep = await endpointFor(org.api, r.url);
    // One row on the wire, the other two waiting behind it (one slot per endpoint).
    for (let i = 0; i < 3; i++) await publish(org.api);
    await r.nextRequest({ timeoutMs: 10_000 });
    const leasedBehind = () => h.server.server.db.query<{ id: string; event_id: string }>(
      `SELECT id, event_id FROM webhook_deliveries WHERE endpoint_id = $1 AND status = 'pending' AND lease_owner IS NOT NULL
          AND event_id <> $2`,
      [ep.id, r.requests[0]!.headers["webhook-id"]],
    );
    await vi.waitUntil(async () => (await leasedBehind()).length === 2, { timeout: 10_000, interval: 20 });
    const waiting = await leasedBehind();
    const metricsUrl = h.server.server.deps.metrics!.listener.url;
    const before = await scrape(metricsUrl);
    // Another worker's claim, as if their leases had run out: held by it for a few leases.
    await h.server.server.db.query(
      "UPDATE webhook_deliveries SET lease_owner = 'another-worker:1', locked_until = now() + interval '5 seconds' WHERE id = ANY($1::uuid[])",
      [waiting.map((w) => w.id)],
    );
    // The dispatcher learns it at its next renewal, well before the first row's answer frees the slot.
    await new Promise((resolve) => setTimeout(resolve, RECEIVER_DELAY_MS + 200));
    expect(r.requests.filter((q) => waiting.some((w) => w.event_id === q.headers["webhook-id"])), "rows sent after their lease was taken").toEqual([]);
    expect(moved(before, await scrape(metricsUrl), "ars_delivery_rows_dropped_total"), "rows dropped unsent, counted").toBe(2);

    // "another-worker" never sends them: once its lease runs out they are claimed again and sent once.
    await vi.waitUntil(() => r.requests.length >= 3, { timeout: 20_000, interval: 50 });
    await drainDispatcher(h.server.server.deps, { timeoutMs: 20_000 });
    expect([...arrivals(r.requests).values()]).toEqual([1, 1, 1]);
    for (const d of await deliveriesOf(org.api, ep.id)) expect(d).toMatchObject({ status: "succeeded", attempt_count: 1 });
  });
});

/**
 * The database as it is, but each claim statement may be held before it runs or before its rows
 * come back, and lease renewals may be held while `renewals` is set.
 */
function withHeldClaims(db: Database) {
  const before: Array<Promise<void>> = [];
  const after: Array<Promise<void>> = [];
  let renewals: Promise<void> | null = null;
  const renewing = new Set<Promise<unknown>>();
  const proxy = new Proxy(db, {
    get(target, prop) {
      if (prop === "query") {
        return async (sql: string, params?: unknown[], options?: QueryOptions) => {
          if (options?.name === "ars_renew_leases") {
            await renewals;
            const run = target.query(sql, params, options);
            renewing.add(run);
            return run.finally(() => renewing.delete(run));
          }
          if (!options?.name?.startsWith("ars_claim_")) return target.query(sql, params, options);
          await before.shift();
          const rows = await target.query(sql, params, options);
          await after.shift();
          return rows;
        };
      }
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
  return {
    db: proxy,
    holdNextBefore: (g: Promise<void>) => before.push(g),
    holdNextResult: (g: Promise<void>) => after.push(g),
    /** Holds renewals from now until `g` resolves; resolves once none already under way is left. */
    async holdRenewals(g: Promise<void>): Promise<void> {
      renewals = g;
      await Promise.allSettled([...renewing]);
    },
  };
}


describe("a row claimed again by its own dispatcher", () => {
  it("When a claim sent before the dispatcher took a row returns it again after its lease lapsed, Then the row is sent once and recorded under the newer lease", async () => {
    const answer = gate();
    const r = await h.receiver({
      handler: async (_req, res) => {
        await answer.promise;
        res.writeHead(200).end();
      },
    });
    const ep = await endpointFor(org.api, r.url);
    await h.server.server.dispatcher.stop(); // only the dispatcher under test claims
    const deps = h.server.server.deps;
    const claims = withHeldClaims(deps.db);
    // No wake-ups but the test's: the dispatcher under test claims only when the test asks it to.
    // (A publish wakes dispatchers twice on PostgreSQL, in-process and by NOTIFY, and the second
    // wake-up's claim would take the place of the one the test holds.)
    const wake = manualSignal();
    const d = dispatcherFrom(deps, {
      db: claims.db, signal: wake,
      config: { ...deps.config.delivery, pollIntervalMs: 60_000, concurrency: 4, batchSize: 4 },
    });
    others.push(d);
    d.start();
    await idleOf(d);

    // Claim A takes the row, but its answer is held; claim B is sent meanwhile (so it cannot
    // exclude the row) and held before it runs.
    const resultA = gate();
    const runB = gate();
    claims.holdNextResult(resultA.promise);
    await publish(org.api);
    wake.fire();
    const leaseOwner = async () =>
      (await h.server.server.db.query<{ lease_owner: string | null }>("SELECT lease_owner FROM webhook_deliveries WHERE endpoint_id = $1", [ep.id]))[0]?.lease_owner ?? null;
    await vi.waitUntil(async () => (await leaseOwner()) !== null, { timeout: 10_000, interval: 10 });
    const leaseA = await leaseOwner();
    claims.holdNextBefore(runB.promise);
    // B goes out while A is still on the wire: the dispatcher claims up to two at once
    wake.fire();
    resultA.open();
    await r.nextRequest({ timeoutMs: 10_000 });
    // Its lease lapses while it is being sent (the database out of reach for a lease, say: no
    // renewal gets through), and B runs now.
    const renewalsBack = gate();
    await claims.holdRenewals(renewalsBack.promise);
    await h.server.server.db.query("UPDATE webhook_deliveries SET locked_until = now() - interval '1 second' WHERE endpoint_id = $1", [ep.id]);
    runB.open();
    await vi.waitUntil(async () => (await leaseOwner()) !== leaseA, { timeout: 10_000, interval: 10 });
    const leaseB = await leaseOwner();
    expect(leaseB, "the row claimed again, by the same dispatcher under a newer lease").not.toBe(leaseA);
    expect(leaseB?.startsWith(`${d.id}:`)).toBe(true);
    renewalsBack.open();
    answer.open();
    await drainDispatcher({ ...deps, dispatcher: d }, { timeoutMs: 10_000 });
    // a lease later, nothing was sent again
    await new Promise((resolve) => setTimeout(resolve, LEASE_MS + 200));
    expect(r.requests).toHaveLength(1);
    const [delivery] = await deliveriesOf(org.api, ep.id);
    expect(delivery).toMatchObject({ status: "succeeded", attempt_count: 1 });
    expect(await attemptRows(delivery!.id)).toBe(1);
  });
});
