// A slow receiver takes no slot of the others (docs/delivery.md#slow-receivers): once one of its
// attempts has been on the wire for `slowAttemptMs`, its endpoint's rows count in the slow lane,
// and the shared slots go to the other endpoints. The lane is bounded: past it, slow receivers'
// rows take shared slots again. Real HTTPS receivers; the slow ones hold every request until
// released.
import { afterEach, beforeEach, expect, it, vi } from "vitest";
import type { TestOrg } from "../harness/server.js";
import { scrape, valueOf } from "../harness/metrics.js";
import { deliveriesOf, endpointFor, gate, publish, useDeliveryServer } from "./support.js";

const CONCURRENCY = 2;
const h = await useDeliveryServer({ concurrency: CONCURRENCY, perEndpointConcurrency: 2, slowAttemptMs: 200 });
const metricsUrl = h.server.server.deps.metrics!.listener.url;
const dispatcher = h.server.server.deps.dispatcher!;

let org: TestOrg;
let held: ReturnType<typeof gate>;
beforeEach(async () => {
  org = await h.server.newOrg();
  held = gate();
});
afterEach(async () => {
  held.open();
  await h.server.drain();
});

/** A receiver that holds every request until the test's gate opens. */
const slowReceiver = () => h.receiver({ handler: async (_req, res) => (await held.promise, void res.writeHead(200).end()) });

/** Events published while only `endpoints` exist, waited for until `count` requests are held at `at`. */
async function occupy(at: Awaited<ReturnType<typeof slowReceiver>>, count: number): Promise<void> {
  for (let i = 0; i < count; i++) await publish(org.api);
  await vi.waitUntil(() => at.requests.length >= count, { timeout: 10_000, interval: 10 });
}

it("When slow receivers fill the lane, Then the next slow receiver's attempts take shared slots again: in flight stays within concurrency + the lane", async () => {
  const a = await slowReceiver();
  await endpointFor(org.api, `${a.url}/a`);
  await occupy(a, 2);
  // a's two attempts move to the lane (as large as the shared slots: 2), freeing both slots
  await vi.waitUntil(() => dispatcher.stats().slow === 2, { timeout: 5_000, interval: 10 });
  await new Promise((r) => setTimeout(r, 300));
  // (first in this file: the warning comes at most once a minute per dispatcher)
  expect(h.server.logs.join("")).not.toMatch(/the slow lane is full/);
  const b = await slowReceiver();
  await endpointFor(org.api, `${b.url}/b`);
  await occupy(b, 2);
  // b's attempts are slow too, but the lane is full: they keep the shared slots
  await new Promise((r) => setTimeout(r, 600));
  const fast = await h.receiver();
  await endpointFor(org.api, `${fast.url}/fast`);
  await publish(org.api);
  await new Promise((r) => setTimeout(r, 600));
  expect(fast.requests).toHaveLength(0);
  expect(dispatcher.stats()).toMatchObject({ sending: 4, slow: 2 });
  expect(h.server.logs.join("")).toMatch(/the slow lane is full/);

  held.open();
  await vi.waitUntil(() => fast.requests.length === 1, { timeout: 5_000, interval: 10 });
});

it("When a receiver holds every shared slot, Then after slowAttemptMs the other endpoints' deliveries go out while it still holds them", async () => {
  const slow = await slowReceiver();
  const slowEp = await endpointFor(org.api, `${slow.url}/slow`);
  await occupy(slow, CONCURRENCY); // both shared slots on the wire to the slow receiver
  const fast = await h.receiver();
  const fastEp = await endpointFor(org.api, `${fast.url}/fast`);
  for (let i = 0; i < 3; i++) await publish(org.api);

  // Counted with the others, the slow receiver's two attempts would hold the fast one's
  // deliveries until it answered: it never does before the gate opens.
  await vi.waitUntil(() => fast.requests.length >= 3, { timeout: 5_000, interval: 10 });
  expect(slow.requests).toHaveLength(CONCURRENCY); // still its per-endpoint limit, nothing more
  const s = dispatcher.stats();
  expect(s.slow).toBeGreaterThanOrEqual(CONCURRENCY);
  expect(valueOf(await scrape(metricsUrl), "ars_delivery_slow_lane_rows")).toBe(s.slow);

  held.open();
  await h.server.drain();
  expect((await deliveriesOf(org.api, fastEp.id)).map((d) => d.status)).toEqual(Array(3).fill("succeeded"));
  expect((await deliveriesOf(org.api, slowEp.id)).map((d) => d.status)).toEqual(Array(5).fill("succeeded"));
  expect(dispatcher.stats().slow).toBe(0);
});
