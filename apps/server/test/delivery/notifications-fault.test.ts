// An operational notification made by a record batch (docs/delivery.md#operational-notifications)
// is stored in the statement or transaction that records the change it reports. When that commits
// but its answer is lost (the connection dropped between the commit and the answer), the recorder
// writes the same batch again, with the same lease tokens: the rewrite must find the change
// recorded and make no second notification, or each operational endpoint gets the same news twice.
// First the rewrite itself (both databases); then, on PostgreSQL, the connection really dropped
// right after the commit, by a proxy between the repository and the server.
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "../../src/db/client.js";
import { openDatabase } from "../../src/db/client.js";
import { newId } from "../../src/lib/ids.js";
import { deliveriesQueueRepo, type OutcomeRecord } from "../../src/repos/deliveries-queue.repo.js";
import { createTestDatabase, onPostgres, type TestDatabase } from "../harness/db.js";

const ORG = "0190a000-0000-7000-8000-00000000f001";
const OPS = "0190a000-0000-7000-8000-00000000f0ff";
const HOUR = 3_600_000;

let t: TestDatabase | undefined;

const ENDPOINT_COLUMNS = `id, org_id, url, status, kind, event_types, filter_question_set_ids, filter_audit_results, payload_format,
  payload_fields, payload_result_format, payload_responses_filter, payload_include_informational, auth_type, auth_config,
  secret_enc, secret_hint, legacy_signature, failing_since, failing_notice_at`;
const ENDPOINT_VALUES = `$1::uuid, '${ORG}', 'https://example.com/' || $1, 'enabled', $2, $3::text[], ARRAY[]::uuid[], 'all', 'standard_v1',
  ARRAY['responses'], 'normalized', 'all', false, 'none', '{}'::jsonb, '\\x01'::bytea, 'whsec_…abcd', false, $4::timestamptz, $4::timestamptz`;

/** The org's one operational endpoint, subscribed to every notification. */
async function seedOps(db: Database): Promise<void> {
  await db.query(`INSERT INTO webhook_endpoints (${ENDPOINT_COLUMNS}) VALUES (${ENDPOINT_VALUES})`, [
    OPS, "operational", ["webhook_endpoint.failing", "webhook_endpoint.disabled", "webhook_endpoint.recovered", "webhook_delivery.exhausted"], null,
  ]);
}

interface Leased {
  endpointId: string;
  deliveryId: string;
  createdAt: Date;
  leaseToken: string;
}

/**
 * An audit endpoint (failing since `failingSince`, its failing notification made then, or healthy
 * when null) with one delivery of an event, leased by a claim and `attempts` attempts in.
 */
async function seedLeased(db: Database, failingSince: Date | null, attempts: number): Promise<Leased> {
  const endpointId = newId();
  const leaseToken = `lease-${endpointId}`;
  await db.query(`INSERT INTO webhook_endpoints (${ENDPOINT_COLUMNS}) VALUES (${ENDPOINT_VALUES})`, [endpointId, "audit", ["audit.completed"], failingSince]);
  const [row] = await db.query<{ id: string; created_at: Date }>(
    `WITH ev AS (
       INSERT INTO events (id, org_id, type, audit_id, question_set_id, result, responses, occurred_at)
       VALUES (gen_random_uuid(), '${ORG}', 'audit.completed', gen_random_uuid(), gen_random_uuid(), 'failed', '[]'::jsonb, now())
       RETURNING id, audit_id)
     INSERT INTO webhook_deliveries (id, org_id, endpoint_id, event_id, event_type, audit_id, is_test, status, attempt_count,
                                     next_attempt_at, lease_owner, locked_until)
     SELECT gen_random_uuid(), '${ORG}', $1::uuid, ev.id, 'audit.completed', ev.audit_id, false, $2, $3, now(), $4, now() + interval '1 hour'
       FROM ev
     RETURNING id, created_at`,
    [endpointId, attempts ? "retrying" : "pending", attempts, leaseToken],
  );
  return { endpointId, deliveryId: row!.id, createdAt: row!.created_at, leaseToken };
}

/** A scheduled attempt's outcome for the leased delivery: a 200, or a 503 that leaves `status`. */
function outcomeOf(l: Leased, ok: boolean, status: "succeeded" | "retrying" | "failed", attemptCount: number): OutcomeRecord {
  const now = new Date();
  return {
    deliveryId: l.deliveryId, createdAt: l.createdAt, endpointId: l.endpointId, leaseToken: l.leaseToken, at: now,
    update: {
      status, attempt_count: attemptCount, next_attempt_at: status === "retrying" ? new Date(now.getTime() + 60_000) : null,
      last_response_status: ok ? 200 : 503, last_error_code: ok ? null : "unexpected_status", last_error_message: ok ? null : "503",
      delivered_at: ok ? now : null, next_trigger: "scheduled",
    },
    effect: ok ? "healthy" : "failing",
    attempt: { id: newId(), trigger: "scheduled", url: "https://example.com/", started_at: now, duration_ms: 3, response_body: null },
  };
}

/** The notifications stored about an endpoint, by type, each with its deliveries to the operational endpoint. */
async function noticesAbout(db: Database, endpointId: string) {
  return db.query<{ type: string; events: number; deliveries: number }>(
    `SELECT ev.type, count(DISTINCT ev.id)::int AS events, count(d.id)::int AS deliveries
       FROM events ev LEFT JOIN webhook_deliveries d ON d.event_id = ev.id AND d.endpoint_id = '${OPS}'
      WHERE ev.org_id = '${ORG}' AND ev.data->>'endpoint_id' = $1
      GROUP BY ev.type ORDER BY ev.type`,
    [endpointId],
  );
}

async function attemptsOf(db: Database, deliveryId: string): Promise<number> {
  const [row] = await db.query<{ n: number }>("SELECT count(*)::int AS n FROM webhook_delivery_attempts WHERE delivery_id = $1", [deliveryId]);
  return row!.n;
}

/**
 * The batches that make a notification: the endpoint as it is before, the outcome, the health
 * rule's limit, and the notifications (sorted) and disable the batch reports.
 */
const CASES = [
  {
    name: "a first failure starts the streak (webhook_endpoint.failing)",
    failingFor: null, attempts: 0, ok: false, status: "retrying", disableAfterMs: HOUR,
    notices: ["webhook_endpoint.failing"], disabled: null,
  },
  {
    name: "a delivery's last scheduled attempt fails (webhook_delivery.exhausted, with the streak's failing)",
    failingFor: null, attempts: 2, ok: false, status: "failed", disableAfterMs: HOUR,
    notices: ["webhook_delivery.exhausted", "webhook_endpoint.failing"], disabled: null,
  },
  {
    name: "a failure past the streak's limit disables the endpoint (webhook_endpoint.disabled)",
    failingFor: 2 * HOUR, attempts: 1, ok: false, status: "retrying", disableAfterMs: HOUR,
    notices: ["webhook_endpoint.disabled"], disabled: "failing",
  },
  {
    name: "a success ends the streak (webhook_endpoint.recovered, written by the successes' statement)",
    failingFor: HOUR, attempts: 1, ok: true, status: "succeeded", disableAfterMs: HOUR,
    notices: ["webhook_endpoint.recovered"], disabled: null,
  },
] as const;

async function seedCase(db: Database, c: (typeof CASES)[number]) {
  const leased = await seedLeased(db, c.failingFor === null ? null : new Date(Date.now() - c.failingFor), c.attempts);
  return { leased, outcome: outcomeOf(leased, c.ok, c.status, c.attempts + 1) };
}

const typesOf = (notices: readonly { type: string }[]) => notices.map((n) => n.type).sort();

describe("a record batch that made a notification, written again with the same lease tokens (its answer lost)", () => {
  beforeAll(async () => {
    t = await createTestDatabase();
    await seedOps(t.db);
  });

  afterAll(async () => {
    await t?.close();
  });

  it.each(CASES)("When $name and the batch is written twice, Then the notification exists once, queued once", async (c) => {
    const { db } = t!;
    const queue = deliveriesQueueRepo(db);
    const { leased, outcome } = await seedCase(db, c);

    const [first] = await queue.recordBatch([outcome], c.disableAfterMs);
    expect(first).toMatchObject({ status: "fulfilled", value: { recorded: true, disabled: c.disabled } });
    expect(first?.status === "fulfilled" && typesOf(first.value.notices)).toEqual(c.notices);

    // the recorder's rewrite: the same outcome, lease token and attempt id
    expect(await queue.recordBatch([outcome], c.disableAfterMs)).toEqual([{ status: "fulfilled", value: { recorded: true, disabled: null, notices: [] } }]);

    expect(await noticesAbout(db, leased.endpointId)).toEqual(c.notices.map((type) => ({ type, events: 1, deliveries: 1 })));
    expect(await attemptsOf(db, leased.deliveryId)).toBe(1);
  });
});

/**
 * A TCP proxy to PostgreSQL that, once armed, lets the record statement ("ars_record_batch")
 * through and drops the connection on the server's first ReadyForQuery after it that says idle:
 * the batch has committed (its COMMIT, or its autocommit statement's Sync), and the answer never
 * reaches the client.
 */
async function lossyProxy(target: { host: string; port: number }) {
  let armed = false;
  let dropped = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(target);
    sockets.add(client).add(upstream);
    let recording = false;
    let tail = "";
    let pending = Buffer.alloc(0);
    const drop = () => {
      dropped++;
      armed = false;
      client.destroy();
      upstream.destroy();
    };
    client.on("data", (chunk) => {
      // the statement's name is in each Bind it sends (a tail of the last chunk bridges a split name)
      const text = tail + chunk.toString("latin1");
      tail = text.slice(-16);
      if (armed && text.includes("ars_record_batch")) recording = true;
      upstream.write(chunk);
    });
    upstream.on("data", (chunk) => {
      if (!recording) {
        client.write(chunk);
        return;
      }
      // whole messages (type, int32 length, body); a ReadyForQuery 'Z' with status 'I' ends the commit
      pending = Buffer.concat([pending, chunk]);
      let at = 0;
      while (pending.length - at >= 5) {
        const length = pending.readInt32BE(at + 1);
        if (pending.length - at < 1 + length) break;
        if (pending[at] === 0x5a && pending[at + 5] === 0x49) return drop();
        at += 1 + length;
      }
      client.write(pending.subarray(0, at));
      pending = pending.subarray(at);
    });
    for (const [a, b] of [[client, upstream], [upstream, client]] as const) {
      a.on("error", () => b.destroy());
      a.on("close", () => {
        sockets.delete(a);
        b.destroy();
      });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    arm: () => void (armed = true),
    dropped: () => dropped,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe.skipIf(!onPostgres)("a record batch that made a notification, its connection dropped between commit and answer (PostgreSQL only: set TEST_DATABASE_URL)", () => {
  let direct: TestDatabase | undefined;
  let proxy: Awaited<ReturnType<typeof lossyProxy>> | undefined;
  let viaProxy: Database | undefined;

  beforeAll(async () => {
    direct = await createTestDatabase();
    await seedOps(direct.db);
    const url = new URL(direct.databaseUrl!);
    proxy = await lossyProxy({ host: url.hostname, port: Number(url.port || 5432) });
    url.hostname = "127.0.0.1";
    url.port = String(proxy.port);
    viaProxy = await openDatabase({ databaseUrl: url.toString() });
  });

  afterAll(async () => {
    await viaProxy?.close();
    await proxy?.close();
    await direct?.close();
  });

  it.each(CASES)("When $name and the answer is lost, Then the batch is reported failed, and its rewrite finds it recorded and makes no second notification", async (c) => {
    const queue = deliveriesQueueRepo(viaProxy!);
    const { leased, outcome } = await seedCase(direct!.db, c);
    const before = proxy!.dropped();

    proxy!.arm();
    const [lost] = await queue.recordBatch([outcome], c.disableAfterMs);
    expect(proxy!.dropped() - before, "connections dropped after the batch committed").toBe(1);
    expect(lost).toMatchObject({ status: "rejected" });
    // committed nonetheless: the change and its notification are stored
    expect(await noticesAbout(direct!.db, leased.endpointId)).toEqual(c.notices.map((type) => ({ type, events: 1, deliveries: 1 })));

    // what the recorder does with a failed write: the same batch again, on another connection
    expect(await queue.recordBatch([outcome], c.disableAfterMs)).toEqual([{ status: "fulfilled", value: { recorded: true, disabled: null, notices: [] } }]);
    expect(await noticesAbout(direct!.db, leased.endpointId)).toEqual(c.notices.map((type) => ({ type, events: 1, deliveries: 1 })));
    expect(await attemptsOf(direct!.db, leased.deliveryId)).toBe(1);
  });
});
