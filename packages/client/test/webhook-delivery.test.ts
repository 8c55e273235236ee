// verifyWebhook against what the server's delivery engine really sends: a real HTTPS receiver on
// loopback, reached through an injected resolver and a test-only loopback allowance.
import { randomUUID } from "node:crypto";
import { staticResolver } from "@audit-review/server";
import { startReceiver, type Receiver, type RecordedRequest } from "@audit-review/test-kit/receiver";
import { resolverTable } from "@audit-review/test-kit/server-options";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import {
  parseAuditCompleted,
  verifyLegacySignature,
  verifyWebhook,
  WebhookVerificationError,
} from "../src/webhooks/index.js";
import type { CreatedWebhookEndpoint, QuestionSet } from "../src/index.js";
import { RECEIVER_HOST, startTestServer, type TestOrg, type TestServer } from "./harness.js";

const HOOK_HOST = "receiver.client-test.dev";

let receiver: Receiver;
let server: TestServer;
let org: TestOrg;
let set: QuestionSet;
let endpoint: CreatedWebhookEndpoint;
let delivered: RecordedRequest;
const auditId = randomUUID();
const eventId = randomUUID();

beforeAll(async () => {
  receiver = await startReceiver({ hostname: HOOK_HOST, status: 204 });
  server = await startTestServer({
    dispatcher: true,
    resolver: staticResolver(resolverTable({ publicHosts: [RECEIVER_HOST], loopbackHosts: [HOOK_HOST] })),
    allowCidrs: ["127.0.0.1/32"],
    extraCa: receiver.caCert,
  });
  org = await server.newOrg();
  set = await org.ingestQuestionSet({
    set_name: "Delivered",
    set_code: "DLV-1",
    questions: [{ query: "Is the chief complaint documented?" }, { query: "Is the plan documented?" }],
  });
  endpoint = await org.client.createWebhookEndpoint({
    url: `${receiver.origin}/audit-review`,
    signing: { legacy_signature: true },
  });
  await org.publishEvent({
    id: eventId,
    type: "audit.completed",
    data: {
      audit_id: auditId,
      question_set_id: set.id,
      document_id: "doc-1",
      result: "failed",
      responses: [
        { question_id: set.questions[0]!.id, answer: "No", context: "HPI is empty.", passed: false },
        { question_id: set.questions[1]!.id, answer: "Yes", context: null, passed: true },
      ],
    },
  });
  delivered = await receiver.nextRequest();
});

afterAll(async () => {
  await server?.close();
  await receiver?.close();
});

const opts = () => ({ secret: endpoint.secret, headers: delivered.headers, body: delivered.rawBody });

describe("a delivery sent by the server's engine", () => {
  it("when verified with the endpoint's secret, then it is accepted with the event id and a fresh timestamp", () => {
    const verified = verifyWebhook(opts());
    expect(verified.id).toBe(eventId);
    expect(Math.abs(verified.timestamp.getTime() - Date.now())).toBeLessThan(60_000);
    expect(verified.body).toBe(delivered.body);
  });

  it("when its body is parsed, then it is the audit.completed payload of the published event", () => {
    const event = parseAuditCompleted(verifyWebhook(opts()).body);
    expect(event).toMatchObject({
      type: "audit.completed",
      data: { auditId, questionSetId: set.id, documentId: "doc-1", result: "failed" },
    });
    expect(event.responses?.map((r) => r.questionId)).toEqual(set.questions.map((q) => q.id));
  });

  it("when the endpoint has legacy_signature, then x-signature-256 verifies too", () => {
    expect(verifyLegacySignature(opts()).body).toBe(delivered.body);
  });

  it("when the body is changed, then both schemes reject it", () => {
    const body = Buffer.from(delivered.body.replace('"failed"', '"passed"'));
    expect(body.equals(delivered.rawBody)).toBe(false);
    expect(() => verifyWebhook({ ...opts(), body })).toThrow(WebhookVerificationError);
    expect(() => verifyLegacySignature({ ...opts(), body })).toThrow(WebhookVerificationError);
  });

  it("when the secret is wrong, then it is rejected", () => {
    const other = `whsec_${Buffer.alloc(32, 7).toString("base64")}`;
    expect(() => verifyWebhook({ ...opts(), secret: other })).toThrow(/no webhook-signature value matches/);
  });

  it("when it is replayed later than the tolerance, then it is rejected as too old", () => {
    const later = new Date(Date.now() + 10 * 60_000);
    expect(() => verifyWebhook({ ...opts(), now: later })).toThrow(expect.objectContaining({ reason: "timestamp_too_old" }));
  });

  it("when a signature header is missing, then it is rejected", () => {
    const { "webhook-signature": _dropped, ...headers } = delivered.headers;
    expect(() => verifyWebhook({ ...opts(), headers })).toThrow(expect.objectContaining({ reason: "missing_header" }));
  });

  it("when the receiver answered 2xx, then the client lists the delivery as succeeded", async () => {
    await vi.waitFor(
      async () => {
        const { data } = await org.client.listWebhookDeliveries({ endpoint_id: endpoint.id });
        expect(data).toEqual([expect.objectContaining({ event_id: eventId, audit_id: auditId, status: "succeeded", attempt_count: 1 })]);
      },
      { timeout: 15_000, interval: 50 },
    );
  });

  it("when the secret was rotated, then deliveries carry two v1 signatures and the old and the new secret both verify", async () => {
    const rotated = await org.client.rotateWebhookEndpointSecret(endpoint.id);
    expect(rotated.secret).not.toBe(endpoint.secret);
    const id = randomUUID();
    await org.publishEvent({ id, type: "audit.completed", data: { audit_id: randomUUID(), question_set_id: set.id, result: "passed" } });
    const next = await receiver.nextRequest();
    const request = { headers: next.headers, body: next.body };
    expect(String(next.headers["webhook-signature"]).split(" ")).toEqual([expect.stringMatching(/^v1,/), expect.stringMatching(/^v1,/)]);
    expect(verifyWebhook({ ...request, secret: rotated.secret }).id).toBe(id);
    expect(verifyWebhook({ ...request, secret: endpoint.secret }).id).toBe(id);
    expect(verifyWebhook({ ...request, secrets: [`whsec_${Buffer.alloc(32, 9).toString("base64")}`, rotated.secret] }).id).toBe(id);
  });

  it("when a delivery is retried through the client, then its attempts walk page by page, newest first", async () => {
    const { data } = await org.client.listWebhookDeliveries({ endpoint_id: endpoint.id, limit: 100 });
    const delivery = data.find((d) => d.event_id === eventId)!;
    for (let i = 0; i < 2; i++) {
      await vi.waitFor(async () => expect((await org.client.getWebhookDelivery(delivery.id)).status).toBe("succeeded"), { timeout: 15_000, interval: 50 });
      const key = `retry-${i}-${randomUUID()}`;
      const queued = await org.client.retryWebhookDelivery(delivery.id, { idempotencyKey: key });
      expect(queued.status).toBe("pending");
      // the same key again replays instead of queuing a second attempt
      expect((await org.client.retryWebhookDelivery(delivery.id, { idempotencyKey: key })).id).toBe(delivery.id);
      await receiver.nextRequest();
    }
    await vi.waitFor(async () => expect((await org.client.getWebhookDelivery(delivery.id)).attempt_count).toBe(3), { timeout: 15_000, interval: 50 });

    const walked = [];
    for await (const attempt of org.client.paginateWebhookDeliveryAttempts(delivery.id, { query: { limit: 1 } })) walked.push(attempt);
    expect(walked.map((a) => [a.attempt_number, a.trigger, a.response_status])).toEqual([
      [3, "manual", 204],
      [2, "manual", 204],
      [1, "scheduled", 204],
    ]);
    const firstPage = await org.client.listWebhookDeliveryAttempts(delivery.id, { limit: 2, include_total: "true" });
    expect(firstPage).toMatchObject({ has_more: true, total_count: 3 });
    expect(firstPage.data.map((a) => a.id)).toEqual(walked.slice(0, 2).map((a) => a.id));
  });
});
