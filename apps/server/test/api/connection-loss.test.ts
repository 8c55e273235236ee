// A lost database connection is a retry or a 503, never a 500 (docs/api-decisions.md#a-lost-database-connection):
// the real server under a steady load of reads and keyed POSTs while an admin connection
// terminates every other backend of its database, several times; and a server whose database
// cannot be reached at all (a TCP proxy in between, cut). PostgreSQL only: PGlite is one
// in-process connection, there is nothing to terminate.
import { createServer, connect, type Socket } from "node:net";
import type { WebhookDelivery } from "@audit-review/api-types/internal";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { createEndpoint, ingestCodingEvaluation, ingestQuestionSet, publishEvent, rawProblem, uniq, useApiServer } from "../harness/factories.js";
import { createTestDatabase, type TestDatabase } from "../harness/db.js";
import { moved, scrape } from "../harness/metrics.js";
import type { TestOrg, TestServer } from "../harness/server.js";

/** A TCP proxy to PostgreSQL that can be cut: every connection through it ends, new ones are dropped. */
interface CuttableProxy {
  url: string;
  cut(): void;
  restore(): void;
  close(): Promise<void>;
}

async function cuttableProxy(databaseUrl: string): Promise<CuttableProxy> {
  const target = new URL(databaseUrl);
  const sockets = new Set<Socket>();
  let open = true;
  const proxy = createServer((client) => {
    if (!open) return client.destroy();
    const upstream = connect(Number(target.port || 5432), target.hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on("error", () => socket.destroy());
      socket.on("close", () => {
        sockets.delete(socket);
        (socket === client ? upstream : client).destroy();
      });
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  const address = proxy.address();
  if (typeof address !== "object" || address === null) throw new Error("the proxy has no port");
  const url = new URL(databaseUrl);
  url.host = `127.0.0.1:${address.port}`;
  return {
    url: url.toString(),
    cut() {
      open = false;
      for (const socket of sockets) socket.destroy();
    },
    restore() {
      open = true;
    },
    close: () => new Promise((resolve) => proxy.close(() => resolve())),
  };
}

const onPostgres = Boolean(process.env.TEST_DATABASE_URL);
const server: TestServer | undefined = onPostgres ? await useApiServer() : undefined;
// a second server whose every database connection goes through a proxy the test cuts
const behindProxy: { db: TestDatabase; proxy: CuttableProxy; server: TestServer } | undefined = onPostgres ? await (async () => {
  const db = await createTestDatabase();
  const proxy = await cuttableProxy(db.databaseUrl!);
  // registered before the server's own close, so they run after it
  afterAll(async () => {
    await proxy.close();
    await db.close();
  });
  return { db, proxy, server: await useApiServer({ databaseUrl: proxy.url }) };
})() : undefined;

const READERS = 4;
const WRITERS = 2;
const TERMINATIONS = 6;
const TERMINATE_EVERY_MS = 400;

interface Answer {
  method: string;
  path: string;
  status: number;
  response: Response;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.skipIf(!onPostgres)("a lost database connection under load (PostgreSQL only: set TEST_DATABASE_URL; PGlite has no connections to terminate)", () => {
  let admin: pg.Client | undefined;
  afterAll(() => admin?.end());

  /** Every other backend of the server's database: its pool, its LISTEN connection, anything idle. */
  async function terminateAll(): Promise<number> {
    const { rows } = await admin!.query<{ terminated: boolean }>(
      "SELECT pg_terminate_backend(pid) AS terminated FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()",
    );
    return rows.filter((r) => r.terminated).length;
  }

  it("When every connection is terminated again and again, Then no request answers 500, reads are retried, every failure is a 503 with Retry-After, keyed POSTs take effect once, and the server recovers", async () => {
    const s = server!;
    admin = new pg.Client({ connectionString: s.server.deps.config.databaseUrl, application_name: "connection-loss-test" });
    // terminating the others never ends this one; an error here must fail the test, not the run
    admin.on("error", (err) => expect.unreachable(`the admin connection failed: ${err.message}`));
    await admin.connect();
    const org: TestOrg = await s.newOrg();
    const endpoint = await createEndpoint(org.api);
    for (let i = 0; i < 3; i++) {
      await ingestQuestionSet(org.api);
      await ingestCodingEvaluation(org.api);
      await publishEvent(org.api);
    }
    const deliveriesOf = async () =>
      (await s.server.db.query<{ id: string }>("SELECT id FROM webhook_deliveries WHERE endpoint_id = $1", [endpoint.id])).map((r) => r.id);
    // the published events' deliveries, there before the load
    const earlier = new Set(await deliveriesOf());
    const metricsUrl = s.server.deps.metrics!.listener.url;
    const before = await scrape(metricsUrl);
    const logsBefore = s.logs.length;

    const answers: Answer[] = [];
    const call = async (method: string, path: string, headers: Record<string, string> = {}, body?: unknown): Promise<Response> => {
      const response = await s.raw(path, {
        token: org.token,
        method,
        headers: body === undefined ? headers : { ...headers, "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      answers.push({ method, path, status: response.status, response: response.clone() });
      return response;
    };

    let loading = true;
    const reads = [
      "/v2/question_sets?limit=10",
      "/v2/coding_evaluations?limit=10",
      "/v2/webhook_endpoints",
      `/v2/webhook_endpoints/${endpoint.id}`,
      "/v2/events?limit=5",
      "/v2/webhook_deliveries?limit=5",
    ];
    const reader = async (n: number) => {
      for (let i = n; loading; i++) await (await call("GET", reads[i % reads.length]!)).arrayBuffer();
    };

    // Each key is sent until it is answered 2xx, as a client honouring Retry-After does.
    const delivered = new Map<string, string>();
    const writer = async () => {
      while (loading) {
        const key = `conn-loss-${uniq()}`;
        for (;;) {
          const response = await call("POST", `/v2/webhook_endpoints/${endpoint.id}/test`, { "idempotency-key": key }, {});
          if (response.status === 201) {
            delivered.set(key, ((await response.json()) as WebhookDelivery).id);
            break;
          }
          await response.arrayBuffer();
          if (response.status !== 503) break;
          await sleep(Number(response.headers.get("retry-after")) * 1000);
        }
      }
    };

    const killer = async () => {
      const terminated: number[] = [];
      for (let i = 0; i < TERMINATIONS; i++) {
        await sleep(TERMINATE_EVERY_MS);
        terminated.push(await terminateAll());
      }
      await sleep(TERMINATE_EVERY_MS);
      loading = false;
      return terminated;
    };

    const [terminated] = await Promise.all([
      killer(),
      ...Array.from({ length: READERS }, (_, n) => reader(n)),
      ...Array.from({ length: WRITERS }, () => writer()),
    ]);

    // the terminations hit the server's connections each time
    expect(terminated.every((n) => n > 0), `backends terminated per round: ${terminated.join(", ")}`).toBe(true);

    // not one 500; every answer is a 2xx or a 503 problem with Retry-After
    const summary: Record<number, number> = {};
    for (const a of answers) summary[a.status] = (summary[a.status] ?? 0) + 1;
    expect(answers.filter((a) => a.status >= 500 && a.status !== 503), JSON.stringify(summary)).toEqual([]);
    const failures = answers.filter((a) => a.status < 200 || a.status > 299);
    for (const failure of failures) {
      const problem = await rawProblem(failure.response, { status: 503, code: "SERVICE_UNAVAILABLE" });
      expect(failure.response.headers.get("retry-after")).toMatch(/^[1-9]\d*$/);
      expect(problem.detail).not.toMatch(/postgres|terminat|57P01|ECONN|127\.0\.0\.1/i);
    }

    // the reads that lost their connection ran again, and nearly all of those answered
    const logged = s.logs.slice(logsBefore);
    const after = await scrape(metricsUrl);
    const retriedOk = moved(before, after, "ars_db_connection_retries_total", { pool: "main", outcome: "retried_ok" });
    const gaveUp = moved(before, after, "ars_db_connection_retries_total", { pool: "main", outcome: "gave_up" });
    const readFailures = failures.filter((a) => a.method === "GET").length;
    const readCount = answers.filter((a) => a.method === "GET").length;
    const detail = JSON.stringify({ summary, retriedOk, gaveUp, readFailures, readCount, delivered: delivered.size });
    expect(retriedOk, detail).toBeGreaterThan(0);
    // a GET reads outside transactions only: it fails only when its retry failed too
    expect(readFailures, detail).toBeLessThanOrEqual(gaveUp);
    expect(readCount - readFailures, detail).toBeGreaterThan(readCount * 0.95);
    // each 503 logged its cause as a code, never a message or a connection string
    const lost = logged.filter((l) => l.includes("database connection lost"));
    expect(lost, detail).toHaveLength(failures.length);
    for (const line of lost) {
      expect(line).not.toMatch(/postgresql:\/\/|password|terminating/i);
      expect(JSON.parse(line)).toMatchObject({ cause: expect.stringMatching(/^[A-Za-z0-9 ]{3,40}$/) });
    }

    // every keyed POST took effect exactly once, however often it was sent
    expect(delivered.size, detail).toBeGreaterThan(0);
    const created = (await deliveriesOf()).filter((id) => !earlier.has(id));
    expect(created.sort()).toEqual([...delivered.values()].sort());

    // and afterwards it serves as before: no retry, no failure
    const settledAt = s.logs.length;
    for (const path of reads) expect((await call("GET", path)).status).toBe(200);
    expect((await call("POST", `/v2/webhook_endpoints/${endpoint.id}/test`, { "idempotency-key": `after-${uniq()}` }, {})).status).toBe(201);
    expect((await s.raw("/readyz")).status).toBe(200);
    expect(s.logs.slice(settledAt).filter((l) => l.includes("database connection lost"))).toEqual([]);
    const settled = await scrape(metricsUrl);
    for (const outcome of ["retried_ok", "gave_up"]) expect(moved(after, settled, "ars_db_connection_retries_total", { pool: "main", outcome })).toBe(0);
  }, 60_000);

  it("When the database cannot be reached at all, Then reads and keyed POSTs answer 503 with Retry-After, never 500, and once it can the repeat takes effect once", async () => {
    const { proxy, server: s } = behindProxy!;
    const org = await s.newOrg();
    const metricsUrl = s.server.deps.metrics!.listener.url;
    const before = await scrape(metricsUrl);
    const key = `unreachable-${uniq()}`;
    const create = () =>
      s.raw("/v2/webhook_endpoints", {
        token: org.token,
        method: "POST",
        headers: { "content-type": "application/json", "idempotency-key": key },
        body: JSON.stringify({ url: "https://hooks.acme-receiver.com/unreachable", description: key }),
      });
    expect((await s.raw("/v2/question_sets", { token: org.token })).status).toBe(200);
    const logsBefore = s.logs.length;

    proxy.cut();
    for (const response of [await s.raw("/v2/question_sets", { token: org.token }), await s.raw("/v2/webhook_endpoints", { token: org.token }), await create()]) {
      const problem = await rawProblem(response, { status: 503, code: "SERVICE_UNAVAILABLE" });
      expect(response.headers.get("retry-after")).toBe("1");
      expect(problem.detail).toBe("The service is briefly unavailable; retry after 1 second.");
    }
    expect((await s.raw("/readyz")).status).toBe(503);
    const lost = s.logs.slice(logsBefore).filter((l) => l.includes("database connection lost; answered 503"));
    expect(lost).toHaveLength(3);
    for (const line of lost) expect(line).not.toMatch(/postgresql:|127\.0\.0\.1|password/i);
    // each read ran a second time, on a fresh connection, and that failed too
    const after = await scrape(metricsUrl);
    expect(moved(before, after, "ars_db_connection_retries_total", { pool: "main", outcome: "gave_up" })).toBeGreaterThanOrEqual(2);

    proxy.restore();
    expect((await s.raw("/v2/question_sets", { token: org.token })).status).toBe(200);
    const created = await create();
    expect(created.status).toBe(201);
    expect((await create()).headers.get("idempotent-replayed")).toBe("true");
    const [row] = await s.server.db.query<{ n: number }>("SELECT count(*)::int AS n FROM webhook_endpoints WHERE description = $1", [key]);
    expect(row!.n).toBe(1);
  }, 60_000);
});
