// The per-endpoint throttle (`rate_limit`, docs/delivery.md#rate-limits) with two workers sharing
// the queue: the limit is kept in the database, inside the claim, so it holds however many
// workers claim. The events are queued first and the workers started after, so the whole backlog
// is due at once (the throttle's hardest case) and the publishing does not share the workers'
// time: one dispatcher in this process, and on PostgreSQL a real `ars worker` process beside it;
// on PGlite (one in-process connection) a second dispatcher in this process. The receiver is a
// real HTTPS server and counts what arrives when. It runs after every other file of the suite
// (vitest.config.ts): what it counts per second is the throttle's pace plus how late each sender
// got the CPU, and beside the suite's heaviest files a starved sender put a seventh delivery into
// a second.
import { afterAll, describe, expect, it } from "vitest";
import { createDispatcher, type Dispatcher } from "../../src/delivery/dispatcher.js";
import { noObserver } from "../../src/delivery/observer.js";
import { maxPerSecond } from "../../src/domain/delivery/throttle.js";
import { endpointFor, publish, useDeliveryServer } from "./support.js";
import { useWorkerProcesses } from "./worker-process.js";

const onPostgres = Boolean(process.env.TEST_DATABASE_URL);
// The API alone: the workers are started by the test.
const h = await useDeliveryServer({}, { dispatcher: false });
const workerProcesses = useWorkerProcesses(() => h);

const extra: Dispatcher[] = [];
/** Attempts each dispatcher in this process made (both endpoints), as its engine reports them. */
const attemptsBy: number[] = [];
afterAll(async () => {
  for (const d of extra) await d.stop();
});

/** A dispatcher in this process, on the server's database, with the harness's receivers' names and CA. */
function localWorker(): void {
  const deps = h.server.server.deps;
  const n = attemptsBy.push(0) - 1;
  // Wired like the server's own. The production poll (a second): the throttle's own wake-ups
  // keep the pace, and on PGlite the engine, the database and the receiver share one process.
  const d = createDispatcher({
    db: deps.db, logger: deps.logger, sender: deps.sender, listeners: deps.listeners, scope: "all", secretBox: deps.secretBox,
    signal: deps.signal, endpointChanges: deps.endpointChanges, clock: deps.clock,
    config: { ...deps.config.delivery, pollIntervalMs: 1_000 },
    observe: { ...noObserver, attempt: () => void attemptsBy[n]!++ },
  });
  extra.push(d);
  d.start();
}

/** Two workers on the same queue: one here, and a process on PostgreSQL or a second one here on PGlite. */
async function twoWorkers(): Promise<void> {
  localWorker();
  if (onPostgres) await workerProcesses.spawn({ ARS_DELIVERY_POLL_MS: "1000" });
  else localWorker();
}

/** The most arrivals within any one second (a window starting at each arrival). */
function busiestSecond(times: number[]): number {
  let most = 0;
  for (let i = 0, j = 0; i < times.length; i++) {
    while (j < times.length && times[j]! < times[i]! + 1000) j++;
    most = Math.max(most, j - i);
  }
  return most;
}

const EVENTS = 200;
const RATE = 5;

describe("per-endpoint rate limit", () => {
  it(
    `When two workers deliver ${EVENTS} events to an endpoint with rate_limit ${RATE}, Then no second sees more than ${RATE} + 1, the set arrives at that pace, every delivery succeeds at its first attempt, and another endpoint is not slowed`,
    async () => {
      const { server } = h;
      const org = await server.newOrg();
      // answers at once: a receiver that waited on something would hold the senders' connections
      const limited = await h.receiver();
      const unlimited = await h.receiver();
      const ep = await endpointFor(org.api, limited.url, { rate_limit: RATE });
      expect(ep.rate_limit).toBe(RATE);
      const other = await endpointFor(org.api, unlimited.url);
      expect(other.rate_limit).toBeNull();
      for (let i = 0; i < EVENTS; i++) await publish(org.api);
      await twoWorkers();
      await expect.poll(() => limited.requests.length, { timeout: 120_000, interval: 200 }).toBe(EVENTS);
      await expect.poll(() => unlimited.requests.length, { timeout: 10_000, interval: 50 }).toBe(EVENTS);

      // when each request arrived, before its body was read (the body's end adds the receiver's own turns)
      const times = limited.requests.map((r) => r.arrivedAt).sort((a, b) => a - b);
      const spanMs = times.at(-1)! - times[0]!;
      const paceMs = ((EVENTS - 1) * 1000) / RATE;
      const perSecond = new Map<number, number>();
      for (const t of times) perSecond.set(Math.floor(t / 1000), (perSecond.get(Math.floor(t / 1000)) ?? 0) + 1);
      const busiest = busiestSecond(times);
      console.log(
        `throttle (${onPostgres ? "PostgreSQL, a worker process" : "PGlite, two dispatchers"}): ${EVENTS} deliveries at rate_limit ${RATE} took ${Math.round(spanMs)} ms ` +
          `(pace ${paceMs} ms); busiest sliding second ${busiest}, busiest calendar second ${Math.max(...perSecond.values())}; attempts by the dispatchers here ${attemptsBy.join(", ")}`,
      );
      // Never above the limit by more than one in any second of the receiver's clock. (The claims
      // are spaced by the database; what arrives also carries the senders' and the receiver's
      // scheduling jitter, which a window sliding from each arrival catches more of: printed.)
      const [worst] = [...perSecond].sort((a, b) => b[1] - a[1]);
      const inWorst = times.filter((t) => Math.floor(t / 1000) === worst![0]).map((t) => Math.round(t % 1000));
      expect(worst![1], `arrivals in the busiest second, ms into it: ${inWorst.join(", ")}`).toBeLessThanOrEqual(maxPerSecond(RATE));
      expect(maxPerSecond(RATE)).toBe(RATE + 1);
      // at the limit's pace: not faster (the throttle), not much slower (the wake-ups)
      expect(spanMs).toBeGreaterThanOrEqual(paceMs - 250);
      expect(spanMs).toBeLessThanOrEqual(paceMs * 1.2);
      // both workers took their turns (of the 2 × EVENTS attempts, the worker process made the rest)
      for (const n of attemptsBy) expect(n).toBeGreaterThan(0);
      if (onPostgres) expect(attemptsBy[0]).toBeLessThan(2 * EVENTS);
      // another endpoint of the same events is not paced: all of it arrived before half of the limited one's
      const otherLast = Math.max(...unlimited.requests.map((r) => r.arrivedAt));
      expect(otherLast).toBeLessThan(times[EVENTS / 2]!);
      // waiting was no attempt: each delivery succeeded at its first, and only, attempt
      await expect
        .poll(async () => {
          const [row] = await server.server.db.query<{ ok: number; attempts: number }>(
            `SELECT count(*) FILTER (WHERE status = 'succeeded' AND attempt_count = 1)::int AS ok,
                    (SELECT count(*)::int FROM webhook_delivery_attempts WHERE endpoint_id = $1) AS attempts
               FROM webhook_deliveries WHERE endpoint_id = $1`,
            [ep.id],
          );
          return row;
        }, { timeout: 10_000, interval: 100 })
        .toEqual({ ok: EVENTS, attempts: EVENTS });
    },
    180_000,
  );
});
