import type { CreatedWebhookEndpoint, operations, WebhookEndpoint } from "@audit-review/api-types/internal";
import { describe, expect, it } from "vitest";
import { createEndpoint, ingestQuestionSet, problemOf, rawProblem, unknownId, useApiServer } from "../harness/factories.js";
import { describeKeysetList, oneAfterAnother, pagerOf } from "../harness/keyset-list.js";
import { expectWalksAgree, ids } from "../harness/pagination.js";
import type { Api } from "../harness/server.js";

type Query = NonNullable<operations["listWebhookEndpoints"]["parameters"]["query"]>;

const server = await useApiServer();

const list = (api: Api, query: Query = {}) => api.GET("/v2/webhook_endpoints", { params: { query } });
const pager = (api: Api, filters: Query = {}) => pagerOf((page) => list(api, { ...filters, ...page }));
/** `n` endpoints created one after another, newest first (list order). */
const createMany = async (api: Api, n: number): Promise<CreatedWebhookEndpoint[]> => (await oneAfterAnother(n, () => createEndpoint(api))).reverse();
const withoutSecret = ({ secret: _secret, ...endpoint }: CreatedWebhookEndpoint): WebhookEndpoint => endpoint;
const admin = (api: Api, id: string, action: "disable" | "enable") =>
  api.PATCH("/v2/webhook_endpoints/{endpoint_id}", {
    params: { path: { endpoint_id: id } },
    body: { status: action === "disable" ? "disabled" : "enabled" },
  });
const remove = (api: Api, id: string) => api.DELETE("/v2/webhook_endpoints/{endpoint_id}", { params: { path: { endpoint_id: id } } });

describeKeysetList<WebhookEndpoint>({
  items: "endpoints",
  path: "/v2/webhook_endpoints",
  server,
  list,
  createMany,
  idsOfOtherLists: async (api) => [(await ingestQuestionSet(api)).id],
  badQueries: [
    ["status=paused", "status"],
    ["status=", "status"],
    ["id=0193a5b2-7c4e-7a10-9d2f-3b1c2d4e5f61", "id"],
    ["is_deleted=true", "is_deleted"],
  ],
});

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

  it("when include_total is true with a status filter, then total_count counts only the matching endpoints", async () => {
    const { api } = await server.newOrg();
    const all = await createMany(api, 4);
    await admin(api, all[0]!.id, "disable");

    const enabled = await list(api, { include_total: "true", status: "enabled", limit: 1 });

    expect(enabled.data).toMatchObject({ total_count: 3, has_more: true, data: [{ id: all[1]!.id }] });
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
