// The migration to day partitions, applied to a database of the schema before it with rows in
// it: every row is kept (the old tables become the history partitions, not copies), a re-sent
// event id still creates nothing, new rows go to the day partitions housekeeping creates, and
// the rows of the history leave together once the history is past the window.
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findMigrationsDir, migrate } from "../../src/db/migrate.js";
import { createHousekeeper } from "../../src/housekeeping/housekeeper.js";
import { createLogger } from "../../src/lib/logger.js";
import { DAY_MS, dayStart, retention } from "../../src/domain/retention.js";
import { newDelivery } from "../../src/domain/delivery/fan-out.js";
import { eventsRepo } from "../../src/repos/events.repo.js";
import { createCountCache } from "../../src/repos/count-cache.js";
import { webhookDeliveriesRepo } from "../../src/repos/webhook-deliveries.repo.js";
import { createTestDatabase, type TestDatabase } from "../harness/db.js";
import { fixedClock } from "../harness/partitions.js";

const PARTITIONING = "20261125090000_time_partitions";
const ORG = "org-migrated";
const ENDPOINT = "0190a000-0000-7000-8000-00000000e101";
const ROWS = 3000;

let t: TestDatabase;
let before: string;
const tables = ["events", "webhook_deliveries", "webhook_delivery_attempts"] as const;
const snapshot = async () =>
  Object.fromEntries(
    await Promise.all(tables.map(async (table) => [table, await t.db.query(`SELECT * FROM ${table} ORDER BY id`)] as const)),
  );
let rowsBefore: Record<string, unknown[]>;
let migrationMs = 0;

beforeAll(async () => {
  // the migrations up to (not including) the partitioning
  before = mkdtempSync(join(tmpdir(), "ars-before-partitions-"));
  cpSync(findMigrationsDir(), before, { recursive: true });
  const later = readdirSync(before).filter((name) => name >= PARTITIONING);
  for (const name of later) rmSync(join(before, name), { recursive: true });
  t = await createTestDatabase({ migrated: false });
  await migrate(t.db, { migrationsDir: before });
  await t.db.exec(`
    INSERT INTO webhook_endpoints (id, org_id, url, status, event_types, filter_question_set_ids, filter_audit_results,
                                   payload_format, payload_fields, payload_result_format, payload_responses_filter,
                                   payload_include_informational, auth_type, auth_config, secret_enc, secret_hint, legacy_signature)
      VALUES ('${ENDPOINT}', '${ORG}', 'https://example.com/hook', 'enabled', ARRAY['audit.completed'], ARRAY[]::uuid[], 'all',
              'standard_v1', ARRAY['responses'], 'normalized', 'all', false, 'none', '{}'::jsonb, '\\x01'::bytea, 'whsec_…abcd', false);
    -- publisher-chosen (v4) event ids, spread over the last three days
    INSERT INTO events (id, org_id, type, audit_id, question_set_id, result, responses, occurred_at, created_at)
      SELECT gen_random_uuid(), '${ORG}', 'audit.completed', gen_random_uuid(), gen_random_uuid(), 'passed', '[]'::jsonb,
             now() - n * interval '1 minute', now() - n * interval '1 minute'
        FROM generate_series(1, ${ROWS}) n;
    INSERT INTO webhook_deliveries (id, org_id, endpoint_id, event_id, event_type, audit_id, is_test, status, attempt_count,
                                    next_attempt_at, created_at, updated_at)
      SELECT gen_random_uuid(), e.org_id, '${ENDPOINT}', e.id, 'audit.completed', e.audit_id, false,
             CASE WHEN row_number() OVER () % 100 = 0 THEN 'retrying' ELSE 'succeeded' END, 1, e.created_at, e.created_at, e.created_at
        FROM events e;
    INSERT INTO webhook_delivery_attempts (id, org_id, delivery_id, endpoint_id, attempt_number, trigger, url, started_at, duration_ms, response_status)
      SELECT gen_random_uuid(), d.org_id, d.id, d.endpoint_id, 1, 'scheduled', 'https://example.com/hook', d.created_at + interval '1 second', 12, 200
        FROM webhook_deliveries d;
    INSERT INTO idempotency_keys (org_id, key_hash, request_hash, status, created_at, expires_at)
      VALUES ('${ORG}', 'k1', 'r1', 'completed', now(), now() + interval '1 day');`);
  rowsBefore = await snapshot();
  // the README's advice for a large database: the new keys built beforehand, concurrently
  const readme = readFileSync(join(findMigrationsDir(), "..", "..", "README.md"), "utf8");
  const prebuild = /Upgrading an existing database[\s\S]*?```sql\n([\s\S]*?)```/.exec(readme)![1]!;
  const statements = prebuild.split(";").map((x) => x.trim()).filter(Boolean);
  expect(statements).toHaveLength(4);
  for (const statement of statements) await t.db.exec(statement);
  const started = performance.now();
  const result = await migrate(t.db);
  migrationMs = performance.now() - started;
  expect(result.applied).toEqual(readdirSync(findMigrationsDir()).filter((name) => name >= PARTITIONING && !name.endsWith(".toml")));
});

afterAll(async () => {
  await t?.close();
  rmSync(before, { recursive: true, force: true });
});

describe("migrating to day partitions with data in the tables", () => {
  it("keeps every row, unchanged, in the history partitions (attached, not copied)", async () => {
    // (later migrations may add columns: compare the columns the rows had)
    const after = await snapshot();
    for (const table of tables) {
      const before = rowsBefore[table] as Record<string, unknown>[];
      const now = (after[table] as Record<string, unknown>[]).map((row, i) => Object.fromEntries(Object.keys(before[i] ?? row).map((k) => [k, row[k]])));
      expect(now, table).toEqual(before);
    }
    for (const table of tables) {
      const [row] = await t.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ONLY ${table}_history`);
      expect(row!.n, table).toBe(rowsBefore[table]!.length);
    }
    console.info(`migration of ${ROWS} events, deliveries and attempts: ${Math.round(migrationMs)} ms`);
  });

  it("reuses the keys built beforehand (README): each history has exactly the parent's indexes, none twice", async () => {
    for (const table of tables) {
      const indexes = await t.db.query<{ def: string }>(
        "SELECT regexp_replace(indexdef, '^.* USING ', '') AS def FROM pg_indexes WHERE tablename = $1 ORDER BY 1",
        [`${table}_history`],
      );
      const parent = await t.db.query<{ def: string }>(
        "SELECT regexp_replace(indexdef, '^.* USING ', '') AS def FROM pg_indexes WHERE tablename = $1 ORDER BY 1",
        [table],
      );
      expect(indexes, table).toEqual(parent);
    }
  });

  it("then serves reads by id (the old ids are not UUIDv7) and refuses a second delivery of an event to an endpoint", async () => {
    const repo = webhookDeliveriesRepo(t.db, createCountCache(), () => new Date());
    const [old] = rowsBefore.webhook_deliveries as Array<{ id: string; event_id: string; created_at: Date }>;
    expect((await repo.findById(ORG, old!.id))?.id).toBe(old!.id);
    await expect(
      t.db.query(
        `INSERT INTO webhook_deliveries (id, org_id, endpoint_id, event_id, event_type, is_test, status, next_attempt_at, created_at)
         VALUES (gen_random_uuid(), $1, $2, $3, 'audit.completed', false, 'pending', now(), $4)`,
        [ORG, ENDPOINT, old!.event_id, old!.created_at],
      ),
    ).rejects.toMatchObject({ code: "23505" });
  });

  it("after the first housekeeping run, new events go to day partitions and a re-sent old event id creates nothing", async () => {
    const now = new Date();
    const housekeeper = createHousekeeper({ db: t.db, retention: retention(30), clock: fixedClock(now), logger: createLogger({ level: "silent" }), intervalMs: DAY_MS });
    const run = await housekeeper.runOnce();
    expect(run.skipped).toBe(false);
    const tomorrow = new Date(dayStart(now).getTime() + DAY_MS + 3_600_000);
    const events = eventsRepo(t.db, createCountCache(), () => now);
    const [oldEvent] = rowsBefore.events as Array<{ id: string; audit_id: string; question_set_id: string }>;
    const base = { org_id: ORG, type: "audit.completed", result: "passed", responses: [], occurred_at: tomorrow, created_at: tomorrow };
    const resent = await events.publish({ ...base, id: oldEvent!.id, audit_id: oldEvent!.audit_id, question_set_id: oldEvent!.question_set_id }, newDelivery(false, tomorrow));
    expect(resent).toEqual({ created: false, deliveryIds: [] });
    const fresh = await events.publish({ ...base, id: crypto.randomUUID(), audit_id: crypto.randomUUID(), question_set_id: crypto.randomUUID() }, newDelivery(false, tomorrow));
    expect(fresh.created).toBe(true);
    expect(fresh.deliveryIds).toHaveLength(1);
    const [where] = await t.db.query<{ partition: string }>("SELECT tableoid::regclass::text AS partition FROM webhook_deliveries WHERE id = $1", [fresh.deliveryIds[0]]);
    expect(where!.partition).toBe(`webhook_deliveries_p${tomorrow.toISOString().slice(0, 10).replaceAll("-", "")}`);
  });

  it("once all of the history is past the window, it leaves whole unless a delivery in it is still retrying", async () => {
    const later = new Date(Date.now() + 40 * DAY_MS);
    const run = async () => {
      const r = await createHousekeeper({ db: t.db, retention: retention(30), clock: fixedClock(later), logger: createLogger({ level: "silent" }), intervalMs: DAY_MS }).runOnce();
      if (r.skipped) throw new Error("skipped");
      return r;
    };
    const kept = await run();
    // (tomorrow's day, with the pending delivery published above, is held back the same way)
    expect(kept.partitionsKept).toEqual(expect.arrayContaining(["events_history", "webhook_deliveries_history"]));
    // the attempts too: a live delivery's attempts may have started on any day from its own on
    expect(kept.partitionsKept.filter((p) => p.endsWith("_history")).sort()).toEqual(["events_history", "webhook_deliveries_history", "webhook_delivery_attempts_history"]);
    await t.db.exec("UPDATE webhook_deliveries SET status = 'failed' WHERE status IN ('pending', 'retrying')");
    const gone = await run();
    expect(gone.partitionsDropped).toEqual(expect.arrayContaining(["events_history", "webhook_deliveries_history", "webhook_delivery_attempts_history"]));
    expect(gone.removed.webhook_deliveries).toBeGreaterThanOrEqual(ROWS);
    expect(await t.db.query("SELECT count(*)::int AS n FROM webhook_deliveries WHERE org_id = $1", [ORG])).toEqual([{ n: 0 }]);
  });
});
