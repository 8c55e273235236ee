// Every enumerated column holds only what the contract allows: lib/stored-values.ts lists the
// values per column, the contract's enums must be exactly those lists, and the database's CHECK
// constraints must allow exactly them (and refuse anything else).
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { SPEC_PATH } from "../../src/lib/paths.js";
import { ENUMERATED_COLUMNS, IDEMPOTENCY_STATUSES } from "../../src/lib/stored-values.js";
import { createTestDatabase, type TestDatabase } from "../harness/db.js";

interface SchemaObject {
  enum?: (string | null)[];
  oneOf?: { $ref: string }[];
  properties?: Record<string, SchemaObject>;
}

const schemas = (parse(readFileSync(SPEC_PATH, "utf8")) as { components: { schemas: Record<string, SchemaObject> } }).components.schemas;
const enumOf = (name: string): string[] => (schemas[name]!.enum ?? []).filter((v): v is string => v !== null);
/** A oneOf's discriminating `type` values, in its order. */
const discriminators = (name: string): string[] =>
  schemas[name]!.oneOf!.flatMap((r) => (schemas[r.$ref.split("/").pop()!]!.properties!.type!.enum ?? []) as string[]);

/** Column → the contract schema whose enum it stores. */
const CONTRACT: Record<keyof typeof ENUMERATED_COLUMNS, () => readonly string[]> = {
  "question_sets.type": () => enumOf("QuestionSetType"),
  "questions.question_type": () => enumOf("QuestionType"),
  "questions.severity": () => enumOf("Severity"),
  "coding_evaluations.status": () => enumOf("CodingEvaluationStatus"),
  "webhook_endpoints.status": () => enumOf("WebhookEndpointStatus"),
  "webhook_endpoints.disabled_reason": () => enumOf("DisabledReason"),
  "webhook_endpoints.event_types": () => enumOf("EventType"),
  "webhook_endpoints.filter_audit_results": () => enumOf("AuditResultFilter"),
  "webhook_endpoints.payload_format": () => enumOf("PayloadFormat"),
  "webhook_endpoints.payload_fields": () => enumOf("PayloadField"),
  "webhook_endpoints.payload_result_format": () => enumOf("ResultFormat"),
  "webhook_endpoints.payload_responses_filter": () => enumOf("ResponsesFilter"),
  "webhook_endpoints.auth_type": () => discriminators("Authentication"),
  "webhook_endpoints.delivery_order": () => enumOf("DeliveryOrder"),
  "webhook_endpoints.kind": () => enumOf("EndpointKind"),
  "events.type": () => enumOf("EventType"),
  "events.result": () => enumOf("AuditResult"),
  "webhook_deliveries.event_type": () => enumOf("EventType"),
  "webhook_deliveries.status": () => enumOf("WebhookDeliveryStatus"),
  "webhook_deliveries.last_error_code": () => enumOf("DeliveryErrorCode"),
  "webhook_deliveries.next_trigger": () => enumOf("AttemptTrigger"),
  "webhook_delivery_attempts.trigger": () => enumOf("AttemptTrigger"),
  "webhook_delivery_attempts.error_code": () => enumOf("DeliveryErrorCode"),
  // internal: not in the contract
  "idempotency_keys.status": () => IDEMPOTENCY_STATUSES,
};

const sorted = (values: readonly string[]) => [...values].sort();

describe("stored values", () => {
  for (const [column, { values }] of Object.entries(ENUMERATED_COLUMNS)) {
    it(`${column} lists exactly the contract's values`, () => {
      expect(sorted(values)).toEqual(sorted(CONTRACT[column as keyof typeof ENUMERATED_COLUMNS]()));
    });
  }
});

describe("enumerated CHECK constraints", () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase();
  });
  afterAll(async () => {
    await t?.close();
  });

  it("allow exactly the stored values of each column", async () => {
    const rows = await t.db.query<{ name: string; def: string }>(
      `SELECT conname AS name, pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE contype = 'c' AND connamespace = current_schema()::regnamespace`,
    );
    const defs = new Map(rows.map((r) => [r.name, r.def]));
    for (const [column, { values }] of Object.entries(ENUMERATED_COLUMNS)) {
      const def = defs.get(`${column.replace(".", "_")}_check`);
      expect(def, column).toBeDefined();
      const allowed = [...def!.matchAll(/'([^']*)'/g)].map((m) => m[1]!);
      expect(sorted(allowed), column).toEqual(sorted(values));
    }
  });

  const refused = async (sql: string) => {
    const error = await t.db.exec(sql).then(
      () => null,
      (e: unknown) => e as { code?: string; message?: string },
    );
    expect(error?.code ?? error?.message).toMatch(/23514|violates check constraint/);
  };

  it("refuses a coding evaluation status outside the contract", async () => {
    await refused(`
      INSERT INTO coding_evaluations (id, org_id, status, processed, needs_em_eval, em_eval_created, needs_icd_eval,
                                      icd_eval_created, marked_reviewed, archived, redacted, cold)
      VALUES (gen_random_uuid(), 'org', 'done', false, false, false, false, false, false, false, false, false)`);
  });

  it("refuses an unknown question type, but stores NULL", async () => {
    await t.db.exec(`
      INSERT INTO question_sets (id, org_id, set_name, set_code, type, is_production, allow_doc_upload, thresholds)
      VALUES ('0190a000-0000-7000-8000-000000000001', 'org', 'S', 'S', NULL, false, false, '[]')`);
    await t.db.exec(`
      INSERT INTO questions (id, org_id, question_set_id, position, query, question_type)
      VALUES (gen_random_uuid(), 'org', '0190a000-0000-7000-8000-000000000001', 0, 'q', NULL)`);
    await refused(`
      INSERT INTO questions (id, org_id, question_set_id, position, query, question_type)
      VALUES (gen_random_uuid(), 'org', '0190a000-0000-7000-8000-000000000001', 1, 'q', 'essay')`);
  });

  const endpoint = (overrides: Record<string, string>) => {
    const columns: Record<string, string> = {
      id: "gen_random_uuid()",
      org_id: "'org'",
      url: "'https://example.com/'",
      status: "'enabled'",
      event_types: "ARRAY['audit.completed']",
      filter_question_set_ids: "ARRAY[]::uuid[]",
      filter_audit_results: "'all'",
      payload_format: "'standard_v1'",
      payload_fields: "ARRAY['responses']",
      payload_result_format: "'normalized'",
      payload_responses_filter: "'all'",
      payload_include_informational: "false",
      auth_type: "'none'",
      auth_config: "'{}'::jsonb",
      secret_enc: "'\\x01'::bytea",
      secret_hint: "'whsec_…abcd'",
      legacy_signature: "false",
      ...overrides,
    };
    return `INSERT INTO webhook_endpoints (${Object.keys(columns).join(", ")}) VALUES (${Object.values(columns).join(", ")})`;
  };

  it("stores a well-formed endpoint, and refuses unknown enum values, payload fields and a non-object auth_config", async () => {
    await t.db.exec(endpoint({}));
    await refused(endpoint({ auth_type: "'digest'" }));
    await refused(endpoint({ payload_fields: "ARRAY['responses', 'data.secret']" }));
    await refused(endpoint({ disabled_reason: "'bored'" }));
    await refused(endpoint({ auth_config: "'[]'::jsonb" }));
    await refused(endpoint({ auth_config: "'null'::jsonb" }));
  });
});
