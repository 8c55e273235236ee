import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { createReceiverAuth, type AuthEndpoint } from "../../src/delivery/receiver-auth.js";
import type { RawOutcome, RawRequest } from "../../src/delivery/sender.js";
import { createSecretBox } from "../../src/lib/secret-box.js";

const box = createSecretBox(randomBytes(32));
/** Prisma's Bytes type: a Uint8Array over a plain ArrayBuffer. */
const sealed = (text: string) => new Uint8Array(box.seal(text));
const CLIENT_SECRET = "cl13nt-s3cret-value";

function oauthEndpoint(id = "ep-1"): AuthEndpoint {
  return {
    id,
    auth_type: "oauth2_client_credentials",
    auth_config: { token_url: "https://auth.acme-receiver.com/token", client_id: "ars", scope: "hooks.write", audience: "https://hooks" },
    auth_secret_enc: sealed(JSON.stringify({ client_secret: CLIENT_SECRET })),
  };
}

function answer(status: number | null, json?: unknown, error: RawOutcome["error"] = null): RawOutcome {
  return {
    ok: status !== null && status >= 200 && status < 300,
    status,
    headers: {},
    durationMs: 1,
    body: json === undefined ? "" : JSON.stringify(json),
    truncated: false,
    json,
    error: error ?? (status !== null && (status < 200 || status >= 300) ? { code: "unexpected_status", message: `receiver answered ${status}` } : null),
  };
}

/** A token server stand-in that records each request and answers from a script. */
function tokenServer(script: Array<() => RawOutcome>) {
  const requests: RawRequest[] = [];
  let n = 0;
  return {
    requests,
    sender: {
      async request(req: RawRequest) {
        requests.push(req);
        const next = script[Math.min(n++, script.length - 1)]!;
        return next();
      },
    },
  };
}

const token = (value: string, expires_in?: number) => () => answer(200, { access_token: value, token_type: "Bearer", ...(expires_in !== undefined && { expires_in }) });

describe("createReceiverAuth", () => {
  it("When the endpoint uses no authentication, Then no header is added", async () => {
    const auth = createReceiverAuth({ sender: tokenServer([]).sender, secretBox: box, now: Date.now });
    expect(await auth.headersFor({ id: "e", auth_type: "none", auth_config: {}, auth_secret_enc: null })).toEqual({ ok: true, headers: {}, refreshable: false, secrets: [] });
  });

  it("When the endpoint uses custom headers, Then the sealed values are sent", async () => {
    const auth = createReceiverAuth({ sender: tokenServer([]).sender, secretBox: box, now: Date.now });
    const ep = { id: "e", auth_type: "headers", auth_config: { header_names: ["X-Api-Key"] }, auth_secret_enc: sealed(JSON.stringify({ headers: { "X-Api-Key": "k3y" } })) };
    expect(await auth.headersFor(ep)).toEqual({ ok: true, headers: { "X-Api-Key": "k3y" }, refreshable: false, secrets: ["k3y"] });
  });

  it("When the endpoint uses Basic, Then Authorization carries base64(username:password)", async () => {
    const auth = createReceiverAuth({ sender: tokenServer([]).sender, secretBox: box, now: Date.now });
    const ep = { id: "e", auth_type: "basic", auth_config: { username: "ars" }, auth_secret_enc: sealed(JSON.stringify({ password: "pä:ss" })) };
    const result = await auth.headersFor(ep);
    const b64 = Buffer.from("ars:pä:ss").toString("base64");
    expect(result).toEqual({ ok: true, headers: { authorization: `Basic ${b64}` }, refreshable: false, secrets: ["ars:pä:ss", "pä:ss", b64] });
  });

  it("When a token is needed, Then it is fetched with client_secret_post and cached", async () => {
    const server = tokenServer([token("t1", 3600)]);
    const auth = createReceiverAuth({ sender: server.sender, secretBox: box, now: Date.now });
    expect(await auth.headersFor(oauthEndpoint())).toEqual({ ok: true, headers: { authorization: "Bearer t1" }, refreshable: true, secrets: ["t1", CLIENT_SECRET] });
    expect(await auth.headersFor(oauthEndpoint())).toMatchObject({ headers: { authorization: "Bearer t1" }, secrets: ["t1", CLIENT_SECRET] });
    expect(server.requests).toHaveLength(1);
    const [req] = server.requests;
    expect(req).toMatchObject({ url: "https://auth.acme-receiver.com/token", method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" } });
    expect(Object.fromEntries(new URLSearchParams(req!.body))).toEqual({
      grant_type: "client_credentials",
      client_id: "ars",
      client_secret: CLIENT_SECRET,
      scope: "hooks.write",
      audience: "https://hooks",
    });
  });

  it("When a burst of deliveries needs a token at once, Then the token server is asked once", async () => {
    const server = tokenServer([token("t1", 3600)]);
    const auth = createReceiverAuth({ sender: server.sender, secretBox: box, now: Date.now });
    await Promise.all([1, 2, 3, 4].map(() => auth.headersFor(oauthEndpoint())));
    expect(server.requests).toHaveLength(1);
  });

  it("When a token nears its expiry, Then it is refreshed min(30 s, 10 %) before expires_in", async () => {
    let clock = 1_000_000;
    const server = tokenServer([token("long", 3600), token("long2", 3600)]);
    const auth = createReceiverAuth({ sender: server.sender, secretBox: box, now: () => clock });
    await auth.headersFor(oauthEndpoint());
    clock += 3_570_000 - 1;
    expect(await auth.headersFor(oauthEndpoint())).toMatchObject({ headers: { authorization: "Bearer long" } });
    clock += 1;
    expect(await auth.headersFor(oauthEndpoint())).toMatchObject({ headers: { authorization: "Bearer long2" } });

    const short = tokenServer([token("short", 10), token("short2", 10)]);
    const auth2 = createReceiverAuth({ sender: short.sender, secretBox: box, now: () => clock });
    const start = clock;
    await auth2.headersFor(oauthEndpoint());
    clock = start + 8_999;
    expect(await auth2.headersFor(oauthEndpoint())).toMatchObject({ headers: { authorization: "Bearer short" } });
    clock = start + 9_000;
    expect(await auth2.headersFor(oauthEndpoint())).toMatchObject({ headers: { authorization: "Bearer short2" } });
  });

  it("When the refused token is invalidated, Then the next call fetches a new one; a newer token is not dropped", async () => {
    const server = tokenServer([token("t1", 3600), token("t2", 3600)]);
    const auth = createReceiverAuth({ sender: server.sender, secretBox: box, now: Date.now });
    const first = await auth.headersFor(oauthEndpoint());
    auth.invalidate(oauthEndpoint(), first.ok ? first.headers : {});
    expect(await auth.headersFor(oauthEndpoint())).toMatchObject({ headers: { authorization: "Bearer t2" } });
    auth.invalidate(oauthEndpoint(), { authorization: "Bearer t1" }); // stale: t2 stays
    expect(await auth.headersFor(oauthEndpoint())).toMatchObject({ headers: { authorization: "Bearer t2" } });
    expect(server.requests).toHaveLength(2);
  });

  it("When two endpoints use the same token server, Then each has its own token", async () => {
    const server = tokenServer([token("a", 3600), token("b", 3600)]);
    const auth = createReceiverAuth({ sender: server.sender, secretBox: box, now: Date.now });
    expect(await auth.headersFor(oauthEndpoint("ep-a"))).toMatchObject({ headers: { authorization: "Bearer a" } });
    expect(await auth.headersFor(oauthEndpoint("ep-b"))).toMatchObject({ headers: { authorization: "Bearer b" } });
  });

  it.each([
    ["the token server answers 500", answer(500), "token endpoint auth.acme-receiver.com answered 500"],
    ["the answer has no access_token", answer(200, { token_type: "Bearer" }), "token response from auth.acme-receiver.com has no access_token"],
    ["the answer is not JSON", answer(200, undefined), "token response from auth.acme-receiver.com is not a JSON object"],
    ["the token is not a bearer token", answer(200, { access_token: "x", token_type: "mac" }), 'token response from auth.acme-receiver.com has token_type "mac", not Bearer'],
    [
      "the token URL resolves to a blocked address",
      answer(null, undefined, { code: "destination_blocked", message: "auth.acme-receiver.com resolves to 10.0.0.1, which is not an allowed destination" }),
      "token request to auth.acme-receiver.com failed: auth.acme-receiver.com resolves to 10.0.0.1, which is not an allowed destination",
    ],
  ])("When %s, Then it is an auth_error that names no secret", async (_name, outcome, message) => {
    const auth = createReceiverAuth({ sender: tokenServer([() => outcome]).sender, secretBox: box, now: Date.now });
    const result = await auth.headersFor(oauthEndpoint());
    expect(result).toEqual({ ok: false, error: { code: "auth_error", message } });
    expect(JSON.stringify(result)).not.toContain(CLIENT_SECRET);
  });

  it("When a token fetch failed, Then nothing is cached and the next delivery asks again", async () => {
    const server = tokenServer([() => answer(503), token("t2", 3600)]);
    const auth = createReceiverAuth({ sender: server.sender, secretBox: box, now: Date.now });
    expect((await auth.headersFor(oauthEndpoint())).ok).toBe(false);
    expect(await auth.headersFor(oauthEndpoint())).toMatchObject({ ok: true, headers: { authorization: "Bearer t2" } });
  });

  it("When the sealed credentials cannot be opened, Then it is an auth_error, not a crash", async () => {
    const other = createSecretBox(randomBytes(32));
    const auth = createReceiverAuth({ sender: tokenServer([]).sender, secretBox: other, now: Date.now });
    expect(await auth.headersFor(oauthEndpoint())).toMatchObject({ ok: false, error: { code: "auth_error" } });
  });
});
