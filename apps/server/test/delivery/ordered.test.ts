// Ordered endpoints (`delivery_order: ordered`, docs/delivery.md#ordered-endpoints): at most one
// delivery in flight, attempted in event order (occurred_at, then event id), a retrying delivery
// holding every later one. The events are published first, in shuffled order, and the workers
// started after: on PostgreSQL two real `ars worker` processes, one killed with SIGKILL halfway;
// on PGlite (one in-process connection) two dispatchers in this process, one stopped halfway. The
// receiver is a real HTTPS server that fails 30 % of first attempts.
import { afterAll, describe, expect, it } from "vitest";
import type { Dispatcher } from "../../src/delivery/dispatcher.js";
import { dispatcherFrom } from "../harness/drain.js";
import { ingestQuestionSet } from "../harness/factories.js";
import { endpointFor, publish, useDeliveryServer } from "./support.js";
import { useWorkerProcesses, type WorkerProcess } from "./worker-process.js";

const onPostgres = Boolean(process.env.TEST_DATABASE_URL);
// The API alone: the workers are started by the test.
const h = await useDeliveryServer({}, { dispatcher: false });
const workerProcesses = useWorkerProcesses(() => h);

const local: Dispatcher[] = [];
afterAll(async () => {
  for (const d of local) await d.stop();
});

const EVENTS = 500;
const SCHEDULE_MS = [50, 100, 200, 400];
const LEASE_MS = 2_000;

interface Worker {
  /** ends the worker abruptly (SIGKILL) where it can, else stops it */
  end(): Promise<void>;
}

async function startWorker(): Promise<Worker> {
  if (onPostgres) {
    const w: WorkerProcess = await workerProcesses.spawn({
      ARS_DELIVERY_POLL_MS: "50",
      ARS_RETRY_SCHEDULE_MS: SCHEDULE_MS.join(","),
      ARS_DELIVERY_LEASE_MS: String(LEASE_MS),
    });
    return {
      async end() {
        w.child.kill("SIGKILL");
        await w.exited;
      },
    };
  }
  const deps = h.server.server.deps;
  const d = dispatcherFrom(deps, { config: { ...deps.config.delivery, scheduleMs: SCHEDULE_MS, jitter: 0 } });
  local.push(d);
  d.start();
  return { end: () => d.stop() };
}

describe("ordered endpoints", () => {
  it(
    `When ${EVENTS} events queued out of order are delivered by two workers, one ended halfway, to an ordered endpoint failing 30 % of first attempts, Then the receiver sees each succeed in event order, one at a time`,
    async () => {
      const { server } = h;
      const org = await server.newOrg();
      const set = await ingestQuestionSet(org.api);
      const base = Date.parse("2026-11-26T12:00:00.000Z");
      // events pair up on one occurred_at: the event id decides between the two
      const events = Array.from({ length: EVENTS }, (_, i) => ({ occurred_at: new Date(base + Math.floor(i / 2) * 1000).toISOString(), i }));
      const seen = new Set<string>();
      const succeeded: string[] = [];
      let inFlight = 0;
      let mostInFlight = 0;
      const r = await h.receiver({
        handler: async (req, res) => {
          inFlight++;
          mostInFlight = Math.max(mostInFlight, inFlight);
          const id = String(req.headers["webhook-id"]);
          const first = !seen.has(id);
          seen.add(id);
          // a fixed 30 % of events fail their first attempt
          const fails = first && parseInt(id.replace(/-/g, "").slice(-4), 16) % 10 < 3;
          await new Promise((done) => setTimeout(done, 2));
          inFlight--;
          if (fails) return void res.writeHead(500).end();
          succeeded.push(id);
          res.writeHead(200).end();
        },
      });
      const ep = await endpointFor(org.api, r.url, { delivery_order: "ordered" });
      expect(ep.delivery_order).toBe("ordered");

      // published in a shuffled order: the order of the events is not the order they were stored in
      const shuffled = [...events].sort((a, b) => ((a.i * 7919) % EVENTS) - ((b.i * 7919) % EVENTS));
      const ids: { id: string; occurred_at: string }[] = [];
      for (const e of shuffled) {
        const p = await publish(org.api, { occurred_at: e.occurred_at, data: { question_set_id: set.id } });
        ids.push({ id: p.id, occurred_at: e.occurred_at });
      }
      const expected = ids.sort((a, b) => a.occurred_at.localeCompare(b.occurred_at) || a.id.localeCompare(b.id)).map((e) => e.id);

      const doomed = await startWorker();
      await startWorker();
      await expect.poll(() => new Set(succeeded).size, { timeout: 60_000, interval: 20 }).toBeGreaterThanOrEqual(EVENTS / 2);
      await doomed.end();
      await expect.poll(() => new Set(succeeded).size, { timeout: 120_000, interval: 50 }).toBe(EVENTS);

      // A worker killed after its receiver answered but before it recorded the outcome leaves
      // that delivery to be sent again once its lease runs out (at least once): the same event,
      // next, before any later one. Collapsing such repeats leaves event order exactly.
      const collapsed = succeeded.filter((id, i) => i === 0 || succeeded[i - 1] !== id);
      const repeats = succeeded.length - collapsed.length;
      console.log(
        `ordered (${onPostgres ? "PostgreSQL, two worker processes, one SIGKILLed" : "PGlite, two dispatchers, one stopped"}): ${EVENTS} events, ` +
          `${seen.size} distinct, ${r.requests.length} requests, ${repeats} repeated after the kill, most in flight ${mostInFlight}`,
      );
      expect(collapsed).toEqual(expected);
      expect(repeats).toBeLessThanOrEqual(1);
      expect(mostInFlight).toBe(1);
      // the 30 % did fail first: retries happened, and held the rest back
      expect(r.requests.length).toBeGreaterThanOrEqual(EVENTS + EVENTS / 10);
      // the last answer's outcome is recorded a moment after the receiver saw it
      const recorded = async () =>
        (await server.server.db.query<{ ok: number }>(
          "SELECT count(*) FILTER (WHERE status = 'succeeded')::int AS ok FROM webhook_deliveries WHERE endpoint_id = $1",
          [ep.id],
        ))[0]!.ok;
      await expect.poll(recorded, { timeout: 10_000, interval: 50 }).toBe(EVENTS);
    },
    240_000,
  );
});
