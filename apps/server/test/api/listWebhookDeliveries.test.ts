import { randomUUID } from "node:crypto";
import type { CreatedWebhookEndpoint, operations, WebhookDelivery } from "@audit-review/api-types/internal";
import { describe, expect, it } from "vitest";
import { createEndpoint, ingestQuestionSet, publishEvent, unknownId, useApiServer } from "../harness/factories.js";
import { describeKeysetList, oneAfterAnother, pagerOf } from "../harness/keyset-list.js";
import { expectWalksAgree, ids, newestFirst } from "../harness/pagination.js";
import type { Api } from "../harness/server.js";

type Query = NonNullable<operations["listWebhookDeliveries"]["parameters"]["query"]>;

const server = await useApiServer();

const list = (api: Api, query: Query = {}) => api.GET("/v2/webhook_deliveries", { params: { query } });
const pager = (api: Api, filters: Query = {}) => pagerOf((page) => list(api, { ...filters, ...page }));
const everything = async (api: Api, query: Query = {}) => (await list(api, { limit: 100, ...query })).data!.data;
const admin = (api: Api, id: string, _action: "disable") =>
  api.PATCH("/v2/webhook_endpoints/{endpoint_id}", { params: { path: { endpoint_id: id } }, body: { status: "disabled" } });
const remove = (api: Api, id: string) => api.DELETE("/v2/webhook_endpoints/{endpoint_id}", { params: { path: { endpoint_id: id } } });

/** `endpoints` endpoints receiving every event, then `events` events published one after another. */
async function fanOut(api: Api, endpoints: number, events: number) {
  const set = await ingestQuestionSet(api);
  const eps: CreatedWebhookEndpoint[] = await oneAfterAnother(endpoints, () => createEndpoint(api));
  const published = await oneAfterAnother(events, async () => {
    const out = await publishEvent(api, { data: { question_set_id: set.id } });
    expect(out.event).toMatchObject({ created: true, deliveries_created: endpoints });
    return out.request;
  });
  return { set, endpoints: eps, events: published };
}

/** `n` deliveries, one per event to one endpoint, newest first; each read back by its event's audit. */
async function deliveriesOf(api: Api, n: number): Promise<WebhookDelivery[]> {
  const { events } = await fanOut(api, 1, n);
  return (await Promise.all(events.reverse().map((e) => everything(api, { audit_id: e.data.audit_id })))).flat();
}

describeKeysetList<WebhookDelivery>({
  items: "deliveries",
  path: "/v2/webhook_deliveries",
  server,
  list,
  createMany: deliveriesOf,
  idsOfOtherLists: async (api) => [(await createEndpoint(api)).id, (await publishEvent(api)).request.id],
  badQueries: [
    ["status=delivered", "status"],
    ["endpoint_id=not-a-uuid", "endpoint_id"],
    ["audit_id=123", "audit_id"],
    [`event_type=${"e".repeat(101)}`, "event_type"],
    ["event_type=", "event_type"],
    ["id=0193a5b2-7c4e-7a10-9d2f-3b1c2d4e5f61", "id"],
  ],
});

describe("GET /v2/webhook_deliveries", () => {
  it("when an event is published to an endpoint, then its pending delivery is listed with every field", async () => {
    const { api, orgId } = await server.newOrg();
    const { endpoints, events } = await fanOut(api, 1, 1);

    const { data, response } = await list(api);

    expect(response.status).toBe(200);
    expect(data).toEqual({
      object: "list",
      has_more: false,
      data: [
        {
          id: expect.any(String),
          object: "webhook_delivery",
          org_id: orgId,
          endpoint_id: endpoints[0]!.id,
          event_id: events[0]!.id,
          event_type: "audit.completed",
          audit_id: events[0]!.data.audit_id,
          is_test: false,
          status: "pending",
          attempt_count: 0,
          next_attempt_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
          last_response_status: null,
          last_error: null,
          delivered_at: null,
          created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
          updated_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        },
      ],
    });
  });

  it("when deliveries share a creation instant, then the list is ordered by created_at then id and both walks agree", async () => {
    const { api } = await server.newOrg();
    const { events } = await fanOut(api, 3, 4);
    const all = await everything(api);

    expect(all).toHaveLength(12);
    expect(ids(all)).toEqual(ids(newestFirst(all)));
    // newest event first; the three deliveries of one event are together
    expect(all.map((d) => d.event_id)).toEqual(events.reverse().flatMap((e) => [e.id, e.id, e.id]));
    await expectWalksAgree(pager(api), ids(all), [1, 2, 5, 12, 100]);
  });

  it("when include_total is true with an endpoint filter, then total_count counts only that endpoint's deliveries", async () => {
    const { api } = await server.newOrg();
    const { endpoints } = await fanOut(api, 2, 3);

    const filtered = await list(api, { include_total: "true", endpoint_id: endpoints[0]!.id, limit: 1 });

    expect(filtered.data).toMatchObject({ total_count: 3, has_more: true });
  });

  it("when filtering by endpoint_id, then only that endpoint's deliveries are listed, across pages", async () => {
    const { api } = await server.newOrg();
    const { endpoints } = await fanOut(api, 2, 3);
    const all = await everything(api);
    const mine = all.filter((d) => d.endpoint_id === endpoints[1]!.id);

    expect(mine).toHaveLength(3);
    await expectWalksAgree(pager(api, { endpoint_id: endpoints[1]!.id }), ids(mine), [1, 2]);
    expect(await everything(api, { endpoint_id: unknownId() })).toEqual([]);
  });

  it("when filtering by status, then only deliveries in that status are listed", async () => {
    const { api } = await server.newOrg();
    const { endpoints } = await fanOut(api, 2, 2);
    await admin(api, endpoints[0]!.id, "disable");
    const all = await everything(api);

    const failed = await everything(api, { status: "failed" });
    const pending = await everything(api, { status: "pending" });

    expect(ids(failed)).toEqual(ids(all.filter((d) => d.endpoint_id === endpoints[0]!.id)));
    expect(failed[0]).toMatchObject({ status: "failed", last_error: { code: "endpoint_disabled", message: expect.any(String) } });
    expect(ids(pending)).toEqual(ids(all.filter((d) => d.endpoint_id === endpoints[1]!.id)));
    expect(await everything(api, { status: "succeeded" })).toEqual([]);
    expect(await everything(api, { status: "retrying" })).toEqual([]);
  });

  it("when filtering by event_type, then only deliveries of that type are listed", async () => {
    const { api } = await server.newOrg();
    await fanOut(api, 1, 2);

    expect(await everything(api, { event_type: "audit.completed" })).toHaveLength(2);
    expect(await everything(api, { event_type: "audit.started" })).toEqual([]);
    expect(await everything(api, { event_type: "e".repeat(100) })).toEqual([]);
  });

  it("when filtering by audit_id, then only deliveries of that audit's events are listed", async () => {
    const { api } = await server.newOrg();
    const set = await ingestQuestionSet(api);
    await createEndpoint(api);
    await createEndpoint(api);
    const auditId = randomUUID();
    await publishEvent(api, { data: { question_set_id: set.id, audit_id: auditId } });
    await publishEvent(api, { data: { question_set_id: set.id } });

    const mine = await everything(api, { audit_id: auditId, include_total: "true" });

    expect(mine).toHaveLength(2);
    expect(mine.every((d) => d.audit_id === auditId)).toBe(true);
    expect(await everything(api, { audit_id: randomUUID() })).toEqual([]);
  });

  it("when an endpoint is deleted, then its deliveries stay listed and filterable by its id", async () => {
    const { api } = await server.newOrg();
    const { endpoints } = await fanOut(api, 2, 2);
    const before = await everything(api);

    expect((await remove(api, endpoints[0]!.id)).response.status).toBe(204);

    const after = await everything(api);
    expect(ids(after)).toEqual(ids(before));
    const ofDeleted = await everything(api, { endpoint_id: endpoints[0]!.id });
    expect(ofDeleted).toHaveLength(2);
    expect(ofDeleted[0]).toMatchObject({ status: "failed", last_error: { code: "endpoint_deleted" } });
    expect(ids((await api.GET("/v2/webhook_endpoints")).data!.data)).toEqual([endpoints[1]!.id]);
  });

  it("when a test event is sent to an endpoint, then its delivery is flagged is_test", async () => {
    const { api } = await server.newOrg();
    const endpoint = await createEndpoint(api);

    const sent = await api.POST("/v2/webhook_endpoints/{endpoint_id}/test", { params: { path: { endpoint_id: endpoint.id } } });

    expect(sent.response.status).toBe(201);
    expect(await everything(api)).toEqual([{ ...sent.data, is_test: true, endpoint_id: endpoint.id, status: "pending" }]);
  });

  it("when the cursor delivery no longer matches the filters, then its position still bounds the page", async () => {
    const { api } = await server.newOrg();
    const { endpoints } = await fanOut(api, 2, 2);
    await admin(api, endpoints[0]!.id, "disable");
    const all = await everything(api);
    const failedIndex = all.findIndex((d) => d.status === "failed");

    const after = await everything(api, { status: "pending", starting_after: all[failedIndex]!.id });
    const before = await everything(api, { status: "pending", ending_before: all[failedIndex]!.id });

    expect(ids(after)).toEqual(ids(all.slice(failedIndex + 1).filter((d) => d.status === "pending")));
    expect(ids(before)).toEqual(ids(all.slice(0, failedIndex).filter((d) => d.status === "pending")));
    expect(after.length + before.length).toBe(2);
  });

});
