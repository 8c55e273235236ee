import { describe, expect, it } from "vitest";
import { createEndpoint, problemOf, publishEvent, unknownId, useApiServer } from "../harness/factories.js";
import { LIST_BAD_QUERIES } from "../harness/pagination.js";

const server = await useApiServer();

describe("GET /v2/webhook_deliveries/{delivery_id} and its attempts", () => {
  it("when a delivery of the org is read, then it equals its list item, and a new delivery has no attempts yet", async () => {
    const { api } = await server.newOrg();
    await createEndpoint(api);
    await publishEvent(api);
    const [listed] = (await api.GET("/v2/webhook_deliveries")).data!.data;
    const read = await api.GET("/v2/webhook_deliveries/{delivery_id}", { params: { path: { delivery_id: listed!.id } } });
    expect(read.data).toEqual(listed);
    const attempts = await api.GET("/v2/webhook_deliveries/{delivery_id}/attempts", { params: { path: { delivery_id: listed!.id }, query: { include_total: "true" } } });
    expect(attempts.data).toEqual({ object: "list", data: [], has_more: false, total_count: 0 });
  });

  it("when another org's or an unknown delivery is read, listed, or retried, then 404 exactly alike", async () => {
    const a = await server.newOrg();
    const b = await server.newOrg();
    await createEndpoint(a.api);
    await publishEvent(a.api);
    const [delivery] = (await a.api.GET("/v2/webhook_deliveries")).data!.data;
    for (const delivery_id of [delivery!.id, unknownId()]) {
      const path = { params: { path: { delivery_id } } };
      problemOf(await b.api.GET("/v2/webhook_deliveries/{delivery_id}", path), { status: 404, code: "NOT_FOUND" });
      problemOf(await b.api.GET("/v2/webhook_deliveries/{delivery_id}/attempts", path), { status: 404, code: "NOT_FOUND" });
      problemOf(await b.api.POST("/v2/webhook_deliveries/{delivery_id}/retry", path), { status: 404, code: "NOT_FOUND" });
    }
    problemOf(
      await b.api.POST("/v2/webhook_endpoints/{endpoint_id}/recover", {
        params: { path: { endpoint_id: delivery!.endpoint_id } },
        body: { since: new Date(Date.now() - 60_000).toISOString() },
      }),
      { status: 404, code: "NOT_FOUND" },
    );
    expect((await a.api.GET("/v2/webhook_deliveries/{delivery_id}", { params: { path: { delivery_id: delivery!.id } } })).data!.status).toBe("pending");
  });

  it("when a pending delivery is retried, then 409 DELIVERY_IN_PROGRESS", async () => {
    const { api } = await server.newOrg();
    await createEndpoint(api);
    await publishEvent(api);
    const [delivery] = (await api.GET("/v2/webhook_deliveries")).data!.data;
    problemOf(await api.POST("/v2/webhook_deliveries/{delivery_id}/retry", { params: { path: { delivery_id: delivery!.id } } }), {
      status: 409,
      code: "DELIVERY_IN_PROGRESS",
    });
  });

  it.each(LIST_BAD_QUERIES)("when the attempts list gets %s, then 400 naming %s", async (query, param) => {
    const { api, token } = await server.newOrg();
    await createEndpoint(api);
    await publishEvent(api);
    const [delivery] = (await api.GET("/v2/webhook_deliveries")).data!.data;
    const res = await server.raw(`/v2/webhook_deliveries/${delivery!.id}/attempts?${query}`, { token });
    const problem = (await res.json()) as { errors?: Array<{ name: string }> };
    expect(res.status).toBe(400);
    expect(problem.errors?.map((e) => e.name)).toContain(param);
  });
});
