import { createHmac, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import {
  parseAuditCompleted,
  verifyLegacySignature,
  verifyWebhook,
  WebhookPayloadError,
  WebhookVerificationError,
} from "../src/webhooks/index.js";

// The Standard Webhooks specification's test vector.
const SPEC = {
  secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
  id: "msg_p5jXN8AQM9LWM0D4loKWxJek",
  timestamp: 1614265330,
  body: '{"test": 2432232314}',
  signature: "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
};
const specNow = new Date((SPEC.timestamp + 10) * 1000);
const specHeaders = () => ({
  "webhook-id": SPEC.id,
  "webhook-timestamp": String(SPEC.timestamp),
  "webhook-signature": SPEC.signature,
});

// An independent signer written from the Standard Webhooks rules in docs/delivery.md, not from the library under test.
function sign(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.slice("whsec_".length), "base64");
  return `v1,${createHmac("sha256", key).update(`${id}.${timestamp}.${body}`).digest("base64")}`;
}
const newSecret = () => `whsec_${randomBytes(32).toString("base64")}`;
const nowSeconds = () => Math.floor(Date.now() / 1000);

function expectRejected(fn: () => unknown, reason: WebhookVerificationError["reason"]) {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(WebhookVerificationError);
    expect((err as WebhookVerificationError).reason).toBe(reason);
    return;
  }
  expect.fail(`expected a WebhookVerificationError (${reason})`);
}

describe("verifyWebhook (Standard Webhooks)", () => {
  it("when given the specification's vector, then it accepts it and returns id, time and body", () => {
    const verified = verifyWebhook({ secret: SPEC.secret, headers: specHeaders(), body: SPEC.body, now: specNow });
    expect(verified).toEqual({ id: SPEC.id, timestamp: new Date(SPEC.timestamp * 1000), body: SPEC.body });
  });

  it("when the headers are a fetch Headers or use other letter cases, then they are found", () => {
    const headers = new Headers(specHeaders());
    expect(verifyWebhook({ secret: SPEC.secret, headers, body: SPEC.body, now: specNow }).id).toBe(SPEC.id);
    const upper = { "Webhook-Id": SPEC.id, "WEBHOOK-TIMESTAMP": String(SPEC.timestamp), "Webhook-Signature": SPEC.signature };
    expect(verifyWebhook({ secret: SPEC.secret, headers: upper, body: SPEC.body, now: specNow }).id).toBe(SPEC.id);
  });

  it("when the body is bytes (a Buffer or Uint8Array), then it verifies like the string", () => {
    const bytes = new TextEncoder().encode(SPEC.body);
    expect(verifyWebhook({ secret: SPEC.secret, headers: specHeaders(), body: bytes, now: specNow }).body).toBe(SPEC.body);
    expect(verifyWebhook({ secret: SPEC.secret, headers: specHeaders(), body: Buffer.from(bytes), now: specNow }).body).toBe(
      SPEC.body,
    );
  });

  it("when the body was changed by one character, then it is rejected", () => {
    expectRejected(
      () => verifyWebhook({ secret: SPEC.secret, headers: specHeaders(), body: '{"test": 2432232315}', now: specNow }),
      "no_matching_signature",
    );
  });

  it("when the secret is another one, then it is rejected", () => {
    expectRejected(
      () => verifyWebhook({ secret: newSecret(), headers: specHeaders(), body: SPEC.body, now: specNow }),
      "no_matching_signature",
    );
  });

  it("when the signature is for another id or timestamp, then it is rejected", () => {
    const forOtherId = { ...specHeaders(), "webhook-id": "msg_other" };
    expectRejected(() => verifyWebhook({ secret: SPEC.secret, headers: forOtherId, body: SPEC.body, now: specNow }), "no_matching_signature");
    const forOtherTime = { ...specHeaders(), "webhook-timestamp": String(SPEC.timestamp + 1) };
    expectRejected(
      () => verifyWebhook({ secret: SPEC.secret, headers: forOtherTime, body: SPEC.body, now: specNow }),
      "no_matching_signature",
    );
  });

  it("when the timestamp is more than 5 minutes old, then it is rejected; at exactly 5 minutes it is accepted", () => {
    const at = (seconds: number) => new Date((SPEC.timestamp + seconds) * 1000);
    expect(verifyWebhook({ secret: SPEC.secret, headers: specHeaders(), body: SPEC.body, now: at(300) }).id).toBe(SPEC.id);
    expectRejected(
      () => verifyWebhook({ secret: SPEC.secret, headers: specHeaders(), body: SPEC.body, now: at(301) }),
      "timestamp_too_old",
    );
  });

  it("when no now is given, then the real clock decides: the 2021 vector is too old", () => {
    expectRejected(() => verifyWebhook({ secret: SPEC.secret, headers: specHeaders(), body: SPEC.body }), "timestamp_too_old");
  });

  it("when the timestamp is more than the tolerance in the future, then it is rejected", () => {
    expectRejected(
      () => verifyWebhook({ secret: SPEC.secret, headers: specHeaders(), body: SPEC.body, now: new Date((SPEC.timestamp - 301) * 1000) }),
      "timestamp_too_new",
    );
  });

  it("when toleranceSeconds is given, then it replaces the 5 minutes", () => {
    const now = new Date((SPEC.timestamp + 60) * 1000);
    const opts = { secret: SPEC.secret, headers: specHeaders(), body: SPEC.body, now };
    expectRejected(() => verifyWebhook({ ...opts, toleranceSeconds: 30 }), "timestamp_too_old");
    expect(verifyWebhook({ ...opts, toleranceSeconds: 60 }).id).toBe(SPEC.id);
  });

  it.each(["webhook-id", "webhook-timestamp", "webhook-signature"] as const)(
    "when the %s header is missing, then it is rejected",
    (name) => {
      const headers: Record<string, string> = specHeaders();
      delete headers[name];
      expectRejected(() => verifyWebhook({ secret: SPEC.secret, headers, body: SPEC.body, now: specNow }), "missing_header");
    },
  );

  it("when the timestamp is not unix seconds, then it is rejected", () => {
    for (const bad of ["1614265330abc", "-1614265330", "1614265330.5", "2021-02-25T15:02:10Z"]) {
      const headers = { ...specHeaders(), "webhook-timestamp": bad };
      expectRejected(() => verifyWebhook({ secret: SPEC.secret, headers, body: SPEC.body, now: specNow }), "invalid_header");
    }
  });

  it("when a header arrives twice (Node gives an array), then it is rejected as ambiguous", () => {
    const headers = { ...specHeaders(), "webhook-id": [SPEC.id, "msg_other"] };
    expectRejected(() => verifyWebhook({ secret: SPEC.secret, headers, body: SPEC.body, now: specNow }), "invalid_header");
  });

  it("when several v1 signatures are sent during a rotation, then one matching any of them is enough", () => {
    const [previous, current] = [newSecret(), newSecret()];
    const ts = nowSeconds();
    const body = '{"type":"audit.completed"}';
    const headers = {
      "webhook-id": "0193a5b2-7c4e-7a10-9d2f-3b1c2d4e5f70",
      "webhook-timestamp": String(ts),
      "webhook-signature": `${sign(current, "0193a5b2-7c4e-7a10-9d2f-3b1c2d4e5f70", ts, body)} ${sign(previous, "0193a5b2-7c4e-7a10-9d2f-3b1c2d4e5f70", ts, body)}`,
    };
    expect(verifyWebhook({ secret: current, headers, body }).body).toBe(body);
    expect(verifyWebhook({ secret: previous, headers, body }).body).toBe(body);
    expectRejected(() => verifyWebhook({ secret: newSecret(), headers, body }), "no_matching_signature");
  });

  it("when the receiver holds several secrets, then a signature by any of them is accepted", () => {
    const [old, current] = [newSecret(), newSecret()];
    const ts = nowSeconds();
    const headers = { "webhook-id": "evt_1", "webhook-timestamp": String(ts), "webhook-signature": sign(current, "evt_1", ts, "{}") };
    expect(verifyWebhook({ secrets: [old, current], headers, body: "{}" }).id).toBe("evt_1");
    expectRejected(() => verifyWebhook({ secrets: [old, newSecret()], headers, body: "{}" }), "no_matching_signature");
  });

  it("when a signature has another version or no version, then it is ignored", () => {
    const wrongVersion = SPEC.signature.replace(/^v1,/, "v1a,");
    const bare = SPEC.signature.slice(3);
    for (const value of [wrongVersion, bare, `${wrongVersion} ${bare}`]) {
      const headers = { ...specHeaders(), "webhook-signature": value };
      expectRejected(() => verifyWebhook({ secret: SPEC.secret, headers, body: SPEC.body, now: specNow }), "no_matching_signature");
    }
    const mixed = { ...specHeaders(), "webhook-signature": `${wrongVersion} ${SPEC.signature}` };
    expect(verifyWebhook({ secret: SPEC.secret, headers: mixed, body: SPEC.body, now: specNow }).id).toBe(SPEC.id);
  });

  it("when misused (no secret, a non-whsec secret, a parsed body), then it throws a TypeError that never echoes the secret", () => {
    const base = { headers: specHeaders(), body: SPEC.body, now: specNow };
    expect(() => verifyWebhook({ ...base, secrets: [] })).toThrow(TypeError);
    expect(() => verifyWebhook({ ...base, secret: "plain-secret-value" })).toThrow(TypeError);
    expect(() => verifyWebhook({ ...base, secret: "whsec_not*base64!" })).toThrow(/whsec_ followed by base64/);
    expect(() => verifyWebhook({ ...base, secret: "whsec_not*base64!" })).not.toThrow(/not\*base64/);
    expect(() => verifyWebhook({ ...base, secret: SPEC.secret, body: JSON.parse(SPEC.body) })).toThrow(/raw request body/);
  });
});

describe("verifyLegacySignature (x-signature-256)", () => {
  const secret = newSecret();
  const body = '{"type":"audit.completed","data":{"auditId":"a"}}';
  // Independent of the code under test: the whole secret string is the key (docs/delivery.md, legacy_signature).
  const legacy = (key: string, content: string) => `sha256=${createHmac("sha256", key).update(content).digest("hex")}`;

  it("when the header matches the body under the secret string, then it is accepted", () => {
    expect(verifyLegacySignature({ secret, headers: { "x-signature-256": legacy(secret, body) }, body })).toEqual({ body });
    const upper = `sha256=${legacy(secret, body).slice("sha256=".length).toUpperCase()}`;
    expect(verifyLegacySignature({ secret, headers: new Headers({ "X-Signature-256": upper }), body: Buffer.from(body) }).body).toBe(body);
  });

  it("when the body changed, then it is rejected", () => {
    expectRejected(
      () => verifyLegacySignature({ secret, headers: { "x-signature-256": legacy(secret, body) }, body: body.replace('"a"', '"b"') }),
      "no_matching_signature",
    );
  });

  it("when signed with another secret (or keyed with the decoded key instead of the string), then it is rejected", () => {
    expectRejected(
      () => verifyLegacySignature({ secret, headers: { "x-signature-256": legacy(newSecret(), body) }, body }),
      "no_matching_signature",
    );
    const decodedKey = `sha256=${createHmac("sha256", Buffer.from(secret.slice(6), "base64")).update(body).digest("hex")}`;
    expectRejected(() => verifyLegacySignature({ secret, headers: { "x-signature-256": decodedKey }, body }), "no_matching_signature");
  });

  it("when several secrets are held, then a match with any is accepted", () => {
    expect(verifyLegacySignature({ secrets: [newSecret(), secret], headers: { "x-signature-256": legacy(secret, body) }, body }).body).toBe(body);
  });

  it("when the header is missing or malformed, then it is rejected", () => {
    expectRejected(() => verifyLegacySignature({ secret, headers: {}, body }), "missing_header");
    for (const bad of ["sha1=abc", legacy(secret, body).slice(0, -2), legacy(secret, body).replace("sha256=", "")]) {
      expectRejected(() => verifyLegacySignature({ secret, headers: { "x-signature-256": bad }, body }), "invalid_header");
    }
  });
});

describe("parseAuditCompleted (standard_v1)", () => {
  const contract = parse(readFileSync(new URL("../../../openapi/openapi.yaml", import.meta.url), "utf8"));
  const example = contract.components.schemas.AuditCompletedPayload.example;

  it("when given the contract's example as JSON text, bytes or a value, then it returns it typed", () => {
    const text = JSON.stringify(example);
    const parsed = parseAuditCompleted(text);
    expect(parsed).toEqual(example);
    expect(parsed.data.auditId).toBe(example.data.auditId);
    expect(parseAuditCompleted(new TextEncoder().encode(text))).toEqual(example);
    expect(parseAuditCompleted(example)).toEqual(example);
  });

  it("when the endpoint selected fewer fields, then the reduced body is accepted", () => {
    const reduced = {
      type: "audit.completed",
      timestamp: "2026-11-21T09:30:00.000Z",
      data: { auditId: example.data.auditId, questionSetId: example.data.questionSetId },
      responses: [{ questionId: example.responses[0].questionId, answer: null }],
    };
    expect(parseAuditCompleted(JSON.stringify(reduced))).toEqual(reduced);
    const withoutResponses = { ...reduced, responses: undefined };
    expect(parseAuditCompleted(JSON.parse(JSON.stringify(withoutResponses)))).not.toHaveProperty("responses");
  });

  it("when a newer server adds a field, then it is kept and does not break parsing", () => {
    const extended = { ...example, data: { ...example.data, score: 72.5 } };
    expect(parseAuditCompleted(extended)).toEqual(extended);
  });

  it.each([
    ["$", "not json"],
    ["$", "[]"],
    ["type", JSON.stringify({ ...example, type: "audit.started" })],
    ["timestamp", JSON.stringify({ ...example, timestamp: "yesterday" })],
    ["data", JSON.stringify({ ...example, data: null })],
    ["data.auditId", JSON.stringify({ ...example, data: { ...example.data, auditId: 7 } })],
    ["data.documentId", JSON.stringify({ ...example, data: { ...example.data, documentId: 7 } })],
    ["responses", JSON.stringify({ ...example, responses: {} })],
    ["responses[0].questionId", JSON.stringify({ ...example, responses: [{ query: "q" }] })],
    ["responses[0].answer", JSON.stringify({ ...example, responses: [{ questionId: "q", answer: 1 }] })],
  ])("when %s is wrong, then a WebhookPayloadError names it", (path, body) => {
    expect(() => parseAuditCompleted(body)).toThrow(WebhookPayloadError);
    try {
      parseAuditCompleted(body);
    } catch (err) {
      expect((err as WebhookPayloadError).path).toBe(path);
    }
  });
});
