// The database drops the service's connections while the engine delivers (a failover, an
// operator's pg_terminate_backend, a proxy restart). An outcome whose write was cut off must be
// written again, not lost: a lost one leaves its row leased but unrecorded, so the row is sent a
// second time once the lease runs out, and the first send is missing from the attempt history
// (docs/delivery.md#recording-outcomes). PostgreSQL only: PGlite is one in-process connection
// that cannot be dropped.
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { endpointFor, publish, useDeliveryServer, type DeliveryHarness } from "./support.js";

const onPostgres = Boolean(process.env.TEST_DATABASE_URL);
// Short enough that an outcome lost to a dropped connection is sent again within the test.
const LEASE_MS = 3_000;

const h: DeliveryHarness | undefined = onPostgres
  ? await useDeliveryServer({ leaseMs: LEASE_MS, perEndpointConcurrency: 2 })
  : undefined;

let admin: pg.Client | undefined;
afterAll(async () => {
  await admin?.query("DROP TRIGGER IF EXISTS slow_record ON webhook_delivery_attempts").catch(() => undefined);
  await admin?.end();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Waits until an outcome batch is being written (its statement inserts attempt rows), then
 * terminates every connection of the service to its database, the admin's own excepted.
 * Resolves with how many were terminated (0 when no batch was written within 3 s).
 */
async function dropConnectionsMidRecord(db: pg.Client): Promise<number> {
  for (const deadline = Date.now() + 3_000; Date.now() < deadline; ) {
    const [row] = (
      await db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'active' AND query LIKE '%jsonb_to_recordset%'`,
      )
    ).rows;
    if (row!.n > 0) {
      const killed = await db.query(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()",
      );
      return killed.rowCount ?? 0;
    }
    await sleep(2);
  }
  return 0;
}

describe.skipIf(!onPostgres)("connections dropped under load (PostgreSQL only: set TEST_DATABASE_URL; PGlite has no connections to drop)", () => {
  it("When the service's connections are terminated while outcomes are written, Then every delivery is sent once, its attempt is in the history, and the engine goes on by itself", async () => {
    const { server } = h!;
    admin = new pg.Client({ connectionString: server.server.deps.config.databaseUrl });
    await admin.connect();
    // Each outcome batch takes a little longer, so the terminations reliably land while one is
    // on the wire (the batch's statement inserts its attempt rows).
    await admin.query(`
      CREATE OR REPLACE FUNCTION slow_record() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN PERFORM pg_sleep(0.03); RETURN NULL; END $$;
      CREATE TRIGGER slow_record AFTER INSERT ON webhook_delivery_attempts FOR EACH STATEMENT EXECUTE FUNCTION slow_record();
    `);

    const org = await server.newOrg();
    let opened = false;
    const waiters: (() => void)[] = [];
    const r = await h!.receiver({
      handler: async (_req, res) => {
        // held until every event is published, then each answered after a few milliseconds
        if (!opened) await new Promise<void>((resolve) => waiters.push(resolve));
        await sleep(10);
        res.writeHead(204).end();
      },
    });
    const endpoints = await Promise.all([0, 1, 2].map((i) => endpointFor(org.api, `${r.url}/${i}`)));
    const EVENTS = 100;
    for (let i = 0; i < EVENTS; i++) await publish(org.api);
    opened = true;
    for (const w of waiters.splice(0)) w();

    let midRecord = 0;
    for (let i = 0; i < 4; i++) {
      if (await dropConnectionsMidRecord(admin)) midRecord++;
      await sleep(100);
    }
    expect(midRecord, "terminations that hit an outcome batch on the wire").toBeGreaterThanOrEqual(2);

    const states = async () =>
      (
        await admin!.query<{ status: string; n: number }>(
          "SELECT status, count(*)::int AS n FROM webhook_deliveries WHERE org_id = $1 GROUP BY status ORDER BY status",
          [org.orgId],
        )
      ).rows;
    await expect.poll(states, { timeout: 30_000, interval: 100 }).toEqual([{ status: "succeeded", n: 3 * EVENTS }]);
    // Past a lease: a row whose outcome was lost would have been sent again by now.
    await sleep(LEASE_MS + 500);

    const arrivals = new Map<string, number>();
    for (const q of r.requests) {
      const key = `${q.path.split("/").pop()} ${String(q.headers["webhook-id"])}`;
      arrivals.set(key, (arrivals.get(key) ?? 0) + 1);
    }
    expect(arrivals.size).toBe(3 * EVENTS);
    expect([...arrivals].filter(([, n]) => n !== 1), "sent more than once").toEqual([]);

    // Every arrival has its attempt row, and each delivery counts the attempts it made.
    const rows = (
      await admin.query<{ endpoint_id: string; event_id: string; attempt_count: number; attempts: number }>(
        `SELECT d.endpoint_id, d.event_id, d.attempt_count,
                (SELECT count(*)::int FROM webhook_delivery_attempts a WHERE a.delivery_id = d.id) AS attempts
           FROM webhook_deliveries d WHERE d.org_id = $1`,
        [org.orgId],
      )
    ).rows;
    const mismatched = rows.filter((row) => {
      const sent = arrivals.get(`${endpoints.findIndex((e) => e.id === row.endpoint_id)} ${row.event_id}`) ?? 0;
      return row.attempt_count !== sent || row.attempts !== sent;
    });
    expect(mismatched, "attempt history differs from what the receiver got").toEqual([]);

    // No restart: the same engine delivers what is published now.
    await admin.query("DROP TRIGGER slow_record ON webhook_delivery_attempts");
    const before = r.requests.length;
    for (let i = 0; i < 3; i++) await publish(org.api);
    await expect.poll(states, { timeout: 10_000, interval: 50 }).toEqual([{ status: "succeeded", n: 3 * (EVENTS + 3) }]);
    expect(r.requests.length - before).toBe(9);
  });
});
