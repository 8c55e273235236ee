import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { capturedLogger } from "../harness/captured-logger.js";
import { startServer } from "../../src/server.js";
import { ALL_SCOPES } from "../../src/services/tokens.service.js";
import { stayInOneWindow } from "../harness/rate-window.js";
import { documentedStatuses, ingestCodingEvaluation, PUBLIC_HOST, rawProblem, remember, testResolver, useApiServer } from "../harness/factories.js";

const server = await useApiServer();
/** Small bodies and 3 requests per token and minute: each test stays within 3 requests a token unless it tests the limit. */
const constrained = await useApiServer({ bodyLimitBytes: 256, rateLimitPerMinute: 3 });

const GENERATED_ID = /^req_[0-9a-f]{24}$/;
const json = { "content-type": "application/json" };

describe("problem responses", () => {
  it.each([["/v2/nope"], ["/v3/question_sets"], ["/v2/question_sets/0193a5b2-7c4e-7a10-9d2f-3b1c2d4e5f61"], ["/V2/question_sets"], ["/v2/QUESTION_SETS"]])(
    "when %s is requested, then 404 NOT_FOUND as problem+json, with or without a token",
    async (path) => {
      const { token } = await server.newOrg();
      await rawProblem(await server.raw(path), { status: 404, code: "NOT_FOUND" });
      await rawProblem(await server.raw(path, { token }), { status: 404, code: "NOT_FOUND" });
    },
  );

  it("when an operation's path is called with another method, then 404 NOT_FOUND", async () => {
    const { token } = await server.newOrg();
    await rawProblem(await server.raw("/v2/question_sets", { token, method: "DELETE" }), { status: 404, code: "NOT_FOUND" });
    await rawProblem(await server.raw("/v2/webhook_deliveries", { token, method: "POST", headers: json, body: "{}" }), { status: 404, code: "NOT_FOUND" });
  });

  it.each([["{not json"], ['{"url": "https://x.com/"'], ["'single'"], ["null"], ["42"]])("when the body is %s, then 400 VALIDATION_ERROR names the body", async (body) => {
    const { token, api } = await server.newOrg();
    await rawProblem(await server.raw("/v2/webhook_endpoints", { token, method: "POST", headers: json, body }), { status: 400, code: "VALIDATION_ERROR", name: "body", location: "body" });
    expect((await api.GET("/v2/webhook_endpoints")).data!.data).toEqual([]);
  });

  it.each([["text/plain"], ["application/x-www-form-urlencoded"], ["application/xml"]])("when the body is sent as %s, then 415 UNSUPPORTED_MEDIA_TYPE", async (type) => {
    const { token } = await server.newOrg();
    const body = type.includes("form") ? `url=https://${PUBLIC_HOST}/x` : JSON.stringify({ url: `https://${PUBLIC_HOST}/x` });
    await rawProblem(await server.raw("/v2/webhook_endpoints", { token, method: "POST", headers: { "content-type": type }, body }), { status: 415, code: "UNSUPPORTED_MEDIA_TYPE" });
  });

  it("when a POST has no body and no content type, then 415 or 400, never a success", async () => {
    const { token } = await server.newOrg();
    const res = await server.raw("/v2/webhook_endpoints", { token, method: "POST" });
    await rawProblem(res, res.status === 415 ? { status: 415, code: "UNSUPPORTED_MEDIA_TYPE" } : { status: 400, code: "VALIDATION_ERROR" });
  });

  it("when the body is larger than the limit, then 413 PAYLOAD_TOO_LARGE and nothing is created", async () => {
    expect(documentedStatuses("createWebhookEndpoint")).toEqual(expect.arrayContaining([413, 415]));
    const { token, api } = await constrained.newOrg();
    const body = JSON.stringify({ url: `https://${PUBLIC_HOST}/x`, description: "d".repeat(400) });

    await rawProblem(await constrained.raw("/v2/webhook_endpoints", { token, method: "POST", headers: json, body }), { status: 413, code: "PAYLOAD_TOO_LARGE" });
    expect((await api.GET("/v2/webhook_endpoints")).data!.data).toEqual([]);
    // under the limit the same server accepts it
    const ok = await constrained.raw("/v2/webhook_endpoints", { token, method: "POST", headers: json, body: JSON.stringify({ url: `https://${PUBLIC_HOST}/x` }) });
    expect(ok.status).toBe(201);
  });

  it("when a token exceeds its requests per minute, then 429 RATE_LIMITED with Retry-After, and other tokens are unaffected", async () => {
    const first = await constrained.newOrg();
    const second = await constrained.newOrg();

    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await constrained.raw("/v2/question_sets", { token: first.token })).status);
    const refused = await constrained.raw("/v2/question_sets", { token: first.token });
    const other = await constrained.raw("/v2/question_sets", { token: second.token });

    expect(statuses).toEqual([200, 200, 200]);
    const retryAfter = Number(refused.headers.get("retry-after"));
    expect(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60, `Retry-After ${refused.headers.get("retry-after")}`).toBe(true);
    await rawProblem(refused, { status: 429, code: "RATE_LIMITED" });
    expect(other.status).toBe(200);
  });

  it("when an internal operation is rate limited, then 429 is a status its contract documents", async () => {
    const { token } = await constrained.newOrg();
    await stayInOneWindow(constrained.server.db, 15);
    const ingest = () => constrained.raw("/v2/internal/coding_evaluations", { token, method: "POST", headers: json, body: "{}" });

    const statuses = [(await ingest()).status, (await ingest()).status, (await ingest()).status];
    const refused = await ingest();

    expect(statuses).toEqual([201, 201, 201]);
    await rawProblem(refused, { status: 429, code: "RATE_LIMITED" });
    for (const op of ["ingestQuestionSet", "ingestCodingEvaluation", "publishEvent", "deleteWebhookEndpoint", "sendTestWebhookEvent"]) {
      expect(documentedStatuses(op), op).toContain(429);
    }
  });
});

describe("X-Request-Id", () => {
  it.each([["client-req-0001"], ["a".repeat(128)], ["~!#$%&'*+-.^_`|:;<>=?@[]{}()/\\\""]])("when a sane id %s is sent, then it is echoed on success and on problems", async (id) => {
    const { token } = await server.newOrg();
    const ok = await server.raw("/v2/question_sets", { token, headers: { "x-request-id": id } });
    const bad = await server.raw("/v2/question_sets?limit=0", { token, headers: { "x-request-id": id } });
    expect(ok.headers.get("x-request-id")).toBe(id);
    expect(bad.headers.get("x-request-id")).toBe(id);
    expect(((await bad.json()) as { request_id: string }).request_id).toBe(id);
  });

  it.each([["a".repeat(129)], ["has space"], ["tab\there"], ["caf\u00e9"], [""]])("when an insane id %j is sent, then a generated one replaces it", async (id) => {
    const { token } = await server.newOrg();
    const res = await server.raw("/v2/question_sets", { token, headers: { "x-request-id": id } });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-request-id")).toMatch(GENERATED_ID);
  });

  it("when no id is sent, then every response carries its own generated one", async () => {
    const { token, orgId } = await server.newOrg();
    const readOnly = await server.token(orgId, ["question_sets:read"]);
    await ingestCodingEvaluation(server.client(token));
    const responses = [
      await server.raw("/healthz"),
      await server.raw("/readyz"),
      await server.raw("/v2/coding_evaluations", { token }),
      await server.raw("/v2/webhook_endpoints", { token, method: "POST", headers: json, body: JSON.stringify({ url: `https://${PUBLIC_HOST}/x` }) }),
      await server.raw("/v2/question_sets?limit=abc", { token }),
      await server.raw("/v2/question_sets"),
      await server.raw("/v2/webhook_endpoints", { token: readOnly }),
      await server.raw("/nope"),
      await server.raw("/v2/webhook_endpoints", { token, method: "POST", headers: { "content-type": "text/plain" }, body: "x" }),
      await constrained.raw("/v2/webhook_endpoints", { token: (await constrained.newOrg()).token, method: "POST", headers: json, body: JSON.stringify({ d: "x".repeat(1000) }) }),
    ];
    expect(responses.map((r) => r.status)).toEqual([200, 200, 200, 201, 400, 401, 403, 404, 415, 413]);
    const ids = responses.map((r) => r.headers.get("x-request-id"));
    for (const id of ids) expect(id).toMatch(GENERATED_ID);
    expect(new Set(ids).size).toBe(ids.length);
  });
});

describe("health", () => {
  it("when /healthz and /readyz are called without a token, then both answer 200", async () => {
    const health = await server.raw("/healthz");
    const ready = await server.raw("/readyz");
    expect([health.status, await health.json()]).toEqual([200, { status: "ok" }]);
    expect([ready.status, await ready.json()]).toEqual([200, { status: "ready" }]);
  });
});

describe("internal errors", () => {
  // A server of its own, whose database these tests break: first a table, then the whole database.
  const fragileLog = capturedLogger();
  const logs = fragileLog.lines;
  let fragile: Awaited<ReturnType<typeof startServer>>;
  let token: string;

  beforeAll(async () => {
    fragile = await startServer({
      port: 0,
      host: "127.0.0.1",
      inMemory: true,
      databaseUrl: "", // the embedded database, whatever DATABASE_URL says
      encryptionKey: randomBytes(32).toString("base64"),
      validateResponses: true,
      rateLimitPerMinute: 0,
      dispatcher: false,
      resolver: testResolver,
      logger: fragileLog.logger,
    });
    const org = await fragile.services.tokens.createOrg("fragile");
    token = (await fragile.services.tokens.createToken(org.id, ALL_SCOPES)).token;
    remember(token);
  });
  // its database is closed by the last test, so closing it again may fail
  afterAll(() => fragile.close().catch(() => undefined));
  const get = (path: string, headers: Record<string, string> = {}) => fetch(`${fragile.url}${path}`, { headers: { authorization: `Bearer ${token}`, ...headers } });

  it("when a repository query fails, then 500 INTERNAL_ERROR shows no internals, and the log has the error with the request id", async () => {
    const ingested = await fetch(`${fragile.url}/v2/internal/coding_evaluations`, { method: "POST", headers: { authorization: `Bearer ${token}`, ...json }, body: "{}" });
    expect(ingested.status).toBe(201);
    await fragile.db.exec("DROP TABLE coding_evaluations");

    const res = await get("/v2/coding_evaluations?include_total=true", { "x-request-id": "broken-001" });
    const text = await res.clone().text();

    const problem = await rawProblem(res, { status: 500, code: "INTERNAL_ERROR" });
    expect(problem).toEqual({
      type: "/problems/internal-error",
      title: "Internal error",
      status: 500,
      detail: "An unexpected error occurred.",
      code: "INTERNAL_ERROR",
      request_id: "broken-001",
    });
    expect(text).not.toMatch(/coding_evaluations|prisma|stack|at \/|\.ts:|relation|SELECT/i);
    const logged = logs.filter((l) => l.includes('"broken-001"'));
    expect(logged.some((l) => /"level":50/.test(l) && /coding_evaluations/.test(l)), logged.join("\n")).toBe(true);
    // the rest of the server keeps working
    expect((await get("/v2/question_sets")).status).toBe(200);
    expect((await get("/readyz")).status).toBe(200);
  });

  it("when the database is gone, then /readyz answers 503 and operations 500 without internals", async () => {
    await fragile.db.close();

    const ready = await get("/readyz");
    const list = await get("/v2/question_sets");

    expect(ready.status).toBe(503);
    expect(ready.headers.get("x-request-id")).toMatch(GENERATED_ID);
    const problem = await rawProblem(list, { status: 500, code: "INTERNAL_ERROR" });
    expect(problem.detail).toBe("An unexpected error occurred.");
    expect(logs.some((l) => l.includes(problem.request_id) && /"level":50/.test(l))).toBe(true);
    expect(logs.some((l) => l.includes(token))).toBe(false);
  });
});
