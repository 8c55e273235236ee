// Two PATCHes disabling the same endpoint at once (PostgreSQL only: PGlite runs one statement at a
// time). Only the change from enabled disables: the second must see the first's committed disable
// once it gets the row, so the org's operational endpoints are told once and the queue is failed
// once. A statement that read the status before the update from its snapshot, not under the row
// lock, would let both see `enabled`.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId } from "../../src/lib/ids.js";
import { webhookEndpointsRepo } from "../../src/repos/webhook-endpoints.repo.js";
import { createTestDatabase, onPostgres, type TestDatabase } from "../harness/db.js";

const ORG = "0190a000-0000-7000-8000-00000000d001";

let t: TestDatabase | undefined;

const ENDPOINT = `INSERT INTO webhook_endpoints (id, org_id, url, status, kind, event_types, filter_question_set_ids, filter_audit_results,
  payload_format, payload_fields, payload_result_format, payload_responses_filter, payload_include_informational, auth_type, auth_config,
  secret_enc, secret_hint, legacy_signature)
VALUES ($1::uuid, '${ORG}', 'https://example.com/' || $1, 'enabled', $2, $3::text[], ARRAY[]::uuid[], 'all', 'standard_v1',
  ARRAY['responses'], 'normalized', 'all', false, 'none', '{}'::jsonb, '\\x01'::bytea, 'whsec_…abcd', false)`;

describe.skipIf(!onPostgres)("two concurrent disables of one endpoint (PostgreSQL only: set TEST_DATABASE_URL)", () => {
  beforeAll(async () => {
    t = await createTestDatabase();
  });

  afterAll(async () => {
    await t?.close();
  });

  it("When two PATCHes disable an enabled endpoint at once, Then both answer the disabled row, and one webhook_endpoint.disabled is made", async () => {
    const { db } = t!;
    const endpointId = newId();
    await db.query(ENDPOINT, [newId(), "operational", ["webhook_endpoint.disabled"]]);
    await db.query(ENDPOINT, [endpointId, "audit", ["audit.completed"]]);
    const endpoints = webhookEndpointsRepo(db.prisma);

    // Another transaction holds the row, so both updates are waiting for it when it is released.
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let locked!: () => void;
    const isLocked = new Promise<void>((resolve) => (locked = resolve));
    const holder = db.transaction(async (tx) => {
      await tx.query("SELECT id FROM webhook_endpoints WHERE id = $1 FOR UPDATE", [endpointId]);
      locked();
      await released;
    });
    await isLocked;
    const now = new Date();
    const both = [0, 1].map(() => endpoints.update(ORG, endpointId, {}, "disabled", now));
    const waiting = async () =>
      (
        await db.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%webhook_endpoints%'`,
        )
      )[0]!.n;
    try {
      await expect.poll(waiting, { timeout: 5_000, interval: 10 }).toBe(2);
    } finally {
      release();
      await holder;
    }

    const results = await Promise.all(both);
    for (const r of results) expect(r?.row).toMatchObject({ status: "disabled", disabled_reason: "manual" });
    expect(results.flatMap((r) => r!.notices)).toEqual([{ type: "webhook_endpoint.disabled", endpointId }]);
    const [stored] = await db.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM events WHERE org_id = $1 AND type = 'webhook_endpoint.disabled' AND data->>'endpoint_id' = $2",
      [ORG, endpointId],
    );
    expect(stored!.n).toBe(1);
  });
});
