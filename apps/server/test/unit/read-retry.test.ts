// Which statements may run twice, and the run-once-more rule itself. The rule under real
// terminations is test/api/connection-loss.test.ts.
import { describe, expect, it } from "vitest";
import { createReadRetry, isPureRead } from "../../src/db/read-retry.js";

/** What node-postgres throws when PostgreSQL terminates the backend mid-statement. */
const terminated = () => Object.assign(new Error("terminating connection due to administrator command"), { code: "57P01", severity: "FATAL" });

describe("isPureRead", () => {
  it.each([
    "SELECT 1",
    "  \n select id, updated_at, deleted_at FROM webhook_endpoints WHERE org_id = $1",
    "-- the token\nSELECT id, org_id, scopes FROM api_tokens WHERE token_hash = $1 AND revoked_at IS NULL",
    "/* keyset */ SELECT * FROM question_sets WHERE (created_at, id) < ($1, $2) ORDER BY created_at DESC, id DESC LIMIT 11",
    'SELECT "public"."orgs"."id", "public"."orgs"."name" FROM "public"."orgs" WHERE "public"."orgs"."id" = $1 LIMIT $2 OFFSET $3',
    "WITH recent AS (SELECT id FROM events ORDER BY id DESC LIMIT 5) SELECT count(*) FROM recent",
  ])("When the statement is %j, Then it may run twice", (sql) => {
    expect(isPureRead(sql)).toBe(true);
  });

  it.each([
    "INSERT INTO orgs (id, name) VALUES ($1, $2) RETURNING id",
    'UPDATE "public"."webhook_endpoints" SET "status" = $1 WHERE "id" = $2 RETURNING "id"',
    "DELETE FROM idempotency_keys WHERE org_id = $1 AND key_hash = $2",
    "WITH gone AS (DELETE FROM idempotency_keys WHERE expires_at <= $1 RETURNING 1) SELECT count(*)::int AS n FROM gone",
    "SELECT status FROM webhook_endpoints WHERE id = $1 FOR UPDATE",
    "SELECT * FROM webhook_deliveries WHERE id = $1 FOR NO KEY UPDATE SKIP LOCKED",
    "SELECT * FROM webhook_endpoints WHERE id = $1 FOR KEY SHARE",
    "SELECT pg_notify($1, $2)",
    "SELECT pg_try_advisory_lock($1) AS locked",
    "SELECT count(pg_advisory_xact_lock(7, h)) AS n FROM unnest($1::int[]) h",
    "SELECT nextval('some_seq')",
    "SELECT * INTO archived FROM events",
    "SELECT set_config('statement_timeout', '1s', false)",
    "BEGIN",
    "VACUUM events",
    "",
  ])("When the statement is %j, Then it never runs twice", (sql) => {
    expect(isPureRead(sql)).toBe(false);
  });
});

describe("createReadRetry", () => {
  it("When a pure read loses its connection once, Then it runs again on a fresh connection, answers the second run's rows and counts retried_ok", async () => {
    const retry = createReadRetry();
    const runs: boolean[] = [];
    const rows = await retry.run("SELECT 1", async (fresh) => {
      runs.push(fresh);
      if (runs.length === 1) throw terminated();
      return [{ one: 1 }];
    });
    expect(rows).toEqual([{ one: 1 }]);
    // the second run asks for a fresh connection, not the pool's
    expect(runs).toEqual([false, true]);
    expect(retry.counts()).toEqual({ retriedOk: 1, gaveUp: 0 });
  });

  it("When the second run loses its connection too, Then that error is thrown, counted gave_up, and there is no third run", async () => {
    const retry = createReadRetry();
    let runs = 0;
    const second = terminated();
    const failure = await retry
      .run("SELECT 1", async () => {
        runs++;
        throw runs === 1 ? terminated() : second;
      })
      .catch((e: unknown) => e);
    expect(failure).toBe(second);
    expect(runs).toBe(2);
    expect(retry.counts()).toEqual({ retriedOk: 0, gaveUp: 1 });
  });

  it("When a write loses its connection, Then it is not run again (it may have committed) and nothing is counted", async () => {
    const retry = createReadRetry();
    let runs = 0;
    const lost = terminated();
    const failure = await retry
      .run("INSERT INTO orgs (id, name) VALUES ($1, $2)", async () => {
        runs++;
        throw lost;
      })
      .catch((e: unknown) => e);
    expect(failure).toBe(lost);
    expect(runs).toBe(1);
    expect(retry.counts()).toEqual({ retriedOk: 0, gaveUp: 0 });
  });

  it("When a read fails for any other reason, Then it is not run again", async () => {
    const retry = createReadRetry();
    let runs = 0;
    const syntax = Object.assign(new Error("syntax error at or near"), { code: "42601" });
    const failure = await retry
      .run("SELECT FROM", async () => {
        runs++;
        throw syntax;
      })
      .catch((e: unknown) => e);
    expect(failure).toBe(syntax);
    expect(runs).toBe(1);
  });
});
