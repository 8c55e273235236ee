// What a receiver gets: every request verified with the client package's verifyWebhook (the code
// our users run), and the body of each `payload` combination compared with what the contract
// describes.
import type { AuditCompletedPayload, CreateWebhookEndpointRequest } from "@audit-review/api-types/internal";
import { beforeEach, describe, expect, it } from "vitest";
import type { RecordedRequest } from "@audit-review/test-kit/receiver";
import type { TestOrg } from "../harness/server.js";
import { endpointFor, onlyDelivery, publish, rubric, useDeliveryServer, verifyLegacySignature, verifyWebhook } from "./support.js";

const h = await useDeliveryServer({ scheduleMs: [0, 50, 100] });

let org: TestOrg;
beforeEach(async () => {
  org = await h.server.newOrg();
});

type PayloadInput = NonNullable<CreateWebhookEndpointRequest["payload"]>;
// The generated type marks defaulted fields required; the API lets them be omitted.
type Settings = Partial<PayloadInput>;

describe("the standard_v1 body per endpoint", () => {
  it("When one event reaches endpoints with different payload settings, Then each verified body holds exactly its selection", async () => {
    const set = await rubric(org.api);
    const [failing, passing, informational] = set.questions.map((q) => q.id) as [string, string, string];
    const r = await h.receiver();

    const cases: Array<{ name: string; payload?: Settings; expected: (ts: string, ids: { auditId: string }) => AuditCompletedPayload }> = [];
    const base = (ts: string, auditId: string) => ({ type: "audit.completed" as const, timestamp: ts, isTest: false, data: { auditId, questionSetId: set.id } });
    const q = set.questions;
    cases.push({
      name: "defaults",
      expected: (ts, { auditId }) => ({
        ...base(ts, auditId),
        data: { ...base(ts, auditId).data, documentId: "doc-42", result: "failed" },
        responses: [
          { questionId: failing, query: q[0]!.query, answer: "No", context: "HPI section is empty." },
          { questionId: passing, query: q[1]!.query, answer: "Yes", context: null },
        ],
      }),
    });
    cases.push({ name: "nothing optional", payload: { fields: [] }, expected: (ts, { auditId }) => base(ts, auditId) });
    cases.push({
      name: "raw result, failed answers only",
      payload: { fields: ["data.result", "responses", "responses.answer"], result_format: "raw", responses_filter: "failed" },
      expected: (ts, { auditId }) => ({
        ...base(ts, auditId),
        data: { ...base(ts, auditId).data, result: "FAIL (61.5%)" },
        responses: [{ questionId: failing, answer: "No" }],
      }),
    });
    cases.push({
      name: "informational included, query and context",
      payload: { fields: ["data.documentId", "responses", "responses.query", "responses.context"], include_informational_questions: true },
      expected: (ts, { auditId }) => ({
        ...base(ts, auditId),
        data: { ...base(ts, auditId).data, documentId: "doc-42" },
        responses: [
          { questionId: failing, query: q[0]!.query, context: "HPI section is empty." },
          { questionId: passing, query: q[1]!.query, context: null },
          { questionId: informational, query: q[2]!.query, context: "North clinic" },
        ],
      }),
    });
    cases.push({
      name: "ids only",
      payload: { fields: ["responses"], include_informational_questions: true, result_format: "normalized" },
      expected: (ts, { auditId }) => ({
        ...base(ts, auditId),
        responses: [{ questionId: failing }, { questionId: passing }, { questionId: informational }],
      }),
    });

    const endpoints = [];
    for (const [i, c] of cases.entries()) endpoints.push(await endpointFor(org.api, `${r.url}/${i}`, c.payload ? { payload: c.payload as PayloadInput } : {}));

    const occurredAt = "2026-11-21T09:30:00.250Z";
    const event = await publish(org.api, {
      occurred_at: occurredAt,
      data: {
        question_set_id: set.id,
        document_id: "doc-42",
        result: "failed",
        raw_result: "FAIL (61.5%)",
        responses: [
          { question_id: failing, answer: "No", context: "HPI section is empty.", passed: false },
          { question_id: passing, answer: "Yes", passed: true },
          { question_id: informational, answer: "North", context: "North clinic", passed: null },
        ],
      },
    });
    expect(event.deliveriesCreated).toBe(cases.length);

    const requests: RecordedRequest[] = [];
    for (let i = 0; i < cases.length; i++) requests.push(await r.nextRequest());
    for (const [i, c] of cases.entries()) {
      const req = requests.find((x) => x.path === `/hook/${i}`)!;
      const ep = endpoints[i]!;
      const verified = verifyWebhook({ secret: ep.secret, headers: req.headers, body: req.body });
      expect(verified.id, c.name).toBe(event.id);
      expect(JSON.parse(verified.body), c.name).toEqual(c.expected(occurredAt, { auditId: event.data.audit_id }));
      // Another endpoint's secret must not verify it.
      const other = endpoints[(i + 1) % endpoints.length]!;
      expect(() => verifyWebhook({ secret: other.secret, headers: req.headers, body: req.body }), c.name).toThrow(/no webhook-signature/);
    }
    await h.server.drain();
    for (const ep of endpoints) expect(await onlyDelivery(org.api, ep.id)).toMatchObject({ status: "succeeded", attempt_count: 1 });
  });
});

describe("the body and the Event are one story", () => {
  it("When an event is delivered, Then every field of the body is the published event's, as the contract maps them", async () => {
    const r = await h.receiver();
    const ep = await endpointFor(org.api, r.url);
    const published = await publish(org.api);
    const req = await r.nextRequest();
    const body = JSON.parse(verifyWebhook({ secret: ep.secret, headers: req.headers, body: req.body }).body) as AuditCompletedPayload;
    const event = (await org.api.GET("/v2/events/{event_id}", { params: { path: { event_id: published.id } } })).data!;
    if (!event.data) throw new Error(`expected the audit of an audit.completed event, got ${event.type}`);
    expect(req.headers["webhook-id"]).toBe(event.id);
    expect(body).toEqual({
      type: event.type,
      timestamp: event.occurred_at,
      isTest: event.is_test,
      data: { auditId: event.data.audit_id, questionSetId: event.data.question_set_id, documentId: event.data.document_id, result: event.data.result },
      responses: event.data.responses
        .filter((x) => !x.informational)
        .map((x) => ({ questionId: x.question_id, query: x.query, answer: x.answer, context: x.context })),
    });
    expect(body.isTest).toBe(false);
    await h.server.drain();
  });

  it("When a test event is sent, Then the receiver can tell it by the body: isTest is true, as is_test on its Event and delivery", async () => {
    const r = await h.receiver();
    const ep = await endpointFor(org.api, r.url, { payload: { fields: [] } });
    const delivery = (await org.api.POST("/v2/webhook_endpoints/{endpoint_id}/test", { params: { path: { endpoint_id: ep.id } } })).data!;
    const req = await r.nextRequest();
    const body = JSON.parse(verifyWebhook({ secret: ep.secret, headers: req.headers, body: req.body }).body) as AuditCompletedPayload;
    expect(body.isTest).toBe(true);
    const event = (await org.api.GET("/v2/events/{event_id}", { params: { path: { event_id: delivery.event_id } } })).data!;
    expect([event.is_test, delivery.is_test]).toEqual([true, true]);
    await h.server.drain();
  });
});

describe("signatures", () => {
  it("When legacy_signature is on, Then x-signature-256 verifies with the whole secret string; when off, it is absent", async () => {
    const r = await h.receiver();
    const legacy = await endpointFor(org.api, `${r.url}/legacy`, { signing: { legacy_signature: true } });
    await endpointFor(org.api, `${r.url}/plain`);
    await publish(org.api);
    const reqs = [await r.nextRequest(), await r.nextRequest()];
    const legacyReq = reqs.find((x) => x.path === "/hook/legacy")!;
    const plainReq = reqs.find((x) => x.path === "/hook/plain")!;
    expect(legacyReq.headers["x-signature-256"]).toMatch(/^sha256=[0-9a-f]{64}$/);
    expect(verifyLegacySignature({ secret: legacy.secret, headers: legacyReq.headers, body: legacyReq.body }).body).toBe(legacyReq.body);
    verifyWebhook({ secret: legacy.secret, headers: legacyReq.headers, body: legacyReq.body });
    expect(plainReq.headers["x-signature-256"]).toBeUndefined();
    await h.server.drain();
  });

  it("When the secret was rotated, Then deliveries carry signatures of both secrets until the previous one expires", async () => {
    const r = await h.receiver();
    const ep = await endpointFor(org.api, r.url);
    const rotated = await org.api.POST("/v2/webhook_endpoints/{endpoint_id}/rotate_secret", { params: { path: { endpoint_id: ep.id } } });
    const newSecret = rotated.data!.secret;
    expect(rotated.data!.signing.previous_secret_expires_at).not.toBeNull();

    await publish(org.api);
    const during = await r.nextRequest();
    expect(String(during.headers["webhook-signature"]).split(" ")).toHaveLength(2);
    verifyWebhook({ secret: newSecret, headers: during.headers, body: during.body });
    verifyWebhook({ secret: ep.secret, headers: during.headers, body: during.body });

    // The grace period ends (its end moved into the past rather than waiting 24 hours).
    await h.server.server.db.query("UPDATE webhook_endpoints SET previous_secret_expires_at = now() - interval '1 second' WHERE id = $1", [ep.id]);
    await publish(org.api);
    const after = await r.nextRequest();
    expect(String(after.headers["webhook-signature"]).split(" ")).toHaveLength(1);
    verifyWebhook({ secret: newSecret, headers: after.headers, body: after.body });
    expect(() => verifyWebhook({ secret: ep.secret, headers: after.headers, body: after.body })).toThrow(/no webhook-signature/);
    await h.server.drain();
  });

  it("When a delivery is retried, Then webhook-id stays the event id, the body is the same bytes, and each attempt verifies", async () => {
    const r = await h.receiver({ status: 500 });
    const ep = await endpointFor(org.api, r.url);
    const event = await publish(org.api);
    const first = await r.nextRequest();
    r.setStatus(200);
    const second = await r.nextRequest({ timeoutMs: 15_000 });
    for (const req of [first, second]) {
      expect(verifyWebhook({ secret: ep.secret, headers: req.headers, body: req.body }).id).toBe(event.id);
    }
    expect(second.body).toBe(first.body);
    await h.server.drain();
  });
});
