// The metrics listener and the metrics that are not the engine's: request durations by operation
// and status class, the database pools, the process defaults. Real server, real requests.
import { createServer } from "node:net";
import { once } from "node:events";
import { describe, expect, it } from "vitest";
import { startTestServer } from "../harness/server.js";
import { moved, scrape, valueOf } from "../harness/metrics.js";
import { onPostgres } from "../harness/db.js";

const t = await startTestServer();
const metricsUrl = t.server.deps.metrics!.listener.url;

describe("the metrics listener", () => {
  it("When started with defaults, Then it listens on loopback, apart from the API's port, and the API does not serve /metrics", async () => {
    const url = new URL(metricsUrl);
    expect(url.hostname).toBe("127.0.0.1");
    expect(Number(url.port)).not.toBe(t.server.port);
    expect((await fetch(`${t.url}/metrics`)).status).toBe(404);
  });

  it("When asked for anything but GET /metrics, Then it answers 404", async () => {
    expect((await fetch(new URL("/other", metricsUrl))).status).toBe(404);
    expect((await fetch(metricsUrl, { method: "POST" })).status).toBe(404);
    expect((await fetch(metricsUrl, { method: "HEAD" })).status).toBe(200);
  });

  it("When its port is taken, Then the server does not start, and says which setting to change", async () => {
    const taken = createServer().listen(0, "127.0.0.1");
    await once(taken, "listening");
    const port = (taken.address() as { port: number }).port;
    try {
      await expect(startTestServer({ metricsPort: port })).rejects.toThrow(new RegExp(`metrics listener cannot listen on 127\\.0\\.0\\.1:${port} \\(ARS_METRICS_PORT, ARS_METRICS_HOST\\)`));
    } finally {
      taken.close();
    }
  });

  it("When metrics are off, Then no listener starts and requests are not timed", async () => {
    const off = await startTestServer({ metricsPort: null });
    expect(off.server.deps.metrics).toBeNull();
    expect((await fetch(`${off.url}/healthz`)).status).toBe(200);
  });

  it("When scraped, Then the process defaults are there (memory, event loop lag)", async () => {
    const s = await scrape(metricsUrl);
    expect(valueOf(s, "process_resident_memory_bytes")).toBeGreaterThan(0);
    expect(s.has("nodejs_eventloop_lag_seconds")).toBe(true);
    expect(valueOf(s, "nodejs_heap_size_used_bytes")).toBeGreaterThan(0);
  });
});

describe("request durations", () => {
  it("When an operation answers, Then its operationId and status class count it; a path of no operation counts as unmatched", async () => {
    const org = await t.newOrg();
    const before = await scrape(metricsUrl);
    await org.api.GET("/v2/question_sets");
    await org.api.GET("/v2/question_sets");
    await t.raw("/v2/question_sets?limit=0", { token: org.token });
    await t.raw("/v2/question_sets");
    await t.raw("/v2/no-such-thing", { token: org.token });
    await t.raw("/healthz");
    const after = await scrape(metricsUrl);
    const op = (operation: string, status_class: string) => moved(before, after, "ars_http_request_duration_seconds_count", { operation, status_class });
    expect(op("listQuestionSets", "2xx")).toBe(2);
    expect(op("listQuestionSets", "4xx")).toBe(2);
    expect(op("unmatched", "4xx")).toBe(1);
    // an operation without security (health, readiness, docs) is named too
    expect(op("getHealth", "2xx")).toBe(1);
    expect(moved(before, after, "ars_http_request_duration_seconds_bucket", { operation: "listQuestionSets", status_class: "2xx", le: "+Inf" })).toBe(2);
    expect(moved(before, after, "ars_http_request_duration_seconds_sum", { operation: "listQuestionSets", status_class: "2xx" })).toBeGreaterThan(0);
  });

  it("When a handler fails unexpectedly, Then the 5xx class counts it, in that server's registry only", async () => {
    const before = await scrape(metricsUrl);
    // a server of its own whose database this test breaks
    const fragile = await startTestServer();
    const fragileUrl = fragile.server.deps.metrics!.listener.url;
    const org = await fragile.newOrg();
    const was = await scrape(fragileUrl);
    await fragile.server.db.exec("DROP TABLE coding_evaluations");
    expect((await org.api.GET("/v2/coding_evaluations")).response.status).toBe(500);
    const now = await scrape(fragileUrl);
    expect(moved(was, now, "ars_http_request_duration_seconds_count", { operation: "listCodingEvaluations", status_class: "5xx" })).toBe(1);
    // one registry per server, not a global: the other server saw none of it
    expect(moved(before, await scrape(metricsUrl), "ars_http_request_duration_seconds_count", { operation: "listCodingEvaluations", status_class: "5xx" })).toBe(0);

    // the queue cannot be read: the scrape still answers, with the queue unknown (not a reassuring 0), and counts the failure
    await fragile.server.db.exec("DROP TABLE webhook_delivery_attempts, webhook_deliveries");
    const broken = await scrape(fragileUrl);
    expect(moved(now, broken, "ars_metrics_database_errors_total")).toBe(1);
    expect(valueOf(broken, "ars_delivery_queue_due_rows")).toBeNaN();
    expect(valueOf(broken, "ars_delivery_queue_oldest_due_age_seconds")).toBeNaN();
    expect(valueOf(broken, "process_resident_memory_bytes")).toBeGreaterThan(0);
    expect(fragile.logs.join("")).toContain("metrics: database read failed");
  });
});

describe("database pools", () => {
  it.skipIf(onPostgres)("When on the embedded database, Then the pool reports its one connection and nothing it cannot know", async () => {
    const s = await scrape(metricsUrl);
    expect(valueOf(s, "ars_db_pool_connections_max", { pool: "main" })).toBe(1);
    expect(s.has('ars_db_pool_connections_in_use{pool="main"}')).toBe(false);
  });

  it.skipIf(!onPostgres)("When on PostgreSQL, Then connections in use and waiting queries are reported, and move while queries hold connections", async () => {
    const s = await scrape(metricsUrl);
    expect(valueOf(s, "ars_db_pool_connections_max", { pool: "main" })).toBe(10);
    expect(s.has('ars_db_pool_requests_waiting{pool="main"}')).toBe(true);
    // the deliveries' and events' list pages have a pool of their own (plans kept per connection)
    expect(valueOf(s, "ars_db_pool_connections_max", { pool: "lists" })).toBe(4);
    expect(s.has('ars_db_pool_connections_in_use{pool="lists"}')).toBe(true);
    // 12 sleeping queries on a pool of 10: 10 connections in use, 2 queries waiting
    const sleeping = Array.from({ length: 12 }, () => t.server.db.query("SELECT pg_sleep(1.5)"));
    await new Promise((resolve) => setImmediate(resolve));
    const busy = await scrape(metricsUrl);
    await Promise.all(sleeping);
    expect(valueOf(busy, "ars_db_pool_connections_in_use", { pool: "main" })).toBe(10);
    expect(valueOf(busy, "ars_db_pool_requests_waiting", { pool: "main" })).toBeGreaterThanOrEqual(2);
  });
});
