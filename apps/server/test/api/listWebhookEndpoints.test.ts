import type { CreatedWebhookEndpoint, operations, WebhookEndpoint } from "@audit-review/api-types/internal";
import { describe, expect, it } from "vitest";
import { createEndpoint, ingestQuestionSet, problemOf, rawProblem, unknownId, useApiServer } from "../harness/factories.js";
import { expectWalksAgree, ids, LIST_BAD_QUERIES, type PageFetcher } from "../harness/pagination.js";
import type { Api } from "../harness/server.js";

type Query = NonNullable<operations["listWebhookEndpoints"]["parameters"]["query"]>;

const server = await useApiServer();

function pager(api: Api, filters: Query = {}): PageFetcher<WebhookEndpoint> {
  return async (page) => {
    const { data, error, response } = await api.GET("/v2/webhook_endpoints", { params: { query: { ...filters, ...page } } });
    if (!data) throw new Error(`list answered ${response.status}: ${JSON.stringify(error)}`);
    expect(response.status).toBe(200);
    return data;
  };
}

async function createMany(api: Api, n: number): Promise<CreatedWebhookEndpoint[]> {
  const out: CreatedWebhookEndpoint[] = [];
  for (let i = 0; i < n; i++) out.push(await createEndpoint(api));
  return out.reverse();
}

const list = (api: Api, query: Query = {}) => api.GET("/v2/webhook_endpoints", { params: { query } });
const withoutSecret = ({ secret: _secret, ...endpoint }: CreatedWebhookEndpoint): WebhookEndpoint => endpoint;
const admin = (api: Api, id: string, action: "disable" | "enable") =>
  api.PATCH("/v2/webhook_endpoints/{endpoint_id}", {
    params: { path: { endpoint_id: id } },
    body: { status: action === "disable" ? "disabled" : "enabled" },
  });
const remove = (api: Api, id: string) => api.DELETE("/v2/webhook_endpoints/{endpoint_id}", { params: { path: { endpoint_id: id } } });

describe("GET /v2/webhook_endpoints", () => {
  it("when an endpoint is created, then it is listed as created, without its secret", async () => {
    const { api } = await server.newOrg();
    const set = await ingestQuestionSet(api);
    const created = await createEndpoint(api, {
      description: "Compliance receiver",
      filters: { question_set_ids: [set.id], audit_results: "failed" },
      payload: { fields: ["data.result", "responses", "responses.answer"], result_format: "raw", responses_filter: "failed", include_informational_questions: true },
      authentication: { type: "basic", username: "audit-review", password: "list-test-password-1" },
      signing: { legacy_signature: true },
    });

    const { data, response } = await list(api);

    expect(response.status).toBe(200);
    expect(data).toEqual({ object: "list", data: [withoutSecret(created)], has_more: false });
    expect(data!.data[0]).not.toHaveProperty("secret");
    expect(JSON.stringify(data)).not.toContain(created.secret);
    expect(JSON.stringify(data)).not.toContain("list-test-password-1");
  });

  it("when limit is omitted, then 10 endpoints are returned newest first with has_more", async () => {
    const { api } = await server.newOrg();
    const all = await createMany(api, 11);

    const { data } = await list(api);

    expect(ids(data!.data)).toEqual(ids(all.slice(0, 10)));
    expect(data!.has_more).toBe(true);
    expect(data).not.toHaveProperty("total_count");
  });

  it("when walking forward and backward with any limit, then both walks return every endpoint once, in order", async () => {
    const { api } = await server.newOrg();
    const all = await createMany(api, 6);

    await expectWalksAgree(pager(api), ids(all), [1, 2, 4, 6, 100]);
  });

  it("when filtering by status, then enabled and disabled endpoints are listed apart", async () => {
    const { api } = await server.newOrg();
    const all = await createMany(api, 5);
    const disabled = [all[1]!, all[3]!];
    for (const e of disabled) expect((await admin(api, e.id, "disable")).response.status).toBe(200);
    const enabled = all.filter((e) => !disabled.includes(e));

    await expectWalksAgree(pager(api, { status: "disabled" }), ids(disabled), [1, 2]);
    await expectWalksAgree(pager(api, { status: "enabled" }), ids(enabled), [1, 3]);
    const listed = (await list(api, { status: "disabled" })).data!.data;
    expect(listed[0]).toMatchObject({ status: "disabled", disabled_reason: "manual", disabled_at: expect.any(String) });
  });

  it("when include_total is true, then total_count counts every matching endpoint, ignoring cursor and limit; else it is absent", async () => {
    const { api } = await server.newOrg();
    const all = await createMany(api, 4);
    await admin(api, all[0]!.id, "disable");

    const page = await list(api, { include_total: "true", limit: 1, starting_after: all[1]!.id });
    const enabled = await list(api, { include_total: "true", status: "enabled", limit: 1 });
    const off = await list(api, { include_total: "false" });

    expect(page.data).toMatchObject({ total_count: 4, has_more: true, data: [{ id: all[2]!.id }] });
    expect(enabled.data!.total_count).toBe(3);
    expect(off.data).not.toHaveProperty("total_count");
  });

  it("when an endpoint is deleted, then it is no longer listed nor counted", async () => {
    const { api } = await server.newOrg();
    const [a, b, c] = await createMany(api, 3);

    expect((await remove(api, b!.id)).response.status).toBe(204);

    const { data } = await list(api, { include_total: "true" });
    expect(ids(data!.data)).toEqual([a!.id, c!.id]);
    expect(data!.total_count).toBe(2);
    expect((await list(api, { status: "enabled" })).data!.data.map((e) => e.id)).not.toContain(b!.id);
  });

  it("when the cursor endpoint was disabled or deleted since, then its position still bounds the page", async () => {
    const { api } = await server.newOrg();
    // list order: a (newest) b c d
    const [a, b, c, d] = await createMany(api, 4);
    await admin(api, c!.id, "disable");
    await remove(api, b!.id);

    const after = await list(api, { status: "enabled", starting_after: c!.id });
    const afterDeleted = await list(api, { starting_after: b!.id });
    const beforeDisabled = await list(api, { status: "enabled", ending_before: c!.id });

    expect(ids(after.data!.data)).toEqual([d!.id]);
    expect(ids(afterDeleted.data!.data)).toEqual([c!.id, d!.id]);
    expect(ids(beforeDisabled.data!.data)).toEqual([a!.id]);
  });

  it.each(LIST_BAD_QUERIES)("when the query is %s, then 400 names %s", async (query, param) => {
    const { token } = await server.newOrg();
    await rawProblem(await server.raw(`/v2/webhook_endpoints?${query}`, { token }), { status: 400, code: "VALIDATION_ERROR", name: param, location: "query" });
  });

  it.each([
    ["status=paused", "status"],
    ["status=", "status"],
    ["id=0193a5b2-7c4e-7a10-9d2f-3b1c2d4e5f61", "id"],
    ["is_deleted=true", "is_deleted"],
  ])("when the query is %s, then 400 names %s", async (query, param) => {
    const { token } = await server.newOrg();
    await rawProblem(await server.raw(`/v2/webhook_endpoints?${query}`, { token }), { status: 400, code: "VALIDATION_ERROR", name: param, location: "query" });
  });

  it("when a cursor is unknown, of another org or of another list, then 400 INVALID_CURSOR names it", async () => {
    const { api } = await server.newOrg();
    const other = await server.newOrg();
    await createEndpoint(api);
    const foreign = await createEndpoint(other.api);
    const set = await ingestQuestionSet(api);

    for (const id of [unknownId(), foreign.id, set.id]) {
      problemOf(await list(api, { starting_after: id }), { status: 400, code: "INVALID_CURSOR", name: "starting_after" });
      problemOf(await list(api, { ending_before: id }), { status: 400, code: "INVALID_CURSOR", name: "ending_before" });
    }
  });
});

describe("internal endpoint administration", () => {
  it("when an endpoint is disabled then enabled, then its status, reason and time follow", async () => {
    const { api } = await server.newOrg();
    const endpoint = await createEndpoint(api);

    const disabled = await admin(api, endpoint.id, "disable");
    const enabled = await admin(api, endpoint.id, "enable");

    expect(disabled.data).toMatchObject({ id: endpoint.id, status: "disabled", disabled_reason: "manual", disabled_at: expect.any(String) });
    expect(enabled.data).toMatchObject({ id: endpoint.id, status: "enabled", disabled_reason: null, disabled_at: null, failing_since: null });
  });

  it("when an unknown, foreign or already deleted endpoint is administered, then 404", async () => {
    const { api } = await server.newOrg();
    const other = await server.newOrg();
    const foreign = await createEndpoint(other.api);
    const gone = await createEndpoint(api);
    await remove(api, gone.id);

    for (const id of [unknownId(), foreign.id, gone.id]) {
      problemOf(await remove(api, id), { status: 404, code: "NOT_FOUND" });
      problemOf(await admin(api, id, "disable"), { status: 404, code: "NOT_FOUND" });
      problemOf(await admin(api, id, "enable"), { status: 404, code: "NOT_FOUND" });
    }
    expect((await list(other.api)).data!.data).toEqual([expect.objectContaining({ id: foreign.id, status: "enabled" })]);
  });

  it("when the endpoint id is not a uuid, then 400 names endpoint_id", async () => {
    const { token } = await server.newOrg();

    await rawProblem(await server.raw("/v2/webhook_endpoints/not-a-uuid", { token, method: "DELETE" }), {
      status: 400,
      code: "VALIDATION_ERROR",
      name: "endpoint_id",
      location: "path",
    });
  });
});
