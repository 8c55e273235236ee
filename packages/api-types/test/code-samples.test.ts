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
    const s = renderAll(bundle, source);
    expect(s.listQuestionSets.curl).toContain(`"$ARS_API_URL/v2/question_sets?is_production=true&limit=25"`);
    expect(s.listQuestionSets.ts).toContain(`client.listQuestionSets({\n  is_production: "true",\n  limit: 25,\n})`);
    expect(s.listQuestionSets.python).toContain(`list_question_sets(is_production="true", limit=25)`);
    expect(s.listQuestionSets.go).toContain(".IsProduction(ars.BOOLEANSTRING_TRUE).Limit(25)");
    expect(s.updateWebhookEndpoint.curl).toContain(`"$ARS_API_URL/v2/webhook_endpoints/$ARS_ENDPOINT_ID"`);
    expect(s.updateWebhookEndpoint.go).toContain(`filters.SetAuditResults(ars.AUDITRESULTFILTER_ALL)`);
    expect(s.getHealth.curl).not.toContain("Authorization");
  });

  it("when a sample needs a server, a token or an id, then it reads them from the environment in every language", () => {
    const s = renderAll(bundle, source);
    expect(s.getWebhookEndpoint.curl).toBe(`curl "$ARS_API_URL/v2/webhook_endpoints/$ARS_ENDPOINT_ID" \\\n  -H "Authorization: Bearer $ARS_TOKEN"`);
    expect(s.getWebhookEndpoint.ts).toContain(`createClient({ baseUrl: process.env.ARS_API_URL!, token: process.env.ARS_TOKEN! })`);
    expect(s.getWebhookEndpoint.ts).toContain(`client.getWebhookEndpoint(process.env.ARS_ENDPOINT_ID!)`);
    expect(s.getWebhookEndpoint.python).toContain(`get_webhook_endpoint(os.environ["ARS_ENDPOINT_ID"])`);
    expect(s.getWebhookEndpoint.python).toContain(`ars.Configuration(host=os.environ["ARS_API_URL"])`);
    expect(s.getWebhookEndpoint.go).toContain(`GetWebhookEndpoint(ctx, os.Getenv("ARS_ENDPOINT_ID"))`);
    expect(s.getWebhookEndpoint.go).toContain(`{{URL: os.Getenv("ARS_API_URL")}}`);
    for (const lang of ["curl", "ts", "python", "go"]) expect(JSON.stringify(s), lang).not.toMatch(/0193a5b2|api\.audit-review\.dev/);
  });

  it("when a sample sends an Idempotency-Key or a recent time, then it makes a new one each run", () => {
    const s = renderAll(bundle, source);
    expect(s.createWebhookEndpoint.curl).toContain(`-H "Idempotency-Key: $(od -An -N16 -tx1 /dev/urandom | tr -d ' \\n')"`);
    expect(s.createWebhookEndpoint.ts).toContain("{ idempotencyKey: randomUUID() }");
    expect(s.createWebhookEndpoint.ts).toContain(`import { randomUUID } from "node:crypto";`);
    expect(s.createWebhookEndpoint.python).toContain("idempotency_key=str(uuid.uuid4())");
    expect(s.createWebhookEndpoint.go).toContain(".IdempotencyKey(hex.EncodeToString(key))");
    expect(s.recoverWebhookDeliveries.curl).toContain(`"since": "$(date -u -d '1 hour ago' +%Y-%m-%dT%H:%M:%SZ)"`);
    expect(s.recoverWebhookDeliveries.ts).toContain("since: new Date(Date.now() - 3600_000).toISOString()");
    expect(s.recoverWebhookDeliveries.python).toContain("since=datetime.now(timezone.utc) - timedelta(hours=1)");
    expect(s.recoverWebhookDeliveries.go).toContain("ars.NewRecoverRequest(time.Now().Add(-time.Hour))");
  });

  it("when a variable is not defined or is part of a value, then rendering fails", () => {
    const missing = { ...source, operations: { ...source.operations, getWebhookEndpoint: { path: { endpoint_id: "{nope}" } } } };
    expect(() => renderAll(bundle, missing)).toThrow(/variable \{nope\} is not defined/);
    const partial = { ...source, operations: { ...source.operations, getWebhookEndpoint: { path: { endpoint_id: "x-{endpoint_id}" } } } };
    expect(() => renderAll(bundle, partial)).toThrow(/must be a whole value/);
  });

  it("when the docs are shaped, then the callback becomes the audit.completed webhook with statuses, a signed request and receivers", () => {
    const receiving = parse(readFileSync(join(root, "openapi/webhooks.yaml"), "utf8"));
    const shaped = shapeForDocs(withCodeSamples(bundle, source), receiving);
    expect(Object.keys(shaped.webhooks)).toEqual(["audit.completed", "Operational notifications delivered to your operational endpoint"]);
    const hook = shaped.webhooks["audit.completed"].post;
    const description: string = hook.description;
    expect(description).toContain("| `failed` |");
    expect(description).toMatch(/webhook-signature: v1,[A-Za-z0-9+/]{43}=/);
    // the receivers are the webhook's code samples: tabs, highlighted by language
    expect(hook["x-codeSamples"].map((x: { lang: string }) => x.lang)).toEqual(["TypeScript", "Python", "Go"]);
    expect(JSON.stringify(shaped.paths)).not.toContain('"callbacks"');
    // the operational webhook: its own signed request (a notification's body), verified as audit.completed's
    const ops = shaped.webhooks["Operational notifications delivered to your operational endpoint"].post;
    expect(ops.description).toMatch(/webhook_endpoint\.disabled/);
    expect(ops.description).toMatch(/webhook-signature: v1,[A-Za-z0-9+/]{43}=/);
    expect(ops["x-codeSamples"]).toBeUndefined();
  });
});
