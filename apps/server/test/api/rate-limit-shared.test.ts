// The per-token rate limit is counted in the database, so several API processes on one database
// allow the documented rate in total, not once each. Three servers (on PostgreSQL each with its
// own pool, as three processes would have; on PGlite three apps over the one embedded database).
import { randomBytes } from "node:crypto";
import { testServerOptions } from "@audit-review/test-kit/server-options";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../src/lib/logger.js";
import { rateLimitsRepo, RATE_LIMIT_WINDOW_MS } from "../../src/repos/rate-limits.repo.js";
import { startServer, type RunningServer } from "../../src/server.js";
import { ALL_SCOPES } from "../../src/services/tokens.service.js";
import { createTestDatabase, type TestDatabase } from "../harness/db.js";
import { rawProblem } from "../harness/factories.js";

const LIMIT = 12;

let t: TestDatabase;
const servers: RunningServer[] = [];

beforeAll(async () => {
  t = await createTestDatabase();
  const encryptionKey = randomBytes(32).toString("base64");
  for (let i = 0; i < 3; i++) {
    servers.push(
      await startServer({
        ...testServerOptions(),
        encryptionKey,
        rateLimitPerMinute: LIMIT,
        logger: createLogger({ level: "warn" }),
        ...(t.databaseUrl ? { databaseUrl: t.databaseUrl } : { database: t.db }),
      }),
    );
  }
});

afterAll(async () => {
  for (const s of servers) await s.close();
  await t?.close();
});

async function newToken(): Promise<string> {
  const org = await servers[0]!.services.tokens.createOrg(`rl-${randomBytes(3).toString("hex")}`);
  return (await servers[0]!.services.tokens.createToken(org.id, ALL_SCOPES, "rate-limit")).token;
}

/** Seconds left in the database's current window; a test that must stay inside one window waits for the next when few are left. */
async function stayInOneWindow(needSeconds: number): Promise<void> {
  const [row] = await t.db.query<{ left: number }>(
    `SELECT extract(epoch FROM date_bin($1::int * interval '1 millisecond', now(), timestamptz '1970-01-01 00:00:00+00')
                               + $1::int * interval '1 millisecond' - now())::float8 AS left`,
    [RATE_LIMIT_WINDOW_MS],
  );
  if (row!.left < needSeconds) await new Promise((r) => setTimeout(r, row!.left * 1000 + 50));
}

const get = (server: RunningServer, token: string) => fetch(`${server.url}/v2/question_sets?limit=1`, { headers: { authorization: `Bearer ${token}` } });

describe("a rate limit shared by three API processes", () => {
  it("when one token's requests are spread over three servers at once, then the documented limit holds in total", async () => {
    await stayInOneWindow(15);
    const token = await newToken();
    const responses = await Promise.all(Array.from({ length: 3 * LIMIT }, (_, i) => get(servers[i % 3]!, token)));
    const statuses = responses.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(LIMIT);
    expect(statuses.filter((s) => s === 429)).toHaveLength(2 * LIMIT);
    // every server refuses once the shared count is spent, whichever of them counted it
    for (const server of servers) await rawProblem(await get(server, token), { status: 429, code: "RATE_LIMITED" });
    const refused = responses.find((r) => r.status === 429)!;
    const retryAfter = Number(refused.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
  });

  it("when another token is used meanwhile, then it has its own allowance", async () => {
    await stayInOneWindow(10);
    const spent = await newToken();
    const fresh = await newToken();
    await Promise.all(Array.from({ length: LIMIT + 1 }, (_, i) => get(servers[i % 3]!, spent)));
    expect((await get(servers[1]!, spent)).status).toBe(429);
    expect((await get(servers[2]!, fresh)).status).toBe(200);
  });
});

describe("a refused token", () => {
  it("when a process has refused a token, then it refuses its further requests without counting them in the database, and other processes still count", async () => {
    await stayInOneWindow(10);
    const token = await newToken();
    const [row] = await t.db.query<{ id: string }>("SELECT id FROM api_tokens ORDER BY created_at DESC LIMIT 1");
    const hits = async () => (await t.db.query<{ hits: number }>("SELECT hits FROM rate_limit_windows WHERE key = $1", [row!.id]))[0]?.hits;
    for (let i = 0; i < LIMIT; i++) expect((await get(servers[0]!, token)).status).toBe(200);
    expect((await get(servers[0]!, token)).status).toBe(429);
    expect(await hits()).toBe(LIMIT + 1);
    for (let i = 0; i < 5; i++) expect((await get(servers[0]!, token)).status).toBe(429);
    expect(await hits()).toBe(LIMIT + 1);
    expect((await get(servers[1]!, token)).status).toBe(429);
    expect(await hits()).toBe(LIMIT + 2);
  });
});

describe("the rate-limit table stays small", () => {
  it("when a key opens a new window, then its ended windows are deleted in the same statement", async () => {
    const repo = rateLimitsRepo(t.db);
    await t.db.query(`INSERT INTO rate_limit_windows (key, window_start, hits) VALUES ('k-old', now() - interval '5 minutes', 7), ('k-old', now() - interval '3 minutes', 9)`);
    const first = await repo.hit("k-old");
    const second = await repo.hit("k-old");
    expect([first.hits, second.hits]).toEqual([1, 2]);
    expect(second.resetAt.getTime() % RATE_LIMIT_WINDOW_MS).toBe(0);
    const rows = await t.db.query<{ hits: number }>("SELECT hits FROM rate_limit_windows WHERE key = 'k-old'");
    expect(rows.map((r) => r.hits)).toEqual([2]);
  });

  it("when windows of keys no longer in use have ended, then sweepExpired deletes them and keeps current ones", async () => {
    const repo = rateLimitsRepo(t.db);
    await t.db.query(`INSERT INTO rate_limit_windows (key, window_start, hits) VALUES ('k-idle-1', now() - interval '2 minutes', 1), ('k-idle-2', now() - interval '1 day', 3)`);
    await repo.hit("k-live");
    expect(await repo.sweepExpired()).toBeGreaterThanOrEqual(2);
    const keys = (await t.db.query<{ key: string }>("SELECT key FROM rate_limit_windows WHERE key IN ('k-idle-1', 'k-idle-2', 'k-live') ORDER BY key")).map((r) => r.key);
    expect(keys).toEqual(["k-live"]);
  });
});
