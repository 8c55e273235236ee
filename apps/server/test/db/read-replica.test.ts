// DATABASE_READ_URL: the question-set and coding-evaluation lists (and their counts) read from a
// real streaming replica; every other read and every write stays on the primary. The test makes
// its own primary and replica with the PostgreSQL server binaries (pg_basebackup -R), whatever
// TEST_DATABASE_URL says; CI installs them, elsewhere the file is skipped when they are absent.
import { postgresBinDir, startPrimaryWithReplica, type PostgresPair } from "@audit-review/test-kit/replica";
import { testServerOptions } from "@audit-review/test-kit/server-options";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { capturedLogger } from "../harness/captured-logger.js";
import { startServer, type RunningServer } from "../../src/server.js";
import { ALL_SCOPES } from "../../src/services/tokens.service.js";
import { ingestCodingEvaluation, ingestQuestionSet, PUBLIC_HOST, testResolver } from "../harness/factories.js";
import createClient from "openapi-fetch";
import type { paths } from "@audit-review/api-types/internal";

const binDir = postgresBinDir();
if (!binDir && process.env.CI === "true") throw new Error("CI=true: the PostgreSQL server binaries (postgresql-15) are required for the replica tests");
if (!binDir) console.warn("read-replica.test.ts skipped: no PostgreSQL server binaries (apt-get install postgresql-15, or set ARS_PG_BIN_DIR)");

const DB = "ars_replica_test";
let pair: PostgresPair;
let server: RunningServer;
const replicaLog = capturedLogger();
const logs = replicaLog.lines;

async function onPrimary<T>(sql: string, database = "postgres"): Promise<T[]> {
  const client = new pg.Client({ connectionString: pair.primaryUrl(database) });
  await client.connect();
  try {
    return (await client.query(sql)).rows as T[];
  } finally {
    await client.end();
  }
}

beforeAll(async () => {
  if (!binDir) return;
  pair = await startPrimaryWithReplica({ binDir });
  await onPrimary(`CREATE DATABASE ${DB}`);
  server = await startServer({
    ...testServerOptions(),
    databaseUrl: pair.primaryUrl(DB),
    databaseReadUrl: pair.replicaUrl(DB),
    migrate: true,
    resolver: testResolver,
    logger: replicaLog.logger,
  });
  await pair.caughtUp();
}, 120_000);

afterAll(async () => {
  await server?.close();
  await pair?.stop();
});

async function newOrg() {
  const org = await server.services.tokens.createOrg(`replica-${Math.random().toString(36).slice(2, 8)}`);
  const { token } = await server.services.tokens.createToken(org.id, ALL_SCOPES, "replica");
  const api = createClient<paths>({ baseUrl: server.url, headers: { authorization: `Bearer ${token}` } });
  // the token must exist where it is checked (the primary); the lists must see the org's rows
  await pair.caughtUp();
  return { api, orgId: org.id };
}

describe.skipIf(!binDir)("lists on a read replica", () => {
  it("when replay is paused, then new question sets and evaluations appear on the lists only after it resumes, while writes and other reads use the primary", async () => {
    const { api } = await newOrg();
    await pair.pauseReplay();
    try {
      // writes go to the primary (the replica is read-only: a write routed there would fail)
      const set = await ingestQuestionSet(api);
      const evaluation = await ingestCodingEvaluation(api);
      const endpoint = await api.POST("/v2/webhook_endpoints", { body: { url: `https://${PUBLIC_HOST}/hook` } });
      expect(endpoint.response.status).toBe(201);

      const sets = await api.GET("/v2/question_sets", { params: { query: { include_total: "true" } } });
      const evaluations = await api.GET("/v2/coding_evaluations", { params: { query: { include_total: "true" } } });
      expect([sets.data!.data, sets.data!.total_count]).toEqual([[], 0]);
      expect([evaluations.data!.data, evaluations.data!.total_count]).toEqual([[], 0]);
      // the webhook endpoint list is not one of the replica's lists: the new endpoint shows at once
      expect((await api.GET("/v2/webhook_endpoints")).data!.data.map((e) => e.id)).toEqual([endpoint.data!.id]);

      await pair.resumeReplay();
      await pair.caughtUp();
      // (not include_total again: a count that took ≥ 50 ms may be served for seconds, as documented)
      const after = await api.GET("/v2/question_sets");
      expect(after.data!.data.map((s) => s.id)).toEqual([set.id]);
      expect((await api.GET("/v2/coding_evaluations")).data!.data.map((e) => e.id)).toEqual([evaluation.id]);
    } finally {
      await pair.resumeReplay();
    }
  });

  it("when a cursor is a row the replica has not replayed yet, then the page comes from the primary, not INVALID_CURSOR", async () => {
    const { api } = await newOrg();
    const older = await ingestQuestionSet(api);
    await pair.caughtUp();
    await pair.pauseReplay();
    try {
      const newer = await ingestQuestionSet(api);
      const page = await api.GET("/v2/question_sets", { params: { query: { starting_after: newer.id } } });
      expect(page.response.status).toBe(200);
      expect(page.data!.data.map((s) => s.id)).toEqual([older.id]);
      const unknown = await api.GET("/v2/question_sets", { params: { query: { starting_after: "0193a5b2-7c4e-7a10-9d2f-3b1c2d4e5f61" } } });
      expect(unknown.response.status).toBe(400);
    } finally {
      await pair.resumeReplay();
    }
  });

  it("when the lists are read, then the replica serves them on its own connections", async () => {
    const { api } = await newOrg();
    await api.GET("/v2/coding_evaluations");
    const client = new pg.Client({ connectionString: pair.replicaUrl(DB) });
    await client.connect();
    try {
      const { rows } = await client.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'ars-list-reader' AND datname = $1", [DB]);
      expect(rows[0].n).toBeGreaterThan(0);
      expect(logs.filter((l) => l.includes("lists read from the replica"))).toHaveLength(1);
    } finally {
      await client.end();
    }
  });

  it("when the replica goes away, then the lists are answered by the primary and a warning is logged", async () => {
    const { api } = await newOrg();
    const set = await ingestQuestionSet(api);
    await pair.stopReplica();
    const sets = await api.GET("/v2/question_sets");
    expect(sets.response.status).toBe(200);
    expect(sets.data!.data.map((s) => s.id)).toEqual([set.id]);
    expect(logs.some((l) => l.includes("read replica unavailable"))).toBe(true);
  });
});
