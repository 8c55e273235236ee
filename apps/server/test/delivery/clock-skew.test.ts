// One clock (README, "Scaling out"): every process judges time by a clock kept in step with the
// database's (src/clock/database-clock.ts), so a worker on a host whose clock is wrong neither
// takes a row another worker's lease still covers, nor sends a retry early, nor hides an attempt,
// nor drops a day of data still inside the retention window. The workers here are real
// `ars worker` processes whose host clock is moved (test/harness/skewed-host-clock.mjs); the API
// and the database keep the right time. PostgreSQL only: PGlite runs inside the process, on that
// process's clock, so there the host's clock is the database's.
import { afterEach, describe, expect, it } from "vitest";
import type { TestOrg } from "../harness/server.js";
import { attemptsOf } from "./listener-streams.js";
import { deliveriesOf, endpointFor, publish, useDeliveryServer, type DeliveryHarness } from "./support.js";
import { SKEWED_HOST_CLOCK, useWorkerProcesses, type WorkerProcess } from "./worker-process.js";

const onPostgres = Boolean(process.env.TEST_DATABASE_URL);
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

// The API alone: every delivery here is sent by the skewed worker.
const h: DeliveryHarness | undefined = onPostgres ? await useDeliveryServer({}, { dispatcher: false }) : undefined;
const workerProcesses = useWorkerProcesses(() => h!);

const started: WorkerProcess[] = [];
afterEach(async () => {
  for (const w of started.splice(0)) {
    w.child.kill("SIGTERM");
    await w.exited;
  }
});

async function workerOnHostClock(skewMs: number, env: Record<string, string> = {}): Promise<WorkerProcess> {
  const w = await workerProcesses.spawn({ ARS_TEST_HOST_CLOCK_SKEW_MS: String(skewMs), ARS_DELIVERY_POLL_MS: "100", ...env }, ["--import", SKEWED_HOST_CLOCK]);
  started.push(w);
  return w;
}

const sql = <T>(text: string, params: unknown[] = []) => h!.server.server.db.query<T>(text, params);

describe.skipIf(!onPostgres)("a worker whose host clock is wrong (PostgreSQL only: PGlite runs on its process's clock)", () => {
  let org: TestOrg;

  it("When its host clock runs an hour fast, Then it takes no row another worker's lease still covers, sends no retry before it is due, and sends what is due", async () => {
    org = await h!.server.newOrg();
    const r = await h!.receiver();
    const ep = await endpointFor(org.api, r.url);
    const leased = await publish(org.api);
    const retry = await publish(org.api);
    // another worker's lease with ten minutes left, a retry due in ten minutes: by the database's clock
    await sql("UPDATE webhook_deliveries SET lease_owner = 'another-worker:1', locked_until = now() + interval '10 minutes' WHERE endpoint_id = $1 AND event_id = $2", [ep.id, leased.id]);
    await sql("UPDATE webhook_deliveries SET status = 'retrying', next_attempt_at = now() + interval '10 minutes' WHERE endpoint_id = $1 AND event_id = $2", [ep.id, retry.id]);
    const due = await publish(org.api);

    const worker = await workerOnHostClock(HOUR, { ARS_LOG_LEVEL: "info" });
    await r.nextRequest({ timeoutMs: 15_000 });
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(r.requests.map((q) => q.headers["webhook-id"])).toEqual([due.id]);
    // the operator is told the host's clock is off: a log line at start, and the metric
    expect(worker.output()).toContain("this host's clock differs from the database's");
    const listening = worker.output().split("\n").find((l) => l.includes('"msg":"metrics listening"'));
    const metrics = listening ? /"url":"([^"]+)"/.exec(listening) : null;
    expect(metrics, "the worker's metrics listener").not.toBeNull();
    const skew = Number(/^ars_host_clock_skew_seconds (\S+)$/m.exec(await (await fetch(metrics![1]!)).text())![1]);
    expect(skew).toBeGreaterThan(3_590);
    expect(skew).toBeLessThan(3_610);
  });

  it("When its host clock runs an hour slow, Then it sends a due delivery at once, and the delivery's first attempt is listed", async () => {
    org = await h!.server.newOrg();
    const r = await h!.receiver();
    const ep = await endpointFor(org.api, r.url);
    await workerOnHostClock(-HOUR);
    const sent = await publish(org.api);
    await r.nextRequest({ timeoutMs: 15_000 });
    await expect.poll(async () => (await deliveriesOf(org.api, ep.id))[0]?.status, { timeout: 15_000 }).toBe("succeeded");
    const [delivery] = await deliveriesOf(org.api, ep.id);
    expect(delivery!.event_id).toBe(sent.id);
    const attempts = await attemptsOf(org.api, delivery!.id);
    expect(attempts.map((a) => a.attempt_number)).toEqual([1]);
    // stamped by the database's clock: it did not start before its delivery was created
    expect(new Date(attempts[0]!.started_at).getTime()).toBeGreaterThanOrEqual(new Date(delivery!.created_at).getTime());
  });

  it("When its host clock jumps 40 days ahead, Then its housekeeping drops no day inside the window and creates none of the far future", async () => {
    org = await h!.server.newOrg();
    const r = await h!.receiver();
    const ep = await endpointFor(org.api, r.url);
    await publish(org.api);
    const partitionsBefore = await sql<{ name: string }>("SELECT relname AS name FROM pg_class WHERE relname LIKE 'webhook_deliveries_p%' ORDER BY 1");
    const worker = await workerOnHostClock(40 * DAY, { ARS_LOG_LEVEL: "info" });
    await expect.poll(() => worker.output().includes('"msg":"housekeeping run"'), { timeout: 15_000 }).toBe(true);
    const run = worker.output().split("\n").find((l) => l.includes('"msg":"housekeeping run"'))!;
    const summary = (JSON.parse(run) as { housekeeping: { partitionsDropped: string[]; partitionsCreated: string[] } }).housekeeping;
    expect(summary.partitionsDropped).toEqual([]);
    const farFuture = new Date(Date.now() + 20 * DAY).toISOString().slice(0, 10).replaceAll("-", "");
    expect(summary.partitionsCreated.filter((p) => p.slice(-8) >= farFuture)).toEqual([]);
    expect(await sql("SELECT relname AS name FROM pg_class WHERE relname LIKE 'webhook_deliveries_p%' ORDER BY 1")).toEqual(partitionsBefore);
    // today's delivery is still there, and sent
    await r.nextRequest({ timeoutMs: 15_000 });
    await expect.poll(async () => (await deliveriesOf(org.api, ep.id))[0]?.status, { timeout: 15_000 }).toBe("succeeded");
  });
});
