// Rows a dispatcher gives back untried (its endpoint refused, its stream ended, its lease ran
// short) stay leased to it until the release commits: no other claim can take them meanwhile.
// The dispatcher counts them (`stats().releasing`), so whatever waits for it to be idle — its
// stop, a drain — waits for them too. PostgreSQL only: the release is held back by a row lock
// taken on a second connection, which PGlite (one in-process connection) cannot have.
import { randomUUID } from "node:crypto";
import pg from "pg";
import { afterAll, describe, expect, it, vi } from "vitest";
import { startSilentServer } from "@audit-review/test-kit/receiver";
import { RECEIVER_HOST, endpointFor, ingestQuestionSetFor, useDeliveryServer, type DeliveryHarness } from "./support.js";

const onPostgres = Boolean(process.env.TEST_DATABASE_URL);
const h: DeliveryHarness | undefined = onPostgres
  ? await useDeliveryServer({
    pollIntervalMs: 60_000,
    concurrency: 3,
    perEndpointConcurrency: 2,
    // the refusing endpoint rests past the test: its rows go back and stay unclaimed
    unreachableRestMs: 60_000,
    slowAttemptMs: 60_000,
  })
  : undefined;

let admin: pg.Client | undefined;
afterAll(async () => {
  await admin?.end();
});

describe.skipIf(!onPostgres)("rows given back (PostgreSQL only: set TEST_DATABASE_URL)", () => {
  it("When an endpoint's waiting rows go back while their release waits on a lock, Then the dispatcher counts them as releasing until it commits, and they are free afterwards", async () => {
    const server = h!.server;
    const dispatcher = server.server.deps.dispatcher!;
    const db = server.server.db;
    const org = await server.newOrg();
    const silent = await startSilentServer();
    const dead = await endpointFor(org.api, `https://${RECEIVER_HOST}:${silent.port}/dead`);
    const set = await ingestQuestionSetFor(org.api);
    const leased = async () => {
      const [row] = await db.query<{ n: number }>("SELECT count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = $1 AND lease_owner IS NOT NULL", [dead.id]);
      return row!.n;
    };
    // Three publishes, three wake-ups: each claim takes two more rows ahead of the endpoint's two
    // slots, whose handshakes hang at the silent receiver. Four rows wait.
    for (const n of [2, 4, 6]) {
      const events = Array.from({ length: 2 }, () => ({
        id: randomUUID(), type: "audit.completed" as const, data: { audit_id: randomUUID(), question_set_id: set.id, result: "passed" as const },
      }));
      const { error } = await org.api.POST("/v2/internal/event_batches", { body: { events } });
      expect(error).toBeUndefined();
      await vi.waitUntil(async () => (await leased()) === n, { timeout: 10_000, interval: 10 });
    }
    expect(silent.connections()).toBe(2);
    expect(dispatcher.stats()).toMatchObject({ sending: 2, waiting: 4 });

    admin = new pg.Client({ connectionString: server.server.deps.config.databaseUrl });
    await admin.connect();
    await admin.query("BEGIN");
    await admin.query("SELECT id FROM webhook_deliveries WHERE endpoint_id = $1 FOR UPDATE", [dead.id]);
    // the handshakes fail: the endpoint rests, and its four waiting rows are given back
    await silent.close();
    await vi.waitUntil(() => dispatcher.stats().releasing === 4, { timeout: 10_000, interval: 5 });
    expect(dispatcher.stats()).toMatchObject({ waiting: 0, releasing: 4 });
    expect(await leased()).toBe(6);

    await admin.query("COMMIT");
    await vi.waitUntil(() => dispatcher.stats().releasing === 0 && dispatcher.stats().held === 0, { timeout: 10_000, interval: 5 });
    // the two tried rows are recorded (their leases ended), the four given back are free
    expect(await leased()).toBe(0);
    const [{ n: tried }] = await db.query<{ n: number }>("SELECT count(*)::int AS n FROM webhook_delivery_attempts WHERE endpoint_id = $1", [dead.id]) as [{ n: number }];
    expect(tried).toBe(2);
  });
});
