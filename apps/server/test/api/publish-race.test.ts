// An event id is stored once across every day partition, though no index can say so: publishing
// locks the id, then looks for it with a snapshot taken after the lock is held, all inside the one
// statement that stores the event (repos/events.repo.ts, `ars_unknown_event_ids`). These hold
// what that buys against a concurrent publisher of the same id, and that the look-up reads the
// ids' own table rather than every day kept, which need a second connection: PostgreSQL only.
import { randomUUID } from "node:crypto";
import type { PublishEventRequest } from "@audit-review/api-types/internal";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { createEndpoint, ingestQuestionSet, useApiServer } from "../harness/factories.js";
import type { Api } from "../harness/server.js";

const onPostgres = Boolean(process.env.TEST_DATABASE_URL);
const server = onPostgres ? await useApiServer() : undefined;
const clients: pg.Client[] = [];

afterAll(async () => {
  await Promise.all(clients.map((c) => c.end().catch(() => undefined)));
});

async function connect(): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: server!.server.deps.config.databaseUrl });
  await c.connect();
  clients.push(c);
  return c;
}

async function eventFor(api: Api): Promise<PublishEventRequest> {
  const set = await ingestQuestionSet(api);
  return { id: randomUUID(), type: "audit.completed", data: { audit_id: randomUUID(), result: "failed", document_id: "doc-race", question_set_id: set.id } };
}

const deliveriesOf = async (admin: pg.Client, eventId: string) =>
  (await admin.query<{ n: number }>("SELECT count(*)::int AS n FROM webhook_deliveries WHERE event_id = $1", [eventId])).rows[0]!.n;
const storedCopies = async (admin: pg.Client, eventId: string) =>
  (await admin.query<{ n: number }>("SELECT count(*)::int AS n FROM events WHERE id = $1", [eventId])).rows[0]!.n;

/** Waits until a statement of this database waits on an advisory lock (the publish under test). */
async function waitingOnAdvisoryLock(admin: pg.Client): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const { rows } = await admin.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = 'advisory'",
    );
    if (rows[0]!.n > 0) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error("no statement came to wait on the event id's lock");
}

describe.skipIf(!onPostgres)("publishing one event id from two places at once (PostgreSQL only: set TEST_DATABASE_URL)", () => {
  it("When another transaction stores the id first, Then the publish waits for it, sees its row, and stores and fans out nothing", async () => {
    const { api } = await server!.newOrg();
    await createEndpoint(api);
    const event = await eventFor(api);
    const first = await api.POST("/v2/internal/events", { body: event });
    expect(first.data).toMatchObject({ created: true, deliveries_created: 1 });
    const again = { ...event, id: randomUUID() };

    // The other publisher: holds the id's lock (by the same function) and its stored row, uncommitted.
    const other = await connect();
    const admin = await connect();
    await other.query("BEGIN");
    const { rows } = await other.query<{ id: string }>("SELECT id FROM ars_unknown_event_ids(ARRAY[$1::uuid]) AS u(id)", [again.id]);
    expect(rows.map((r) => r.id)).toEqual([again.id]);
    await other.query(
      `INSERT INTO events (id, org_id, type, audit_id, question_set_id, document_id, result, responses, occurred_at, created_at)
       SELECT $1, org_id, type, audit_id, question_set_id, document_id, result, responses, occurred_at, created_at FROM events WHERE id = $2`,
      [again.id, event.id],
    );

    // This publish starts now: its statement's snapshot cannot see the other's row, ever.
    const racing = api.POST("/v2/internal/events", { body: again });
    await waitingOnAdvisoryLock(admin);
    await other.query("COMMIT");
    const answered = await racing;

    // Had the id been looked up with the statement's own snapshot, it would be stored twice and
    // fanned out again.
    expect(answered.response.status).toBe(200);
    expect(answered.data).toMatchObject({ created: false, deliveries_created: 0 });
    expect(await storedCopies(admin, again.id)).toBe(1);
    expect(await deliveriesOf(admin, again.id)).toBe(0);
  });

  it("When ten requests publish the same new event at once, Then one stores it, the others answer created false, and it fans out once", async () => {
    const { api } = await server!.newOrg();
    await createEndpoint(api);
    await createEndpoint(api);
    const event = await eventFor(api);
    const admin = await connect();

    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        i % 2 ? api.POST("/v2/internal/events", { body: event }) : api.POST("/v2/internal/event_batches", { body: { events: [event] } }),
      ),
    );

    const created = answers.map((a) => {
      expect(a.response.status, JSON.stringify(a.error)).toBeLessThan(300);
      const d = a.data as { created?: boolean; data?: { created: boolean }[] };
      return d.data ? d.data[0]!.created : d.created;
    });
    expect(created.filter(Boolean)).toHaveLength(1);
    expect(await storedCopies(admin, event.id)).toBe(1);
    expect(await deliveriesOf(admin, event.id)).toBe(2);
  });

  it("When another day's partition of events is locked, Then a publish and a re-send still answer: the id's look-up reads event_ids, not every day kept", async () => {
    const { api } = await server!.newOrg();
    await createEndpoint(api);
    const event = await eventFor(api);
    const admin = await connect();
    // a day ahead of today, which housekeeping created and no publish of today writes
    const { rows: [ahead] } = await admin.query<{ name: string }>(
      `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = 'events'::regclass AND c.relname > 'events_p' || to_char(now() AT TIME ZONE 'UTC' + interval '1 day', 'YYYYMMDD')
        ORDER BY c.relname LIMIT 1`,
    );
    expect(ahead, "a day partition of events ahead of tomorrow").toBeDefined();
    const locker = await connect();
    await locker.query("BEGIN");
    await locker.query(`LOCK TABLE "${ahead!.name}" IN ACCESS EXCLUSIVE MODE`);
    try {
      // a look-up that probed every day's primary key would wait for this lock (to the test's timeout)
      const within = <T>(p: Promise<T>) =>
        Promise.race([p, new Promise<never>((_, reject) => setTimeout(() => reject(new Error("the publish waited on another day's partition")), 5_000))]);
      const first = await within(api.POST("/v2/internal/events", { body: event }));
      expect(first.data).toMatchObject({ created: true, deliveries_created: 1 });
      const again = await within(api.POST("/v2/internal/event_batches", { body: { events: [event] } }));
      expect(again.data?.data[0]).toMatchObject({ created: false });
    } finally {
      await locker.query("ROLLBACK");
    }
    expect(await storedCopies(admin, event.id)).toBe(1);
  });
});
