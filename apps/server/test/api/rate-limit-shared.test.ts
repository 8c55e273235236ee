// The per-token rate limit is counted in the database, so several API processes on one database
// allow the documented rate in total, not once each. Three servers (on PostgreSQL each with its
// own pool, as three processes would have; on PGlite three apps over the one embedded database)
// with a limit small enough to be counted request by request, and two with a limit large enough
// to be taken from the database in shares (README "Scaling out": never more than the limit, at
// most two shares per process unused).
import { randomBytes } from "node:crypto";
import { testServerOptions } from "@audit-review/test-kit/server-options";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../src/lib/logger.js";
import { shareOf } from "../../src/http/rate-limit.js";
import { rateLimitsRepo, RATE_LIMIT_WINDOW_MS } from "../../src/repos/rate-limits.repo.js";
import { startServer, type RunningServer } from "../../src/server.js";
import { ALL_SCOPES } from "../../src/services/tokens.service.js";
import { createTestDatabase, type TestDatabase } from "../harness/db.js";
import { rawProblem } from "../harness/factories.js";
import { moved, scrape } from "../harness/metrics.js";
import { stayInOneWindow } from "../harness/rate-window.js";

const LIMIT = 12;
/** Large enough to be taken in shares of more than one request. */
const BIG = 600;
const SHARE = shareOf(BIG);

let t: TestDatabase;
const servers: RunningServer[] = [];
const sharing: RunningServer[] = [];

beforeAll(async () => {
  t = await createTestDatabase();
  const encryptionKey = randomBytes(32).toString("base64");
  const start = (rateLimitPerMinute: number) =>
    startServer({
      ...testServerOptions(),
      encryptionKey,
      rateLimitPerMinute,
      logger: createLogger({ level: "warn" }),
      ...(t.databaseUrl ? { databaseUrl: t.databaseUrl } : { database: t.db }),
    });
  for (let i = 0; i < 3; i++) servers.push(await start(LIMIT));
  for (let i = 0; i < 2; i++) sharing.push(await start(BIG));
});

afterAll(async () => {
  for (const s of [...servers, ...sharing]) await s.close();
  await t?.close();
});

async function newToken(): Promise<string> {
  const org = await servers[0]!.services.tokens.createOrg(`rl-${randomBytes(3).toString("hex")}`);
  return (await servers[0]!.services.tokens.createToken(org.id, ALL_SCOPES, "rate-limit")).token;
}

const get = (server: RunningServer, token: string) => fetch(`${server.url}/v2/question_sets?limit=1`, { headers: { authorization: `Bearer ${token}` } });

describe("a rate limit shared by three API processes", () => {
  it("when one token's requests are spread over three servers at once, then the documented limit holds in total", async () => {
    await stayInOneWindow(t.db, 15);
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
    await stayInOneWindow(t.db, 10);
    const spent = await newToken();
    const fresh = await newToken();
    await Promise.all(Array.from({ length: LIMIT + 1 }, (_, i) => get(servers[i % 3]!, spent)));
    expect((await get(servers[1]!, spent)).status).toBe(429);
    expect((await get(servers[2]!, fresh)).status).toBe(200);
  });
});

describe("a large limit taken in shares by two API processes", () => {
  it("when one token's requests arrive at two servers at once, then no more than the limit are admitted, at most two shares per server go unused, and the database is asked once per share, not per request", async () => {
    expect(SHARE).toBeGreaterThan(1);
    await stayInOneWindow(t.db, 40);
    const token = await newToken();
    const syncs = async () => Promise.all(sharing.map((s) => scrape(s.deps.metrics!.listener.url)));
    const before = await syncs();
    const sent = BIG + 200;
    let next = 0;
    const statuses: number[] = [];
    // 16 requests in flight per server until every request is answered
    await Promise.all(
      Array.from({ length: 32 }, async (_, lane) => {
        while (next < sent) {
          next += 1;
          const res = await get(sharing[lane % 2]!, token);
          await res.arrayBuffer();
          statuses.push(res.status);
        }
      }),
    );
    const admitted = statuses.filter((s) => s === 200).length;
    expect(statuses.filter((s) => s !== 200 && s !== 429)).toEqual([]);
    expect(admitted).toBeLessThanOrEqual(BIG);
    expect(admitted).toBeGreaterThanOrEqual(BIG - 2 * 2 * SHARE);
    const after = await syncs();
    const statements = sharing.reduce((n, _, i) => n + moved(before[i]!, after[i]!, "ars_rate_limit_syncs_total", { outcome: "ok" }), 0);
    expect(statements).toBeGreaterThan(0);
    expect(statements).toBeLessThan(sent / 3);
  });

  it("when one server answers a token alone, then RateLimit counts down request by request though the count is taken in shares", async () => {
    await stayInOneWindow(t.db, 10);
    const token = await newToken();
    const remaining: string[] = [];
    for (let i = 0; i < 2 * SHARE + 1; i++) {
      const res = await get(sharing[0]!, token);
      expect(res.status).toBe(200);
      remaining.push(/;\s*r=(\d+)/.exec(res.headers.get("ratelimit") ?? "")?.[1] ?? "missing");
    }
    expect(remaining).toEqual(Array.from({ length: 2 * SHARE + 1 }, (_, i) => String(BIG - 1 - i)));
  });
});

describe("a refused token", () => {
  it("when a process has refused a token, then it refuses its further requests without counting them in the database, and other processes still count", async () => {
    await stayInOneWindow(t.db, 10);
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
    await t.db.query(`INSERT INTO rate_limit_windows (key, window_start, hits) VALUES ('k-old', now() - interval '5 minutes', 7), ('k-old', now() - interval '3 minutes', 9), ('k-other', now() - interval '3 minutes', 4)`);
    const [first] = await repo.take([{ key: "k-old", n: 5 }]);
    const second = await repo.take([{ key: "k-old", n: 1 }, { key: "k-other", n: 3 }]);
    expect(first!.hits).toBe(5);
    expect(Object.fromEntries(second.map((c) => [c.key, c.hits]))).toEqual({ "k-old": 6, "k-other": 3 });
    expect(first!.windowStart.getTime() % RATE_LIMIT_WINDOW_MS).toBe(0);
    expect(first!.msLeft).toBeGreaterThan(0);
    expect(first!.msLeft).toBeLessThanOrEqual(RATE_LIMIT_WINDOW_MS);
    const rows = await t.db.query<{ key: string; hits: number }>("SELECT key, hits FROM rate_limit_windows WHERE key IN ('k-old', 'k-other') ORDER BY key");
    expect(rows.map((r) => [r.key, r.hits])).toEqual([["k-old", 6], ["k-other", 3]]);
  });

  it("when windows of keys no longer in use have ended, then sweepExpired deletes them and keeps current ones", async () => {
    const repo = rateLimitsRepo(t.db);
    await t.db.query(`INSERT INTO rate_limit_windows (key, window_start, hits) VALUES ('k-idle-1', now() - interval '2 minutes', 1), ('k-idle-2', now() - interval '1 day', 3)`);
    await repo.take([{ key: "k-live", n: 1 }]);
    expect(await repo.sweepExpired()).toBeGreaterThanOrEqual(2);
    const keys = (await t.db.query<{ key: string }>("SELECT key FROM rate_limit_windows WHERE key IN ('k-idle-1', 'k-idle-2', 'k-live') ORDER BY key")).map((r) => r.key);
    expect(keys).toEqual(["k-live"]);
  });
});
