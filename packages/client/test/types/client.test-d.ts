// Type tests: checked by `tsc -p tsconfig.test.json` (npm run typecheck) and by vitest's typecheck.
// Each @ts-expect-error must be an error, or the check fails ("Unused '@ts-expect-error' directive").
import { assertType, describe, expectTypeOf, test } from "vitest";
import {
  ApiError,
  createClient,
  type CodingEvaluation,
  type CreatedWebhookEndpoint,
  type ErrorCode,
  type ProblemIssue,
  type QuestionSet,
  type QuestionSetList,
  type WebhookDelivery,
  type WebhookEndpoint,
} from "../../src/index.js";

const client = createClient({ baseUrl: "https://api.audit-review.dev", token: "t" });

describe("createClient options", () => {
  test("a token or a getToken, not both, not neither", () => {
    createClient({ baseUrl: "x", getToken: () => "t" });
    createClient({ baseUrl: "x", getToken: async () => "t", fetch: (req: Request) => fetch(req) });
    // @ts-expect-error neither token nor getToken
    createClient({ baseUrl: "x" });
    // @ts-expect-error both token and getToken
    createClient({ baseUrl: "x", token: "t", getToken: () => "t" });
    // @ts-expect-error baseUrl is required
    createClient({ token: "t" });
    // @ts-expect-error a token is a string
    createClient({ baseUrl: "x", token: 42 });
  });
});

describe("operations", () => {
  test("responses are the contract's types", async () => {
    expectTypeOf(await client.listQuestionSets()).toEqualTypeOf<QuestionSetList>();
    expectTypeOf((await client.listCodingEvaluations()).data).toEqualTypeOf<CodingEvaluation[]>();
    expectTypeOf((await client.listWebhookEndpoints()).data).toEqualTypeOf<WebhookEndpoint[]>();
    expectTypeOf((await client.listWebhookDeliveries()).data).toEqualTypeOf<WebhookDelivery[]>();
    const created = await client.createWebhookEndpoint({ url: "https://hooks.example-receiver.com/x" });
    expectTypeOf(created).toEqualTypeOf<CreatedWebhookEndpoint>();
    expectTypeOf(created.secret).toBeString();
  });

  test("right parameters compile", () => {
    void client.listQuestionSets({ limit: 5, type: "compliance", is_production: "true", is_deleted: "false", id: ["a", "b"] });
    void client.listCodingEvaluations({ status: "completed", archived: "false", created_after: "2026-11-01T00:00:00.000Z" });
    void client.listWebhookEndpoints({ status: "disabled", include_total: "true" });
    void client.listWebhookDeliveries({ status: "retrying", endpoint_id: "e", event_type: "audit.completed" });
  });

  test("wrong parameter names do not compile", () => {
    // @ts-expect-error `page` is not a parameter (cursors are starting_after / ending_before)
    void client.listQuestionSets({ page: 2 });
    // @ts-expect-error `isProduction` is spelled is_production
    void client.listQuestionSets({ isProduction: "true" });
    // @ts-expect-error `status` is not a question-set filter
    void client.listQuestionSets({ status: "completed" });
    // @ts-expect-error webhook endpoints have no batch-get `id`
    void client.listWebhookEndpoints({ id: ["a"] });
    // @ts-expect-error deliveries filter by endpoint_id, not endpoint
    void client.listWebhookDeliveries({ endpoint: "e" });
  });

  test("wrong filter values do not compile", () => {
    // @ts-expect-error boolean filters are the strings "true" / "false"
    void client.listQuestionSets({ is_production: true });
    // @ts-expect-error not a QuestionSetType
    void client.listQuestionSets({ type: "billing" });
    // @ts-expect-error not a CodingEvaluationStatus
    void client.listCodingEvaluations({ status: "done" });
    // @ts-expect-error limit is a number
    void client.listCodingEvaluations({ limit: "10" });
    // @ts-expect-error not a WebhookEndpointStatus
    void client.listWebhookEndpoints({ status: "paused" });
    // @ts-expect-error not a WebhookDeliveryStatus
    void client.listWebhookDeliveries({ status: "delivered" });
    // @ts-expect-error batch-get ids are an array
    void client.listQuestionSets({ id: "a" });
  });

  test("wrong body shapes do not compile", () => {
    void client.createWebhookEndpoint({
      url: "https://hooks.example-receiver.com/x",
      filters: { question_set_ids: ["a"], audit_results: "failed" },
      payload: { fields: ["data.result", "responses"], responses_filter: "failed" },
      authentication: { type: "basic", username: "u", password: "p" },
      signing: { legacy_signature: true },
    });
    // @ts-expect-error url is required
    void client.createWebhookEndpoint({ description: "no url" });
    // @ts-expect-error `endpoint_url` is not a field
    void client.createWebhookEndpoint({ url: "https://h.example-receiver.com", endpoint_url: "x" });
    // @ts-expect-error only audit.completed exists
    void client.createWebhookEndpoint({ url: "https://h.example-receiver.com", event_types: ["audit.started"] });
    // @ts-expect-error audit_results is all | passed | failed
    void client.createWebhookEndpoint({ url: "https://h.example-receiver.com", filters: { audit_results: "some" } });
    // @ts-expect-error not a payload field
    void client.createWebhookEndpoint({ url: "https://h.example-receiver.com", payload: { fields: ["data.score"] } });
    // @ts-expect-error basic authentication needs a password
    void client.createWebhookEndpoint({ url: "https://h.example-receiver.com", authentication: { type: "basic", username: "u" } });
    // @ts-expect-error headers authentication takes `headers`, not `header_names` (that is the read shape)
    void client.createWebhookEndpoint({ url: "https://h.example-receiver.com", authentication: { type: "headers", header_names: ["X"] } });
    // @ts-expect-error legacy_signature is a boolean
    void client.createWebhookEndpoint({ url: "https://h.example-receiver.com", signing: { legacy_signature: "yes" } });
  });
});

describe("pagination", () => {
  test("items are typed by the list path", async () => {
    for await (const set of client.paginate("/v2/question_sets", { query: { is_production: "true", limit: 50 } })) {
      expectTypeOf(set).toEqualTypeOf<QuestionSet>();
    }
    for await (const delivery of client.paginateBackward("/v2/webhook_deliveries", { query: { ending_before: "d", status: "failed" } })) {
      expectTypeOf(delivery).toEqualTypeOf<WebhookDelivery>();
    }
  });

  test("filters are the list's generated types", () => {
    client.paginate("/v2/coding_evaluations", { query: { status: "failed", starting_after: "x" } });
    // @ts-expect-error not a CodingEvaluationStatus
    client.paginate("/v2/coding_evaluations", { query: { status: "done" } });
    // @ts-expect-error `type` is a question-set filter, not an endpoint one
    client.paginate("/v2/webhook_endpoints", { query: { type: "compliance" } });
    // @ts-expect-error boolean filters are strings
    client.paginate("/v2/question_sets", { query: { is_deleted: true } });
    // @ts-expect-error a forward walk does not take ending_before
    client.paginate("/v2/question_sets", { query: { ending_before: "x" } });
    // @ts-expect-error not a list path
    client.paginate("/v2/internal/question_sets");
  });

  test("a backward walk needs ending_before and refuses starting_after", () => {
    // @ts-expect-error ending_before is required
    client.paginateBackward("/v2/question_sets", { query: { limit: 5 } });
    // @ts-expect-error starting_after is the forward cursor
    client.paginateBackward("/v2/question_sets", { query: { ending_before: "x", starting_after: "y" } });
  });
});

describe("ApiError", () => {
  test("carries the problem's fields", () => {
    const err = new ApiError({ status: 404, problem: null, requestId: null, request: { method: "GET", url: "/" } });
    expectTypeOf(err.status).toBeNumber();
    expectTypeOf(err.code).toEqualTypeOf<ErrorCode | null>();
    expectTypeOf(err.requestId).toEqualTypeOf<string | null>();
    expectTypeOf(err.errors).toEqualTypeOf<ProblemIssue[]>();
    assertType<Error>(err);
    // @ts-expect-error not an ErrorCode
    assertType<ErrorCode>("NOT_A_CODE");
  });
});
