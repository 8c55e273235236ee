// Fan-out: publishing audit.completed stores the event and, in the same transaction, one pending
// delivery per matching endpoint. The dispatcher is off here, so every row is seen exactly as
// the fan-out left it.
import { randomUUID } from "node:crypto";
import { beforeEach, describe, expect, it } from "vitest";
import type { Api, TestOrg } from "../harness/server.js";
import { RECEIVER_HOST, endpointFor, ingestQuestionSetFor, publish, useDeliveryServer } from "./support.js";

const h = await useDeliveryServer({}, { dispatcher: false });

let org: TestOrg;
beforeEach(async () => {
  org = await h.server.newOrg();
});

const url = () => `https://${RECEIVER_HOST}/hooks/${randomUUID()}`;

async function deliveriesOfAudit(api: Api, auditId: string) {
  const { data } = await api.GET("/v2/webhook_deliveries", { params: { query: { audit_id: auditId, limit: 100 } } });
  return data!.data;
}

describe("publishing audit.completed (publishEvent)", () => {
  it("When endpoints have filters, Then exactly the live, enabled, subscribed and matching ones get one pending delivery each", async () => {
    const setA = await ingestQuestionSetFor(org.api);
    const setB = await ingestQuestionSetFor(org.api);
    const all = await endpointFor(org.api, url());
    const onlySetA = await endpointFor(org.api, url(), { filters: { question_set_ids: [setA.id] } });
    const setAOrB = await endpointFor(org.api, url(), { filters: { question_set_ids: [setB.id, setA.id] } });
    await endpointFor(org.api, url(), { filters: { question_set_ids: [setB.id] } });
    await endpointFor(org.api, url(), { filters: { audit_results: "passed" } });
    const failedOnly = await endpointFor(org.api, url(), { filters: { audit_results: "failed", question_set_ids: [setA.id] } });
    const disabled = await endpointFor(org.api, url());
    await org.api.PATCH("/v2/webhook_endpoints/{endpoint_id}", { params: { path: { endpoint_id: disabled.id } }, body: { status: "disabled" } });
    const deleted = await endpointFor(org.api, url());
    await org.api.DELETE("/v2/webhook_endpoints/{endpoint_id}", { params: { path: { endpoint_id: deleted.id } } });
    // Another org's endpoint matches everything, and must still never see this org's event.
    const other = await h.server.newOrg();
    await endpointFor(other.api, url());

    const event = await publish(org.api, { data: { question_set_id: setA.id, result: "failed" } });
    expect(event.created).toBe(true);
    expect(event.deliveriesCreated).toBe(4);

    const rows = await deliveriesOfAudit(org.api, event.data.audit_id);
    expect(rows.map((d) => d.endpoint_id).sort()).toEqual([all.id, onlySetA.id, setAOrB.id, failedOnly.id].sort());
    for (const d of rows) {
      expect(d).toMatchObject({
        event_id: event.id,
        event_type: "audit.completed",
        audit_id: event.data.audit_id,
        is_test: false,
        status: "pending",
        attempt_count: 0,
        last_response_status: null,
        last_error: null,
        delivered_at: null,
      });
      expect(d.next_attempt_at).toBe(d.created_at);
      // UUIDv7: version 7, RFC variant, and a 48-bit time prefix at (or within ms of) creation
      expect(d.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      const idTime = parseInt(d.id.replace(/-/g, "").slice(0, 12), 16);
      expect(Math.abs(idTime - Date.parse(d.created_at))).toBeLessThan(1_000);
    }
    expect(await deliveriesOfAudit(other.api, event.data.audit_id)).toEqual([]);
  });

  it("When a passed audit is published, Then passed-only and all endpoints match and failed-only ones do not", async () => {
    const passedOnly = await endpointFor(org.api, url(), { filters: { audit_results: "passed" } });
    const all = await endpointFor(org.api, url(), { filters: { audit_results: "all" } });
    await endpointFor(org.api, url(), { filters: { audit_results: "failed" } });
    const event = await publish(org.api, { data: { result: "passed" } });
    expect(event.deliveriesCreated).toBe(2);
    expect((await deliveriesOfAudit(org.api, event.data.audit_id)).map((d) => d.endpoint_id).sort()).toEqual([passedOnly.id, all.id].sort());
  });

  it("When the same event id is published twice, Then the second answers 200 created=false and nothing new exists", async () => {
    await endpointFor(org.api, url());
    await endpointFor(org.api, url());
    const first = await publish(org.api);
    expect(first).toMatchObject({ created: true, deliveriesCreated: 2 });
    // A new endpoint in between must not get a delivery of the old event either.
    await endpointFor(org.api, url());

    const { id, type, data } = first;
    const again = await org.api.POST("/v2/internal/events", { body: { id, type, data } });
    expect(again.response.status).toBe(200);
    expect(again.data).toEqual({ object: "event", id, type: "audit.completed", created: false, deliveries_created: 0 });
    expect(await deliveriesOfAudit(org.api, data.audit_id)).toHaveLength(2);
  });

  it("When an event matches no endpoint, Then it is recorded and no delivery is created", async () => {
    await endpointFor(org.api, url(), { filters: { audit_results: "passed" } });
    const event = await publish(org.api, { data: { result: "failed" } });
    expect(event).toMatchObject({ created: true, deliveriesCreated: 0 });
    expect(await deliveriesOfAudit(org.api, event.data.audit_id)).toEqual([]);
  });

  it("When a second delivery of one event to one endpoint is inserted, Then the database refuses it (unique index; the event's day checked by a trigger)", async () => {
    const ep = await endpointFor(org.api, url());
    const event = await publish(org.api);
    const db = h.server.server.db;
    const [stored] = await db.query<{ created_at: Date }>("SELECT created_at FROM events WHERE id = $1", [event.id]);
    const insert = (createdAt: Date | string) =>
      db.query(
        `INSERT INTO webhook_deliveries (id, org_id, endpoint_id, event_id, event_type, audit_id, is_test, status, next_attempt_at, created_at)
         VALUES ($1, $2, $3, $4, 'audit.completed', $5, false, 'pending', now(), $6)`,
        [randomUUID(), org.orgId, ep.id, event.id, event.data.audit_id, createdAt],
      );
    // with the event's created_at: the unique (event_id, endpoint_id, created_at) index
    await expect(insert(stored!.created_at)).rejects.toMatchObject({ code: "23505" });
    // with any other: a delivery must carry its event's created_at (as its foreign key did)
    await expect(insert(new Date(stored!.created_at.getTime() + 1))).rejects.toMatchObject({ code: "23503" });
    await expect(insert("2020-01-01T00:00:00Z")).rejects.toMatchObject({ code: "23503" });
  });
});

describe("publishing a batch (publishEvents)", () => {
  const event = (questionSetId: string, result: "passed" | "failed", over: { id?: string; question_id?: string } = {}) => ({
    id: over.id ?? randomUUID(),
    type: "audit.completed" as const,
    data: {
      audit_id: randomUUID(),
      question_set_id: questionSetId,
      result,
      ...(over.question_id && { responses: [{ question_id: over.question_id, answer: "Yes" }] }),
    },
  });

  it("When a batch is published, Then each event fans out by the same rules, the answer follows request order, and a repeat creates nothing", async () => {
    const set = await ingestQuestionSetFor(org.api);
    const all = await endpointFor(org.api, url());
    const passedOnly = await endpointFor(org.api, url(), { filters: { audit_results: "passed" } });
    const events = [event(set.id, "failed", { question_id: set.questions[0]!.id }), event(set.id, "passed"), event(set.id, "failed")];

    const { data, error } = await org.api.POST("/v2/internal/event_batches", { body: { events } });
    expect(error).toBeUndefined();
    expect(data).toEqual({
      object: "list",
      data: events.map((e) => ({ object: "event", id: e.id, type: "audit.completed", created: true, deliveries_created: e.data.result === "passed" ? 2 : 1 })),
    });
    const passed = await deliveriesOfAudit(org.api, events[1]!.data.audit_id);
    expect(passed.map((d) => d.endpoint_id).sort()).toEqual([all.id, passedOnly.id].sort());
    expect(passed.every((d) => d.status === "pending" && d.event_id === events[1]!.id)).toBe(true);

    const again = await org.api.POST("/v2/internal/event_batches", { body: { events: [events[0]!, event(set.id, "passed")] } });
    expect(again.data!.data.map((p) => [p.created, p.deliveries_created])).toEqual([[false, 0], [true, 2]]);
  });

  it("When events of a batch are invalid, Then 400 names every offending field and nothing is stored", async () => {
    const set = await ingestQuestionSetFor(org.api);
    await endpointFor(org.api, url());
    const good = event(set.id, "passed");
    const dup = event(set.id, "passed");
    const { error, response } = await org.api.POST("/v2/internal/event_batches", {
      body: { events: [good, event(randomUUID(), "passed"), event(set.id, "failed", { question_id: randomUUID() }), dup, { ...dup }] },
    });
    expect(response.status).toBe(400);
    expect(error!.errors!.map((e) => e.name).sort()).toEqual(["events.1.data.question_set_id", "events.2.data.responses.0.question_id", "events.4.id"]);
    expect(await deliveriesOfAudit(org.api, good.data.audit_id)).toEqual([]);
  });

  it("When a batch repeats another org's event id, Then it is refused naming that event and nothing is stored", async () => {
    const other = await h.server.newOrg();
    const theirs = await publish(other.api);
    const set = await ingestQuestionSetFor(org.api);
    await endpointFor(org.api, url());
    const mine = event(set.id, "passed");
    const { error, response } = await org.api.POST("/v2/internal/event_batches", { body: { events: [mine, event(set.id, "passed", { id: theirs.id })] } });
    expect(response.status).toBe(400);
    expect(error!.errors!.map((e) => e.name)).toEqual(["events.1.id"]);
    expect(await deliveriesOfAudit(org.api, mine.data.audit_id)).toEqual([]);
  });
});
