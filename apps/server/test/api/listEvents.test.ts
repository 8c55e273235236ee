// GET /v2/events and GET /v2/events/{event_id}: the events of an org as they were published.
import { randomUUID } from "node:crypto";
import type { Event, operations } from "@audit-review/api-types/internal";
import { describe, expect, it } from "vitest";
import { createEndpoint, ingestQuestionSet, problemOf, publishEvent, unknownId, useApiServer } from "../harness/factories.js";
import { describeKeysetList, oneAfterAnother, pagerOf } from "../harness/keyset-list.js";
import { expectWalksAgree, ids } from "../harness/pagination.js";
import type { Api } from "../harness/server.js";

type Query = NonNullable<operations["listEvents"]["parameters"]["query"]>;

const server = await useApiServer();

const list = (api: Api, query: Query = {}) => api.GET("/v2/events", { params: { query } });
const everything = async (api: Api, query: Query = {}) => (await list(api, { limit: 100, ...query })).data!.data;
const getEvent = (api: Api, id: string) => api.GET("/v2/events/{event_id}", { params: { path: { event_id: id } } });

/** `n` events published one after another, newest first as the list orders them. */
async function eventsOf(api: Api, n: number): Promise<Event[]> {
  const set = await ingestQuestionSet(api);
  const published = await oneAfterAnother(n, () => publishEvent(api, { data: { question_set_id: set.id } }));
  const listed = await everything(api);
  const mine = new Set(published.map((p) => p.request.id));
  return listed.filter((e) => mine.has(e.id));
}

/** Removes events as retention does: their attempts and deliveries first, then the events. */
async function removeAsRetentionWould(eventIds: readonly string[]): Promise<void> {
  const db = server.server.db;
  await db.query("DELETE FROM webhook_delivery_attempts WHERE delivery_id IN (SELECT id FROM webhook_deliveries WHERE event_id = ANY($1::uuid[]))", [eventIds]);
  await db.query("DELETE FROM webhook_deliveries WHERE event_id = ANY($1::uuid[])", [eventIds]);
  await db.query("DELETE FROM events WHERE id = ANY($1::uuid[])", [eventIds]);
  // retention forgets a dropped day's ids with it (repos/partitions.repo.ts): the index across days
  // that cursors and look-ups by id read
  await db.query("DELETE FROM event_ids WHERE id = ANY($1::uuid[])", [eventIds]);
}

describeKeysetList<Event>({
  items: "events",
  path: "/v2/events",
  server,
  list,
  createMany: eventsOf,
  idsOfOtherLists: async (api) => [(await createEndpoint(api)).id, (await ingestQuestionSet(api)).id],
  badQueries: [
    ["type=audit.started", "type"],
    ["audit_id=123", "audit_id"],
    ["created_after=yesterday", "created_after"],
    ["created_before=2026-13-01T00:00:00Z", "created_before"],
    ["event_type=audit.completed", "event_type"],
  ],
});

describe("GET /v2/events", () => {
  it("when an event is published, then it is listed as published: its ids, result, raw result and every response with the rubric's words", async () => {
    const { api } = await server.newOrg();
    const set = await ingestQuestionSet(api, {
      questions: [{ query: "Chief complaint documented?", question_type: "yes_no" }, { query: "Visit type", question_type: "informational" }],
    });
    const [q1, q2] = set.questions;
    const occurredAt = "2026-11-20T08:00:00.000Z";
    const { request } = await publishEvent(api, {
      occurred_at: occurredAt,
      data: {
        question_set_id: set.id,
        result: "failed",
        raw_result: "FAIL (72.5%)",
        responses: [
          { question_id: q1!.id, answer: "No", context: "HPI empty", passed: false },
          { question_id: q2!.id, answer: "Follow-up", context: null },
        ],
      },
    });

    const { data, response } = await list(api);
    const one = await getEvent(api, request.id);

    expect(response.status).toBe(200);
    const expected = {
      id: request.id,
      object: "event",
      type: "audit.completed",
      is_test: false,
      data: {
        audit_id: request.data.audit_id,
        question_set_id: set.id,
        document_id: request.data.document_id,
        result: "failed",
        raw_result: "FAIL (72.5%)",
        responses: [
          { question_id: q1!.id, query: "Chief complaint documented?", answer: "No", context: "HPI empty", passed: false, informational: false },
          { question_id: q2!.id, query: "Visit type", answer: "Follow-up", context: null, passed: null, informational: true },
        ],
      },
      notification: null,
      occurred_at: occurredAt,
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
    };
    expect(data).toEqual({ object: "list", has_more: false, data: [expected] });
    expect(one.response.status).toBe(200);
    expect(one.data).toEqual(expected);
  });

  it("when an event had no endpoint to go to, then it is listed all the same (the list is of events, not deliveries)", async () => {
    const { api } = await server.newOrg();
    const { request, event } = await publishEvent(api);

    expect(event.deliveries_created).toBe(0);
    expect(ids(await everything(api))).toEqual([request.id]);
  });

  it("when a test event is sent to an endpoint, then it is listed with is_test true, and real events keep is_test false", async () => {
    const { api } = await server.newOrg();
    const endpoint = await createEndpoint(api);
    const { request } = await publishEvent(api);
    const sent = await api.POST("/v2/webhook_endpoints/{endpoint_id}/test", { params: { path: { endpoint_id: endpoint.id } } });
    expect(sent.response.status).toBe(201);

    const all = await everything(api);

    expect(all.map((e) => [e.id, e.is_test])).toEqual([[sent.data!.event_id, true], [request.id, false]]);
    expect((await getEvent(api, sent.data!.event_id)).data).toMatchObject({ is_test: true, type: "audit.completed" });
  });

  it("when filtering by type and audit_id, then only matching events are listed and counted, across pages", async () => {
    const { api } = await server.newOrg();
    const set = await ingestQuestionSet(api);
    const audit = randomUUID();
    const published = await oneAfterAnother(5, (i) => publishEvent(api, { data: { question_set_id: set.id, ...(i % 2 === 0 && { audit_id: audit }) } }));
    const ofAudit = published.filter((_, i) => i % 2 === 0).map((p) => p.request.id).reverse();

    expect(ids(await everything(api, { audit_id: audit }))).toEqual(ofAudit);
    expect((await list(api, { audit_id: audit, include_total: "true", limit: 1 })).data).toMatchObject({ total_count: 3, has_more: true });
    await expectWalksAgree(pagerOf((page) => list(api, { audit_id: audit, ...page })), ofAudit, [1, 2]);
    expect(ids(await everything(api, { type: "audit.completed" }))).toHaveLength(5);
    expect(await everything(api, { audit_id: unknownId() })).toEqual([]);
  });

  it("when filtering by created_after and created_before, then the bounds are exclusive", async () => {
    const { api } = await server.newOrg();
    const all = await eventsOf(api, 3);
    const middle = all[1]!;

    const after = await everything(api, { created_after: middle.created_at });
    const before = await everything(api, { created_before: middle.created_at });
    const between = await everything(api, { created_after: all[2]!.created_at, created_before: all[0]!.created_at });

    expect(after.every((e) => e.created_at > middle.created_at)).toBe(true);
    expect(before.every((e) => e.created_at < middle.created_at)).toBe(true);
    expect(ids([...after, ...before]).includes(middle.id)).toBe(false);
    expect(between.every((e) => e.created_at > all[2]!.created_at && e.created_at < all[0]!.created_at)).toBe(true);
    expect(ids(await everything(api, { created_after: "2000-01-01T00:00:00+01:00" }))).toEqual(ids(all));
    expect(await everything(api, { created_before: "2000-01-01T00:00:00Z" })).toEqual([]);
  });

  it("when events are removed by retention while a receiver walks the list, then the walk goes on from a kept cursor and a removed id is 404 and no cursor", async () => {
    const { api } = await server.newOrg();
    const all = await eventsOf(api, 6);
    const firstPage = (await list(api, { limit: 2 })).data!;
    const oldest = all.slice(4).map((e) => e.id);

    await removeAsRetentionWould(oldest);

    const rest = (await list(api, { limit: 10, starting_after: firstPage.data.at(-1)!.id })).data!;
    expect(ids(rest.data)).toEqual(ids(all.slice(2, 4)));
    expect(rest.has_more).toBe(false);
    expect((await list(api, { include_total: "true" })).data!.total_count).toBe(4);
    problemOf(await getEvent(api, oldest[0]!), { status: 404, code: "NOT_FOUND" });
    problemOf(await list(api, { starting_after: oldest[0]! }), { status: 400, code: "INVALID_CURSOR", name: "starting_after" });
  });
});

describe("GET /v2/events/{event_id}", () => {
  it("when the id is another org's event, or unknown, then 404 NOT_FOUND (existence is not revealed)", async () => {
    const { api } = await server.newOrg();
    const other = await server.newOrg();
    const { request } = await publishEvent(other.api);

    problemOf(await getEvent(api, request.id), { status: 404, code: "NOT_FOUND" });
    problemOf(await getEvent(api, unknownId()), { status: 404, code: "NOT_FOUND" });
    expect((await getEvent(other.api, request.id)).response.status).toBe(200);
  });

  it("when the id is not a uuid, then 400 names event_id", async () => {
    const { api } = await server.newOrg();

    problemOf(await getEvent(api, "not-a-uuid"), { status: 400, code: "VALIDATION_ERROR", name: "event_id", location: "path" });
  });

  it("when the token lacks events:read (webhooks:read is not enough), then 403 INSUFFICIENT_SCOPE", async () => {
    const { orgId } = await server.newOrg();
    const api = server.client(await server.token(orgId, ["webhooks:read", "webhooks:write"]));

    problemOf(await list(api), { status: 403, code: "INSUFFICIENT_SCOPE" });
  });
});
