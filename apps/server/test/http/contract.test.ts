import { createRequire } from "node:module";
import { describe, expect, it } from "vitest";
import { indexContract, loadContract } from "../../src/contract/contract.js";
import { compileValidatorRoutesFromContract } from "../../src/http/validator-routes.js";
import { SPEC_PATH } from "../../src/lib/paths.js";

const contract = loadContract(SPEC_PATH);
const ID = "0193a5b2-7c4e-7a10-9d2f-3b1c2d4e5f61";

describe("the contract's path matcher", () => {
  it.each([
    ["GET", "/v2/coding_evaluations", "listCodingEvaluations"],
    ["GET", "/v2/coding_evaluations/", "listCodingEvaluations"],
    ["GET", "/v2/question_sets", "listQuestionSets"],
    ["POST", "/v2/webhook_endpoints", "createWebhookEndpoint"],
    ["GET", `/v2/webhook_endpoints/${ID}`, "getWebhookEndpoint"],
    ["POST", `/v2/webhook_endpoints/${ID}/rotate_secret`, "rotateWebhookEndpointSecret"],
  ])("when %s %s is matched, then it is %s", (method, path, operationId) => {
    expect(contract.match(method, path)?.operation.operationId).toBe(operationId);
  });

  it.each([
    ["DELETE", "/v2/question_sets"],
    ["GET", "/v2/coding_evaluations//"],
    ["GET", "/v2/Coding_evaluations"],
    ["GET", "/v2/coding_evaluationsx"],
    ["GET", "/v2/webhook_endpoints/a/b"],
    ["HEAD", "/v2/question_sets"],
  ])("when %s %s is matched, then no operation", (method, path) => {
    expect(contract.match(method, path)).toBeUndefined();
  });

  it("when every operation's own path is matched, then that operation answers, with its path values as sent", () => {
    for (const op of contract.operations) {
      const path = op.path.replace(/\{[^}]+\}/g, "x%201");
      const m = contract.match(op.method, path);
      expect(m?.operation.path).toBe(op.path);
      expect(m?.pathValues.map(([, v]) => v)).toEqual([...op.path.matchAll(/\{/g)].map(() => "x%201"));
    }
  });

  it("when a servers URL has a path, then it is the base of every operation", () => {
    const c = indexContract({ servers: [{ url: "https://api.example.com/base/" }], paths: { "/x/{id}": { get: { operationId: "getX", "x-required-scopes": [] } } } });
    expect(c.basePath).toBe("/base");
    expect(c.match("GET", "/base/x/1")?.pathValues).toEqual([["id", "1"]]);
    expect(c.match("GET", "/x/1")).toBeUndefined();
    expect(c.route("/base/x/:id")?.keys).toEqual([{ name: "id" }]);
  });

  it("when $refs chain or loop, then they are followed, and a loop ends", () => {
    const c = indexContract({ components: { parameters: { A: { $ref: "#/components/parameters/B" }, B: { name: "limit", in: "query", schema: { type: "integer" } }, L: { $ref: "#/components/parameters/L" } } }, paths: {} });
    expect(c.resolve({ $ref: "#/components/parameters/A" }).name).toBe("limit");
    expect(c.resolve({ $ref: "#/components/parameters/L" })).toEqual({ $ref: "#/components/parameters/L" });
  });
});

describe("what the contract says about bodies", () => {
  const op = (id: string) => contract.operations.find((o) => o.operationId === id)!;
  it("when the body schemas are read, then every stored date field is found, through $ref, allOf and arrays", () => {
    const dates = Object.fromEntries(contract.operations.filter((o) => o.bodyDates.length).map((o) => [o.operationId, o.bodyDates.map((d) => `${d.path.join(".")}:${d.format}`).sort()]));
    expect(dates).toMatchObject({
      publishEvent: ["occurred_at:date-time"],
      publishEvents: ["events.*.occurred_at:date-time"],
      recoverWebhookDeliveries: ["since:date-time", "until:date-time"],
    });
    expect(Object.entries(dates).filter(([, d]) => d.includes("display_date:date")).map(([id]) => id).sort()).toEqual(["ingestCodingEvaluation", "upsertCodingEvaluation"].sort());
    expect(op("createWebhookEndpoint").bodyDates).toEqual([]);
  });
});

type Compiled = { regexp: RegExp; keys: Array<{ name: string }> };
const fromValidator = createRequire(createRequire(import.meta.url).resolve("express-openapi-validator"));
const ptr = fromValidator("path-to-regexp") as { pathToRegexp: (p: string, o?: object) => Compiled };

describe("the validator's route lookup", () => {
  it("when the validator compiles a contract path as it does (case-sensitive, trailing slash optional), then it gets the contract's compiled route, which matches as path-to-regexp did", () => {
    const before = ptr.pathToRegexp("/v2/webhook_endpoints/:endpoint_id", { sensitive: true, strict: false });
    compileValidatorRoutesFromContract(contract);
    compileValidatorRoutesFromContract(contract); // idempotent: the app may be built more than once per process
    const a = ptr.pathToRegexp("/v2/webhook_endpoints/:endpoint_id", { sensitive: true, strict: false });
    expect(a).toBe(contract.route("/v2/webhook_endpoints/:endpoint_id"));
    expect(a.keys.map((k) => k.name)).toEqual(before.keys.map((k) => k.name));
    for (const path of ["/v2/webhook_endpoints/abc", "/v2/webhook_endpoints/abc/", "/v2/Webhook_endpoints/abc", "/v2/webhook_endpoints/abc/rotate_secret", "/v2/webhook_endpoints/a%2Fb", "/v2/webhook_endpoints/"]) {
      expect(a.regexp.exec(path)?.slice(1), path).toEqual(before.regexp.exec(path)?.slice(1));
    }
    expect(Object.isFrozen(a)).toBe(true);
  });

  it("when called with other options or a path the contract lacks, then the original function answers", () => {
    compileValidatorRoutesFromContract(contract);
    const one = ptr.pathToRegexp("/x/:y", { end: false });
    expect(one.regexp.test("/x/1/more")).toBe(true);
    expect(ptr.pathToRegexp("/v2/webhook_endpoints/:endpoint_id", { sensitive: false, strict: false })).not.toBe(contract.route("/v2/webhook_endpoints/:endpoint_id"));
    expect(ptr.pathToRegexp("/nowhere/:id", { sensitive: true, strict: false }).regexp.test("/nowhere/1")).toBe(true);
  });
});

describe("one reader of the contract", () => {
  it("when the server's sources are read, then only contract/ follows $refs or turns path templates into patterns", async () => {
    const { readdir, readFile } = await import("node:fs/promises");
    const src = new URL("../../src/", import.meta.url);
    const files = (await readdir(src, { recursive: true })).filter((f) => f.endsWith(".ts") && !f.startsWith("generated") && !f.startsWith("contract"));
    expect(files.length).toBeGreaterThan(50);
    const offenders: string[] = [];
    for (const f of files) {
      const text = await readFile(new URL(f, src), "utf8");
      // a reference being followed, or `{name}` templates being compiled into a pattern
      if (/\.\$ref\b|\["\$ref"\]|\\\{\[\^\}\]\+\\\}|\{\[\^\}\]\+\}/.test(text)) offenders.push(f);
    }
    expect(offenders).toEqual([]);
  });
});
