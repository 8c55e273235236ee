import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { createAttempt } from "../../src/delivery/attempt.js";
import { adjustableClock } from "../harness/clock.js";
import { createKeyring } from "../../src/delivery/keyring.js";
import { createReceiverAuth } from "../../src/delivery/receiver-auth.js";
import type { RawOutcome, SendRequest, WebhookSendOutcome } from "../../src/delivery/sender.js";
import { createSecretBox } from "../../src/lib/secret-box.js";
import { generateSigningSecret } from "../../src/lib/signing-secrets.js";
import type { QueueEndpoint, QueueEvent } from "../../src/repos/deliveries-queue.repo.js";

const box = createSecretBox(randomBytes(32));
const sealed = (text: string) => new Uint8Array(box.seal(text));

const event: QueueEvent = {
  id: "0193a5c0-0000-7000-8000-000000000001",
  type: "audit.completed",
  audit_id: "0193a5c0-0000-7000-8000-000000000002",
  question_set_id: "0193a5c0-0000-7000-8000-000000000003",
  document_id: null,
  result: "passed",
  raw_result: null,
  responses: [],
  occurred_at: new Date("2026-11-21T09:00:00.000Z"),
  is_test: false, data: null,
};

function endpoint(over: Partial<QueueEndpoint> = {}): QueueEndpoint {
  return {
    id: "ep-1",
    url: "https://hooks.acme-receiver.com/in",
    status: "enabled",
    deleted_at: null,
    disabled_reason: null,
    payload_fields: ["data.result"],
    payload_result_format: "normalized",
    payload_responses_filter: "all",
    payload_include_informational: false,
    auth_type: "oauth2_client_credentials",
    auth_config: { token_url: "https://auth.acme-receiver.com/token", client_id: "ars" },
    auth_secret_enc: sealed(JSON.stringify({ client_secret: "s3cret" })),
    secret_enc: sealed(generateSigningSecret()),
    previous_secret_enc: null,
    previous_secret_expires_at: null,
    legacy_signature: false,
    rate_limit: null,
    delivery_order: "unordered",
    ...over,
  };
}

const answer = (status: number | null, headers: Record<string, string> = {}): WebhookSendOutcome => ({
  ok: status !== null && status >= 200 && status < 300,
  status,
  headers,
  durationMs: 1,
  error: status === null ? { code: "connection_error", message: "connection refused" } : status >= 300 ? { code: "unexpected_status", message: `receiver answered ${status}` } : null,
  responseBody: status === null ? null : "thanks",
});

const tokenAnswer = (token: string): RawOutcome => ({
  ok: true, status: 200, headers: {}, durationMs: 1, body: "", truncated: false, json: { access_token: token, token_type: "Bearer", expires_in: 3600 }, error: null,
});

/** A sender stand-in answering webhook sends from a script and handing out numbered tokens. */
function scriptedSender(statuses: (number | null)[], headers: Record<string, string> = {}) {
  const sent: SendRequest[] = [];
  let tokens = 0;
  return {
    sent,
    sender: {
      async send(req: SendRequest) {
        sent.push(req);
        return answer(statuses[Math.min(sent.length - 1, statuses.length - 1)]!, headers);
      },
      async request() {
        return tokenAnswer(`token-${++tokens}`);
      },
    },
  };
}

function setUp(statuses: (number | null)[], headers?: Record<string, string>) {
  const clock = adjustableClock();
  const s = scriptedSender(statuses, headers);
  const receiverAuth = createReceiverAuth({ sender: s.sender, secretBox: box, now: () => clock.now().getTime() });
  const attempt = createAttempt({ sender: s.sender, receiverAuth, clock });
  return { ...s, clock, attempt, keys: createKeyring(box) };
}

describe("attempt", () => {
  it("When the receiver answers 2xx, Then the report is ok with its status and the start of the answer", async () => {
    const t = setUp([204]);
    const ep = endpoint({ auth_type: "none", auth_config: {}, auth_secret_enc: null });
    const r = await t.attempt(ep, event, t.keys.keysFor(ep));
    expect(r).toMatchObject({ ok: true, status: 204, error: null, responseBody: "thanks", retryAfterMs: null });
    expect(t.sent).toHaveLength(1);
    expect(t.sent[0]!.headers.authorization).toBeUndefined();
  });

  it("When an OAuth2 receiver answers 401, Then the token is fetched again and the request is sent once more, once", async () => {
    const t = setUp([401, 200]);
    const ep = endpoint();
    const r = await t.attempt(ep, event, t.keys.keysFor(ep));
    expect(r).toMatchObject({ ok: true, status: 200 });
    expect(t.sent.map((q) => q.headers.authorization)).toEqual(["Bearer token-1", "Bearer token-2"]);

    const again = setUp([401]);
    const r2 = await again.attempt(ep, event, again.keys.keysFor(ep));
    expect(r2).toMatchObject({ ok: false, status: 401, error: { code: "unexpected_status" } });
    expect(again.sent).toHaveLength(2);
  });

  it("When a 503 carries Retry-After, Then the report carries it in milliseconds, read on the engine's clock", async () => {
    const t = setUp([503], { "retry-after": "120" });
    const ep = endpoint({ auth_type: "none", auth_config: {}, auth_secret_enc: null });
    expect((await t.attempt(ep, event, t.keys.keysFor(ep))).retryAfterMs).toBe(120_000);
  });

  it("When the stored credentials cannot be read, Then nothing is sent and the attempt is an auth_error", async () => {
    const t = setUp([200]);
    const ep = endpoint({ auth_secret_enc: null });
    const r = await t.attempt(ep, event, t.keys.keysFor(ep));
    expect(r).toMatchObject({ ok: false, status: null, error: { code: "auth_error" }, responseBody: null });
    expect(t.sent).toHaveLength(0);
  });

  it("When the request is sent, Then it is signed at the clock's time of sending", async () => {
    const t = setUp([200]);
    t.clock.advance(3_600_000);
    const ep = endpoint({ auth_type: "none", auth_config: {}, auth_secret_enc: null });
    const r = await t.attempt(ep, event, t.keys.keysFor(ep));
    expect(Number(t.sent[0]!.headers["webhook-timestamp"])).toBe(Math.floor(r.startedAt.getTime() / 1000));
    expect(r.startedAt.getTime() - Date.now()).toBeGreaterThan(3_500_000);
  });
});
