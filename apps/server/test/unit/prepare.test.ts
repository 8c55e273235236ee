import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { createKeyring } from "../../src/delivery/keyring.js";
import { createPayloadCache, prepare, type PrepareEndpoint } from "../../src/delivery/prepare.js";
import { signatureHeader, legacySignature } from "../../src/delivery/signing.js";
import { createSecretBox } from "../../src/lib/secret-box.js";
import { generateSigningSecret } from "../../src/lib/signing-secrets.js";
import type { QueueEvent } from "../../src/repos/deliveries-queue.repo.js";

const box = createSecretBox(randomBytes(32));
const at = new Date("2026-11-21T09:30:00.250Z");
const current = generateSigningSecret();
const previous = generateSigningSecret();

const endpoint: PrepareEndpoint = {
  url: "https://hooks.acme-receiver.com/in",
  legacy_signature: false,
  payload_fields: ["data.documentId", "data.result", "responses", "responses.query", "responses.answer", "responses.context"],
  payload_result_format: "normalized",
  payload_responses_filter: "all",
  payload_include_informational: false,
};

const event: QueueEvent = {
  id: "0193a5c0-0000-7000-8000-000000000001",
  type: "audit.completed",
  audit_id: "0193a5c0-0000-7000-8000-000000000002",
  question_set_id: "0193a5c0-0000-7000-8000-000000000003",
  document_id: "doc-1",
  result: "failed",
  raw_result: "FAIL (2/3)",
  responses: [
    { question_id: "q1", query: "Documented?", answer: "No", context: "p. 2", passed: false, informational: false },
    { question_id: "q2", query: "Which clinic?", answer: "North", context: null, passed: null, informational: true },
  ],
  occurred_at: new Date("2026-11-21T09:00:00.000Z"),
  is_test: false, data: null,
};

function keysOf(over: { previous?: boolean; until?: Date } = {}) {
  return createKeyring(box).keysFor({
    id: `ep-${Math.random()}`,
    secret_enc: new Uint8Array(box.seal(current)),
    previous_secret_enc: over.previous ? new Uint8Array(box.seal(previous)) : null,
    previous_secret_expires_at: over.previous ? (over.until ?? new Date(at.getTime() + 60_000)) : null,
  });
}

const payloadOf = (ep: PrepareEndpoint, ev: QueueEvent) => createPayloadCache().bodyOf(ep, ev);

describe("prepare", () => {
  it("When an endpoint gets an event, Then the request is a Standard Webhooks POST body signed for this moment", () => {
    const req = prepare({ endpoint, event, signing: keysOf(), authHeaders: {}, at, bodies: createPayloadCache() });
    expect(req.url).toBe(endpoint.url);
    expect(JSON.parse(req.body)).toEqual({
      type: "audit.completed",
      timestamp: "2026-11-21T09:00:00.000Z",
      isTest: false,
      data: { auditId: event.audit_id, questionSetId: event.question_set_id, documentId: "doc-1", result: "failed" },
      responses: [{ questionId: "q1", query: "Documented?", answer: "No", context: "p. 2" }],
    });
    expect(req.headers).toEqual({
      "content-type": "application/json",
      "webhook-id": event.id,
      "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
      "webhook-signature": signatureHeader({ id: event.id, timestamp: Math.floor(at.getTime() / 1000), body: req.body, secrets: [current] }),
    });
  });

  it("When a rotation's grace period runs, Then both secrets sign; once it has ended, Then only the current one", () => {
    const during = prepare({ endpoint, event, signing: keysOf({ previous: true }), authHeaders: {}, at, bodies: createPayloadCache() });
    const ts = Math.floor(at.getTime() / 1000);
    expect(during.headers["webhook-signature"]).toBe(signatureHeader({ id: event.id, timestamp: ts, body: during.body, secrets: [current, previous] }));
    const after = prepare({ endpoint, event, signing: keysOf({ previous: true, until: at }), authHeaders: {}, at, bodies: createPayloadCache() });
    expect(after.headers["webhook-signature"]).toBe(signatureHeader({ id: event.id, timestamp: ts, body: after.body, secrets: [current] }));
  });

  it("When receiver headers would replace ours, Then ours win, and the legacy signature is added only when asked for", () => {
    const req = prepare({
      endpoint: { ...endpoint, legacy_signature: true },
      event,
      signing: keysOf(),
      authHeaders: { "Webhook-Signature": "forged", "Content-Type": "text/plain", "X-Api-Key": "k" },
      at,
      bodies: createPayloadCache(),
    });
    expect(req.headers["webhook-signature"]).not.toBe("forged");
    expect(req.headers["content-type"]).toBe("application/json");
    expect(req.headers["x-api-key"]).toBe("k");
    expect(req.headers["x-signature-256"]).toBe(legacySignature(current, req.body));
  });

  it("When two endpoints differ in their payload settings, Then each gets its own body; equal settings share one", () => {
    const raw = { ...endpoint, payload_result_format: "raw", payload_fields: ["data.result"] };
    expect(JSON.parse(payloadOf(raw, event))).toEqual({
      type: "audit.completed",
      timestamp: "2026-11-21T09:00:00.000Z",
      isTest: false,
      data: { auditId: event.audit_id, questionSetId: event.question_set_id, result: "FAIL (2/3)" },
    });
    const shared = createPayloadCache();
    expect(shared.bodyOf({ ...endpoint }, event)).toBe(shared.bodyOf(endpoint, event));
  });

  it("When the same event arrives as another object (another claim loaded it), Then its body is the one already built", () => {
    const bodies = createPayloadCache();
    const first = bodies.bodyOf(endpoint, event);
    // an event never changes once stored: a copy with other content under the same id proves the body was not rebuilt
    expect(bodies.bodyOf({ ...endpoint }, { ...event, document_id: "doc-2" })).toBe(first);
    expect(createPayloadCache().bodyOf(endpoint, { ...event, document_id: "doc-2" })).toContain('"documentId":"doc-2"');
    expect(bodies.bodyOf(endpoint, { ...event, id: "0193a5c0-0000-7000-8000-000000000009", document_id: "doc-2" })).toContain('"documentId":"doc-2"');
  });
});

describe("keyring", () => {
  it("When the stored secret changes (a rotation), Then the new key is used at once", () => {
    const keyring = createKeyring(box);
    const ep = { id: "ep-1", secret_enc: new Uint8Array(box.seal(current)), previous_secret_enc: null, previous_secret_expires_at: null };
    const first = keyring.keysFor(ep);
    expect(keyring.keysFor({ ...ep })).toBe(first);
    const next = generateSigningSecret();
    const rotated = keyring.keysFor({ ...ep, secret_enc: new Uint8Array(box.seal(next)) });
    expect(rotated.legacySecret).toBe(next);
  });
});
