import { describe, expect, it } from "vitest";
import { createEndpoint, ingestQuestionSet, PUBLIC_HOST, problemOf, unknownId, useApiServer } from "../harness/factories.js";

const server = await useApiServer();

describe("GET /v2/webhook_endpoints/{endpoint_id}", () => {
  it("when the Location of a create is read, then the endpoint without its secret", async () => {
    const { api, token } = await server.newOrg();
    const { secret, ...created } = await createEndpoint(api);
    const location = `/v2/webhook_endpoints/${created.id}`;
    const res = await server.raw(location, { token });
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toEqual(created);
    expect(JSON.stringify(body)).not.toContain(secret);
  });

  it("when the id is not a uuid, then 400 naming endpoint_id", async () => {
    const { api } = await server.newOrg();
    problemOf(await api.GET("/v2/webhook_endpoints/{endpoint_id}", { params: { path: { endpoint_id: "nope" } } }), {
      status: 400,
      code: "VALIDATION_ERROR",
      name: "endpoint_id",
    });
  });
});

describe("PATCH /v2/webhook_endpoints/{endpoint_id}", () => {
  it("when fields are given, then only they change and the answer is the endpoint", async () => {
    const { api } = await server.newOrg();
    const set = await ingestQuestionSet(api);
    const ep = await createEndpoint(api, { description: "before" });
    const url = `https://${PUBLIC_HOST}/moved`;
    const res = await api.PATCH("/v2/webhook_endpoints/{endpoint_id}", {
      params: { path: { endpoint_id: ep.id } },
      body: {
        url,
        filters: { question_set_ids: [set.id], audit_results: "failed" },
        payload: { fields: ["data.result"], result_format: "raw" },
        authentication: { type: "basic", username: "hook", password: "pa55word-very-secret" },
        signing: { legacy_signature: true },
      },
    });
    expect(res.response.status).toBe(200);
    expect(res.data).toMatchObject({
      id: ep.id,
      url,
      description: "before",
      filters: { question_set_ids: [set.id], audit_results: "failed" },
      payload: { fields: ["data.result"], result_format: "raw", responses_filter: "all" },
      authentication: { type: "basic", username: "hook" },
      signing: { legacy_signature: true, secret_hint: ep.signing.secret_hint },
    });
    expect(JSON.stringify(res.data)).not.toContain("pa55word");
    const read = await api.GET("/v2/webhook_endpoints/{endpoint_id}", { params: { path: { endpoint_id: ep.id } } });
    expect(read.data).toEqual(res.data);
  });

  it("when rate_limit is set, then it is shown; null removes it; out of range is 400 and changes nothing", async () => {
    const { api } = await server.newOrg();
    const ep = await createEndpoint(api);
    const patch = (rate_limit: number | null) => api.PATCH("/v2/webhook_endpoints/{endpoint_id}", { params: { path: { endpoint_id: ep.id } }, body: { rate_limit } });
    const set = await patch(5);
    expect(set.response.status).toBe(200);
    expect(set.data).toMatchObject({ id: ep.id, rate_limit: 5, url: ep.url });
    problemOf(await patch(0), { status: 400, code: "VALIDATION_ERROR", name: "rate_limit" });
    const read = await api.GET("/v2/webhook_endpoints/{endpoint_id}", { params: { path: { endpoint_id: ep.id } } });
    expect(read.data!.rate_limit).toBe(5);
    const cleared = await patch(null);
    expect(cleared.data!.rate_limit).toBeNull();
  });

  it("when delivery_order is changed, then it is shown, and changed back", async () => {
    const { api } = await server.newOrg();
    const ep = await createEndpoint(api);
    expect(ep.delivery_order).toBe("unordered");
    const patch = (delivery_order: "ordered" | "unordered") =>
      api.PATCH("/v2/webhook_endpoints/{endpoint_id}", { params: { path: { endpoint_id: ep.id } }, body: { delivery_order } });
    expect((await patch("ordered")).data).toMatchObject({ id: ep.id, delivery_order: "ordered" });
    expect((await patch("unordered")).data!.delivery_order).toBe("unordered");
  });

  it("when the new URL breaks a safety rule, then 400 INVALID_WEBHOOK_URL and nothing changes", async () => {
    const { api } = await server.newOrg();
    const ep = await createEndpoint(api, { description: "kept" });
    const { secret: _secret, ...before } = ep;
    for (const url of ["https://localhost/x", "https://127.0.0.1/x", "http://" + PUBLIC_HOST + "/x", "https://10.0.0.1.nip.internal/x"]) {
      problemOf(
        await api.PATCH("/v2/webhook_endpoints/{endpoint_id}", { params: { path: { endpoint_id: ep.id } }, body: { url, description: "changed", status: "disabled" } }),
        { status: 400, code: "INVALID_WEBHOOK_URL", name: "url" },
      );
    }
    expect((await api.GET("/v2/webhook_endpoints/{endpoint_id}", { params: { path: { endpoint_id: ep.id } } })).data).toEqual(before);
  });

  it("when the body is empty or has bad fields, then 400 naming every one", async () => {
    const { api, token } = await server.newOrg();
    const ep = await createEndpoint(api);
    const empty = await server.raw(`/v2/webhook_endpoints/${ep.id}`, { token, method: "PATCH", headers: { "content-type": "application/json" }, body: "{}" });
    expect(empty.status).toBe(400);
    for (const [field, value] of [["status", "paused"], ["event_types", []], ["description", "d".repeat(501)], ["url", "u".repeat(2049)]] as const) {
      const bad = await server.raw(`/v2/webhook_endpoints/${ep.id}`, {
        token,
        method: "PATCH",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ [field]: value }),
      });
      const problem = (await bad.json()) as { code: string; errors: Array<{ name: string }> };
      expect([bad.status, problem.code, problem.errors.map((e) => e.name)]).toEqual([400, "VALIDATION_ERROR", [field]]);
    }
    // not a field of the update body: sent to see the server refuse it
    const unknownField = { secret: "x" };
    problemOf(await api.PATCH("/v2/webhook_endpoints/{endpoint_id}", { params: { path: { endpoint_id: ep.id } }, body: unknownField as never }), {
      status: 400,
      code: "VALIDATION_ERROR",
    });
  });

  it("when another org's or an unknown id is patched, then 404 NOT_FOUND", async () => {
    const a = await server.newOrg();
    const b = await server.newOrg();
    const ep = await createEndpoint(a.api);
    for (const endpoint_id of [ep.id, unknownId()]) {
      problemOf(await b.api.PATCH("/v2/webhook_endpoints/{endpoint_id}", { params: { path: { endpoint_id } }, body: { description: "x" } }), {
        status: 404,
        code: "NOT_FOUND",
      });
      problemOf(await b.api.GET("/v2/webhook_endpoints/{endpoint_id}", { params: { path: { endpoint_id } } }), { status: 404, code: "NOT_FOUND" });
    }
  });
});
