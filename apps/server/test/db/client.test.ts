import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { uuidv7 } from "uuidv7";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDatabase } from "../../src/db/client.js";
import { migrate } from "../../src/db/migrate.js";
import { Prisma } from "../../src/generated/prisma/client.js";
import { createTestDatabase, onPostgres, type TestDatabase } from "../harness/db.js";

let t: TestDatabase;
const orgId = uuidv7();

beforeAll(async () => {
  t = await createTestDatabase();
  await t.db.prisma.org.create({ data: { id: orgId, name: "Acme" } });
});

afterAll(async () => {
  await t?.close();
});

function knownError(error: unknown): { code: string } {
  expect(error).toBeInstanceOf(Prisma.PrismaClientKnownRequestError);
  return error as Prisma.PrismaClientKnownRequestError;
}

async function newEndpoint(): Promise<string> {
  const id = uuidv7();
  await t.db.prisma.webhookEndpoint.create({
    data: {
      id,
      org_id: orgId,
      url: "https://receiver.example.com/hook",
      status: "enabled",
      event_types: ["audit.completed"],
      filter_question_set_ids: [],
      filter_audit_results: "all",
      payload_format: "standard_v1",
      payload_fields: ["data.result"],
      payload_result_format: "normalized",
      payload_responses_filter: "all",
      payload_include_informational: false,
      auth_type: "none",
      auth_config: {},
      secret_enc: Buffer.from([1, 2, 3]),
      secret_hint: "whsec_…abcd",
      legacy_signature: false,
    },
  });
  return id;
}

/** A stored event: its id and created_at (its deliveries carry the same created_at). */
async function newEvent(): Promise<{ id: string; created_at: Date }> {
  const id = uuidv7();
  return t.db.prisma.event.create({
    select: { id: true, created_at: true },
    data: {
      id,
      org_id: orgId,
      type: "audit.completed",
      audit_id: uuidv7(),
      question_set_id: uuidv7(),
      result: "passed",
      responses: [{ questionId: "q1", answer: "yes" }],
      occurred_at: new Date("2026-11-21T09:30:00.000Z"),
    },
  });
}

describe(`openDatabase (${onPostgres ? "PostgreSQL" : "PGlite"})`, () => {
  it("reports its kind", () => {
    expect(t.db.kind).toBe(onPostgres ? "postgres" : "pglite");
  });

  it("returns the same JavaScript values for raw SQL on both engines", async () => {
    const [row] = await t.db.query(
      `SELECT count(*) AS n, 9007199254740993::int8 AS big, DATE '2026-11-21' AS day,
              '\\x00ff'::bytea AS bytes, '{"a":[1,2]}'::jsonb AS doc, 1.50::numeric AS amount,
              ARRAY['a','b']::text[] AS list, $1::uuid[] AS ids,
              TIMESTAMPTZ '2026-11-21 09:30:00.123+00' AS at, NULL::text AS nothing`,
      [["0190a000-0000-7000-8000-000000000001"]],
    );
    expect(row).toEqual({
      n: 1,
      big: 9007199254740993n,
      day: new Date("2026-11-21T00:00:00.000Z"),
      bytes: Buffer.from([0x00, 0xff]),
      doc: { a: [1, 2] },
      amount: "1.50",
      list: ["a", "b"],
      ids: ["0190a000-0000-7000-8000-000000000001"],
      at: new Date("2026-11-21T09:30:00.123Z"),
      nothing: null,
    });
    expect(Buffer.isBuffer(row?.bytes)).toBe(true);
  });

  it("accepts Date, Buffer, array and JSON-string parameters the same way on both engines", async () => {
    const [row] = await t.db.query<{ at: Date; bytes: Buffer; list: string[]; doc: unknown }>(
      "SELECT $1::timestamptz AS at, $2::bytea AS bytes, $3::text[] AS list, $4::jsonb AS doc",
      [new Date("2026-01-02T03:04:05.678Z"), Buffer.from("hi"), ["x", "y"], JSON.stringify([{ k: 1 }])],
    );
    expect(row).toEqual({
      at: new Date("2026-01-02T03:04:05.678Z"),
      bytes: Buffer.from("hi"),
      list: ["x", "y"],
      doc: [{ k: 1 }],
    });
  });

  it("commits a raw transaction and rolls one back when it throws", async () => {
    const kept = uuidv7();
    const dropped = uuidv7();
    await t.db.transaction(async (tx) => {
      await tx.query("INSERT INTO orgs (id, name) VALUES ($1, 'kept')", [kept]);
    });
    await expect(
      t.db.transaction(async (tx) => {
        await tx.query("INSERT INTO orgs (id, name) VALUES ($1, 'dropped')", [dropped]);
        throw new Error("changed my mind");
      }),
    ).rejects.toThrow("changed my mind");
    const rows = await t.db.query<{ id: string }>("SELECT id FROM orgs WHERE id = ANY($1::text[])", [[kept, dropped]]);
    expect(rows.map((r) => r.id)).toEqual([kept]);
  });

  it("runs multi-statement scripts with exec", async () => {
    const a = uuidv7();
    const b = uuidv7();
    await t.db.exec(`INSERT INTO orgs (id, name) VALUES ('${a}', 'a'); INSERT INTO orgs (id, name) VALUES ('${b}', 'b');`);
    expect(await t.db.query("SELECT count(*) AS n FROM orgs WHERE id IN ($1, $2)", [a, b])).toEqual([{ n: 2 }]);
  });

  it("maps a unique violation to Prisma's P2002 (token hash)", async () => {
    const data = { org_id: orgId, name: "ci", token_hash: "a".repeat(64), scopes: ["webhooks:read"] };
    await t.db.prisma.apiToken.create({ data: { id: uuidv7(), ...data } });
    const error = await t.db.prisma.apiToken.create({ data: { id: uuidv7(), ...data } }).catch((e: unknown) => e);
    expect(knownError(error).code).toBe("P2002");
  });

  it("allows one delivery per (event, endpoint): the second insert is P2002", async () => {
    const endpointId = await newEndpoint();
    const event = await newEvent();
    const delivery = () => ({
      id: uuidv7(),
      org_id: orgId,
      endpoint_id: endpointId,
      event_id: event.id,
      // a delivery carries its event's created_at (a trigger refuses any other)
      created_at: event.created_at,
      event_type: "audit.completed",
      is_test: false,
      status: "pending",
      next_attempt_at: new Date(),
    });
    await t.db.prisma.webhookDelivery.create({ data: delivery() });
    const error = await t.db.prisma.webhookDelivery.create({ data: delivery() }).catch((e: unknown) => e);
    expect(knownError(error).code).toBe("P2002");
    // And the raw-SQL fan-out can rely on the same constraint.
    const d = delivery();
    const inserted = await t.db.query(
      `INSERT INTO webhook_deliveries (id, org_id, endpoint_id, event_id, event_type, is_test, status, next_attempt_at, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (event_id, endpoint_id, created_at) DO NOTHING RETURNING id`,
      [d.id, d.org_id, d.endpoint_id, d.event_id, d.event_type, d.is_test, d.status, d.next_attempt_at, d.created_at],
    );
    expect(inserted).toEqual([]);
  });

  it("maps a foreign-key violation to Prisma's P2003", async () => {
    const error = await t.db.prisma.question
      .create({ data: { id: uuidv7(), org_id: orgId, question_set_id: uuidv7(), position: 1, query: "Q?" } })
      .catch((e: unknown) => e);
    expect(knownError(error).code).toBe("P2003");
  });

  it("round-trips every column type through Prisma", async () => {
    const id = uuidv7();
    const created = await t.db.prisma.codingEvaluation.create({
      data: {
        id,
        org_id: orgId,
        audit_id: uuidv7(),
        status: "completed",
        processed: true,
        needs_em_eval: true,
        em_eval_created: false,
        needs_icd_eval: false,
        icd_eval_created: false,
        marked_reviewed: false,
        archived: false,
        redacted: false,
        cold: false,
        display_date: new Date("2026-11-21T00:00:00.000Z"),
        em_evaluation: { findings: [{ code: "99213", aligned: true }] },
        icd_evaluation: Prisma.DbNull,
      },
    });
    const read = await t.db.prisma.codingEvaluation.findUniqueOrThrow({ where: { id } });
    expect(read).toEqual(created);
    expect(read.display_date).toEqual(new Date("2026-11-21T00:00:00.000Z"));
    expect(read.em_evaluation).toEqual({ findings: [{ code: "99213", aligned: true }] });
    expect(read.icd_evaluation).toBeNull();
    expect(read.created_at.getTime()).toBeGreaterThan(Date.now() - 60_000);
  });

  it("runs Prisma interactive transactions", async () => {
    const id = uuidv7();
    await expect(
      t.db.prisma.$transaction(async (tx) => {
        await tx.org.create({ data: { id, name: "tx" } });
        throw new Error("rollback");
      }),
    ).rejects.toThrow("rollback");
    expect(await t.db.prisma.org.findUnique({ where: { id } })).toBeNull();
    await t.db.prisma.$transaction(async (tx) => {
      await tx.org.create({ data: { id, name: "tx" } });
    });
    expect(await t.db.prisma.org.findUnique({ where: { id } })).not.toBeNull();
  });

  it("refuses to open without a URL, data directory or in-memory flag", async () => {
    await expect(openDatabase({})).rejects.toThrow(/databaseUrl.*dataDir.*inMemory/);
  });
});

describe.skipIf(onPostgres)("embedded PGlite data directory", () => {
  it("keeps data across close and reopen", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "ars-pglite-data-"));
    try {
      const first = await openDatabase({ dataDir });
      await migrate(first);
      await first.prisma.org.create({ data: { id: "persisted-org", name: "kept" } });
      await first.close();

      const second = await openDatabase({ dataDir });
      try {
        expect((await migrate(second)).applied).toEqual([]);
        expect(await second.prisma.org.findUnique({ where: { id: "persisted-org" } })).toMatchObject({ name: "kept" });
      } finally {
        await second.close();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
