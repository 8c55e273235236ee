// Idempotency-Key on every public POST (docs/api-decisions.md#idempotency-key).
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { createBody, createEndpoint, PUBLIC_HOST, problemOf, remember, uniq, useApiServer } from "../harness/factories.js";

const server = await useApiServer();

const post = (token: string, path: string, key: string, body: unknown) =>
  server.raw(path, {
    token,
    method: "POST",
    headers: { "content-type": "application/json", "idempotency-key": key },
    body: JSON.stringify(body),
  });

describe("Idempotency-Key", () => {
  it("when a create is repeated with the same key and body, then the first response (status, Location, secret) is replayed and nothing new is created", async () => {
    const { token, api, orgId } = await server.newOrg();
    const body = createBody({ url: `https://${PUBLIC_HOST}/idem/${uniq()}`, description: "once" });
    const key = `key-${uniq()}`;
    const first = await post(token, "/v2/webhook_endpoints", key, body);
    const firstBody = (await first.json()) as { id: string; secret: string };
    remember(firstBody.secret);
    expect(first.status).toBe(201);
    expect(first.headers.get("idempotent-replayed")).toBeNull();

    // the same parameters in another order are the same request
    const again = await post(token, "/v2/webhook_endpoints", key, { description: "once", url: body.url });
    expect(again.status).toBe(201);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.headers.get("location")).toBe(first.headers.get("location"));
    expect(await again.json()).toEqual(firstBody);
    expect((await api.GET("/v2/webhook_endpoints")).data!.data.map((e) => e.id)).toEqual([firstBody.id]);

    // stored hashed, the response sealed: neither the key nor the secret is readable in the table
    const rows = await server.server.db.query<{ key_hash: string; response_body_enc: Uint8Array }>(
      "SELECT key_hash, response_body_enc FROM idempotency_keys WHERE org_id = $1",
      [orgId],
    );
    expect(rows).toHaveLength(1);
    expect(rows[0]!.key_hash).not.toContain(key);
    expect(Buffer.from(rows[0]!.response_body_enc).toString("latin1")).not.toContain(firstBody.secret);
  });

  it("when a rotation is replayed, then the replay returns the first rotation's secret and no second rotation happens", async () => {
    const { token, api } = await server.newOrg();
    const ep = await createEndpoint(api);
    const key = `rotate-${uniq()}`;
    const path = `/v2/webhook_endpoints/${ep.id}/rotate_secret`;
    const first = (await (await post(token, path, key, { expires_in: 60 })).json()) as { secret: string; signing: { secret_hint: string } };
    remember(first.secret);
    const replay = await post(token, path, key, { expires_in: 60 });
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(((await replay.json()) as { secret: string }).secret).toBe(first.secret);
    const read = await api.GET("/v2/webhook_endpoints/{endpoint_id}", { params: { path: { endpoint_id: ep.id } } });
    expect(read.data!.signing.secret_hint).toBe(first.signing.secret_hint);
  });

  it("when the same key comes with a different body, then 422 IDEMPOTENCY_KEY_REUSED", async () => {
    const { token } = await server.newOrg();
    const key = `reuse-${uniq()}`;
    const first = await post(token, "/v2/webhook_endpoints", key, { url: `https://${PUBLIC_HOST}/a/${uniq()}` });
    remember(((await first.json()) as { secret: string }).secret);
    const other = await post(token, "/v2/webhook_endpoints", key, { url: `https://${PUBLIC_HOST}/b/${uniq()}` });
    const problem = (await other.json()) as { code: string };
    expect([other.status, problem.code]).toEqual([422, "IDEMPOTENCY_KEY_REUSED"]);
  });

  it("when two requests with one key run concurrently, then exactly one runs and the other is refused or replays it", async () => {
    const { token, api } = await server.newOrg();
    const key = `race-${uniq()}`;
    const body = { url: `https://${PUBLIC_HOST}/race/${uniq()}` };
    const results = await Promise.all(Array.from({ length: 4 }, () => post(token, "/v2/webhook_endpoints", key, body)));
    const outcomes = await Promise.all(
      results.map(async (r) => {
        const json = (await r.json()) as { code?: string; id?: string; secret?: string };
        if (json.secret) remember(json.secret);
        return { status: r.status, replayed: r.headers.get("idempotent-replayed") === "true", code: json.code, id: json.id };
      }),
    );
    const ran = outcomes.filter((o) => o.status === 201 && !o.replayed);
    expect(ran).toHaveLength(1);
    for (const o of outcomes.filter((x) => x !== ran[0])) {
      expect(o.status === 409 ? o.code : o.replayed && o.id).toBe(o.status === 409 ? "IDEMPOTENCY_KEY_IN_USE" : ran[0]!.id);
    }
    expect((await api.GET("/v2/webhook_endpoints")).data!.data).toHaveLength(1);
  });

  it("when another org uses the same key, then it is a different key", async () => {
    const a = await server.newOrg();
    const b = await server.newOrg();
    const key = `shared-${uniq()}`;
    const body = { url: `https://${PUBLIC_HOST}/shared/${uniq()}` };
    const ra = await post(a.token, "/v2/webhook_endpoints", key, body);
    const rb = await post(b.token, "/v2/webhook_endpoints", key, body);
    for (const r of [ra, rb]) {
      expect(r.status).toBe(201);
      expect(r.headers.get("idempotent-replayed")).toBeNull();
      remember(((await r.json()) as { secret: string }).secret);
    }
  });

  it("when the key is empty, too long or not printable, then 400 naming Idempotency-Key", async () => {
    const { api } = await server.newOrg();
    for (const key of ["x".repeat(256), "tab\there"]) {
      problemOf(
        await api.POST("/v2/webhook_endpoints", { body: createBody({ url: `https://${PUBLIC_HOST}/k` }), params: { header: { "Idempotency-Key": key } } }),
        { status: 400, code: "VALIDATION_ERROR" },
      );
    }
    expect((await api.GET("/v2/webhook_endpoints")).data!.data).toHaveLength(0);
  });

  it("when the first request with a key is still running, then a repeat answers 409 IDEMPOTENCY_KEY_IN_USE; a claim abandoned for minutes is taken over", async () => {
    const { token, orgId, api } = await server.newOrg();
    const key = `inflight-${uniq()}`;
    const keyHash = createHash("sha256").update(key).digest("hex");
    // the state a request still running elsewhere leaves (claimed, no response yet)
    await server.server.db.query(
      "INSERT INTO idempotency_keys (org_id, key_hash, request_hash, status, created_at, expires_at) VALUES ($1, $2, 'h', 'in_progress', now(), now() + interval '1 day')",
      [orgId, keyHash],
    );
    const body = { url: `https://${PUBLIC_HOST}/inflight/${uniq()}` };
    const refused = await post(token, "/v2/webhook_endpoints", key, body);
    expect([refused.status, ((await refused.json()) as { code: string }).code]).toEqual([409, "IDEMPOTENCY_KEY_IN_USE"]);
    expect((await api.GET("/v2/webhook_endpoints")).data!.data).toHaveLength(0);

    await server.server.db.query("UPDATE idempotency_keys SET created_at = now() - interval '10 minutes' WHERE org_id = $1", [orgId]);
    const taken = await post(token, "/v2/webhook_endpoints", key, body);
    expect(taken.status).toBe(201);
    remember(((await taken.json()) as { secret: string }).secret);
  });

  it("when a key has expired, then it runs again as a new request", async () => {
    const { token, orgId, api } = await server.newOrg();
    const key = `expired-${uniq()}`;
    const body = { url: `https://${PUBLIC_HOST}/expired/${uniq()}` };
    remember(((await (await post(token, "/v2/webhook_endpoints", key, body)).json()) as { secret: string }).secret);
    await server.server.db.query("UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE org_id = $1", [orgId]);
    const again = await post(token, "/v2/webhook_endpoints", key, body);
    expect(again.status).toBe(201);
    expect(again.headers.get("idempotent-replayed")).toBeNull();
    remember(((await again.json()) as { secret: string }).secret);
    expect((await api.GET("/v2/webhook_endpoints")).data!.data).toHaveLength(2);
  });
});
