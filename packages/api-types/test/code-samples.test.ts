import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
// @ts-expect-error: a plain .mjs build script without declarations
import { operationsOf, readSampleSource, renderAll, withCodeSamples } from "../scripts/code-samples.mjs";
// @ts-expect-error: a plain .mjs build script without declarations
import { shapeForDocs } from "../scripts/public-bundle.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
const bundle = JSON.parse(readFileSync(join(root, "openapi/dist/openapi.public.json"), "utf8"));
const docs = parse(readFileSync(join(root, "openapi/dist/openapi.docs.yaml"), "utf8"));
const source = readSampleSource(join(root, "openapi/code-samples.yaml"));

type Op = { operationId: string; op: { "x-codeSamples"?: { lang: string; label: string; source: string }[] } };

describe("code samples on every public operation", () => {
  it("when the public bundle and the docs are built, then every operation has curl, TypeScript, Python and Go samples", () => {
    for (const spec of [bundle, docs]) {
      const ops: Op[] = operationsOf(spec);
      expect(ops.length).toBeGreaterThan(15);
      for (const { operationId, op } of ops) {
        expect({ operationId, labels: op["x-codeSamples"]?.map((s) => s.label) }).toEqual({ operationId, labels: ["curl", "TypeScript", "Python", "Go"] });
      }
    }
  });

  it("when a public operation has no sample, then rendering fails and names it", () => {
    const { listQuestionSets: _, ...rest } = source.operations;
    expect(() => renderAll(bundle, { ...source, operations: rest })).toThrow(/no sample for: GET \/v2\/question_sets \(listQuestionSets\)/);
  });

  it("when a sample names an operation that is not public, or a parameter the operation lacks, then rendering fails", () => {
    expect(() => renderAll(bundle, { ...source, operations: { ...source.operations, ingestQuestionSet: {} } })).toThrow(/not public: ingestQuestionSet/);
    const bad = { ...source, operations: { ...source.operations, listQuestionSets: { query: { colour: "red" } } } };
    expect(() => renderAll(bundle, bad)).toThrow(/listQuestionSets has no query parameter colour/);
  });

  it("when a sample is rendered, then each language sends the same request: path, query, header and body", () => {
    const s = renderAll(bundle, source, { fixtures: { ...source.fixtures, endpoint_id: "E1" } });
    expect(s.listQuestionSets.curl).toContain("/v2/question_sets?is_production=true&limit=25");
    expect(s.listQuestionSets.ts).toContain(`client.listQuestionSets({\n  is_production: "true",\n  limit: 25,\n})`);
    expect(s.listQuestionSets.python).toContain(`list_question_sets(is_production="true", limit=25)`);
    expect(s.listQuestionSets.go).toContain(".IsProduction(ars.BOOLEANSTRING_TRUE).Limit(25)");
    expect(s.updateWebhookEndpoint.curl).toContain("/v2/webhook_endpoints/E1");
    expect(s.updateWebhookEndpoint.go).toContain(`filters.SetAuditResults(ars.AUDITRESULTFILTER_ALL)`);
    expect(s.createWebhookEndpoint.ts).toContain(`{ idempotencyKey: "${source.fixtures.idempotency_key}" }`);
    expect(s.createWebhookEndpoint.python).toContain(`idempotency_key="${source.fixtures.idempotency_key}"`);
    expect(s.createWebhookEndpoint.go).toContain(`.IdempotencyKey("${source.fixtures.idempotency_key}")`);
    expect(s.getHealth.curl).not.toContain("Authorization");
  });

  it("when the docs are shaped, then the callback becomes the audit.completed webhook with statuses, a signed request and receivers", () => {
    const receiving = parse(readFileSync(join(root, "openapi/webhooks.yaml"), "utf8"));
    const shaped = shapeForDocs(withCodeSamples(bundle, source), receiving);
    expect(Object.keys(shaped["x-webhooks"])).toEqual(["audit.completed"]);
    const description: string = shaped["x-webhooks"]["audit.completed"].post.description;
    expect(description).toContain("| `failed` |");
    expect(description).toMatch(/webhook-signature: v1,[A-Za-z0-9+/]{43}=/);
    for (const lang of ["typescript", "python", "go"]) expect(description).toContain("```" + lang);
    expect(JSON.stringify(shaped.paths)).not.toContain('"callbacks"');
  });
});
