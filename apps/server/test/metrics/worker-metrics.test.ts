// The `worker` role has its own metrics listener: an API server without a dispatcher and a worker
// on one PostgreSQL, deliveries flowing to a real receiver. The worker counts what it sends (and
// what it could not record once its lease had run out); both read the same queue from the database.
import { afterAll, describe, expect, it, vi } from "vitest";
import { startWorker } from "../../src/worker.js";
import { onPostgres } from "../harness/db.js";
import { moved, scrape, valueOf } from "../harness/metrics.js";
import { idleOf } from "../harness/drain.js";
import { endpointFor, gate, publish, useDeliveryServer, workerOptions } from "../delivery/support.js";

describe.skipIf(!onPostgres)("worker metrics (PostgreSQL only: a worker needs a database it can share)", async () => {
  const h = await useDeliveryServer({}, { dispatcher: false });
  const config = h.server.server.deps.config;
  const worker = await startWorker({ ...workerOptions(h, {}), metricsPort: 0 });
  afterAll(() => worker.close());
  const workerUrl = worker.deps.metrics!.listener.url;
  const serverUrl = h.server.server.deps.metrics!.listener.url;

  it("When the worker delivers, Then its listener counts the outcomes, both processes report the same queue, and it reports its two pools", async () => {
    const org = await h.server.newOrg();
    const r = await h.receiver();
    await endpointFor(org.api, r.url);
    const before = await scrape(workerUrl);
    for (let i = 0; i < 3; i++) await publish(org.api);
    for (let i = 0; i < 3; i++) await r.nextRequest();
    await idleOf(worker.dispatcher);
    const after = await scrape(workerUrl);
    expect(moved(before, after, "ars_delivery_outcomes_total", { outcome: "succeeded", error_code: "none" })).toBe(3);
    expect(valueOf(after, "ars_delivery_queue_due_rows")).toBe(0);
    expect(valueOf(await scrape(serverUrl), "ars_delivery_queue_due_rows")).toBe(0);
    expect(valueOf(after, "ars_db_pool_connections_max", { pool: "engine" })).toBe(config.delivery.poolSize);
    expect(after.has('ars_db_pool_connections_in_use{pool="engine"}')).toBe(true);
    // it answers no list page: no pool for them
    expect(after.has('ars_db_pool_connections_max{pool="lists"}')).toBe(false);
    // the API server's dispatcher is off: it sent nothing
    expect(valueOf(await scrape(serverUrl), "ars_delivery_outcomes_total", { outcome: "succeeded", error_code: "none" })).toBe(0);
  });

  it("When a worker's lease is lost mid-attempt and another worker sends the row again, Then the first counts lease_lost and the second succeeded", async () => {
    await worker.close();
    const org = await h.server.newOrg();
    const hold = gate();
    const r = await h.receiver({
      handler: async (_req, res) => {
        await hold.promise;
        res.writeHead(200).end();
      },
    });
    await endpointFor(org.api, r.url);
    // Poll of a minute: once its claims are answered, the slow worker claims nothing more by itself.
    const slow = await startWorker({ ...workerOptions(h, { pollIntervalMs: 60_000 }), metricsPort: 0 });
    const others: Array<Awaited<ReturnType<typeof startWorker>>> = [slow];
    try {
      await publish(org.api);
      await r.nextRequest(); // the slow worker's attempt, held
      await vi.waitUntil(() => slow.dispatcher.stats().held === 1, { timeout: 5_000, interval: 10 }); // no claim of it on the wire
      // A live worker renews its leases (docs/delivery.md#leases): this one's ran out as if the
      // database had been out of its reach for a whole lease.
      await h.server.server.db.query("UPDATE webhook_deliveries SET lease_owner = 'lapsed', locked_until = now() - interval '1 second' WHERE lease_owner IS NOT NULL");
      const other = await startWorker({ ...workerOptions(h, {}), metricsPort: 0 });
      others.push(other);
      await r.nextRequest(); // the other worker took the row once the lease ran out
      const [slowBefore, otherBefore] = [await scrape(slow.deps.metrics!.listener.url), await scrape(other.deps.metrics!.listener.url)];
      hold.open();
      await Promise.all([idleOf(slow.dispatcher), idleOf(other.dispatcher)]);
      const slowAfter = await scrape(slow.deps.metrics!.listener.url);
      const otherAfter = await scrape(other.deps.metrics!.listener.url);
      expect(moved(slowBefore, slowAfter, "ars_delivery_outcomes_total", { outcome: "lease_lost", error_code: "none" })).toBe(1);
      expect(moved(slowBefore, slowAfter, "ars_delivery_outcomes_total", { outcome: "succeeded", error_code: "none" })).toBe(0);
      expect(moved(otherBefore, otherAfter, "ars_delivery_outcomes_total", { outcome: "succeeded", error_code: "none" })).toBe(1);
    } finally {
      hold.open();
      await Promise.all(others.map((w) => w.close()));
    }
  });
});
