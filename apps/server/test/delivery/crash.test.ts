// Several dispatcher processes on one PostgreSQL: a dispatcher killed mid-batch loses nothing
// (its leases run out and another dispatcher finishes the work), and two live dispatchers never
// send the same delivery twice within a lease. The workers are real `ars worker` processes
// started through the CLI, configured only by environment variables, as an operator would.
import type { ServerResponse } from "node:http";
import { afterAll, describe, expect, it } from "vitest";
import type { DeliveryConfig } from "../../src/config.js";
import { startWorker, type RunningWorker } from "../../src/worker.js";
import { drainDispatcher } from "../harness/drain.js";
import type { RecordedRequest } from "@audit-review/test-kit/receiver";
import { deliveriesOf, endpointFor, gate, publish, useDeliveryServer, workerOptions, type DeliveryHarness } from "./support.js";
import { useWorkerProcesses } from "./worker-process.js";

const onPostgres = Boolean(process.env.TEST_DATABASE_URL);

// The API alone: every delivery here is sent by the workers this file starts.
const h: DeliveryHarness | undefined = onPostgres ? await useDeliveryServer({}, { dispatcher: false }) : undefined;
const workerProcesses = useWorkerProcesses(() => h!);

const workers: RunningWorker[] = [];
afterAll(async () => {
  for (const w of workers) await w.close();
});

/** A dispatcher in this process, with its own database pool, as a second (or recovering) worker. */
async function inProcessWorker(h: DeliveryHarness, delivery: Partial<DeliveryConfig>) {
  const worker = await startWorker(workerOptions(h, delivery));
  workers.push(worker);
  return { worker };
}

describe.skipIf(!onPostgres)("several dispatchers on one PostgreSQL (PostgreSQL only: set TEST_DATABASE_URL; PGlite is a single in-process connection)", () => {
  it("When a worker is killed with SIGKILL mid-batch, Then after its leases run out another worker delivers every delivery", async () => {
    const LEASE_MS = 2_000;
    const { server } = h!;
    const org = await server.newOrg();
    const hold = gate();
    let answer: "hold" | "ok" = "hold";
    const r = await h!.receiver({
      handler: async (_req: RecordedRequest, res: ServerResponse) => {
        if (answer === "hold") await hold.promise;
        res.writeHead(200).end();
      },
    });
    const ep = await endpointFor(org.api, r.url);
    // Poll of a minute: the worker can only hear of the events through LISTEN/NOTIFY.
    const doomed = await workerProcesses.spawn({ ARS_DELIVERY_LEASE_MS: String(LEASE_MS), ARS_DELIVERY_POLL_MS: "60000" });

    const events = [];
    for (let i = 0; i < 5; i++) events.push(await publish(org.api));
    for (let i = 0; i < 5; i++) await r.nextRequest({ timeoutMs: 20_000 });
    const leases = await server.server.db.query<{ event_id: string; locked_until: Date; lease_owner: string }>(
      "SELECT event_id, locked_until, lease_owner FROM webhook_deliveries WHERE endpoint_id = $1",
      [ep.id],
    );
    expect(leases).toHaveLength(5);
    for (const l of leases) expect(l.lease_owner).toBeTruthy();

    doomed.child.kill("SIGKILL");
    await doomed.exited;
    answer = "ok";
    hold.open();

    const { worker } = await inProcessWorker(h!, { leaseMs: LEASE_MS });
    await drainDispatcher(worker.deps, { untilSettled: true, timeoutMs: 30_000 });

    const rows = await deliveriesOf(org.api, ep.id);
    expect(rows).toHaveLength(5);
    for (const d of rows) expect(d).toMatchObject({ status: "succeeded", attempt_count: 1, last_response_status: 200, last_error: null });
    // Every event was sent twice: once by the killed worker, once after its lease ran out.
    expect(r.requests).toHaveLength(10);
    for (const e of events) {
      const sends = r.requests.filter((q) => q.headers["webhook-id"] === e.id);
      expect(sends).toHaveLength(2);
      const lease = leases.find((l) => l.event_id === e.id)!;
      // timestamptz(3) rounds to the millisecond.
      expect(sends[1]!.receivedAt.getTime()).toBeGreaterThanOrEqual(lease.locked_until.getTime() - 1);
    }
    await worker.close();
  });

  it("When two workers share the queue, Then each delivery is sent exactly once and both do work", async () => {
    const { server } = h!;
    const org = await server.newOrg();
    const endpoints: Array<{ id: string }> = [];
    // Who sent each request: the lease owner of its row, read while the request is on the wire.
    const senders: string[] = [];
    const r = await h!.receiver({
      handler: async (req, res) => {
        const endpoint = endpoints[Number(req.path.split("/").pop())]!;
        const [row] = await server.server.db.query<{ lease_owner: string | null }>(
          "SELECT lease_owner FROM webhook_deliveries WHERE event_id = $1 AND endpoint_id = $2",
          [req.headers["webhook-id"], endpoint.id],
        );
        senders.push(String(row?.lease_owner).replace(/:\d+$/, ""));
        res.writeHead(200).end();
      },
    });
    for (let i = 0; i < 3; i++) endpoints.push(await endpointFor(org.api, `${r.url}/${i}`));
    const lease = { ARS_DELIVERY_LEASE_MS: "30000", ARS_DELIVERY_POLL_MS: "50", ARS_DELIVERY_CONCURRENCY: "4" };
    const child = await workerProcesses.spawn(lease);
    const local = await inProcessWorker(h!, { leaseMs: 30_000, concurrency: 4 });

    for (let i = 0; i < 10; i++) await publish(org.api);
    for (let i = 0; i < 30; i++) await r.nextRequest({ timeoutMs: 20_000 });
    await drainDispatcher(local.worker.deps, { untilSettled: true, timeoutMs: 30_000 });
    // The child records its last outcomes on its own schedule; wait for the rows, not a clock.
    await expect
      .poll(async () => (await Promise.all(endpoints.map((e) => deliveriesOf(org.api, e.id)))).flat().filter((d) => d.status === "succeeded").length, {
        timeout: 20_000,
        interval: 50,
      })
      .toBe(30);

    const sent = r.requests.map((q) => `${q.path} ${String(q.headers["webhook-id"])}`);
    expect(sent).toHaveLength(30);
    expect(new Set(sent).size).toBe(30);
    for (const e of endpoints) for (const d of await deliveriesOf(org.api, e.id)) expect(d.attempt_count).toBe(1);
    // Both workers sent some; every request was sent under a lease.
    const owners = new Set(senders);
    expect(owners.size, [...owners].join(", ")).toBe(2);
    expect(owners.has(local.worker.dispatcher.id)).toBe(true);
    child.child.kill("SIGTERM");
    await child.exited;
  });
});
