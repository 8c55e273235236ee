// Bodies that JSON.parse accepts silently or that broke the server: deep nesting, invalid UTF-8,
// duplicate property names, a Content-Encoding the body does not have, an upload cut short.
import { request } from "node:http";
import { brotliCompressSync, deflateSync, gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { MAX_JSON_DEPTH } from "../../src/http/json-shape.js";
import { PUBLIC_HOST, rawProblem, useApiServer } from "../harness/factories.js";
import { loadSpec } from "../fuzz/contract-fuzz.js";
import { operations } from "../fuzz/contract-requests.js";
import { SPEC_PATH } from "../../src/lib/paths.js";

const server = await useApiServer();
const json = { "content-type": "application/json" };
const nested = (depth: number) => "[".repeat(depth) + "]".repeat(depth);
const withBody = operations(loadSpec(SPEC_PATH)).filter((op) => op.body);

describe("nesting", () => {
  it(`when any operation with a body gets a body nested 5,000 levels deep, then 400 names the body (never a 5xx)`, async () => {
    const { token } = await server.newOrg();
    expect(withBody.length).toBeGreaterThan(8);
    for (const op of withBody) {
      const path = op.path.replace(/\{[^}]+\}/g, "0193a5b2-7c4e-7a10-9d2f-3b1c2d4e5f61");
      for (const body of [nested(5_000), `{"a":${nested(5_000)}}`]) {
        const problem = await rawProblem(await server.raw(path, { token, method: op.method, headers: json, body }), { status: 400, code: "VALIDATION_ERROR", name: "body", location: "body" });
        expect(problem.errors).toEqual([{ location: "body", name: "body", message: `is nested more than ${MAX_JSON_DEPTH} levels deep` }]);
      }
    }
  });

  it(`when a body nests exactly ${MAX_JSON_DEPTH} levels, then it is parsed and validated as usual (the extra field is named)`, async () => {
    const { token } = await server.newOrg();
    const body = `{"url":"https://${PUBLIC_HOST}/x","deep":${nested(MAX_JSON_DEPTH - 1)}}`;
    const problem = await rawProblem(await server.raw("/v2/webhook_endpoints", { token, method: "POST", headers: json, body }), { status: 400, code: "VALIDATION_ERROR", name: "deep", location: "body" });
    expect(problem.errors!.map((e) => e.name)).toEqual(["deep"]);
  });
});

describe("bytes and names JSON.parse would accept silently", () => {
  it("when a string holds bytes that are not UTF-8, then 400 says so and nothing is stored", async () => {
    const { token, api } = await server.newOrg();
    for (const bad of [[0xff], [0xc0, 0x80], [0xed, 0xa0, 0x80], [0xe2, 0x82]]) {
      const body = Buffer.concat([Buffer.from(`{"url":"https://${PUBLIC_HOST}/x","description":"a`), Buffer.from(bad), Buffer.from('b"}')]);
      const problem = await rawProblem(await server.raw("/v2/webhook_endpoints", { token, method: "POST", headers: json, body }), { status: 400, code: "VALIDATION_ERROR", name: "body", location: "body" });
      expect(problem.errors).toEqual([{ location: "body", name: "body", message: "is not valid UTF-8" }]);
    }
    expect((await api.GET("/v2/webhook_endpoints")).data!.data).toEqual([]);
  });

  it("when an object has a property name twice (however it is escaped), then 400 names the object and nothing is stored", async () => {
    const { token, api } = await server.newOrg();
    const cases: Array<[string, string]> = [
      [`{"url":"https://${PUBLIC_HOST}/x","url":"https://${PUBLIC_HOST}/y"}`, "body"],
      [`{"url":"https://${PUBLIC_HOST}/x","descr\\u0069ption":"a","description":"b"}`, "body"],
      [`{"url":"https://${PUBLIC_HOST}/x","authentication":{"type":"headers","headers":{"X-Key":"a","X-Key":"b"}}}`, "authentication.headers"],
      [`{"url":"https://${PUBLIC_HOST}/x","event_types":["audit.completed"],"filters":{"question_set_ids":[],"audit_results":"all","audit_results":"failed"}}`, "filters"],
    ];
    for (const [body, name] of cases) {
      const problem = await rawProblem(await server.raw("/v2/webhook_endpoints", { token, method: "POST", headers: json, body }), { status: 400, code: "VALIDATION_ERROR", name, location: "body" });
      expect(problem.errors![0]!.message).toMatch(/more than once/);
    }
    expect((await api.GET("/v2/webhook_endpoints")).data!.data).toEqual([]);
  });

  it("when the same name appears in different objects, or as a value, then the body is accepted", async () => {
    const { token } = await server.newOrg();
    const body = `{"url":"https://${PUBLIC_HOST}/x","description":"url","authentication":{"type":"headers","headers":{"type":"a \\" \\\\","url":"b"}}}`;
    expect((await server.raw("/v2/webhook_endpoints", { token, method: "POST", headers: json, body })).status).toBe(201);
  });
});

describe("Content-Encoding", () => {
  const plain = JSON.stringify({ url: `https://${PUBLIC_HOST}/x` });
  it.each(["gzip", "deflate", "br"])("when Content-Encoding is %s but the body is not compressed, then 400 names the body", async (encoding) => {
    const { token, api } = await server.newOrg();
    const problem = await rawProblem(await server.raw("/v2/webhook_endpoints", { token, method: "POST", headers: { ...json, "content-encoding": encoding }, body: plain }), {
      status: 400,
      code: "VALIDATION_ERROR",
      name: "body",
      location: "body",
    });
    expect(problem.errors![0]!.message).toContain(`Content-Encoding: ${encoding}`);
    expect((await api.GET("/v2/webhook_endpoints")).data!.data).toEqual([]);
  });

  it.each([
    ["gzip", gzipSync],
    ["deflate", deflateSync],
    ["br", brotliCompressSync],
  ] as const)("when Content-Encoding is %s and the body is, then it is accepted", async (encoding, compress) => {
    const { token } = await server.newOrg();
    const res = await server.raw("/v2/webhook_endpoints", { token, method: "POST", headers: { ...json, "content-encoding": encoding }, body: compress(Buffer.from(plain)) });
    expect(res.status).toBe(201);
  });

  it("when Content-Encoding is one the server does not decode, then 415", async () => {
    const { token } = await server.newOrg();
    await rawProblem(await server.raw("/v2/webhook_endpoints", { token, method: "POST", headers: { ...json, "content-encoding": "compress" }, body: plain }), { status: 415, code: "UNSUPPORTED_MEDIA_TYPE" });
  });
});

describe("a client that gives up mid-upload", () => {
  it("when the connection closes before the announced body arrived, then the server logs it below error level and keeps serving", async () => {
    const { token } = await server.newOrg();
    const url = new URL(server.url);
    const before = server.logs.length;
    await new Promise<void>((resolve) => {
      const req = request({ host: url.hostname, port: url.port, method: "POST", path: "/v2/webhook_endpoints", headers: { ...json, authorization: `Bearer ${token}`, "content-length": "1000" } });
      req.on("error", () => resolve());
      req.write('{"url":"https://');
      // let the server start reading the body, then vanish
      setTimeout(() => req.destroy(), 100);
    });
    await expect.poll(() => server.logs.slice(before).some((l) => l.includes("client aborted the request body"))).toBe(true);
    const lines = server.logs.slice(before).map((l) => JSON.parse(l) as { level: number; msg: string });
    expect(lines.filter((l) => l.level >= 50), JSON.stringify(lines)).toEqual([]);
    expect(lines.find((l) => l.msg === "client aborted the request body")!.level).toBe(30);
    expect((await server.raw("/v2/webhook_endpoints", { token })).status).toBe(200);
  });
});
