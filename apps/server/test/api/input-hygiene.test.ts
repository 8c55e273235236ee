// The input rules of docs/api-decisions.md#input-hygiene: inputs that once answered 5xx, were silently reinterpreted, or
// were refused one parameter at a time. Each is refused (or accepted) at the layer that owns it.
import { readFileSync } from "node:fs";
import { connect } from "node:net";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { SPEC_PATH } from "../../src/lib/paths.js";
import { createEndpoint, ingestQuestionSet, PUBLIC_HOST, rawProblem, useApiServer } from "../harness/factories.js";

const server = await useApiServer();
const limited = await useApiServer({ rateLimitPerMinute: 100 });
const json = { "content-type": "application/json" };
const LISTS = ["/v2/question_sets", "/v2/coding_evaluations", "/v2/webhook_endpoints", "/v2/webhook_deliveries"];

describe("integers are plain decimal digits", () => {
  it.each(["Infinity", "-Infinity", "1e400", "0x10", "1e1", "%205", "%2B5", "010", "5.0", "-0"])("when limit=%s on any list, then 400 names limit", async (limit) => {
    const { token } = await server.newOrg();
    for (const list of LISTS) {
      const problem = await rawProblem(await server.raw(`${list}?limit=${limit}`, { token }), { status: 400, code: "VALIDATION_ERROR", name: "limit", location: "query" });
      expect(problem.errors).toHaveLength(1);
    }
  });

  it("when limit is plain decimal digits, then it is honoured", async () => {
    const { token, api } = await server.newOrg();
    await ingestQuestionSet(api);
    await ingestQuestionSet(api);
    const res = await server.raw("/v2/question_sets?limit=1&is_deleted=false", { token });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { data: unknown[] }).data).toHaveLength(1);
  });
});

describe("every offending parameter is named at once", () => {
  it("when limit, include_total and type are all invalid, then one 400 names all three", async () => {
    const { token } = await server.newOrg();
    const problem = await rawProblem(await server.raw("/v2/question_sets?limit=0&include_total=yes&type=x", { token }), { status: 400, code: "VALIDATION_ERROR" });
    expect(problem.errors!.map((e) => e.name).sort()).toEqual(["include_total", "limit", "type"]);
  });

  it("when raw-request problems (spelling, unknown names, unencoded characters) and schema problems mix, then all are named", async () => {
    const { token } = await server.newOrg();
    const res = await server.raw("/v2/webhook_deliveries?limit=1e1&status=nope&event_type=a(b)&typo=1&audit_id=x", { token });
    const problem = await rawProblem(res, { status: 400, code: "VALIDATION_ERROR" });
    expect(problem.errors!.map((e) => e.name).sort()).toEqual(["audit_id", "event_type", "limit", "status", "typo"]);
  });

  it("when several body fields are invalid, then each is named", async () => {
    const { token } = await server.newOrg();
    const body = JSON.stringify({ url: 5, description: "d".repeat(501), event_types: [], extra: true });
    const problem = await rawProblem(await server.raw("/v2/webhook_endpoints", { token, method: "POST", headers: json, body }), { status: 400, code: "VALIDATION_ERROR" });
    expect(problem.errors!.map((e) => e.name).sort()).toEqual(["description", "event_types", "extra", "url"]);
  });
});

describe("parameter names are spelled as the contract spells them", () => {
  it("when id[]= is sent, then 400 names id[] as unknown instead of reading it as id", async () => {
    const { token, api } = await server.newOrg();
    const set = await ingestQuestionSet(api);
    const problem = await rawProblem(await server.raw(`/v2/question_sets?id%5B%5D=${set.id}`, { token }), { status: 400, code: "VALIDATION_ERROR", name: "id[]", location: "query" });
    expect(problem.errors![0]!.message).toMatch(/not a parameter/);
    expect((await server.raw(`/v2/question_sets?id[]=${set.id}`, { token })).status).toBe(400);
  });
});

describe("the one string rule: what PostgreSQL can store", () => {
  it.each([
    ["NUL", "a\u0000b", /NUL/],
    ["an unpaired high surrogate", "a\ud800b", /surrogate/],
    ["an unpaired low surrogate", "\udc00", /surrogate/],
  ])("when a stored field holds %s, then 400 names the field and nothing is stored", async (_what, value, message) => {
    const { token, api } = await server.newOrg();
    const bodies: Array<[string, object, string]> = [
      ["/v2/webhook_endpoints", { url: `https://${PUBLIC_HOST}/x`, description: value }, "description"],
      ["/v2/webhook_endpoints", { url: `https://${PUBLIC_HOST}/x`, authentication: { type: "basic", username: "u", password: value } }, "authentication.password"],
      ["/v2/internal/question_sets", { set_name: value, set_code: "S-1", type: "compliance", questions: [] }, "set_name"],
    ];
    for (const [path, body, name] of bodies) {
      const problem = await rawProblem(await server.raw(path, { token, method: "POST", headers: json, body: JSON.stringify(body) }), { status: 400, code: "VALIDATION_ERROR", name, location: "body" });
      expect(problem.errors!.find((e) => e.name === name)!.message).toMatch(message);
    }
    expect((await api.GET("/v2/webhook_endpoints")).data!.data).toEqual([]);
  });

  it("when a property name holds NUL, then 400 names its object", async () => {
    const { token } = await server.newOrg();
    const body = JSON.stringify({ url: `https://${PUBLIC_HOST}/x`, authentication: { type: "headers", headers: { "X-A\u0000": "v" } } });
    await rawProblem(await server.raw("/v2/webhook_endpoints", { token, method: "POST", headers: json, body }), { status: 400, code: "VALIDATION_ERROR", name: "authentication.headers", location: "body" });
  });

  it.each([["%00"], ["a%00b"], ["%ED%A0%80"], ["%C0%80"], ["%FF"]])("when the event_type filter of a read is %s, then 400 names event_type", async (value) => {
    const { token } = await server.newOrg();
    await rawProblem(await server.raw(`/v2/webhook_deliveries?event_type=${value}`, { token }), { status: 400, code: "VALIDATION_ERROR", name: "event_type", location: "query" });
  });

  it("when a path parameter holds NUL, then 400 names it", async () => {
    const { token } = await server.newOrg();
    await rawProblem(await server.raw("/v2/webhook_endpoints/%00", { token }), { status: 400, code: "VALIDATION_ERROR", name: "endpoint_id", location: "path" });
  });

  it("when a string holds a paired surrogate (an emoji), then it is stored and read back", async () => {
    const { api } = await server.newOrg();
    const created = await createEndpoint(api, { description: "ok 😀" });
    expect(created.description).toBe("ok 😀");
  });
});

describe("a required body must be there", () => {
  it.each(["/v2/internal/question_sets", "/v2/internal/coding_evaluations", "/v2/internal/events", "/v2/webhook_endpoints"])(
    "when %s gets application/json with an empty body, then 400 body is required and nothing is created",
    async (path) => {
      const { token, api } = await server.newOrg();
      const problem = await rawProblem(await server.raw(path, { token, method: "POST", headers: json }), { status: 400, code: "VALIDATION_ERROR", name: "body", location: "body" });
      expect(problem.errors).toEqual([{ location: "body", name: "body", message: "is required" }]);
      expect((await api.GET("/v2/coding_evaluations")).data!.data).toEqual([]);
    },
  );
});

describe("authentication must be one of its objects", () => {
  it.each([['"none"'], ["5"], ["true"], ["[]"], ["null"], ['"basic"']])("when authentication is %s, then 400 names authentication and nothing is created", async (value) => {
    const { token, api } = await server.newOrg();
    const body = `{"url":"https://${PUBLIC_HOST}/x","authentication":${value}}`;
    await rawProblem(await server.raw("/v2/webhook_endpoints", { token, method: "POST", headers: json, body }), { status: 400, code: "VALIDATION_ERROR", name: "authentication", location: "body" });
    expect((await api.GET("/v2/webhook_endpoints")).data!.data).toEqual([]);
  });

  it("when a header name is longer than 256 characters, then 400 names authentication.headers; 256 is accepted", async () => {
    const { token, api } = await server.newOrg();
    const body = (name: string) => JSON.stringify({ url: `https://${PUBLIC_HOST}/x`, authentication: { type: "headers", headers: { [name]: "v" } } });
    const problem = await rawProblem(await server.raw("/v2/webhook_endpoints", { token, method: "POST", headers: json, body: body("a".repeat(20_002)) }), {
      status: 400,
      code: "VALIDATION_ERROR",
      name: "authentication.headers",
      location: "body",
    });
    expect(problem.detail.length).toBeLessThan(400);
    expect((await server.raw("/v2/webhook_endpoints", { token, method: "POST", headers: json, body: body("a".repeat(256)) })).status).toBe(201);
    expect((await api.GET("/v2/webhook_endpoints")).data!.data).toHaveLength(1);
  });
});

describe("reserved characters in query values", () => {
  it("when created_after has a raw + offset (the parameter is allowReserved), then it means +01:00, as %2B does", async () => {
    const { token } = await server.newOrg();
    const raw = await server.raw("/v2/coding_evaluations?include_total=true&created_after=2026-11-21T09:30:00+01:00", { token });
    const encoded = await server.raw("/v2/coding_evaluations?include_total=true&created_after=2026-11-21T09%3A30%3A00%2B01%3A00", { token });
    expect([raw.status, encoded.status]).toEqual([200, 200]);
  });

  it("when a parameter that is not allowReserved holds a raw ( or +, then 400 says it must be percent-encoded; encoded it is accepted", async () => {
    const { token } = await server.newOrg();
    const problem = await rawProblem(await server.raw("/v2/webhook_deliveries?event_type=a(b)", { token }), { status: 400, code: "VALIDATION_ERROR", name: "event_type", location: "query" });
    expect(problem.errors![0]!.message).toMatch(/percent-encoded/);
    expect((await server.raw("/v2/webhook_deliveries?event_type=a%28b%29", { token })).status).toBe(200);
  });
});

describe("headers", () => {
  it("when the request line is over 16 KiB, then 431 HEADERS_TOO_LARGE as problem+json with X-Request-Id", async () => {
    const url = new URL(server.url);
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(url.port), url.hostname, () => {
        socket.write(`GET /v2/question_sets?${"x".repeat(17_000)} HTTP/1.1\r\nHost: ${url.host}\r\n\r\n`);
      });
      let data = "";
      socket.on("data", (c) => (data += String(c)));
      socket.on("end", () => resolve(data));
      socket.on("error", reject);
    });
    const [head, body] = raw.split("\r\n\r\n") as [string, string];
    expect(head).toMatch(/^HTTP\/1\.1 431 /);
    expect(head).toMatch(/\r\ncontent-type: application\/problem\+json/i);
    const requestId = /\r\nx-request-id: (\S+)/i.exec(head)?.[1];
    expect(requestId).toMatch(/^req_[0-9a-f]{24}$/);
    expect(JSON.parse(body)).toEqual({
      type: "/problems/headers-too-large",
      title: "Request headers too large",
      status: 431,
      detail: expect.any(String),
      code: "HEADERS_TOO_LARGE",
      request_id: requestId,
    });
  });

  it("when any response is sent, then its rate-limit headers are the IETF ones the contract documents, and no legacy X-RateLimit-*", async () => {
    const { token } = await limited.newOrg();
    const res = await limited.raw("/v2/question_sets", { token });
    expect(res.status).toBe(200);
    expect(res.headers.get("ratelimit")).toMatch(/^"100-in-1min"; r=\d+; t=\d+$/);
    expect(res.headers.get("ratelimit-policy")).toMatch(/^"100-in-1min"; q=100; w=60; pk=:[A-Za-z0-9+/=]+:$/);
    expect([res.headers.get("x-ratelimit-limit"), res.headers.get("x-ratelimit-remaining")]).toEqual([null, null]);
    const spec = parse(readFileSync(SPEC_PATH, "utf8")) as { paths: Record<string, Record<string, { responses: Record<string, { headers: object }> }>> };
    const documented = Object.keys(spec.paths["/v2/question_sets"]!.get!.responses["200"]!.headers);
    expect(documented).toEqual(expect.arrayContaining(["RateLimit", "RateLimit-Policy"]));
  });
});
